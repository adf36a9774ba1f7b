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
//! | `stream: true` | the Responses events in order (`response.created` … `response.output_text.delta` … `response.completed`, whose response carries the ledger) |
//! | `tools`, items other than messages | refused with `unsupported_parameter` |
//!
//! The output text is the validated value serialized, so `client.responses.parse()` reads it.

use crate::convert::{self, Turns};
use crate::error::ApiError;
use crate::stream::{Progress, Written};
use axum::response::sse::Event;
use geode::agent::task::{Answer, Task};
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::{SystemTime, UNIX_EPOCH};

/// The fields of a Responses request that the gateway reads.
#[derive(Debug, Deserialize)]
pub struct ResponsesRequest {
    /// What both endpoints read alike: route, stream, sampling, tools, geode's extension.
    #[serde(flatten)]
    pub head: convert::Head,
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
}

impl ResponsesRequest {
    /// The request as a task laid over `base`.
    pub fn task(&self, mut base: Task) -> Result<Task, ApiError> {
        self.head.refuse_unserved()?;
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
        base.temperature = self.head.temperature;
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
    let mut r = shell(id, model, "completed");
    r["output"] = json!([message(id, "completed", &text)]);
    r["usage"] = json!({
        "input_tokens": usage.input_tokens,
        "input_tokens_details": { "cached_tokens": usage.cached_input_tokens },
        "output_tokens": usage.output_tokens,
        "output_tokens_details": { "reasoning_tokens": 0 },
        "total_tokens": usage.input_tokens + usage.output_tokens,
    });
    r["geode"] = crate::ledger::body(&answer.ledger);
    r
}

fn message(id: u64, status: &str, text: &str) -> Value {
    json!({
        "type": "message",
        "id": format!("msg_geode{id}"),
        "status": status,
        "role": "assistant",
        "content": [{ "type": "output_text", "text": text, "annotations": [] }],
    })
}

fn shell(id: u64, model: &str, status: &str) -> Value {
    json!({
        "id": format!("resp_geode{id}"),
        "object": "response",
        "created_at": SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        "status": status,
        "model": model,
        "output": [],
        "parallel_tool_calls": false,
        "tool_choice": "auto",
        "tools": [],
        "error": null,
        "incomplete_details": null,
    })
}

fn event(w: &mut Written, kind: &str, mut data: Value) -> Event {
    data["type"] = json!(kind);
    data["sequence_number"] = json!(w.sequence());
    Event::default().event(kind).data(data.to_string())
}

/// The opening events: the response created, its message item and text part added.
pub fn opening(id: u64, model: &str, w: &mut Written) -> Vec<Event> {
    let item = format!("msg_geode{id}");
    vec![
        event(
            w,
            "response.created",
            json!({ "response": shell(id, model, "in_progress") }),
        ),
        event(
            w,
            "response.in_progress",
            json!({ "response": shell(id, model, "in_progress") }),
        ),
        event(
            w,
            "response.output_item.added",
            json!({
                "output_index": 0,
                "item": { "type": "message", "id": item, "status": "in_progress", "role": "assistant", "content": [] },
            }),
        ),
        event(
            w,
            "response.content_part.added",
            json!({
                "item_id": item, "output_index": 0, "content_index": 0,
                "part": { "type": "output_text", "text": "", "annotations": [] },
            }),
        ),
    ]
}

/// The events of one step of a streamed run: a text delta, the retry (`geode.retry`), the
/// end (the text, part and item done, then `response.completed` with the ledger), or an
/// `error` event.
pub fn events(id: u64, model: &str, step: Progress, w: &mut Written) -> Vec<Event> {
    let item = format!("msg_geode{id}");
    match step {
        Progress::Delta(delta) => {
            w.text.push_str(&delta);
            vec![event(
                w,
                "response.output_text.delta",
                json!({
                    "item_id": item, "output_index": 0, "content_index": 0, "delta": delta, "logprobs": [],
                }),
            )]
        }
        Progress::Retry(why) => {
            w.text.clear();
            vec![event(
                w,
                "geode.retry",
                json!({
                    "reason": why, "note": "the text streamed so far is void; the retry follows",
                }),
            )]
        }
        Progress::Done(Ok(answer)) => {
            let done = response(id, model, &answer);
            let text = done
                .pointer("/output/0/content/0/text")
                .cloned()
                .unwrap_or_default();
            vec![
                event(
                    w,
                    "response.output_text.done",
                    json!({
                        "item_id": item, "output_index": 0, "content_index": 0, "text": text, "logprobs": [],
                    }),
                ),
                event(
                    w,
                    "response.content_part.done",
                    json!({
                        "item_id": item, "output_index": 0, "content_index": 0,
                        "part": { "type": "output_text", "text": text, "annotations": [] },
                    }),
                ),
                event(
                    w,
                    "response.output_item.done",
                    json!({ "output_index": 0, "item": done["output"][0] }),
                ),
                event(w, "response.completed", json!({ "response": done })),
            ]
        }
        Progress::Done(Err(e)) => {
            let mut body = e.body();
            body["code"] = json!(e.code);
            body["message"] = json!(e.message);
            vec![event(w, "error", body)]
        }
    }
}
