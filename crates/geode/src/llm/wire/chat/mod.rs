//! The Chat Completions wire family (`POST {base}/chat/completions`): GLM / Z.ai and any
//! OpenAI-compatible server (`openai-compatible`), sans-IO.
//!
//! In: an [`AdapterCallRequest`](crate::llm::request::AdapterCallRequest). Out: a request body
//! ([`build_with`]) and, from the streamed reply ([`stream::StreamFold`], `stream: true` with
//! `stream_options.include_usage`) or a JSON reply ([`parse_response`]), an
//! [`AdapterResponse`](crate::llm::request::AdapterResponse). No IO, no
//! endpoint, no credential: the generic HTTP adapter (`adapters/http_adapter.rs`) adds those
//! through [`ChatWire`], this family's [`crate::llm::wire::family::Wire`].
//! API reference: <https://docs.z.ai/api-reference/llm/chat-completion>.
//!
//! # Where the schema goes
//!
//! Z.ai's `response_format` takes only `text` and `json_object`; there is no `json_schema`. With a
//! schema the request carries `response_format: {type: "json_object"}` (JSON syntax only) and the
//! caller's whole schema rendered into the system prompt
//! ([`schema_prompt`](crate::llm::wire::schema_prompt)). The mode is
//! [`JsonMode`](crate::vocab::StructuredOutputMode::JsonMode): best effort, never a claim of
//! enforcement; the worker validates the answer. A forced output tool is not available here
//! (`tool_choice` accepts only `"auto"`).
//!
//! An OpenAI-compatible server takes `response_format: {type: json_schema, json_schema: {name,
//! schema, strict}}`; whether it enforces it is found by a
//! probe (`llm/adapters/compat_probe.rs`): `strict` when it does, `hint` (schema also in the
//! prompt) when it answers 200 but ignores it, and GLM's JSON mode when it refuses the field.
//! A provider configured in `geode.toml` names its placement instead (docs/configuration.md).
//!
//! # Tools
//!
//! The tool rules are the server's ([`ChatTools`]). On GLM `tool_choice` is only ever `"auto"`
//! (GLM rejects `"none"`, which GEODE sends): `auto` → `"auto"`; `none` → the tools are
//! withheld from that request (history with earlier tool calls still travels); `any` and
//! `tool(X)` → `"auto"` with every tool, not forced. The last three each leave a
//! [`Transform`](crate::vocab::Transform) on `/tool_choice` in the wire report. More than 128
//! tools is [`BuildError::TooManyTools`]. Other servers get OpenAI's `"none"`, `"required"` and
//! a named function, and no tool limit. GLM models sometimes write tool calls as
//! `<tool_call>` markup in the content; that text is returned as text, not parsed.

mod family;
mod request;
mod response;
pub mod stream;

pub use family::ChatWire;
pub use request::{
    Built, ChatMessage, ChatTools, ChosenFunction, FunctionCall, FunctionDef, FunctionKind,
    JsonSchemaFormat, MAX_TOOLS, Request, ResponseFormat, StreamOptions, Tool, ToolCall,
    ToolChoice, ToolMode, build_with,
};
pub use response::{parse_response, parse_value, stop_reason};

use crate::llm::call::AdapterError;
use crate::llm::wire::parse_error::{ParseError, one_line};

/// A request that cannot be put on this wire.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The server takes at most `limit` function tools (GLM: [`MAX_TOOLS`]).
    #[error("{count} tools offered; the server accepts at most {limit}")]
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

/// GLM's provider errors: `network_error` is a retryable `Server` error, any other code a
/// fatal `RunFailed` (the [`ProviderErrors`](crate::llm::wire::parse_error::ProviderErrors) of this family).
pub fn provider_error(adapter: String, kind: &str, message: String) -> AdapterError {
    if kind == "network_error" {
        AdapterError::Server {
            adapter,
            status: 500,
            message,
        }
    } else {
        AdapterError::RunFailed {
            adapter,
            kind: one_line(kind),
            message,
        }
    }
}

/// The typed adapter error for a Chat reply that failed to parse.
pub fn adapter_error(e: ParseError, adapter: &str) -> AdapterError {
    e.into_adapter_error(adapter, provider_error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::{ErrorKind, RetryClass};

    #[test]
    fn errors_map_to_typed_adapter_errors() {
        let cut = adapter_error(ParseError::Truncated { missing: "x" }, "glm-payg");
        assert_eq!(
            (cut.kind(), cut.retry_class()),
            (ErrorKind::Truncated, RetryClass::Retryable)
        );
        let net = adapter_error(ParseError::provider("network_error", "m"), "glm-payg");
        assert_eq!(net.retry_class(), RetryClass::Retryable);
        let code = adapter_error(ParseError::provider("1214", "bad"), "glm-payg");
        assert_eq!(
            (code.kind(), code.retry_class()),
            (ErrorKind::RunFailed, RetryClass::Fatal)
        );
        // Found by fuzzing the wire families: a provider code with a line break stays one line.
        let odd = adapter_error(ParseError::provider("12\n14", "bad"), "glm-payg");
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
