//! An adapter served by another process: the engine protocol.
//!
//! The `geode` binary does not link the local model's engine (llama.cpp): a worker that only
//! calls hosted APIs starts small and fast. The `local` adapter of the binary is an
//! [`EngineProcess`]: it starts the `geode-engine` binary (which links the engine) on the first
//! call, keeps it for the next calls (the model stays loaded), and speaks JSON lines with it.
//!
//! | direction | line | meaning |
//! |---|---|---|
//! | geode → engine (stdin) | [`EngineCall`] `{"id": 7, "request": {...}, "max_response_bytes": N, "timeout_ms": T, "stream": true}` | one call; calls with an `id` run concurrently, one without is answered before the next line is read |
//! | geode → engine (stdin) | [`EngineCancel`] `{"cancel": 7}` | cancel call 7 (it ends with a `failed` line) |
//! | engine → geode (stdout) | [`EngineLine::Text`] `{"id": 7, "line": "text", "text": "..."}` | a delta of answer text (only when `stream`) |
//! | engine → geode (stdout) | [`EngineLine::Done`] `{"id": 7, "line": "done", "response": {...}}` | the call's [`AdapterResponse`]; the call is over |
//! | engine → geode (stdout) | [`EngineLine::Failed`] `{"id": 7, "line": "failed", "error": {"error": "timeout", "adapter": ...}}` | the call's typed [`AdapterError`]; the call is over |
//!
//! Each output line carries the `id` of its call ([`EngineReply`]; none for a call sent
//! without one). The parent sends its calls with ids, as many at once as its callers make, so
//! the engine can decode them together.
//!
//! The engine ends when its stdin closes (the parent exited, even by `SIGKILL`) and its calls
//! are answered, or when it cannot write its stdout. When a call is cancelled, passes its
//! deadline or exceeds its response budget mid-answer, the parent sends a cancel line and
//! gives the engine a grace period to end that call; an engine that does not is killed (the
//! calls it was serving fail, and the next call starts a new one). The engine is also killed
//! when the adapter is dropped. Engine stderr (the engine's own logs) is kept as a short tail
//! for error messages.

mod process;
mod serve;

pub use process::{CANCEL_GRACE, ENGINE_BIN_ENV, EngineProcess};
pub use serve::serve;

use crate::llm::call::AdapterError;
use crate::llm::request::{AdapterCallRequest, AdapterResponse};
use serde::{Deserialize, Serialize};

/// One call, as one JSON line on the engine's stdin.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineCall {
    /// The call's id, echoed on its output lines; `None`: served alone, lines without an id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// The request.
    pub request: AdapterCallRequest,
    /// The response budget of the call ([`crate::llm::call::CallCx::max_response_bytes`]).
    pub max_response_bytes: u64,
    /// Milliseconds left before the call's deadline, if it has one.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Whether the engine sends [`EngineLine::Text`] deltas.
    #[serde(default)]
    pub stream: bool,
}

/// A request to cancel a running call, as one JSON line on the engine's stdin.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineCancel {
    /// The id of the call to cancel.
    pub cancel: u64,
}

/// One line of the engine's stdout: an [`EngineLine`] tagged with its call's id.
#[derive(Debug, Serialize, Deserialize)]
pub struct EngineReply {
    /// The id of the call the line belongs to (`None` for a call sent without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// The line.
    #[serde(flatten)]
    pub line: EngineLine,
}

/// What a line of the engine's stdout says.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "line", rename_all = "snake_case")]
pub enum EngineLine {
    /// A delta of answer text.
    Text {
        /// The delta.
        text: String,
    },
    /// The call's answer.
    Done {
        /// The response.
        response: AdapterResponse,
    },
    /// The call's failure.
    Failed {
        /// The error.
        error: AdapterError,
    },
}

#[cfg(test)]
mod tests;
