//! Chat Completions SSE chunks: [`classify`] one `data:` line, fold them with [`StreamFold`]
//! (sans-IO).
//!
//! A streamed reply is a run of `chat.completion.chunk` objects, each with `choices[].delta`,
//! then `data: [DONE]`. Only choice 0 is read (geode never asks for `n > 1`).
//!
//! | `data:` | event | effect |
//! |---|---|---|
//! | `[DONE]` | [`Event::Done`] | the terminal event: [`Flow::Done`] |
//! | an object with `choices` and/or a non-null `usage` | [`Event::Chunk`] | `delta.content` and `delta.refusal` append text; `delta.tool_calls[i]` opens call `i` (its `id`, `function.name`) and appends `function.arguments`; a non-null `finish_reason` and `usage` are kept (the last wins; `usage` comes on the last chunk, or on its own chunk with `choices: []` under `stream_options.include_usage`) |
//! | an object with `error` | [`Event::Error`] | [`ParseError::Provider`] (GLM's codes, as in a JSON reply) |
//! | any other JSON object | [`Event::Unknown`] | skipped (providers add fields and keep-alives) |
//! | not JSON, or `choices` / a delta of the wrong shape | – | [`ParseError::Corrupt`] |
//!
//! `reasoning_content` (GLM's thinking) and other delta fields are ignored. [`StreamFold::finish`]
//! without `[DONE]` is [`ParseError::Truncated`]; the folded text and tool arguments may not pass the
//! fold's budget ([`ParseError::TooLarge`]). The folded answer becomes an `AdapterResponse` by the
//! same rules as a JSON reply (`finish_reason` table and `network_error` in `response.rs`).

use super::ParseError;
use super::response::{Answer, WireError, WireUsage, arguments_text};
use crate::llm::request::AdapterResponse;
use crate::llm::wire::parse_error::TextBudget;
use serde::Deserialize;
use serde_json::Value;

/// One classified `data:` line.
#[derive(Debug)]
pub enum Event {
    /// A chunk: deltas of choice 0, and usage when it carries it.
    Chunk(Box<Chunk>),
    /// `data: [DONE]`.
    Done,
    /// An in-band `error` object.
    Error(ParseError),
    /// A JSON object that is none of the above.
    Unknown,
}

/// A decoded `chat.completion.chunk`.
#[derive(Debug, Deserialize)]
pub struct Chunk {
    #[serde(default)]
    choices: Option<Vec<ChunkChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<WireError>,
}

#[derive(Debug, Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    index: u64,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<DeltaToolCall>>,
}

#[derive(Debug, Deserialize)]
struct DeltaToolCall {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<DeltaFunction>,
}

#[derive(Debug, Deserialize)]
struct DeltaFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

fn corrupt(message: impl ToString) -> ParseError {
    ParseError::Corrupt {
        what: "chat.completion.chunk".into(),
        message: message.to_string(),
    }
}

/// Classifies one `data:` line (the module table).
pub fn classify(data: &str) -> Result<Event, ParseError> {
    if data.trim() == "[DONE]" {
        return Ok(Event::Done);
    }
    let chunk: Chunk = serde_json::from_str(data).map_err(corrupt)?;
    Ok(match chunk {
        Chunk {
            error: Some(err), ..
        } => Event::Error(err.into()),
        Chunk {
            choices: None,
            usage: None,
            ..
        } => Event::Unknown,
        chunk => Event::Chunk(Box::new(chunk)),
    })
}

/// Whether the stream is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep reading.
    Continue,
    /// `[DONE]` arrived.
    Done,
}

/// One tool call being folded.
#[derive(Debug, Default)]
struct OpenCall {
    id: String,
    name: String,
    arguments: String,
}

/// Folds classified chunks into an [`AdapterResponse`] (see the module table); the default
/// budget is [`crate::llm::call::DEFAULT_MAX_RESPONSE_BYTES`].
#[derive(Debug, Default)]
pub struct StreamFold {
    text: String,
    refusal: Option<String>,
    calls: Vec<OpenCall>,
    finish_reason: Option<String>,
    usage: Option<WireUsage>,
    done: bool,
    budget: TextBudget,
}

impl StreamFold {
    /// An empty fold whose text, refusal and tool arguments may not pass `bytes`.
    pub fn with_max_text_bytes(bytes: u64) -> Self {
        Self {
            budget: TextBudget::new(bytes),
            ..Self::default()
        }
    }

    /// The answer text folded so far (it only grows).
    pub fn text_so_far(&self) -> &str {
        &self.text
    }

    /// Classifies and applies one `data:` line.
    pub fn push(&mut self, data: &str) -> Result<Flow, ParseError> {
        if self.done {
            return Ok(Flow::Done);
        }
        match classify(data)? {
            Event::Done => {
                self.done = true;
                return Ok(Flow::Done);
            }
            Event::Error(e) => return Err(e),
            Event::Unknown => tracing::debug!("Chat stream chunk without choices skipped"),
            Event::Chunk(chunk) => self.apply(*chunk)?,
        }
        Ok(Flow::Continue)
    }

    fn apply(&mut self, chunk: Chunk) -> Result<(), ParseError> {
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage);
        }
        let Some(choice) = chunk.choices.into_iter().flatten().find(|c| c.index == 0) else {
            return Ok(());
        };
        if let Some(finish) = choice.finish_reason {
            self.finish_reason = Some(finish);
        }
        let delta = choice.delta.unwrap_or_default();
        if let Some(text) = delta.content {
            self.budget.hold(text.len())?;
            self.text.push_str(&text);
        }
        if let Some(text) = delta.refusal {
            self.budget.hold(text.len())?;
            self.refusal.get_or_insert_with(String::new).push_str(&text);
        }
        for call in delta.tool_calls.into_iter().flatten() {
            self.apply_call(call)?;
        }
        Ok(())
    }

    /// A tool-call delta: `index` names the call (a new index opens it; without one, the
    /// delta continues the last call, or opens the first).
    fn apply_call(&mut self, call: DeltaToolCall) -> Result<(), ParseError> {
        let index = call
            .index
            .unwrap_or_else(|| self.calls.len().saturating_sub(1));
        if index > self.calls.len() {
            return Err(corrupt(format!(
                "tool call {index} before call {}",
                self.calls.len()
            )));
        }
        if index == self.calls.len() {
            self.calls.push(OpenCall::default());
        }
        let function = call.function;
        let (name, arguments) = function.map_or((None, None), |f| (f.name, f.arguments));
        let arguments = arguments.map(|a| arguments_text(Some(a)));
        self.budget
            .hold(arguments.as_ref().map_or(0, String::len))?;
        let Some(open) = self.calls.get_mut(index) else {
            return Err(corrupt("tool call index out of range"));
        };
        if let Some(id) = call.id.filter(|id| !id.is_empty()) {
            open.id = id;
        }
        if let Some(name) = name.filter(|n| !n.is_empty()) {
            open.name = name;
        }
        if let Some(arguments) = arguments {
            open.arguments.push_str(&arguments);
        }
        Ok(())
    }

    /// The response. Without `[DONE]` this is [`ParseError::Truncated`].
    pub fn finish(self) -> Result<AdapterResponse, ParseError> {
        if !self.done {
            return Err(ParseError::Truncated {
                missing: "data: [DONE]",
            });
        }
        Answer {
            content: Some(self.text),
            refusal: self.refusal,
            tool_calls: self
                .calls
                .into_iter()
                .map(|c| (c.id, c.name, c.arguments))
                .collect(),
            finish_reason: self.finish_reason,
            usage: self.usage,
        }
        .into_response()
    }
}

#[cfg(test)]
mod tests;
