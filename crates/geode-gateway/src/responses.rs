//! `POST /v1/responses`: OpenAI's Responses request read into geode's typed task, and the
//! answer written back as a completed response.
//!
//! | request field | becomes |
//! |---|---|
//! | `input` (a string, or message items) | the prompt and the turns before it, as for Chat |
//! | `instructions`, `system`/`developer` items | the system prompt |
//! | `text.format` `json_schema` / `json_object` / `text` | the caller's schema, `{"type": "object"}`, or free text |
//! | `max_output_tokens`, `temperature` | the task's budgets and sampling |
//! | `geode.require` (body extension) | raises the policy |
//! | `tools`, `stream`, items other than messages | refused with `unsupported_parameter` |
//!
//! The output text is the validated value serialized, so `client.responses.parse()` reads it.

use crate::convert::{self, Turns};
use crate::error::ApiError;
use geode::agent::task::{Answer, Task};
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::{SystemTime, UNIX_EPOCH};

/// The fields of a Responses request that the gateway reads.
#[derive(Debug, Deserialize)]
pub struct ResponsesRequest {
    /// The route.
    #[serde(default)]
    pub model: String,
    /// A string, or a list of input items.
    #[serde(default)]
    pub input: Value,
    /// A system prompt.
    #[serde(default)]
    pub instructions: Option<String>,
    /// `{"format": {...}}`.
    #[serde(default)]
    pub text: Option<Value>,
    /// Output token limit.
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Streaming.
    #[serde(default)]
    pub stream: Option<bool>,
    /// Tools.
    #[serde(default)]
    pub tools: Option<Value>,
    /// geode's body extension.
    #[serde(default)]
    pub geode: Option<convert::Extension>,
}

impl ResponsesRequest {
    /// The request as a task laid over `base`.
    pub fn task(&self, mut base: Task) -> Result<Task, ApiError> {
        convert::refuse_unserved(self.stream, self.tools.as_ref())?;
        let mut turns = Turns::default();
        match &self.input {
            Value::String(s) => turns.push("user", s.clone(), "input")?,
            Value::Array(items) => {
                for item in items {
                    let kind = item
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("message");
                    if kind != "message" {
                        return Err(ApiError::unsupported(
                            "input",
                            format!("input items of type {kind} are not served yet"),
                        ));
                    }
                    let role = item.get("role").and_then(Value::as_str).unwrap_or("?");
                    let text = convert::content_text(
                        item.get("content").unwrap_or(&Value::Null),
                        "input",
                    )?;
                    turns.push(role, text, "input")?;
                }
            }
            _ => {
                return Err(ApiError::invalid(
                    "input",
                    "input must be a string or a list of items",
                ));
            }
        }
        turns.instructions(self.instructions.as_deref().unwrap_or_default());
        turns.into_task(&mut base, "input")?;
        let format = self
            .text
            .as_ref()
            .and_then(|t| t.get("format"))
            .filter(|f| !f.is_null());
        base.output = convert::output(
            format.map(|f| f.get("type").and_then(Value::as_str).unwrap_or("?")),
            format.and_then(|f| f.get("name")).and_then(Value::as_str),
            format.and_then(|f| f.get("schema")),
            "text.format",
        )?;
        if let Some(max) = self.max_output_tokens {
            base.budgets.max_tokens = max;
        }
        base.temperature = self.temperature;
        Ok(base)
    }
}

/// The completed response for `answer`, under the `model` the client sent.
pub fn response(id: u64, model: &str, answer: &Answer) -> Value {
    let text = match &answer.value {
        Some(v) => v.to_string(),
        None => answer.text.clone(),
    };
    let usage = &answer.usage;
    json!({
        "id": format!("resp_geode{id}"),
        "object": "response",
        "created_at": SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        "status": "completed",
        "model": model,
        "output": [{
            "type": "message",
            "id": format!("msg_geode{id}"),
            "status": "completed",
            "role": "assistant",
            "content": [{ "type": "output_text", "text": text, "annotations": [] }],
        }],
        "parallel_tool_calls": false,
        "tool_choice": "auto",
        "tools": [],
        "error": null,
        "incomplete_details": null,
        "usage": {
            "input_tokens": usage.input_tokens,
            "input_tokens_details": { "cached_tokens": usage.cached_input_tokens },
            "output_tokens": usage.output_tokens,
            "output_tokens_details": { "reasoning_tokens": 0 },
            "total_tokens": usage.input_tokens + usage.output_tokens,
        },
        "geode": crate::ledger::body(&answer.ledger),
    })
}
