//! What both endpoints share: a conversation's errors as 400s (the turns are laid into the task
//! by [`geode::Conversation`]), text read out of content parts, a requested format read into the
//! task's output, and what an answer is written back with ([`Reply`]).

use crate::error::ApiError;
use geode::ConversationError;
use geode::ResponseSchema;
use geode::media::Media;
use geode::{Answer, Output, Task};
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

/// A request's conversation, with its errors as the 400s that name `field`.
pub fn turns_error(field: &'static str) -> impl Fn(ConversationError) -> ApiError {
    move |e| ApiError::invalid(field, e.to_string())
}

/// The text of a message's `content` where only text may be (system turns, tool output): a
/// string, or the text parts of a list; an image or file there is refused, never dropped.
pub fn content_text(content: &Value, field: &'static str) -> Result<String, ApiError> {
    let (text, parts) = content_parts(content, field)?;
    if !parts.is_empty() {
        return Err(ApiError::unsupported(
            field,
            "images and files are taken in user messages only",
        ));
    }
    Ok(text)
}

/// The text and the images and documents of a message's `content`: a string, or a list of
/// text parts (`text`, `input_text`, `output_text`), images (Chat `image_url`, Responses
/// `input_image`) and files (Chat `file`, Responses `input_file`); any other part is refused,
/// never dropped. Media comes from data URLs or `https` URLs only: the gateway reads no path.
pub fn content_parts(
    content: &Value,
    field: &'static str,
) -> Result<(String, Vec<Media>), ApiError> {
    match content {
        Value::String(s) => Ok((s.clone(), Vec::new())),
        Value::Null => Ok((String::new(), Vec::new())),
        Value::Array(items) => {
            let mut text = String::new();
            let mut parts = Vec::new();
            for p in items {
                let kind = p.get("type").and_then(Value::as_str).unwrap_or("?");
                match (kind, p.get("text").and_then(Value::as_str)) {
                    ("text" | "input_text" | "output_text", Some(t)) => text.push_str(t),
                    ("image_url" | "input_image" | "file" | "input_file", _) => {
                        parts.push(crate::media::part(p, kind, field)?);
                    }
                    _ => {
                        return Err(ApiError::unsupported(
                            field,
                            format!(
                                "content parts of type {kind} are not supported; send text, images or files"
                            ),
                        ));
                    }
                }
            }
            Ok((text, parts))
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
    /// The answer's id, unique across processes and machines ([`new_id`]).
    pub id: String,
    /// When the request was taken (Unix seconds).
    pub created_at: u64,
    /// The `model` the client sent, echoed back.
    pub model: String,
    /// Whether the request asked for a format (a schema or `json_object`).
    pub shaped: bool,
    /// The request's fields a Responses answer repeats ([`crate::responses::object::echo`]).
    pub echo: Map<String, Value>,
}

/// 128 random bits in hex: an id no other process or instance makes, unlike a counter.
pub fn new_id() -> String {
    let mut bytes = [0u8; 16];
    // The system's random source failing is a broken host; a time-and-counter id keeps the
    // answer flowing rather than failing it.
    if getrandom::fill(&mut bytes).is_err() {
        static FALLBACK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = FALLBACK.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes = (t ^ (u128::from(n) << 64) ^ u128::from(std::process::id())).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A run's end as both endpoints answer it. Free text cut at the output limit is an answer, as
/// OpenAI's APIs give it (Responses `incomplete`, Chat `finish_reason: "length"`): the status
/// says it is cut, and nothing claims it whole. An answer with a format that was cut has no
/// value to give, so it stays an error.
pub fn settle(
    result: Result<Answer, geode::RunError>,
    free_text: bool,
) -> Result<Answer, ApiError> {
    match result {
        Err(geode::RunError::Truncated { last, .. }) if free_text => Ok(*last),
        other => other.map_err(ApiError::from_run),
    }
}

/// Whether `answer` was cut at the output limit (only free text gets this far cut: [`settle`]).
pub fn cut(answer: &Answer) -> bool {
    answer.termination == geode::vocab::TerminationReason::Truncated
}

/// The time now, in Unix seconds.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Reply {
    /// What the client reads as the answer's text: the validated value serialized (never the
    /// model's raw text, which may hold prose, a wrapper or a repaired flaw), else the free
    /// text; beside calls to the client's tools, [`Self::beside_calls`]. `None`: no text.
    pub fn content(&self, answer: &Answer) -> Option<String> {
        match (&answer.value, answer.tool_calls.is_empty()) {
            (Some(v), _) => Some(v.to_string()),
            (None, true) => Some(answer.text.clone()),
            (None, false) => self.beside_calls(answer).as_str().map(str::to_owned),
        }
    }

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
