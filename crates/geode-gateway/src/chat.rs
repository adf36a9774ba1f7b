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
//! | `tools`, `n` > 1, `tool` turns, `stream` | refused with `unsupported_parameter`: never silently dropped |
//!
//! The answer's `content` is the validated value serialized (not the model's raw text, which
//! may hold prose around it), so `client.chat.completions.parse()` reads it.

use crate::error::ApiError;
use geode::agent::task::{Answer, Output, Task};
use geode::llm::request::Message;
use geode::schema::ResponseSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::time::{SystemTime, UNIX_EPOCH};

/// The fields of a Chat Completions request that the gateway reads; every other field is
/// accepted and ignored, except those that change what an answer is (see the module table).
#[derive(Debug, Deserialize)]
pub struct ChatRequest {
    /// The route.
    #[serde(default)]
    pub model: String,
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
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Streaming.
    #[serde(default)]
    pub stream: Option<bool>,
    /// Tools.
    #[serde(default)]
    pub tools: Option<Value>,
    /// Choices asked for.
    #[serde(default)]
    pub n: Option<u32>,
    /// geode's body extension (`{"require": "enforced"}`), for clients that cannot set headers.
    #[serde(default)]
    pub geode: Option<Extension>,
}

/// The `geode` body extension.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Extension {
    /// The guarantee this request requires.
    #[serde(default)]
    pub require: Option<String>,
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

impl ChatMessage {
    fn text(&self) -> Result<String, ApiError> {
        match &self.content {
            Value::String(s) => Ok(s.clone()),
            Value::Null => Ok(String::new()),
            Value::Array(parts) => parts
                .iter()
                .map(|p| {
                    match (
                        p.get("type").and_then(Value::as_str),
                        p.get("text").and_then(Value::as_str),
                    ) {
                        (Some("text"), Some(t)) => Ok(t),
                        (kind, _) => Err(ApiError::unsupported(
                            "messages",
                            format!(
                                "content parts of type {} are not supported; send text",
                                kind.unwrap_or("?")
                            ),
                        )),
                    }
                })
                .collect::<Result<Vec<_>, _>>()
                .map(|texts| texts.join("")),
            _ => Err(ApiError::invalid(
                "messages",
                "a message's content must be a string or a list of parts",
            )),
        }
    }
}

/// What the request's `response_format` asks for.
pub fn output(format: Option<&Value>) -> Result<Output, ApiError> {
    let Some(format) = format.filter(|f| !f.is_null()) else {
        return Ok(Output::Text);
    };
    let kind = format.get("type").and_then(Value::as_str);
    match kind {
        Some("text") => Ok(Output::Text),
        Some("json_object") => Ok(Output::Schema(object_schema())),
        Some("json_schema") => {
            let Some(schema) = format.get("json_schema").and_then(|j| j.get("schema")) else {
                return Err(ApiError::invalid(
                    "response_format",
                    "json_schema needs json_schema.schema",
                ));
            };
            let mut schema = schema.clone();
            // The format's name titles the schema where the schema has none (it names the
            // schema on the provider's wire).
            if let (Some(obj), Some(name)) = (
                schema.as_object_mut(),
                format.pointer("/json_schema/name").and_then(Value::as_str),
            ) {
                obj.entry("title").or_insert_with(|| json!(name));
            }
            ResponseSchema::from_value(schema)
                .map(Output::Schema)
                .map_err(|e| {
                    ApiError::invalid("response_format", format!("unusable json_schema: {e}"))
                })
        }
        _ => Err(ApiError::invalid(
            "response_format",
            "response_format.type must be text, json_object or json_schema",
        )),
    }
}

fn object_schema() -> ResponseSchema {
    let mut m = Map::new();
    m.insert("type".into(), json!("object"));
    // A literal object: never fails to build.
    ResponseSchema::from_value(Value::Object(m)).unwrap_or_default()
}

impl ChatRequest {
    /// The request as a task laid over `base` (the gateway's defaults).
    pub fn task(&self, mut base: Task) -> Result<Task, ApiError> {
        if self.stream == Some(true) {
            return Err(ApiError::unsupported(
                "stream",
                "streaming is not served yet; send stream: false",
            ));
        }
        if self
            .tools
            .as_ref()
            .is_some_and(|t| !t.is_null() && t.as_array().is_none_or(|a| !a.is_empty()))
        {
            return Err(ApiError::unsupported(
                "tools",
                "client-side tools are not served yet: geode would have to drop them, and it never drops a parameter silently",
            ));
        }
        if self.n.is_some_and(|n| n > 1) {
            return Err(ApiError::unsupported(
                "n",
                "only one choice (n = 1) is served",
            ));
        }
        let mut system = Vec::new();
        let mut turns = Vec::new();
        for m in &self.messages {
            let text = m.text()?;
            match m.role.as_str() {
                "system" | "developer" => system.push(text),
                "user" => turns.push(Message::user(text)),
                "assistant" => turns.push(Message::assistant(text)),
                "tool" | "function" => {
                    return Err(ApiError::unsupported(
                        "messages",
                        "tool turns are not served yet",
                    ));
                }
                other => {
                    return Err(ApiError::invalid(
                        "messages",
                        format!("unknown role {other:?}"),
                    ));
                }
            }
        }
        let Some(last) = self
            .messages
            .iter()
            .rev()
            .find(|m| !matches!(m.role.as_str(), "system" | "developer"))
        else {
            return Err(ApiError::invalid(
                "messages",
                "messages must hold a user turn",
            ));
        };
        if last.role != "user" {
            return Err(ApiError::invalid(
                "messages",
                "the last turn must be the user's",
            ));
        }
        turns.pop();
        base.prompt = last.text()?;
        base.history = turns;
        if !system.is_empty() {
            base.system = system.join("\n\n");
        }
        base.output = output(self.response_format.as_ref())?;
        if let Some(max) = self.max_completion_tokens.or(self.max_tokens) {
            base.budgets.max_tokens = max;
        }
        base.temperature = self.temperature;
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
