//! What both endpoints share on the way in: a conversation's turns laid into a task (system
//! turns → the system prompt, the last user turn → the prompt, the turns before it → history),
//! text read out of content parts, and a requested format read into the task's output.

use crate::error::ApiError;
use geode::agent::task::{Output, Task};
use geode::llm::request::Message;
use geode::schema::ResponseSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The `geode` body extension.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Extension {
    /// The guarantee this request requires.
    #[serde(default)]
    pub require: Option<String>,
}

/// The turns of a request, in order.
#[derive(Debug, Default)]
pub struct Turns {
    system: Vec<String>,
    turns: Vec<(bool, String)>,
}

impl Turns {
    /// Adds one turn; `field` names the request field for errors.
    pub fn push(&mut self, role: &str, text: String, field: &'static str) -> Result<(), ApiError> {
        match role {
            "system" | "developer" => self.system.push(text),
            "user" => self.turns.push((true, text)),
            "assistant" => self.turns.push((false, text)),
            "tool" | "function" => {
                return Err(ApiError::unsupported(
                    field,
                    "tool turns are not served yet",
                ));
            }
            other => return Err(ApiError::invalid(field, format!("unknown role {other:?}"))),
        }
        Ok(())
    }

    /// Adds a system prompt given apart from the turns (the Responses API's `instructions`).
    pub fn instructions(&mut self, text: &str) {
        if !text.is_empty() {
            self.system.insert(0, text.to_owned());
        }
    }

    /// Lays the turns into `task`: the last must be the user's.
    pub fn into_task(mut self, task: &mut Task, field: &'static str) -> Result<(), ApiError> {
        match self.turns.pop() {
            Some((true, prompt)) => task.prompt = prompt,
            Some((false, _)) => {
                return Err(ApiError::invalid(field, "the last turn must be the user's"));
            }
            None => {
                return Err(ApiError::invalid(
                    field,
                    "the request must hold a user turn",
                ));
            }
        }
        task.history = self
            .turns
            .into_iter()
            .map(|(user, text)| {
                if user {
                    Message::user(text)
                } else {
                    Message::assistant(text)
                }
            })
            .collect();
        if !self.system.is_empty() {
            task.system = self.system.join("\n\n");
        }
        Ok(())
    }
}

/// The text of a message's `content`: a string, or the text parts of a list (`text`,
/// `input_text`, `output_text`); any other part is refused, never dropped.
pub fn content_text(content: &Value, field: &'static str) -> Result<String, ApiError> {
    match content {
        Value::String(s) => Ok(s.clone()),
        Value::Null => Ok(String::new()),
        Value::Array(parts) => {
            let mut text = String::new();
            for p in parts {
                let kind = p.get("type").and_then(Value::as_str).unwrap_or("?");
                match (kind, p.get("text").and_then(Value::as_str)) {
                    ("text" | "input_text" | "output_text", Some(t)) => text.push_str(t),
                    _ => {
                        return Err(ApiError::unsupported(
                            field,
                            format!("content parts of type {kind} are not supported; send text"),
                        ));
                    }
                }
            }
            Ok(text)
        }
        _ => Err(ApiError::invalid(
            field,
            "a message's content must be a string or a list of parts",
        )),
    }
}

/// The task's output for a format of `kind` (`text`, `json_object`, `json_schema`) with its
/// `name` and `schema`; `field` names the request field for errors.
pub fn output(
    kind: Option<&str>,
    name: Option<&str>,
    schema: Option<&Value>,
    field: &'static str,
) -> Result<Output, ApiError> {
    match kind {
        None | Some("text") => Ok(Output::Text),
        Some("json_object") => {
            let mut m = Map::new();
            m.insert("type".into(), json!("object"));
            ResponseSchema::from_value(Value::Object(m))
                .map(Output::Schema)
                .map_err(|e| ApiError::invalid(field, e.to_string()))
        }
        Some("json_schema") => {
            let Some(schema) = schema else {
                return Err(ApiError::invalid(
                    field,
                    "a json_schema format needs its schema",
                ));
            };
            let mut schema = schema.clone();
            // The format's name titles a schema that has none: it names it on the provider's wire.
            if let (Some(obj), Some(name)) = (schema.as_object_mut(), name) {
                obj.entry("title").or_insert_with(|| json!(name));
            }
            ResponseSchema::from_value(schema)
                .map(Output::Schema)
                .map_err(|e| ApiError::invalid(field, format!("unusable json_schema: {e}")))
        }
        Some(_) => Err(ApiError::invalid(
            field,
            "the format's type must be text, json_object or json_schema",
        )),
    }
}

/// The fields both endpoints read alike.
#[derive(Debug, Default, Deserialize)]
pub struct Head {
    /// The route.
    #[serde(default)]
    pub model: String,
    /// Streaming.
    #[serde(default)]
    pub stream: Option<bool>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Client-side tools (not served yet).
    #[serde(default)]
    pub tools: Option<Value>,
    /// geode's body extension (`{"require": "enforced"}`), for clients that cannot set headers.
    #[serde(default)]
    pub geode: Option<Extension>,
}

impl Head {
    /// Refuses what would change what an answer is if it were dropped.
    pub fn refuse_unserved(&self) -> Result<(), ApiError> {
        let tools = self.tools.as_ref();
        if tools.is_some_and(|t| !t.is_null() && t.as_array().is_none_or(|a| !a.is_empty())) {
            return Err(ApiError::unsupported(
                "tools",
                "client-side tools are not served yet: geode would have to drop them, and it never drops a parameter silently",
            ));
        }
        Ok(())
    }
}
