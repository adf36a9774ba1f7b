//! The GLM / Z.ai Chat Completions wire family (`POST {base}/chat/completions`), sans-IO.
//!
//! In: an [`AdapterCallRequest`](crate::llm::request::AdapterCallRequest). Out: a request body
//! ([`build`]) and, from the JSON reply, an
//! [`AdapterResponse`](crate::llm::request::AdapterResponse) ([`parse_response`]). No IO, no
//! endpoint, no credential: the adapters (`adapters/glm_*.rs`) add those.
//! API reference: <https://docs.z.ai/api-reference/llm/chat-completion>.
//!
//! # Where the schema goes
//!
//! Z.ai's `response_format` takes only `text` and `json_object`; there is no `json_schema`. With a
//! schema the request carries `response_format: {type: "json_object"}` (JSON syntax only) and the
//! caller's whole schema rendered into the system prompt
//! ([`schema_prompt`](crate::llm::wire::schema_prompt)). The mode is
//! [`JsonMode`](crate::ledger::StructuredOutputMode::JsonMode): best effort, never a claim of
//! enforcement; the worker validates the answer. A forced output tool is not available here
//! (`tool_choice` accepts only `"auto"`).
//!
//! # Tools
//!
//! `tool_choice` is only ever `"auto"` (GLM rejects `"none"`, which the reference sends):
//! `auto` → `"auto"`; `none` → the tools are withheld from that request (history with earlier
//! tool calls still travels); `any` and `tool(X)` → `"auto"` with every tool, not forced. The
//! last three each leave a [`Transform`](crate::ledger::Transform) on `/tool_choice` in the wire
//! report. More than
//! 128 tools is [`BuildError::TooManyTools`]. GLM models sometimes write tool calls as
//! `<tool_call>` markup in the content; that text is returned as text, not parsed.

mod request;
mod response;

pub use request::{
    Built, ChatMessage, FunctionCall, FunctionDef, FunctionKind, MAX_TOOLS, Request,
    ResponseFormat, Tool, ToolCall, ToolChoice, build, mode_for,
};
pub use response::{parse_response, parse_value, stop_reason};

use crate::llm::adapter::AdapterError;
use crate::llm::wire::messages::one_line;

/// A request that cannot be put on this wire.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// GLM takes at most [`MAX_TOOLS`] function tools.
    #[error("{count} tools offered; GLM accepts at most {limit}")]
    TooManyTools {
        /// Tools in the request.
        count: usize,
        /// The limit.
        limit: usize,
    },
}

impl BuildError {
    /// The typed adapter error ([`AdapterError::Unsupported`]).
    pub fn into_adapter_error(self, adapter: &str) -> AdapterError {
        AdapterError::Unsupported {
            adapter: adapter.to_owned(),
            message: self.to_string(),
        }
    }
}

/// A reply that could not become an answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The body is not the expected JSON.
    #[error("reply is not a chat completion: {message}")]
    NotJson {
        /// The decoder's message.
        message: String,
    },
    /// The body ended mid-JSON.
    #[error("reply ended before {missing}")]
    Truncated {
        /// What never came.
        missing: &'static str,
    },
    /// The JSON lacks a required part.
    #[error("corrupt {what}: {message}")]
    Corrupt {
        /// Which part.
        what: String,
        /// What is wrong.
        message: String,
    },
    /// The provider reported an error in the body.
    #[error("provider error {kind}: {message}")]
    Provider {
        /// The provider's code (e.g. `1214`) or `network_error`.
        kind: String,
        /// The provider's message.
        message: String,
    },
}

impl ParseError {
    /// The typed adapter error: truncation and GLM's `network_error` are retryable.
    pub fn into_adapter_error(self, adapter: &str) -> AdapterError {
        let adapter = adapter.to_owned();
        match self {
            Self::Truncated { missing } => AdapterError::Truncated {
                adapter,
                message: format!("reply ended before {missing}"),
            },
            Self::NotJson { message } => AdapterError::Protocol { adapter, message },
            Self::Corrupt { what, message } => AdapterError::Protocol {
                adapter,
                message: format!("corrupt {what}: {message}"),
            },
            Self::Provider { kind, message } if kind == "network_error" => AdapterError::Server {
                adapter,
                status: 500,
                message: one_line(&message),
            },
            Self::Provider { kind, message } => AdapterError::RunFailed {
                adapter,
                kind: one_line(&kind),
                message: one_line(&message),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::adapter::RetryClass;
    use crate::vocab::ErrorKind;

    #[test]
    fn errors_map_to_typed_adapter_errors() {
        let cut = ParseError::Truncated { missing: "x" }.into_adapter_error("glm-payg");
        assert_eq!(
            (cut.kind(), cut.retry_class()),
            (ErrorKind::Truncated, RetryClass::Retryable)
        );
        let net = ParseError::Provider {
            kind: "network_error".into(),
            message: "m".into(),
        }
        .into_adapter_error("glm-payg");
        assert_eq!(net.retry_class(), RetryClass::Retryable);
        let code = ParseError::Provider {
            kind: "1214".into(),
            message: "bad".into(),
        }
        .into_adapter_error("glm-payg");
        assert_eq!(
            (code.kind(), code.retry_class()),
            (ErrorKind::RunFailed, RetryClass::Fatal)
        );
        // Found by fuzzing the wire families: a provider code with a line break stays one line.
        let odd = ParseError::Provider {
            kind: "12\n14".into(),
            message: "bad".into(),
        }
        .into_adapter_error("glm-payg");
        assert!(!odd.to_string().contains('\n'), "{odd}");
        let many = BuildError::TooManyTools {
            count: 129,
            limit: 128,
        }
        .into_adapter_error("glm-coding-plan");
        assert_eq!(many.kind(), ErrorKind::Unsupported);
        assert!(many.to_string().contains("129"));
    }
}
