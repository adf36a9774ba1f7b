//! `POST /v1/chat/completions`: OpenAI's Chat Completions request read into geode's typed task,
//! and the answer written back in its shape.
//!
//! | request field | becomes |
//! |---|---|
//! | `messages` | `system`/`developer` turns → the system prompt; the last turn (a `user` turn) → the prompt; the turns before it → the task's history |
//! | `response_format` `json_schema` | the caller's schema: put on the route's wire, validated in full, one retry with feedback |
//! | `response_format` `json_object` | the schema `{"type": "object"}` |
//! | `max_completion_tokens` / `max_tokens`, `temperature` | the task's budgets and sampling |
//! | `geode.require` (body extension) | raises the policy, as the `x-geode-require` header does |
//! | `geode.repair` (body extension) | lets the repair tier read this answer (or not), as the `x-geode-repair` header does |
//! | `geode.cache` (body extension) | `false`: the response cache (`[cache]`) neither answers nor keeps this request, as `x-geode-cache: false` does |
//! | `stream: true` | chunks as the text arrives, then one chunk with the final validation and the ledger, then `[DONE]` |
//! | `tools`, `tool_choice` | the client's tools ([`crate::tools`]) |
//! | `assistant` turns' `tool_calls`, `tool` turns | the calls and their results, in the task's history |
//! | `reasoning_effort` | the task's reasoning effort |
//! | every other field | as [`crate::fields::CHAT`] says: kept, accepted at its default, or refused |
//!
//! The answer's `content` is the validated value serialized (not the model's raw text, which
//! may hold prose around it), so `client.chat.completions.parse()` reads it. A turn that ends in
//! calls to the client's tools answers `finish_reason: "tool_calls"` with the calls (their
//! `arguments` valid against each tool's `parameters`) and `content: null` when the request has a
//! format (text said beside the calls is then under `geode.text`, since the SDK would parse it).

use crate::convert::{self, Reply, turns_error};
use crate::error::ApiError;
use crate::stream::{Progress, Written};
use axum::response::sse::Event;
use geode::Conversation;
use geode::{Answer, Task};
use serde::Deserialize;
use serde_json::{Value, json};

/// The fields of a Chat Completions request that the gateway reads; [`crate::fields::CHAT`]
/// has already refused what it does not serve.
#[derive(Debug, Deserialize)]
pub struct ChatRequest {
    /// What both endpoints read alike: route, stream, sampling, tools, geode's extension.
    #[serde(flatten)]
    pub head: convert::Head,
    /// The conversation.
    #[serde(default)]
    pub messages: Vec<ChatMessage>,
    /// What the answer must be.
    #[serde(default)]
    pub response_format: Option<Value>,
    /// Output token limit (the current name).
    #[serde(default)]
    pub max_completion_tokens: Option<u32>,
    /// Output token limit (the older name).
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// The reasoning effort, for routes that take one.
    #[serde(default)]
    pub reasoning_effort: Option<geode::vocab::Effort>,
}

/// One turn.
#[derive(Debug, Deserialize)]
pub struct ChatMessage {
    /// `system`, `developer`, `user`, `assistant` or `tool`.
    pub role: String,
    /// A string, or a list of parts of which the `text` ones are read.
    #[serde(default)]
    pub content: Value,
    /// An assistant turn's calls to the client's tools.
    #[serde(default)]
    pub tool_calls: Vec<ChatToolCall>,
    /// The call a `tool` turn answers.
    #[serde(default)]
    pub tool_call_id: Option<String>,
}

/// One call in an assistant turn.
#[derive(Debug, Deserialize)]
pub struct ChatToolCall {
    /// The call id.
    pub id: String,
    /// The tool and its arguments.
    pub function: ChatFunction,
}

/// A called function.
#[derive(Debug, Deserialize)]
pub struct ChatFunction {
    /// The tool name.
    pub name: String,
    /// The arguments, as JSON text.
    #[serde(default)]
    pub arguments: String,
}

impl ChatRequest {
    /// The request as a task laid over `base` (the gateway's defaults).
    pub fn task(&self, mut base: Task) -> Result<Task, ApiError> {
        let mut turns = Conversation::new();
        let bad = turns_error("messages");
        for m in &self.messages {
            match (m.role.as_str(), &m.tool_call_id) {
                ("tool", Some(id)) => {
                    let text = convert::content_text(&m.content, "messages")?;
                    turns.push_tool_result(id, text).map_err(&bad)?;
                }
                (role, _) => {
                    let (text, parts) = convert::content_parts(&m.content, "messages")?;
                    turns.push_parts(role, text, parts).map_err(&bad)?;
                }
            }
            for call in &m.tool_calls {
                let f = &call.function;
                turns
                    .push_tool_call(&call.id, &f.name, &f.arguments)
                    .map_err(&bad)?;
            }
        }
        turns.into_prompt().map_err(&bad)?.lay_into(&mut base);
        let format = self.response_format.as_ref().filter(|f| !f.is_null());
        base.output = convert::output(
            format.map(|f| f.get("type").and_then(Value::as_str).unwrap_or("?")),
            format
                .and_then(|f| f.pointer("/json_schema/name"))
                .and_then(Value::as_str),
            format.and_then(|f| f.pointer("/json_schema/schema")),
            "response_format",
        )?;
        if let Some(max) = self.max_completion_tokens.or(self.max_tokens) {
            base.budgets.max_tokens = max;
        }
        if let Some(effort) = self.reasoning_effort {
            base.effort = effort;
        }
        self.head.apply(&mut base, crate::tools::Shape::Chat)?;
        Ok(base)
    }
}

/// The Chat Completions answer for `answer`.
pub fn completion(r: &Reply, answer: &Answer) -> Value {
    let calls = tool_calls(answer);
    let mut message = json!({ "role": "assistant", "content": r.content(answer), "refusal": null });
    if !calls.is_empty() {
        message["tool_calls"] = json!(calls);
    }
    json!({
        "id": format!("chatcmpl-{}", r.id),
        "object": "chat.completion",
        "created": r.created_at,
        "model": r.model,
        "choices": [{
            "index": 0,
            "message": message,
            "finish_reason": finish_reason(answer),
            "logprobs": null,
        }],
        "usage": usage(answer),
        "service_tier": "default",
        "system_fingerprint": null,
        "geode": r.geode(answer),
    })
}

fn finish_reason(answer: &Answer) -> &'static str {
    if !answer.tool_calls.is_empty() {
        "tool_calls"
    } else if crate::convert::cut(answer) {
        "length"
    } else {
        "stop"
    }
}

fn usage(answer: &Answer) -> Value {
    let usage = &answer.usage;
    json!({
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": { "cached_tokens": usage.cached_input_tokens },
        "completion_tokens_details": { "reasoning_tokens": 0 },
    })
}

/// The answer's calls to the client's tools, as Chat writes them.
fn tool_calls(answer: &Answer) -> Vec<Value> {
    answer
        .tool_calls
        .iter()
        .map(|t| {
            json!({
                "id": t.id,
                "type": "function",
                "function": { "name": t.name, "arguments": t.input.to_string() },
            })
        })
        .collect()
}

fn chunk(r: &Reply, choices: Value) -> Value {
    json!({
        "id": format!("chatcmpl-{}", r.id),
        "object": "chat.completion.chunk",
        "created": r.created_at,
        "model": r.model,
        "service_tier": "default",
        "system_fingerprint": null,
        "choices": choices,
    })
}

/// The chunks of one step of a streamed run (see [`crate::stream`]): a delta, the retry (a
/// chunk with no choice and `geode.event = "retry"`), the end (the calls to the client's tools,
/// if any, then the finishing chunk with usage, the ledger and the checked value under `geode`,
/// then `[DONE]`), or an error event.
pub fn chunks(r: &Reply, step: Progress, _: &mut Written) -> Vec<Event> {
    let data = |v: Value| Event::default().data(v.to_string());
    match step {
        Progress::Delta(text) => vec![data(chunk(
            r,
            json!([{ "index": 0, "delta": { "content": text }, "finish_reason": null }]),
        ))],
        Progress::Started => Vec::new(),
        Progress::Retry(why) => {
            let mut c = chunk(r, json!([]));
            c["geode"] = json!({ "event": "retry", "reason": why, "note": "the text streamed so far is void; the retry follows" });
            vec![data(c)]
        }
        Progress::Done(Ok(answer)) => {
            let mut events = Vec::new();
            let calls: Vec<Value> = tool_calls(&answer)
                .into_iter()
                .enumerate()
                .map(|(i, mut c)| {
                    c["index"] = json!(i);
                    c
                })
                .collect();
            if !calls.is_empty() {
                events.push(data(chunk(
                    r,
                    json!([{ "index": 0, "delta": { "tool_calls": calls }, "finish_reason": null }]),
                )));
            }
            let mut c = chunk(
                r,
                json!([{ "index": 0, "delta": {}, "finish_reason": finish_reason(&answer) }]),
            );
            c["usage"] = usage(&answer);
            let mut geode = r.geode(&answer);
            geode["event"] = json!("final");
            geode["value"] = answer.value.clone().unwrap_or(Value::Null);
            c["geode"] = geode;
            events.extend([data(c), Event::default().data("[DONE]")]);
            events
        }
        Progress::Done(Err(e)) => vec![data(e.body())],
    }
}

/// The first chunk of a stream: the assistant's role.
pub fn opening(r: &Reply, _: &mut Written) -> Vec<Event> {
    let c = chunk(
        r,
        json!([{ "index": 0, "delta": { "role": "assistant", "content": "" }, "finish_reason": null }]),
    );
    vec![Event::default().data(c.to_string())]
}
