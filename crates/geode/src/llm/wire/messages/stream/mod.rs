//! Messages SSE events: [`classify`] one frame, fold frames with [`StreamFold`] (sans-IO).
//!
//! | event | effect |
//! |---|---|
//! | `message_start` | usage (input, cache read) |
//! | `content_block_start` | opens a text or `tool_use` block (others are skipped) |
//! | `content_block_delta` | `text_delta` appends text, `input_json_delta` appends tool input JSON; other deltas are skipped |
//! | `content_block_stop` | closes the block; tool input JSON is parsed (empty means the start's `input`) |
//! | `message_delta` | stop reason and usage (output tokens) |
//! | `message_stop` | the terminal event: [`Flow::Done`] |
//! | `ping`, unknown types | nothing (unknown types are logged by kind) |
//! | `error` | [`ParseError::Provider`] |
//!
//! The event type is read from the data's `type` field, falling back to the SSE `event:` name.
//! A known event that fails to decode is [`ParseError::Corrupt`]. [`StreamFold::finish`] without a
//! prior `message_stop` is [`ParseError::Truncated`]. A tool block still open at the end keeps its
//! partial JSON as raw text.

use super::ParseError;
use super::response::{Collected, CollectedTool, ToolInput, UsageReport, WireError, corrupt};
#[cfg(doc)]
use crate::llm::call::DEFAULT_MAX_RESPONSE_BYTES;
use crate::llm::request::AdapterResponse;
use crate::llm::wire::parse_error::TextBudget;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// One classified stream event.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// `message_start`.
    MessageStart {
        /// The initial usage.
        usage: UsageReport,
    },
    /// `content_block_start`.
    BlockStart {
        /// The block index.
        index: u64,
        /// The block's opening state.
        block: BlockStart,
    },
    /// `content_block_delta`.
    BlockDelta {
        /// The block index.
        index: u64,
        /// The delta.
        delta: Delta,
    },
    /// `content_block_stop`.
    BlockStop {
        /// The block index.
        index: u64,
    },
    /// `message_delta`.
    MessageDelta {
        /// The stop reason, when given.
        stop_reason: Option<String>,
        /// Usage so far.
        usage: UsageReport,
    },
    /// `message_stop`: the terminal event.
    MessageStop,
    /// `ping`.
    Ping,
    /// `error`.
    Error {
        /// The provider's error type.
        kind: String,
        /// The provider's message.
        message: String,
    },
    /// Any other event type (kept by name).
    Unknown(String),
}

/// How a content block opens.
#[derive(Debug, Clone, PartialEq)]
pub enum BlockStart {
    /// A text block with its initial text.
    Text(String),
    /// A tool call.
    ToolUse {
        /// The call id.
        id: String,
        /// The tool name.
        name: String,
        /// The initial input (usually `{}`).
        input: Value,
    },
    /// Thinking, server tools and other blocks (skipped).
    Other(String),
}

/// One content-block delta.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta {
    /// `text_delta`.
    Text(String),
    /// `input_json_delta`.
    InputJson(String),
    /// Thinking, signature, citations and other deltas (skipped).
    Other(String),
}

/// Whether the stream is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep reading.
    Continue,
    /// `message_stop` arrived.
    Done,
}

#[derive(Deserialize)]
struct Frame {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    message: Option<MessageStartBody>,
    #[serde(default)]
    content_block: Option<Value>,
    #[serde(default)]
    delta: Option<Value>,
    #[serde(default)]
    usage: Option<UsageReport>,
    #[serde(default)]
    error: Option<WireError>,
}

#[derive(Deserialize)]
struct MessageStartBody {
    #[serde(default)]
    usage: UsageReport,
}

/// A frame's required object `field` (of a `kind` event), and its `type`.
fn typed<'v>(
    v: Option<&'v Value>,
    kind: &str,
    field: &str,
) -> Result<(&'v Value, Option<&'v str>), ParseError> {
    let v = v.ok_or_else(|| corrupt(kind, &format!("missing {field}")))?;
    Ok((v, v.get("type").and_then(Value::as_str)))
}

/// Classifies one SSE frame (`event:` name and `data:` text).
pub fn classify(event: Option<&str>, data: &str) -> Result<Event, ParseError> {
    let frame: Frame = serde_json::from_str(data)
        .map_err(|e| corrupt(event.unwrap_or("stream event"), &e.to_string()))?;
    let kind = frame.kind.as_deref().or(event).unwrap_or("");
    let index = || frame.index.ok_or_else(|| corrupt(kind, "missing index"));
    let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    Ok(match kind {
        "message_start" => Event::MessageStart {
            usage: frame.message.map(|m| m.usage).unwrap_or_default(),
        },
        "content_block_start" => {
            let (block, block_type) = typed(frame.content_block.as_ref(), kind, "content_block")?;
            let block = match block_type {
                Some("text") => BlockStart::Text(str_of(block, "text").unwrap_or_default()),
                Some("tool_use") => match (str_of(block, "id"), str_of(block, "name")) {
                    (Some(id), Some(name)) => BlockStart::ToolUse {
                        id,
                        name,
                        input: block.get("input").cloned().unwrap_or(Value::Null),
                    },
                    _ => return Err(corrupt(kind, "tool_use without id or name")),
                },
                other => BlockStart::Other(other.unwrap_or("").to_owned()),
            };
            Event::BlockStart {
                index: index()?,
                block,
            }
        }
        "content_block_delta" => {
            let (delta, delta_type) = typed(frame.delta.as_ref(), kind, "delta")?;
            let delta = match delta_type {
                Some("text_delta") => Delta::Text(
                    str_of(delta, "text")
                        .ok_or_else(|| corrupt(kind, "text_delta without text"))?,
                ),
                Some("input_json_delta") => Delta::InputJson(
                    str_of(delta, "partial_json")
                        .ok_or_else(|| corrupt(kind, "input_json_delta without partial_json"))?,
                ),
                other => Delta::Other(other.unwrap_or("").to_owned()),
            };
            Event::BlockDelta {
                index: index()?,
                delta,
            }
        }
        "content_block_stop" => Event::BlockStop { index: index()? },
        "message_delta" => Event::MessageDelta {
            stop_reason: frame.delta.as_ref().and_then(|d| str_of(d, "stop_reason")),
            usage: frame.usage.unwrap_or_default(),
        },
        "message_stop" => Event::MessageStop,
        "ping" => Event::Ping,
        "error" => {
            let err = frame.error.unwrap_or_default();
            Event::Error {
                kind: err.kind,
                message: err.message,
            }
        }
        other => Event::Unknown(other.to_owned()),
    })
}

#[derive(Debug)]
enum Open {
    Text,
    Tool {
        id: String,
        name: String,
        start: Value,
        json: String,
    },
    Other,
}

/// Folds classified events into an [`AdapterResponse`]. Text and tool-input deltas past the
/// budget ([`StreamFold::with_max_text_bytes`], default [`DEFAULT_MAX_RESPONSE_BYTES`]) are
/// [`ParseError::TooLarge`].
#[derive(Debug, Default)]
pub struct StreamFold {
    collected: Collected,
    open: BTreeMap<u64, Open>,
    done: bool,
    budget: TextBudget,
}

impl StreamFold {
    /// An empty fold with the default budget.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty fold whose accumulated text and tool input may not pass `bytes`.
    pub fn with_max_text_bytes(bytes: u64) -> Self {
        Self {
            budget: TextBudget::new(bytes),
            ..Self::default()
        }
    }

    /// The answer text folded so far (it only grows), for [`CallCx::forward_text`].
    ///
    /// [`CallCx::forward_text`]: crate::llm::call::CallCx::forward_text
    pub fn text_so_far(&self) -> &str {
        &self.collected.text
    }

    /// Classifies and applies one SSE frame.
    pub fn push(&mut self, event: Option<&str>, data: &str) -> Result<Flow, ParseError> {
        if self.done {
            return Ok(Flow::Done);
        }
        self.apply(classify(event, data)?)
    }

    /// Applies one event.
    pub fn apply(&mut self, event: Event) -> Result<Flow, ParseError> {
        match event {
            Event::MessageStart { usage } => usage.apply(&mut self.collected.usage),
            Event::BlockStart { index, block } => {
                let open = match block {
                    BlockStart::Text(text) => {
                        self.budget.hold(text.len())?;
                        self.collected.text.push_str(&text);
                        Open::Text
                    }
                    BlockStart::ToolUse { id, name, input } => Open::Tool {
                        id,
                        name,
                        start: input,
                        json: String::new(),
                    },
                    BlockStart::Other(_) => Open::Other,
                };
                self.open.insert(index, open);
            }
            Event::BlockDelta { index, delta } => match (self.open.get_mut(&index), delta) {
                (Some(Open::Text), Delta::Text(t)) => {
                    self.budget.hold(t.len())?;
                    self.collected.text.push_str(&t);
                }
                (Some(Open::Tool { .. }), Delta::InputJson(part)) => {
                    self.budget.hold(part.len())?;
                    if let Some(Open::Tool { json, .. }) = self.open.get_mut(&index) {
                        json.push_str(&part);
                    }
                }
                (None, _) => {
                    return Err(corrupt(
                        "content_block_delta",
                        "delta for an unopened block",
                    ));
                }
                _ => {}
            },
            Event::BlockStop { index } => {
                if let Some(open) = self.open.remove(&index) {
                    self.close(open);
                }
            }
            Event::MessageDelta { stop_reason, usage } => {
                if stop_reason.is_some() {
                    self.collected.stop = stop_reason;
                }
                usage.apply(&mut self.collected.usage);
            }
            Event::MessageStop => {
                self.done = true;
                return Ok(Flow::Done);
            }
            Event::Ping => {}
            Event::Error { kind, message } => return Err(ParseError::Provider { kind, message }),
            Event::Unknown(kind) => tracing::debug!(
                kind = %crate::secret::clip(&kind, 80),
                "unknown Messages stream event skipped"
            ),
        }
        Ok(Flow::Continue)
    }

    fn close(&mut self, open: Open) {
        if let Open::Tool {
            id,
            name,
            start,
            json,
        } = open
        {
            let input = if json.trim().is_empty() {
                ToolInput::Parsed(start)
            } else {
                match serde_json::from_str::<Value>(&json) {
                    Ok(v) => ToolInput::Parsed(v),
                    Err(_) => ToolInput::Raw(json),
                }
            };
            self.collected.tools.push(CollectedTool { id, name, input });
        }
    }

    /// Whether `message_stop` has arrived.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The response; `output_tool` is [`super::Built::output_tool`]. Without `message_stop`
    /// this is [`ParseError::Truncated`].
    pub fn finish(mut self, output_tool: Option<&str>) -> Result<AdapterResponse, ParseError> {
        if !self.done {
            return Err(ParseError::Truncated {
                missing: "message_stop",
            });
        }
        let still_open = std::mem::take(&mut self.open);
        for open in still_open.into_values() {
            self.close(open);
        }
        Ok(self.collected.finish(output_tool))
    }
}

#[cfg(test)]
mod tests;
