//! The Anthropic Messages wire family (`POST /v1/messages`), sans-IO.
//!
//! In: an [`AdapterCallRequest`](crate::llm::request::AdapterCallRequest). Out: a request body
//! ([`build`]) and, from the reply, an [`AdapterResponse`](crate::llm::request::AdapterResponse)
//! ([`parse_response`] for a JSON reply, [`StreamFold`] for SSE). Nothing here does IO, knows an
//! endpoint or sees a credential; the generic HTTP adapter (`adapters/http_adapter.rs`) adds those
//! through [`MessagesWire`], this family's [`crate::llm::wire::family::Wire`].
//! API reference: <https://docs.anthropic.com/en/api/messages>.
//!
//! # Where the schema goes
//!
//! GEODE ignores `response_schema` on this wire; geode wires it. [`ladder`] (the plan of the
//! `AnthropicLadder` schema route, made once per call) decides, as a pure function of the
//! schema, thinking and prefill; `placement` puts the plan on the request:
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
//! | provider `stop_reason` | [`StopReason`](crate::vocab::StopReason) |
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
//! the output tool (`tools.<n>.input_schema…`) is a schema rejection
//! ([`MessagesWire`]'s `rejects_schema`).
//!
//! Not sent: `effort` and `metadata`. Thinking blocks are not replayed in later turns (the
//! request type has no thinking block), so tool use with extended thinking may be refused by the
//! provider on the second round.

mod family;
mod placement;
mod request;
mod response;
mod stream;

pub use family::{ANTHROPIC_VERSION, MessagesWire};
pub use placement::{
    OUTPUT_TOOL_PREFIX, Placed, Placement, ladder, output_tool_name, place_schema, placement,
};
pub use request::{
    Built, Delivery, OutputConfig, OutputFormat, Request, System, SystemBlock, Thinking, Tool,
    ToolChoice, WireMessage, build, prepend_identity, wire_block,
};
pub use response::{parse_response, stop_reason};
pub use stream::{Event, Flow, StreamFold, classify};

use crate::llm::wire::parse_error::{ParseError, one_line};

use crate::llm::call::AdapterError;
use std::time::Duration;

/// The typed adapter error for a Messages reply that failed to parse.
pub fn adapter_error(e: ParseError, adapter: &str) -> AdapterError {
    e.into_adapter_error(adapter, provider_error)
}

/// Maps an Anthropic error type to the adapter error with the status the HTTP API gives it
/// (the [`ProviderErrors`](crate::llm::wire::parse_error::ProviderErrors) of this family).
pub fn provider_error(adapter: String, kind: &str, message: String) -> AdapterError {
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

/// An `f32` as the `f64` with the same shortest decimal form (`0.3f32` → `0.3`, not
/// `0.30000001192092896`), so request bodies carry the number the caller wrote.
pub(crate) fn decimal_f64(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::request::{AdapterCallRequest, Message, ToolSpec};
    use crate::schema::ResponseSchema;
    use crate::vocab::{ErrorKind, RetryClass};

    #[test]
    fn provider_error_kinds_map_to_typed_errors() {
        let err = |kind: &str| adapter_error(ParseError::provider(kind, "m\nn"), "anthropic-payg");
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
        let e = adapter_error(
            ParseError::provider("odd_error\nsecond line", "m"),
            "anthropic-payg",
        );
        assert_eq!(e.kind(), ErrorKind::Server);
        assert!(!e.to_string().contains(['\n', '\r']), "{e}");
        assert!(e.to_string().contains("odd_error second line"), "{e}");
    }

    #[test]
    fn truncation_is_retryable_and_names_the_adapter() {
        let e = adapter_error(
            ParseError::Truncated {
                missing: "message_stop",
            },
            "anthropic-oauth",
        );
        assert_eq!(e.kind(), ErrorKind::Truncated);
        assert_eq!(e.retry_class(), RetryClass::Retryable);
        assert!(e.to_string().starts_with("anthropic-oauth: "));
    }

    #[test]
    fn a_400_naming_the_output_tool_is_a_schema_rejection() {
        use crate::llm::http::ProviderError;
        use crate::llm::wire::family::{BuildCx, Wire};
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
        let route = crate::llm::registry::SchemaRoute::AnthropicLadder;
        let build = |req: &AdapterCallRequest| {
            let plan = route.plan_call(req, None);
            let cx = BuildCx {
                adapter: "a",
                default_model: "d",
                reasoning: false,
                identity: None,
                plan: &plan,
            };
            MessagesWire.build(req, &cx).unwrap()
        };
        let built = build(&req);
        let bad = |message: &str| ProviderError {
            message: message.into(),
            code: Some("invalid_request_error".into()),
            param: None,
        };
        let judge = |b, m: &str| MessagesWire.rejects_schema(b, &bad(m));
        assert!(judge(
            &built,
            "tools.1.custom.input_schema: JSON schema is invalid"
        ));
        assert!(
            !judge(
                &built,
                "tools.0.custom.input_schema: JSON schema is invalid"
            ),
            "a framework tool's schema is not the response schema"
        );
        assert!(judge(
            &built,
            "output_config.format.schema: recursive schemas are not supported"
        ));
        let plain = build(&AdapterCallRequest::new("m", vec![]));
        assert!(!judge(&plain, "tools.0.x"));
    }
}
