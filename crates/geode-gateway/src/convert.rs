//! What both endpoints share: a conversation's turns laid into a task (system turns → the
//! system prompt, the last user turn → the prompt, the turns before it → history; calls to the
//! client's tools and their results as they are), text read out of content parts, a requested
//! format read into the task's output, and what an answer is written back with ([`Reply`]).

use crate::error::ApiError;
use geode::agent::task::{Answer, Output, Task};
use geode::llm::request::{ContentBlock, Message, Role};
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
    /// Whether this request's answer may be repaired (over `x-geode-repair` and the config).
    #[serde(default)]
    pub repair: Option<bool>,
    /// Whether the response cache may answer this request and keep its answer (over
    /// `x-geode-cache`; default true when `[cache]` is set).
    #[serde(default)]
    pub cache: Option<bool>,
}

/// The turns of a request, in order.
#[derive(Debug, Default)]
pub struct Turns {
    system: Vec<String>,
    turns: Vec<Message>,
}

impl Turns {
    /// Adds one text turn; `field` names the request field for errors.
    pub fn push(&mut self, role: &str, text: String, field: &'static str) -> Result<(), ApiError> {
        match role {
            "system" | "developer" => self.system.push(text),
            "user" => self.turns.push(Message::user(text)),
            "assistant" => self.turns.push(Message::assistant(text)),
            "tool" | "function" => {
                return Err(ApiError::invalid(
                    field,
                    "a tool turn must name the call it answers",
                ));
            }
            other => return Err(ApiError::invalid(field, format!("unknown role {other:?}"))),
        }
        Ok(())
    }

    /// Adds a call the model made to one of the client's tools, with its arguments as JSON text:
    /// to the assistant turn before it when there is one (an empty one gives its text up).
    pub fn push_tool_call(
        &mut self,
        id: &str,
        name: &str,
        arguments: &str,
        field: &'static str,
    ) -> Result<(), ApiError> {
        let input = serde_json::from_str::<Value>(arguments)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| {
                ApiError::invalid(
                    field,
                    format!("the arguments of tool call {id:?} are not a JSON object"),
                )
            })?;
        let call = ContentBlock::ToolUse {
            id: id.to_owned(),
            name: name.to_owned(),
            input,
        };
        match self.turns.last_mut() {
            Some(m) if m.role == Role::Assistant => {
                m.content
                    .retain(|b| !matches!(b, ContentBlock::Text { text } if text.is_empty()));
                m.content.push(call);
            }
            _ => self.turns.push(Message {
                role: Role::Assistant,
                content: vec![call],
            }),
        }
        Ok(())
    }

    /// Adds the result of the client's tool call `id`, which must be a call of the assistant
    /// turn before it; results that follow each other travel in one user turn.
    pub fn push_tool_result(
        &mut self,
        id: &str,
        output: String,
        field: &'static str,
    ) -> Result<(), ApiError> {
        let asked = self
            .turns
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
            .is_some_and(|m| {
                m.content
                    .iter()
                    .any(|b| matches!(b, ContentBlock::ToolUse { id: call, .. } if call == id))
            });
        if !asked {
            return Err(ApiError::invalid(
                field,
                format!(
                    "the tool result for {id:?} answers no call of the assistant turn before it"
                ),
            ));
        }
        let result = ContentBlock::ToolResult {
            tool_use_id: id.to_owned(),
            content: output,
            is_error: false,
        };
        match self.turns.last_mut() {
            Some(m) if is_tool_results(m) => m.content.push(result),
            _ => self.turns.push(Message {
                role: Role::User,
                content: vec![result],
            }),
        }
        Ok(())
    }

    /// Adds a system prompt given apart from the turns (the Responses API's `instructions`).
    pub fn instructions(&mut self, text: &str) {
        if !text.is_empty() {
            self.system.insert(0, text.to_owned());
        }
    }

    /// Lays the turns into `task`: the last must be the user's, a text (the prompt) or tool
    /// results (then the task continues the conversation, with an empty prompt).
    pub fn into_task(mut self, task: &mut Task, field: &'static str) -> Result<(), ApiError> {
        match self.turns.last() {
            Some(m) if is_tool_results(m) => task.prompt = String::new(),
            Some(m) if m.role == Role::User => {
                task.prompt = m.text();
                self.turns.pop();
            }
            Some(_) => {
                return Err(ApiError::invalid(
                    field,
                    "the last turn must be the user's or a tool's",
                ));
            }
            None => {
                return Err(ApiError::invalid(
                    field,
                    "the request must hold a user turn",
                ));
            }
        }
        task.history = self.turns;
        if !self.system.is_empty() {
            task.system = self.system.join("\n\n");
        }
        Ok(())
    }
}

fn is_tool_results(m: &Message) -> bool {
    m.role == Role::User
        && m.content
            .iter()
            .all(|b| matches!(b, ContentBlock::ToolResult { .. }))
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
    /// Client-side tools ([`crate::tools`]).
    #[serde(default)]
    pub tools: Option<Value>,
    /// How the model may use them.
    #[serde(default)]
    pub tool_choice: Option<Value>,
    /// geode's body extension (`{"require": "enforced"}`), for clients that cannot set headers.
    #[serde(default)]
    pub geode: Option<Extension>,
}

impl Head {
    /// Lays the shared fields into `task`: sampling, and the tools read in `shape`.
    pub fn apply(&self, task: &mut Task, shape: crate::tools::Shape) -> Result<(), ApiError> {
        let (tools, choice) =
            crate::tools::read(self.tools.as_ref(), self.tool_choice.as_ref(), shape)?;
        task.tools = tools;
        task.tool_choice = choice;
        task.temperature = self.temperature;
        Ok(())
    }
}

/// What every answer to one request is written with.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The request's number (the answer's id).
    pub id: u64,
    /// The `model` the client sent, echoed back.
    pub model: String,
    /// Whether the request asked for a format (a schema or `json_object`).
    pub shaped: bool,
}

impl Reply {
    /// The text said beside calls to the client's tools, where the SDK reads answer text: the
    /// text itself for a free-text request; `null` when the request has a format, since the SDK
    /// would parse it as the answer (it is then under `geode.text`).
    pub fn beside_calls(&self, answer: &Answer) -> Value {
        if self.shaped || answer.text.is_empty() {
            Value::Null
        } else {
            json!(answer.text)
        }
    }

    /// The body's `geode` object for `answer` ([`crate::ledger::body`]), with the text kept out
    /// of the content ([`Self::beside_calls`]).
    pub fn geode(&self, answer: &Answer) -> Value {
        let mut g = crate::ledger::body(&answer.ledger);
        if self.shaped && !answer.tool_calls.is_empty() && !answer.text.is_empty() {
            g["text"] = json!(answer.text);
        }
        g
    }
}
