//! Parsing a GLM Chat Completions reply (sans-IO).
//!
//! Reads `choices[0].message.content` (any `reasoning_content` is ignored), its `tool_calls`
//! (arguments are JSON text, parsed with [`ToolUse::from_json_arguments`]), `finish_reason` and
//! `usage` (`prompt_tokens`, `completion_tokens`, `prompt_tokens_details.cached_tokens`).
//!
//! | `finish_reason` | [`StopReason`] |
//! |---|---|
//! | `stop`, absent, unknown | `EndTurn` |
//! | `tool_calls` | `ToolUse` |
//! | `length`, `model_context_window_exceeded` | `MaxTokens` |
//! | `content_filter`, `sensitive` | `ContentFilter` |
//! | any, with a non-empty `message.refusal` (the OpenAI shape) | `Refusal` (the text is the refusal) |
//! | `network_error` | an error: [`ParseError::Provider`] (GLM's inference failed) |
//!
//! A body cut mid-JSON is [`ParseError::Truncated`]; an `error` object is [`ParseError::Provider`].

use super::ParseError;
use crate::llm::request::{AdapterResponse, ToolUse};
use crate::vocab::{StopReason, Usage};
use serde::Deserialize;

#[derive(Deserialize)]
struct Reply {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<WireError>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<ReplyMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Default, Deserialize)]
struct ReplyMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ReplyToolCall>,
    #[serde(default)]
    refusal: Option<String>,
}

#[derive(Deserialize)]
struct ReplyToolCall {
    #[serde(default)]
    id: String,
    function: ReplyFunction,
}

#[derive(Deserialize)]
struct ReplyFunction {
    name: String,
    #[serde(default)]
    arguments: Option<serde_json::Value>,
}

/// A reply's `usage` (also the last chunk's, streamed).
#[derive(Debug, Default, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Default, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: u64,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Self {
        Usage {
            input_tokens: u.prompt_tokens,
            output_tokens: u.completion_tokens,
            cached_input_tokens: u.prompt_tokens_details.map_or(0, |d| d.cached_tokens),
            cost_usd: None,
        }
    }
}

/// A provider's `error` object (a reply body's, or a streamed chunk's).
#[derive(Debug, Deserialize)]
pub(super) struct WireError {
    #[serde(default)]
    code: Option<serde_json::Value>,
    #[serde(default)]
    message: String,
}

impl From<WireError> for ParseError {
    fn from(err: WireError) -> Self {
        ParseError::Provider {
            kind: match err.code {
                Some(serde_json::Value::String(s)) => s,
                Some(other) => other.to_string(),
                None => "error".to_owned(),
            },
            message: err.message,
        }
    }
}

/// Tool-call `arguments` as JSON text: GLM may send an object where OpenAI sends a string.
pub(super) fn arguments_text(arguments: Option<serde_json::Value>) -> String {
    match arguments {
        Some(serde_json::Value::String(s)) => s,
        Some(serde_json::Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// One answer, read from a whole reply or folded from a stream: what both turn into an
/// [`AdapterResponse`] by the module table.
#[derive(Debug, Default)]
pub(super) struct Answer {
    /// `content`.
    pub content: Option<String>,
    /// `refusal` (the OpenAI shape).
    pub refusal: Option<String>,
    /// Tool calls: id, name and arguments as JSON text.
    pub tool_calls: Vec<(String, String, String)>,
    /// `finish_reason`.
    pub finish_reason: Option<String>,
    /// `usage`.
    pub usage: Option<WireUsage>,
}

impl Answer {
    /// The response, or `network_error` as a provider error.
    pub(super) fn into_response(self) -> Result<AdapterResponse, ParseError> {
        if self.finish_reason.as_deref() == Some("network_error") {
            return Err(ParseError::Provider {
                kind: "network_error".into(),
                message: "the provider's inference failed".into(),
            });
        }
        let tool_uses = self
            .tool_calls
            .into_iter()
            .map(|(id, name, args)| ToolUse::from_json_arguments(id, name, &args))
            .collect();
        let refusal = self.refusal.filter(|r| !r.is_empty());
        let stop = match &refusal {
            Some(_) => StopReason::Refusal,
            None => stop_reason(self.finish_reason.as_deref()),
        };
        Ok(AdapterResponse {
            text: refusal.or(self.content).unwrap_or_default(),
            tool_uses,
            usage: self.usage.map(Usage::from).unwrap_or_default(),
            stop_reason: stop,
            structured: None,
            wire: Default::default(),
        })
    }
}

/// Maps a `finish_reason` (see the module table; `network_error` is handled by the parser).
pub fn stop_reason(raw: Option<&str>) -> StopReason {
    match raw {
        Some("tool_calls") => StopReason::ToolUse,
        Some("length" | "model_context_window_exceeded") => StopReason::MaxTokens,
        Some("content_filter" | "sensitive") => StopReason::ContentFilter,
        Some("stop") | None => StopReason::EndTurn,
        Some(other) => {
            tracing::debug!(
                finish_reason = %crate::secret::clip(other, 80),
                "unknown finish reason read as end_turn"
            );
            StopReason::EndTurn
        }
    }
}

/// Parses a Chat Completions reply body. `wire` is left default for the caller to fill.
pub fn parse_response(body: &str) -> Result<AdapterResponse, ParseError> {
    let value: serde_json::Value = crate::llm::wire::parse_error::from_json(body)?;
    parse_value(value)
}

/// Parses a reply already decoded as JSON (what the HTTP transport hands over).
pub fn parse_value(value: serde_json::Value) -> Result<AdapterResponse, ParseError> {
    let reply: Reply = serde_json::from_value(value).map_err(|e| ParseError::Corrupt {
        what: "reply".into(),
        message: e.to_string(),
    })?;
    if let Some(err) = reply.error {
        return Err(err.into());
    }
    let choice = reply
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| ParseError::Corrupt {
            what: "reply".into(),
            message: "no choices".into(),
        })?;
    let message = match choice.message {
        Some(m) => m,
        None if choice.finish_reason.as_deref() == Some("network_error") => ReplyMessage::default(),
        None => {
            return Err(ParseError::Corrupt {
                what: "choice".into(),
                message: "no message".into(),
            });
        }
    };
    Answer {
        content: message.content,
        refusal: message.refusal,
        tool_calls: message
            .tool_calls
            .into_iter()
            .map(|c| (c.id, c.function.name, arguments_text(c.function.arguments)))
            .collect(),
        finish_reason: choice.finish_reason,
        usage: reply.usage,
    }
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn reply(message: Value, finish: &str) -> String {
        json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "glm-x",
               "choices": [{"index": 0, "message": message, "finish_reason": finish}],
               "usage": {"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27,
                         "prompt_tokens_details": {"cached_tokens": 5}}})
        .to_string()
    }

    #[test]
    fn content_and_usage_are_read_and_reasoning_ignored() {
        let body = reply(
            json!({"role": "assistant", "content": "{\"a\":1}",
                                "reasoning_content": "thinking..."}),
            "stop",
        );
        let r = parse_response(&body).unwrap();
        assert_eq!(r.text, "{\"a\":1}");
        assert_eq!(r.stop_reason, StopReason::EndTurn);
        assert_eq!(r.usage.token_counts(), (20, 7, 5));
    }

    #[test]
    fn tool_calls_are_parsed_from_json_text_arguments() {
        let body = reply(
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "now", "arguments": ""}},
                {"id": "call_3", "type": "function", "function": {"name": "bad", "arguments": "{oops"}}
            ]}),
            "tool_calls",
        );
        let r = parse_response(&body).unwrap();
        assert_eq!(r.stop_reason, StopReason::ToolUse);
        assert_eq!(r.text, "");
        let inputs: Vec<&Value> = r.tool_uses.iter().map(|t| &t.input).collect();
        assert_eq!(
            inputs,
            [
                &json!({"city": "Paris"}),
                &json!({}),
                &json!({"_raw": "{oops"})
            ]
        );
        assert_eq!(r.tool_uses[0].id, "call_1");
    }

    #[test]
    fn finish_reasons_map_to_stop_reasons() {
        for (raw, expected) in [
            ("length", StopReason::MaxTokens),
            ("content_filter", StopReason::ContentFilter),
            ("sensitive", StopReason::ContentFilter),
            ("tool_calls", StopReason::ToolUse),
            ("stop", StopReason::EndTurn),
            ("novel", StopReason::EndTurn),
        ] {
            let r =
                parse_response(&reply(json!({"role": "assistant", "content": "x"}), raw)).unwrap();
            assert_eq!(r.stop_reason, expected, "{raw}");
        }
    }

    #[test]
    fn refusal_field_is_a_refusal() {
        let body = reply(
            json!({"role": "assistant", "content": null, "refusal": "No."}),
            "stop",
        );
        let r = parse_response(&body).unwrap();
        assert_eq!(
            (r.text.as_str(), r.stop_reason),
            ("No.", StopReason::Refusal)
        );
    }

    #[test]
    fn network_error_finish_is_a_provider_error() {
        let body = reply(json!({"role": "assistant", "content": ""}), "network_error");
        assert!(
            matches!(parse_response(&body), Err(ParseError::Provider { kind, .. }) if kind == "network_error")
        );
    }

    #[test]
    fn error_objects_cut_bodies_and_empty_choices_are_errors() {
        let err = json!({"error": {"code": "1214", "message": "bad messages"}}).to_string();
        assert_eq!(
            parse_response(&err),
            Err(ParseError::Provider {
                kind: "1214".into(),
                message: "bad messages".into()
            })
        );
        let body = reply(json!({"role": "assistant", "content": "x"}), "stop");
        assert!(matches!(
            parse_response(&body[..body.len() / 2]),
            Err(ParseError::Truncated { .. })
        ));
        assert!(matches!(
            parse_response("<html>"),
            Err(ParseError::NotJson { .. })
        ));
        assert!(matches!(
            parse_response("{\"choices\": []}"),
            Err(ParseError::Corrupt { .. })
        ));
    }
}
