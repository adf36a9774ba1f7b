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
//! | `geode.repair` (body extension) | lets the repair tier read this answer (or not), as the `x-geode-repair` header does |
//! | `geode.cache` (body extension) | `false`: the response cache (`[cache]`) neither answers nor keeps this request, as `x-geode-cache: false` does |
//! | `stream: true` | the Responses events in order (`response.created` … `response.output_text.delta` … `response.completed`, whose response carries the ledger) |
//! | `tools`, `tool_choice` | the client's tools ([`crate::tools`]) |
//! | `function_call`, `function_call_output` items | the calls and their results, in the task's history |
//! | other items (`reasoning`, built-in tool calls, ...) | refused with `unsupported_parameter` |
//! | Chat Completions' `response_format`, `messages`, `max_tokens`, `max_completion_tokens` | refused with `unsupported_parameter`, naming this endpoint's field |
//!
//! The output text is the validated value serialized, so `client.responses.parse()` reads it.
//! A turn that ends in calls to the client's tools answers `function_call` items (arguments
//! valid against each tool's `parameters`); a message item comes with them only for free text
//! (with a format, the SDK would parse it; the text is then under `geode.text`).

use crate::convert::{self, Reply, turns_error};
use crate::error::ApiError;
use crate::stream::{Progress, Written};
use axum::response::sse::Event;
use geode::Conversation;
use geode::ToolUse;
use geode::{Answer, Task};
use serde::Deserialize;
use serde::de::IgnoredAny;
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
    /// Chat Completions' spelling of fields this endpoint names otherwise: refused, never
    /// dropped ([`convert::refuse_foreign`]).
    #[serde(default)]
    response_format: Option<IgnoredAny>,
    #[serde(default)]
    messages: Option<IgnoredAny>,
    #[serde(default)]
    max_tokens: Option<IgnoredAny>,
    #[serde(default)]
    max_completion_tokens: Option<IgnoredAny>,
}

impl ResponsesRequest {
    /// The request as a task laid over `base`.
    pub fn task(&self, mut base: Task) -> Result<Task, ApiError> {
        convert::refuse_foreign(
            "Responses",
            &[
                (
                    "response_format",
                    self.response_format.is_some(),
                    "text.format",
                ),
                ("messages", self.messages.is_some(), "input"),
                ("max_tokens", self.max_tokens.is_some(), "max_output_tokens"),
                (
                    "max_completion_tokens",
                    self.max_completion_tokens.is_some(),
                    "max_output_tokens",
                ),
            ],
        )?;
        let mut turns = Conversation::new();
        match &self.input {
            Value::String(s) => turns
                .push("user", s.clone())
                .map_err(turns_error("input"))?,
            Value::Array(items) => {
                for item in items {
                    input_item(&mut turns, item)?;
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
        turns
            .into_prompt()
            .map_err(turns_error("input"))?
            .lay_into(&mut base);
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
        self.head.apply(&mut base, crate::tools::Shape::Responses)?;
        Ok(base)
    }
}

/// One input item: a message, a call to the client's tool, or its output.
fn input_item(turns: &mut Conversation, item: &Value) -> Result<(), ApiError> {
    let field = |name: &str| item.get(name).and_then(Value::as_str).unwrap_or_default();
    let bad = turns_error("input");
    match item
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("message")
    {
        "message" => {
            let text = convert::content_text(item.get("content").unwrap_or(&Value::Null), "input")?;
            let role = item.get("role").and_then(Value::as_str).unwrap_or("?");
            turns.push(role, text).map_err(bad)
        }
        "function_call" => turns
            .push_tool_call(field("call_id"), field("name"), field("arguments"))
            .map_err(bad),
        "function_call_output" => {
            let output = match item.get("output") {
                Some(Value::String(s)) => s.clone(),
                Some(parts) => convert::content_text(parts, "input")?,
                None => String::new(),
            };
            turns
                .push_tool_result(field("call_id"), output)
                .map_err(bad)
        }
        kind => Err(ApiError::unsupported(
            "input",
            format!("input items of type {kind} are not served"),
        )),
    }
}

/// The completed response for `answer`.
pub fn response(r: &Reply, answer: &Answer) -> Value {
    let with_message = answer.tool_calls.is_empty() || !r.beside_calls(answer).is_null();
    completed(r, answer, with_message)
}

/// The text of the answer's message item: the checked value serialized, else the text.
fn completed(r: &Reply, answer: &Answer, with_message: bool) -> Value {
    let usage = &answer.usage;
    let mut out = shell(r, "completed");
    let mut items = Vec::new();
    if with_message {
        items.push(message(
            r.id,
            "completed",
            &r.content(answer).unwrap_or_default(),
        ));
    }
    items.extend(
        answer
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, t)| function_call(r.id, i, t, "completed")),
    );
    out["output"] = json!(items);
    out["usage"] = json!({
        "input_tokens": usage.input_tokens,
        "input_tokens_details": { "cached_tokens": usage.cached_input_tokens },
        "output_tokens": usage.output_tokens,
        "output_tokens_details": { "reasoning_tokens": 0 },
        "total_tokens": usage.input_tokens + usage.output_tokens,
    });
    out["geode"] = r.geode(answer);
    out
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

fn function_call(id: u64, i: usize, call: &ToolUse, status: &str) -> Value {
    json!({
        "type": "function_call",
        "id": format!("fc_geode{id}_{i}"),
        "call_id": call.id,
        "name": call.name,
        "arguments": call.input.to_string(),
        "status": status,
    })
}

fn shell(r: &Reply, status: &str) -> Value {
    json!({
        "id": format!("resp_geode{}", r.id),
        "object": "response",
        "created_at": SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        "status": status,
        "model": r.model,
        "output": [],
        "parallel_tool_calls": true,
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

/// The opening events: the response created and in progress. The message item opens with the
/// first text, so that a turn of tool calls alone has none.
pub fn opening(r: &Reply, w: &mut Written) -> Vec<Event> {
    vec![
        event(
            w,
            "response.created",
            json!({ "response": shell(r, "in_progress") }),
        ),
        event(
            w,
            "response.in_progress",
            json!({ "response": shell(r, "in_progress") }),
        ),
    ]
}

/// The message item and its text part added, once.
fn open_message(r: &Reply, w: &mut Written) -> Vec<Event> {
    if w.message_open {
        return Vec::new();
    }
    w.message_open = true;
    let item = format!("msg_geode{}", r.id);
    vec![
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
/// end (the text, part and item done, the calls to the client's tools, then
/// `response.completed` with the ledger), or an `error` event.
pub fn events(r: &Reply, step: Progress, w: &mut Written) -> Vec<Event> {
    let item = format!("msg_geode{}", r.id);
    match step {
        Progress::Delta(delta) => {
            let mut events = open_message(r, w);
            w.text.push_str(&delta);
            events.push(event(
                w,
                "response.output_text.delta",
                json!({
                    "item_id": item, "output_index": 0, "content_index": 0, "delta": delta, "logprobs": [],
                }),
            ));
            events
        }
        Progress::Started => Vec::new(),
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
            let with_message = w.message_open || answer.tool_calls.is_empty();
            let done = completed(r, &answer, with_message);
            let mut events = Vec::new();
            if with_message {
                events.extend(open_message(r, w));
                let text = r.content(&answer).unwrap_or_default();
                events.extend([
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
                ]);
            }
            let first = usize::from(with_message);
            for (i, call) in answer.tool_calls.iter().enumerate() {
                let index = first + i;
                let added = function_call(r.id, i, call, "in_progress");
                let call_item = added["id"].clone();
                let arguments = call.input.to_string();
                let mut opened = added.clone();
                opened["arguments"] = json!("");
                events.extend([
                    event(
                        w,
                        "response.output_item.added",
                        json!({ "output_index": index, "item": opened }),
                    ),
                    event(
                        w,
                        "response.function_call_arguments.delta",
                        json!({ "item_id": call_item, "output_index": index, "delta": arguments }),
                    ),
                    event(
                        w,
                        "response.function_call_arguments.done",
                        json!({ "item_id": call_item, "output_index": index, "arguments": arguments }),
                    ),
                    event(
                        w,
                        "response.output_item.done",
                        json!({ "output_index": index, "item": done["output"][index] }),
                    ),
                ]);
            }
            events.push(event(w, "response.completed", json!({ "response": done })));
            events
        }
        Progress::Done(Err(e)) => {
            let mut body = e.body();
            body["code"] = json!(e.code);
            body["message"] = json!(e.message);
            vec![event(w, "error", body)]
        }
    }
}
