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
//! | `stream: true` | chunks as the text arrives, then one chunk with the final validation and the ledger, then `[DONE]` |
//! | `tools`, `n` > 1, `tool` turns | refused with `unsupported_parameter`: never silently dropped |
//!
//! The answer's `content` is the validated value serialized (not the model's raw text, which
//! may hold prose around it), so `client.chat.completions.parse()` reads it.

use crate::convert::{self, Turns};
use crate::error::ApiError;
use crate::stream::{Progress, Written};
use axum::response::sse::Event;
use geode::agent::task::{Answer, Task};
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::{SystemTime, UNIX_EPOCH};

/// The fields of a Chat Completions request that the gateway reads; every other field is
/// accepted and ignored, except those that change what an answer is (see the module table).
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
    /// Choices asked for.
    #[serde(default)]
    pub n: Option<u32>,
}

/// One turn.
#[derive(Debug, Deserialize)]
pub struct ChatMessage {
    /// `system`, `developer`, `user`, `assistant` or `tool`.
    pub role: String,
    /// A string, or a list of parts of which the `text` ones are read.
    #[serde(default)]
    pub content: Value,
}

impl ChatRequest {
    /// The request as a task laid over `base` (the gateway's defaults).
    pub fn task(&self, mut base: Task) -> Result<Task, ApiError> {
        self.head.refuse_unserved()?;
        if self.n.is_some_and(|n| n > 1) {
            return Err(ApiError::unsupported(
                "n",
                "only one choice (n = 1) is served",
            ));
        }
        let mut turns = Turns::default();
        for m in &self.messages {
            turns.push(
                &m.role,
                convert::content_text(&m.content, "messages")?,
                "messages",
            )?;
        }
        turns.into_task(&mut base, "messages")?;
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
        base.temperature = self.head.temperature;
        Ok(base)
    }
}

/// The Chat Completions answer for `answer`, under the `model` the client sent.
pub fn completion(id: u64, model: &str, answer: &Answer) -> Value {
    let content = match &answer.value {
        Some(v) => v.to_string(),
        None => answer.text.clone(),
    };
    let usage = &answer.usage;
    json!({
        "id": format!("chatcmpl-geode-{id}"),
        "object": "chat.completion",
        "created": SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        "model": model,
        "choices": [{
            "index": 0,
            "message": { "role": "assistant", "content": content, "refusal": null },
            "finish_reason": "stop",
            "logprobs": null,
        }],
        "usage": {
            "prompt_tokens": usage.input_tokens,
            "completion_tokens": usage.output_tokens,
            "total_tokens": usage.input_tokens + usage.output_tokens,
        },
        "geode": crate::ledger::body(&answer.ledger),
    })
}

fn chunk(id: u64, model: &str, choices: Value) -> Value {
    json!({
        "id": format!("chatcmpl-geode-{id}"),
        "object": "chat.completion.chunk",
        "created": SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        "model": model,
        "choices": choices,
    })
}

/// The chunks of one step of a streamed run (see [`crate::stream`]): a delta, the retry (a
/// chunk with no choice and `geode.event = "retry"`), the end (the finishing chunk with usage,
/// the ledger and the checked value under `geode`, then `[DONE]`), or an error event.
pub fn chunks(id: u64, model: &str, step: Progress, _: &mut Written) -> Vec<Event> {
    let data = |v: Value| Event::default().data(v.to_string());
    match step {
        Progress::Delta(text) => vec![data(chunk(
            id,
            model,
            json!([{ "index": 0, "delta": { "content": text }, "finish_reason": null }]),
        ))],
        Progress::Retry(why) => {
            let mut c = chunk(id, model, json!([]));
            c["geode"] = json!({ "event": "retry", "reason": why, "note": "the text streamed so far is void; the retry follows" });
            vec![data(c)]
        }
        Progress::Done(Ok(answer)) => {
            let mut c = chunk(
                id,
                model,
                json!([{ "index": 0, "delta": {}, "finish_reason": "stop" }]),
            );
            let usage = &answer.usage;
            c["usage"] = json!({
                "prompt_tokens": usage.input_tokens,
                "completion_tokens": usage.output_tokens,
                "total_tokens": usage.input_tokens + usage.output_tokens,
            });
            let mut geode = crate::ledger::body(&answer.ledger);
            geode["event"] = json!("final");
            geode["value"] = answer.value.clone().unwrap_or(Value::Null);
            c["geode"] = geode;
            vec![data(c), Event::default().data("[DONE]")]
        }
        Progress::Done(Err(e)) => vec![data(e.body())],
    }
}

/// The first chunk of a stream: the assistant's role.
pub fn opening(id: u64, model: &str, _: &mut Written) -> Vec<Event> {
    let c = chunk(
        id,
        model,
        json!([{ "index": 0, "delta": { "role": "assistant", "content": "" }, "finish_reason": null }]),
    );
    vec![Event::default().data(c.to_string())]
}
