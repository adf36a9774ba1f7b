//! The Anthropic Messages wire family (`POST /v1/messages`), sans-IO.
//!
//! In: an [`AdapterCallRequest`](crate::llm::request::AdapterCallRequest). Out: a request body
//! ([`build`]) and, from the reply, an [`AdapterResponse`](crate::llm::request::AdapterResponse)
//! ([`parse_response`] for a JSON reply, [`StreamFold`] for SSE). Nothing here does IO, knows an
//! endpoint or sees a credential; the adapters (`adapters/anthropic_*.rs`) add those.
//! API reference: <https://docs.anthropic.com/en/api/messages>.
//!
//! # Where the schema goes
//!
//! The reference system ignores `response_schema` on this wire; geode wires it. [`place_schema`]
//! decides, as a pure function of the request:
//!
//! | placement | when | mode | what the reply looks like |
//! |---|---|---|---|
//! | `output_config.format` json_schema (projected copy) | the projection fits Anthropic's subset, no assistant prefill | `strict` | JSON text |
//! | forced output tool `emit_<name>` | otherwise, extended thinking off, object root | `tool` | a `tool_use` of that tool |
//! | schema in the system prompt | otherwise | `prompt` | text, hopefully JSON |
//!
//! # Telling the output tool apart from real tool calls
//!
//! In `tool` mode the framework's own tools still travel beside the output tool, whose name is
//! chosen at build time to differ from every framework tool ([`Built::output_tool`]). With
//! framework tools on offer and `tool_choice` auto, the request says `any`: the model must call a
//! tool, and calling the output tool *is* the final answer. The parser is given the same name:
//! a `tool_use` of that name is removed from `tool_uses`, its input becomes
//! [`AdapterResponse::structured`](crate::llm::request::AdapterResponse::structured) and, as
//! compact JSON, the answer `text`; the stop reason `tool_use` becomes `end_turn`. Any other tool
//! calls in that same turn are dropped (the model declared its final answer). A reply without the
//! output tool is handled as usual: real tool calls go back to the loop.
//!
//! # Replies
//!
//! | provider `stop_reason` | [`StopReason`](crate::llm::request::StopReason) |
//! |---|---|
//! | `end_turn`, `pause_turn`, unknown | `EndTurn` |
//! | `tool_use` | `ToolUse` (`EndTurn` when the output tool answered) |
//! | `max_tokens`, `model_context_window_exceeded` | `MaxTokens` |
//! | `refusal` | `Refusal` |
//! | `stop_sequence` | `StopSequence` |
//!
//! Usage: `input_tokens`, `output_tokens`, `cache_read_input_tokens` (as cached input). Text
//! blocks are joined with no separator; thinking and server-tool blocks are dropped. A stream that
//! ends without `message_stop` is [`ParseError::Truncated`], never success; an `error` event is
//! [`ParseError::Provider`] and maps to the matching [`AdapterError`]. An HTTP 400 that names
//! the output tool (`tools.<n>.input_schema…`) is a schema rejection ([`reclassify`]).
//!
//! Not sent: `effort` and `metadata`. Thinking blocks are not replayed in later turns (the
//! request type has no thinking block), so tool use with extended thinking may be refused by the
//! provider on the second round.

mod placement;
mod request;
mod response;
mod stream;

pub use placement::{
    OUTPUT_TOOL_PREFIX, Placed, Placement, mode_for, output_tool_name, place_schema,
};
pub use request::{
    Built, ContentBlock, Delivery, OutputConfig, OutputFormat, Request, System, SystemBlock,
    Thinking, Tool, ToolChoice, WireMessage, build, prepend_identity,
};
pub use response::{parse_response, stop_reason};
pub use stream::{Event, Flow, StreamFold, classify};

use crate::llm::adapter::AdapterError;
use std::time::Duration;

/// The most characters of a provider message kept in an error.
const MESSAGE_LIMIT: usize = 300;

/// A reply that could not become an answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The reply body is not the expected JSON.
    #[error("reply is not a Messages response: {message}")]
    NotJson {
        /// The decoder's message.
        message: String,
    },
    /// A known event or block failed to decode.
    #[error("corrupt {what}: {message}")]
    Corrupt {
        /// The event or block kind.
        what: String,
        /// The decoder's message.
        message: String,
    },
    /// The stream ended before its terminal event.
    #[error("stream ended before {missing}")]
    Truncated {
        /// The event that never came.
        missing: &'static str,
    },
    /// The streamed text and tool input passed the fold's budget
    /// ([`StreamFold::with_max_text_bytes`]).
    #[error("streamed answer larger than {limit} bytes")]
    TooLarge {
        /// The budget in bytes.
        limit: u64,
    },
    /// The provider reported an error (an `error` event or an error object).
    #[error("provider error {kind}: {message}")]
    Provider {
        /// The provider's error type, e.g. `overloaded_error`.
        kind: String,
        /// The provider's message.
        message: String,
    },
}

impl ParseError {
    /// The typed adapter error for this failure.
    pub fn into_adapter_error(self, adapter: &str) -> AdapterError {
        let adapter = adapter.to_owned();
        match self {
            Self::Truncated { missing } => AdapterError::Truncated {
                adapter,
                message: format!("stream ended before {missing}"),
            },
            Self::NotJson { message } => AdapterError::Protocol { adapter, message },
            Self::TooLarge { limit } => AdapterError::ResponseTooLarge { adapter, limit },
            Self::Corrupt { what, message } => AdapterError::Protocol {
                adapter,
                message: format!("corrupt {what}: {message}"),
            },
            Self::Provider { kind, message } => provider_error(adapter, &kind, one_line(&message)),
        }
    }
}

/// Maps an Anthropic error type to the adapter error with the status the HTTP API gives it.
fn provider_error(adapter: String, kind: &str, message: String) -> AdapterError {
    match kind {
        "rate_limit_error" => AdapterError::RateLimited {
            adapter,
            retry_after: None::<Duration>,
            message,
        },
        "authentication_error" => AdapterError::Auth {
            adapter,
            status: 401,
            message,
        },
        "permission_error" => AdapterError::Auth {
            adapter,
            status: 403,
            message,
        },
        "invalid_request_error" | "not_found_error" | "request_too_large" => {
            AdapterError::BadRequest {
                adapter,
                status: match kind {
                    "not_found_error" => 404,
                    "request_too_large" => 413,
                    _ => 400,
                },
                message,
            }
        }
        "overloaded_error" => AdapterError::Server {
            adapter,
            status: 529,
            message,
        },
        _ => AdapterError::Server {
            adapter,
            status: 500,
            message: format!("{}: {message}", one_line(kind)),
        },
    }
}

/// A 400 naming the forced output tool (`tools.<its index>.…`, e.g. its `input_schema`) is the
/// provider rejecting the response schema: [`AdapterError::SchemaRejected`], not a plain bad
/// request. Any other error is returned unchanged.
pub fn reclassify(err: AdapterError, built: &Built) -> AdapterError {
    let index = built.body.tools.len().saturating_sub(1);
    match err {
        AdapterError::BadRequest {
            adapter,
            status: 400,
            message,
        } if built.output_tool.is_some() && message.contains(&format!("tools.{index}.")) => {
            AdapterError::SchemaRejected {
                adapter,
                status: 400,
                code: "-".to_owned(),
                message,
            }
        }
        other => other,
    }
}

/// A provider message made one line and cut to [`MESSAGE_LIMIT`] characters.
pub(crate) fn one_line(message: &str) -> String {
    let flat: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MESSAGE_LIMIT)
        .collect();
    flat.trim().to_owned()
}

/// An `f32` as the `f64` with the same shortest decimal form (`0.3f32` → `0.3`, not
/// `0.30000001192092896`), so request bodies carry the number the caller wrote.
pub(crate) fn decimal_f64(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::adapter::RetryClass;
    use crate::llm::request::{AdapterCallRequest, Message, ToolSpec};
    use crate::schema::ResponseSchema;
    use crate::vocab::ErrorKind;

    #[test]
    fn provider_error_kinds_map_to_typed_errors() {
        let err = |kind: &str| {
            ParseError::Provider {
                kind: kind.into(),
                message: "m\nn".into(),
            }
            .into_adapter_error("anthropic-payg")
        };
        assert_eq!(err("overloaded_error").retry_class(), RetryClass::Retryable);
        assert_eq!(err("overloaded_error").kind(), ErrorKind::Server);
        assert_eq!(err("rate_limit_error").kind(), ErrorKind::RateLimited);
        assert_eq!(err("authentication_error").kind(), ErrorKind::Auth);
        assert_eq!(err("invalid_request_error").kind(), ErrorKind::BadRequest);
        assert_eq!(err("api_error").retry_class(), RetryClass::Retryable);
        assert!(!err("api_error").to_string().contains('\n'));
    }

    /// Found by the `messages` fuzz target: an unknown error type with a line break made the
    /// error two lines (the type was put in the message as it came).
    #[test]
    fn an_unknown_error_type_stays_on_one_line() {
        let e = ParseError::Provider {
            kind: "odd_error\nsecond line".into(),
            message: "m".into(),
        }
        .into_adapter_error("anthropic-payg");
        assert_eq!(e.kind(), ErrorKind::Server);
        assert!(!e.to_string().contains(['\n', '\r']), "{e}");
        assert!(e.to_string().contains("odd_error second line"), "{e}");
    }

    #[test]
    fn truncation_is_retryable_and_names_the_adapter() {
        let e = ParseError::Truncated {
            missing: "message_stop",
        }
        .into_adapter_error("anthropic-oauth");
        assert_eq!(e.kind(), ErrorKind::Truncated);
        assert_eq!(e.retry_class(), RetryClass::Retryable);
        assert!(e.to_string().starts_with("anthropic-oauth: "));
    }

    #[test]
    fn a_400_naming_the_output_tool_is_a_schema_rejection() {
        let mut req = AdapterCallRequest::new("m", vec![Message::user("hi")]);
        req.tools = vec![ToolSpec {
            name: "t".into(),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
        }];
        req.response_schema = Some(
            ResponseSchema::from_value(
                serde_json::json!({"type": "object", "properties": {"k": {"$ref": "#"}}}),
            )
            .unwrap(),
        );
        let built = build(&req, "d", Delivery::Stream);
        let bad = |message: &str| AdapterError::BadRequest {
            adapter: "a".into(),
            status: 400,
            message: message.into(),
        };
        let e = reclassify(
            bad("tools.1.custom.input_schema: JSON schema is invalid"),
            &built,
        );
        assert_eq!(e.kind(), ErrorKind::SchemaRejected);
        let e = reclassify(
            bad("tools.0.custom.input_schema: JSON schema is invalid"),
            &built,
        );
        assert_eq!(
            e.kind(),
            ErrorKind::BadRequest,
            "a framework tool's schema is not the response schema"
        );
        let plain = build(&AdapterCallRequest::new("m", vec![]), "d", Delivery::Stream);
        assert_eq!(
            reclassify(bad("tools.0.x"), &plain).kind(),
            ErrorKind::BadRequest
        );
    }

    #[test]
    fn one_line_flattens_and_cuts() {
        assert_eq!(one_line("a\nb\tc"), "a b c");
        assert_eq!(one_line(&"x".repeat(1000)).len(), MESSAGE_LIMIT);
    }
}
