//! `POST /v1/responses` and the stored responses, as the Open Responses specification and
//! OpenAI's Responses API shape them: the request read into geode's typed task, the answer
//! written back as a complete response object ([`object`]) or as the spec's events
//! ([`events`]), and kept ([`crate::store`]) so that `previous_response_id` continues it.
//!
//! | request field | becomes |
//! |---|---|
//! | `input` (a string, or items) | the prompt and the turns before it, as for Chat |
//! | `previous_response_id` | the stored conversation it names (its input and output items), before `input`; its `instructions` are not carried over, as the spec says |
//! | `instructions`, `system`/`developer` items | the system prompt |
//! | `text.format` `json_schema` / `json_object` / `text` | the caller's schema, `{"type": "object"}`, or free text |
//! | `max_output_tokens`, `temperature`, `reasoning.effort` | the task's budgets, sampling and effort |
//! | `store` (default true) | the response is kept, per inbound key |
//! | `geode.require`, `geode.repair`, `geode.cache` (body extension) | as the `x-geode-*` headers |
//! | `stream: true` | the spec's events in order, numbered from 0, then `[DONE]` |
//! | `tools`, `tool_choice` | the client's tools ([`crate::tools`]) |
//! | `function_call`, `function_call_output` items | the calls and their results, in the task's history |
//! | `input_image`, `input_file` parts of user messages | the user turn's images and documents ([`crate::media`]) |
//! | other items (`reasoning`, built-in tool calls, ...) | refused with `unsupported_parameter` |
//! | every other field | as [`crate::fields::RESPONSES`] says: kept, accepted at its default, or refused |
//!
//! The output text is the validated value serialized, so `client.responses.parse()` reads it.
//! A turn that ends in calls to the client's tools answers `function_call` items (arguments
//! valid against each tool's `parameters`); a message item comes with them only for free text
//! (with a format, the SDK would parse it; the text is then under `geode.text`).

pub mod events;
pub mod object;

use crate::convert::{self, turns_error};
use crate::error::ApiError;
use geode::Conversation;
use geode::Task;
use geode::vocab::Effort;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The fields of a Responses request that the gateway reads; [`crate::fields::RESPONSES`] has
/// already refused what it does not serve.
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
    /// `{"format": {...}, "verbosity": ...}`.
    #[serde(default)]
    pub text: Option<Value>,
    /// Output token limit.
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    /// The stored response this one continues.
    #[serde(default)]
    pub previous_response_id: Option<String>,
    /// Whether to keep this response (default true).
    #[serde(default)]
    pub store: Option<bool>,
    /// `{"effort": ..., "summary": ...}`.
    #[serde(default)]
    pub reasoning: Option<Reasoning>,
    /// The request's fields as sent, for the response to echo ([`object::Echo`]).
    #[serde(skip)]
    pub sent: Map<String, Value>,
}

/// The request's `reasoning`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reasoning {
    /// The effort, for routes that take one.
    #[serde(default)]
    pub effort: Option<Effort>,
    /// Reasoning summaries: none are written, so only null is taken.
    #[serde(default)]
    pub summary: Option<Value>,
    /// The older name of `summary`.
    #[serde(default)]
    pub generate_summary: Option<Value>,
}

impl ResponsesRequest {
    /// The request read from its body, which [`crate::fields::check`] has passed.
    pub fn read(body: Map<String, Value>) -> Result<Self, ApiError> {
        let mut req = Self::deserialize(&Value::Object(body.clone())).map_err(|e| {
            ApiError::invalid("body", format!("the body is not a valid request: {e}"))
        })?;
        req.sent = body;
        Ok(req)
    }

    /// This request's input as items, each with an id: what `input_items` lists and what a
    /// continuation of this response reads after the earlier context.
    pub fn input_items(&self, id: &str) -> Result<Vec<Value>, ApiError> {
        let items = match &self.input {
            Value::String(s) => vec![json!({ "type": "message", "role": "user", "content": s })],
            Value::Array(items) => items.clone(),
            Value::Null => Vec::new(),
            _ => {
                return Err(ApiError::invalid(
                    "input",
                    "input must be a string or a list of items",
                ));
            }
        };
        Ok(items
            .into_iter()
            .enumerate()
            .map(|(i, item)| object::input_item(item, &format!("{id}_{i}")))
            .collect())
    }

    /// The request as a task laid over `base`, after the `earlier` items of the conversation
    /// it continues.
    pub fn task(&self, mut base: Task, earlier: &[Value]) -> Result<Task, ApiError> {
        let mut turns = Conversation::new();
        for item in earlier.iter().chain(&self.input_items("in")?) {
            input_item(&mut turns, item)?;
        }
        turns.instructions(self.instructions.as_deref().unwrap_or_default());
        turns
            .into_prompt()
            .map_err(turns_error("input"))?
            .lay_into(&mut base);
        let text = self.text.as_ref().filter(|t| !t.is_null());
        if let Some(v) = text.and_then(|t| t.get("verbosity"))
            && !(v.is_null() || v == "medium")
        {
            return Err(ApiError::unsupported(
                "text.verbosity",
                "`text.verbosity` is served only at its default (medium)",
            ));
        }
        let format = text.and_then(|t| t.get("format")).filter(|f| !f.is_null());
        base.output = convert::output(
            format.map(|f| f.get("type").and_then(Value::as_str).unwrap_or("?")),
            format.and_then(|f| f.get("name")).and_then(Value::as_str),
            format.and_then(|f| f.get("schema")),
            "text.format",
        )?;
        if let Some(max) = self.max_output_tokens {
            base.budgets.max_tokens = max;
        }
        if let Some(r) = &self.reasoning {
            if [&r.summary, &r.generate_summary]
                .iter()
                .any(|s| s.as_ref().is_some_and(|s| !s.is_null()))
            {
                return Err(ApiError::unsupported(
                    "reasoning.summary",
                    "reasoning summaries are not written: send `summary: null`",
                ));
            }
            if let Some(effort) = r.effort {
                base.effort = effort;
            }
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
            let content = item.get("content").unwrap_or(&Value::Null);
            let (text, parts) = convert::content_parts(content, "input")?;
            let role = item.get("role").and_then(Value::as_str).unwrap_or("?");
            turns.push_parts(role, text, parts).map_err(bad)
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
