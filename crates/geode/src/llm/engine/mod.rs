//! An adapter served by another process: the engine protocol.
//!
//! The `geode` binary does not link the local model's engine (llama.cpp): a worker that only
//! calls hosted APIs starts small and fast. The `local` adapter of the binary is an
//! [`EngineProcess`]: it starts the `geode-engine` binary (which links the engine) on the first
//! call, keeps it for the next calls (the model stays loaded), and speaks JSON lines with it.
//!
//! | direction | line | meaning |
//! |---|---|---|
//! | geode → engine (stdin) | [`EngineCall`] `{"request": {...}, "max_response_bytes": N, "timeout_ms": T, "stream": true}` | one call; the next is sent after its last line |
//! | engine → geode (stdout) | [`EngineLine::Text`] `{"line": "text", "text": "..."}` | a delta of answer text (only when `stream`) |
//! | engine → geode (stdout) | [`EngineLine::Done`] `{"line": "done", "response": {...}}` | the call's [`AdapterResponse`]; the call is over |
//! | engine → geode (stdout) | [`EngineLine::Failed`] `{"line": "failed", "error": {"error": "timeout", "adapter": ...}}` | the call's typed [`AdapterError`]; the call is over |
//!
//! The engine ends when its stdin closes (the parent exited, even by `SIGKILL`) or when it
//! cannot write its stdout. The parent kills the engine when a call is cancelled, passes its
//! deadline or exceeds its response budget mid-answer (the next call starts a new one), and
//! when the adapter is dropped. Engine stderr (the engine's own logs) is kept as a short tail
//! for error messages.

mod process;
mod serve;

pub use process::{ENGINE_BIN_ENV, EngineProcess};
pub use serve::serve;

use crate::llm::call::AdapterError;
use crate::llm::request::{AdapterCallRequest, AdapterResponse};
use serde::{Deserialize, Serialize};

/// One call, as one JSON line on the engine's stdin.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineCall {
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

/// One line of the engine's stdout.
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
