//! Parsing a whole Messages reply, and the fold both reply kinds share (sans-IO).
//!
//! [`Collected`] is what a reply amounts to before interpretation: text, tool calls, the raw stop
//! reason and usage. [`Collected::finish`] turns it into an [`AdapterResponse`], lifting the
//! forced output tool's call into the answer (see the family docs).

use super::ParseError;
use crate::llm::request::{AdapterResponse, ToolUse};
use crate::vocab::{StopReason, Usage};
use serde::Deserialize;
use serde_json::{Map, Value};

/// A tool call's input: parsed, or the raw text when it was not JSON (a cut stream).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ToolInput {
    /// A JSON value.
    Parsed(Value),
    /// Text that did not parse.
    Raw(String),
}

/// A tool call as collected from the reply.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CollectedTool {
    pub id: String,
    pub name: String,
    pub input: ToolInput,
}

/// A reply before interpretation.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Collected {
    pub text: String,
    pub tools: Vec<CollectedTool>,
    pub stop: Option<String>,
    pub usage: Usage,
}

/// `usage` as the provider sends it; every field is optional (a stream reports it in parts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct UsageReport {
    /// Prompt tokens not served from the cache.
    pub input_tokens: Option<u64>,
    /// Output tokens (cumulative in a stream).
    pub output_tokens: Option<u64>,
    /// Prompt tokens read from the cache.
    pub cache_read_input_tokens: Option<u64>,
}

impl UsageReport {
    /// Overwrites the fields this usage reports.
    pub fn apply(&self, usage: &mut Usage) {
        if let Some(n) = self.input_tokens {
            usage.input_tokens = n;
        }
        if let Some(n) = self.output_tokens {
            usage.output_tokens = n;
        }
        if let Some(n) = self.cache_read_input_tokens {
            usage.cached_input_tokens = n;
        }
    }
}

impl CollectedTool {
    fn into_tool_use(self) -> ToolUse {
        let input = match self.input {
            ToolInput::Parsed(Value::Object(m)) => Value::Object(m),
            ToolInput::Parsed(Value::Null) => Value::Object(Map::new()),
            ToolInput::Parsed(other) => raw(other.to_string()),
            ToolInput::Raw(text) => raw(text),
        };
        ToolUse {
            id: self.id,
            name: self.name,
            input,
        }
    }
}

fn raw(text: String) -> Value {
    let mut m = Map::new();
    m.insert("_raw".to_owned(), Value::String(text));
    Value::Object(m)
}

impl Collected {
    /// The response; a call of `output_tool` becomes the answer. `wire` is left default.
    pub fn finish(mut self, output_tool: Option<&str>) -> AdapterResponse {
        let mut stop = stop_reason(self.stop.as_deref());
        let answer = output_tool
            .and_then(|name| self.tools.iter().position(|t| t.name == name))
            .map(|pos| self.tools.remove(pos));
        let mut structured = None;
        if let Some(answer) = answer {
            if !self.tools.is_empty() {
                tracing::debug!(
                    dropped = self.tools.len(),
                    "tool calls beside the output tool dropped"
                );
                self.tools.clear();
            }
            self.text = match answer.input {
                ToolInput::Parsed(v) => {
                    let text = v.to_string();
                    structured = Some(v);
                    text
                }
                ToolInput::Raw(text) => text,
            };
            if stop == StopReason::ToolUse {
                stop = StopReason::EndTurn;
            }
        }
        AdapterResponse {
            text: self.text,
            tool_uses: self
                .tools
                .into_iter()
                .map(CollectedTool::into_tool_use)
                .collect(),
            usage: self.usage,
            stop_reason: stop,
            structured,
            wire: Default::default(),
        }
    }
}

/// Maps a provider `stop_reason` (see the family table).
pub fn stop_reason(raw: Option<&str>) -> StopReason {
    match raw {
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens" | "model_context_window_exceeded") => StopReason::MaxTokens,
        Some("refusal") => StopReason::Refusal,
        Some("stop_sequence") => StopReason::StopSequence,
        Some("end_turn" | "pause_turn") | None => StopReason::EndTurn,
        Some(other) => {
            tracing::debug!(
                stop_reason = %crate::secret::clip(other, 80),
                "unknown stop reason read as end_turn"
            );
            StopReason::EndTurn
        }
    }
}

#[derive(Deserialize)]
struct WireResponse {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    content: Vec<Value>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: UsageReport,
    #[serde(default)]
    error: Option<WireError>,
}

/// The `error` object of an error reply or event.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct WireError {
    #[serde(default, rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub message: String,
}

/// Parses a whole (non-streamed) Messages reply; `output_tool` is [`super::Built::output_tool`].
pub fn parse_response(
    body: &str,
    output_tool: Option<&str>,
) -> Result<AdapterResponse, ParseError> {
    let reply: WireResponse = crate::llm::wire::parse_error::from_json(body)?;
    if reply.kind.as_deref() == Some("error") {
        let err = reply.error.unwrap_or_default();
        return Err(ParseError::Provider {
            kind: err.kind,
            message: err.message,
        });
    }
    let mut collected = Collected {
        stop: reply.stop_reason,
        ..Collected::default()
    };
    reply.usage.apply(&mut collected.usage);
    for block in reply.content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => match block.get("text").and_then(Value::as_str) {
                Some(t) => collected.text.push_str(t),
                None => return Err(corrupt("text block", "missing text")),
            },
            Some("tool_use") => collected.tools.push(tool_block(&block)?),
            _ => {}
        }
    }
    Ok(collected.finish(output_tool))
}

/// Reads a `tool_use` block (`id`, `name`, `input`).
pub(crate) fn tool_block(block: &Value) -> Result<CollectedTool, ParseError> {
    let field = |k: &str| block.get(k).and_then(Value::as_str).map(str::to_owned);
    match (field("id"), field("name")) {
        (Some(id), Some(name)) => Ok(CollectedTool {
            id,
            name,
            input: ToolInput::Parsed(block.get("input").cloned().unwrap_or(Value::Null)),
        }),
        _ => Err(corrupt("tool_use block", "missing id or name")),
    }
}

pub(crate) fn corrupt(what: &str, message: &str) -> ParseError {
    ParseError::Corrupt {
        what: what.to_owned(),
        message: message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reply(content: Value, stop: &str) -> String {
        json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
               "content": content, "stop_reason": stop, "stop_sequence": null,
               "usage": {"input_tokens": 12, "output_tokens": 9,
                         "cache_creation_input_tokens": 4, "cache_read_input_tokens": 7}})
        .to_string()
    }

    #[test]
    fn text_and_usage_are_read() {
        let body = reply(
            json!([{"type": "text", "text": "Hel"}, {"type": "thinking", "thinking": "x"},
                                {"type": "text", "text": "lo"}]),
            "end_turn",
        );
        let r = parse_response(&body, None).unwrap();
        assert_eq!(r.text, "Hello");
        assert_eq!(r.stop_reason, StopReason::EndTurn);
        assert_eq!(r.usage.token_counts(), (12, 9, 7));
        assert!(r.structured.is_none());
    }

    #[test]
    fn tool_uses_are_returned_with_tool_use_stop() {
        let body = reply(
            json!([{"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]),
            "tool_use",
        );
        let r = parse_response(&body, Some("emit_x")).unwrap();
        assert_eq!(r.stop_reason, StopReason::ToolUse);
        assert_eq!(r.tool_uses.len(), 1);
        assert_eq!(r.tool_uses[0].input, json!({"city": "Paris"}));
        assert_eq!(r.text, "Let me check.");
    }

    #[test]
    fn output_tool_call_becomes_the_answer_and_drops_sibling_calls() {
        let body = reply(
            json!([
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}},
                {"type": "tool_use", "id": "toolu_2", "name": "emit_Decision", "input": {"decision": "accept", "n": 1}}
            ]),
            "tool_use",
        );
        let r = parse_response(&body, Some("emit_Decision")).unwrap();
        assert_eq!(r.text, r#"{"decision":"accept","n":1}"#);
        assert_eq!(r.structured, Some(json!({"decision": "accept", "n": 1})));
        assert!(r.tool_uses.is_empty());
        assert_eq!(r.stop_reason, StopReason::EndTurn);
    }

    #[test]
    fn output_tool_name_is_only_special_when_expected() {
        let body = reply(
            json!([{"type": "tool_use", "id": "t", "name": "emit_Decision", "input": {}}]),
            "tool_use",
        );
        let r = parse_response(&body, None).unwrap();
        assert_eq!(r.tool_uses.len(), 1);
        assert!(r.structured.is_none());
    }

    #[test]
    fn stop_reasons_are_not_collapsed() {
        for (raw, expected) in [
            ("max_tokens", StopReason::MaxTokens),
            ("refusal", StopReason::Refusal),
            ("stop_sequence", StopReason::StopSequence),
            ("pause_turn", StopReason::EndTurn),
            ("something_new", StopReason::EndTurn),
        ] {
            let r = parse_response(&reply(json!([]), raw), None).unwrap();
            assert_eq!(r.stop_reason, expected, "{raw}");
        }
    }

    #[test]
    fn error_object_and_garbage_are_errors() {
        let err = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        assert_eq!(
            parse_response(&err.to_string(), None),
            Err(ParseError::Provider {
                kind: "overloaded_error".into(),
                message: "Overloaded".into()
            })
        );
        assert!(matches!(
            parse_response("<html>", None),
            Err(ParseError::NotJson { .. })
        ));
        let whole = reply(json!([]), "end_turn");
        assert!(matches!(
            parse_response(&whole[..20], None),
            Err(ParseError::Truncated { .. })
        ));
        let bad = reply(json!([{"type": "tool_use", "input": {}}]), "tool_use");
        assert!(matches!(
            parse_response(&bad, None),
            Err(ParseError::Corrupt { .. })
        ));
    }

    #[test]
    fn non_object_tool_input_is_kept_raw() {
        let body = reply(
            json!([{"type": "tool_use", "id": "t", "name": "x", "input": [1]}]),
            "tool_use",
        );
        let r = parse_response(&body, None).unwrap();
        assert_eq!(r.tool_uses[0].input, json!({"_raw": "[1]"}));
    }
}
