//! One LLM call: [`AdapterCallRequest`] in, [`AdapterResponse`] out.
//!
//! These are the provider-neutral shapes. The wire families (`wire/`) turn them into each
//! provider's JSON; adapters never see provider JSON in these types.

use crate::media::{Media, MediaKind, MediaSource, PartRecord};
use crate::schema::{ResponseSchema, TextConstraint};
use crate::vocab::{AdapterTry, StopReason, StructuredOutputMode, Transform, Usage};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The caller (and tool results, which travel in user turns as in Anthropic's shape).
    User,
    /// The model.
    Assistant,
}

/// One block of message content. The Messages wire sends these blocks as they are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call made by the model.
    ToolUse {
        /// The provider's call id.
        id: String,
        /// The tool name.
        name: String,
        /// The arguments (a JSON object when well-formed).
        input: Value,
    },
    /// The result of a tool call, sent back in a user turn.
    ToolResult {
        /// The id of the call this answers.
        tool_use_id: String,
        /// The result text (JSON for structured results).
        content: String,
        /// True when the call failed (bad arguments, unknown tool, tool error); written only
        /// when set, as the Messages wire wants it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
    /// An image the model looks at ([`crate::media`]).
    Image {
        /// Its bytes or URL.
        source: MediaSource,
    },
    /// A document the model reads: a PDF, or plain text ([`crate::media`]).
    Document {
        /// Its bytes or URL.
        source: MediaSource,
        /// Its file name, shown to the model where the wire has a place for one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
}

impl From<Media> for ContentBlock {
    fn from(m: Media) -> Self {
        match m.kind {
            MediaKind::Image => Self::Image { source: m.source },
            MediaKind::Document => Self::Document {
                source: m.source,
                title: m.title,
            },
        }
    }
}

impl ContentBlock {
    /// An image or document block as a part (`None` for the others).
    pub fn media(&self) -> Option<Media> {
        match self {
            Self::Image { source } => Some(Media {
                kind: MediaKind::Image,
                source: source.clone(),
                title: None,
            }),
            Self::Document { source, title } => Some(Media {
                kind: MediaKind::Document,
                source: source.clone(),
                title: title.clone(),
            }),
            _ => None,
        }
    }

    /// What the ledger keeps of an image or document block (`None` for the others).
    pub fn part_record(&self) -> Option<PartRecord> {
        match self {
            Self::Image { source } => Some(source.record(MediaKind::Image)),
            Self::Document { source, .. } => Some(source.record(MediaKind::Document)),
            _ => None,
        }
    }
}

/// One conversation turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// The speaker.
    pub role: Role,
    /// The content blocks, in order.
    pub content: Vec<ContentBlock>,
}

impl Message {
    /// A user turn holding one text block.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: vec![ContentBlock::Text { text: text.into() }],
        }
    }

    /// An assistant turn holding one text block.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: vec![ContentBlock::Text { text: text.into() }],
        }
    }

    /// An assistant turn holding one tool call.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: id.into(),
                name: name.into(),
                input,
            }],
        }
    }

    /// A user turn holding one tool result (`is_error`: the call failed).
    pub fn tool_result(
        tool_use_id: impl Into<String>,
        content: impl Into<String>,
        is_error: bool,
    ) -> Self {
        Self {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: tool_use_id.into(),
                content: content.into(),
                is_error,
            }],
        }
    }

    /// The text blocks joined with `\n`.
    pub fn text(&self) -> String {
        let parts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        parts.join("\n")
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool name.
    pub name: String,
    /// What the tool does, for the model.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments (independent of `response_schema`).
    #[serde(default)]
    pub input_schema: Value,
}

/// How the model may use the tools.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// The model must call some tool.
    Any,
    /// The model must not call a tool.
    None,
    /// The model must call this tool.
    Tool(String),
}

/// One request to an adapter. Defaults follow GEODE's `AdapterCallRequest`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdapterCallRequest {
    /// The model id ("" lets the adapter use its default).
    pub model: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The system prompt.
    #[serde(default)]
    pub system_prompt: String,
    /// The tools on offer.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// How tools may be used.
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// The output token limit (GEODE's default 8192).
    pub max_tokens: u32,
    /// Sampling temperature, when the model takes one.
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Extended-thinking token budget (0 = off).
    #[serde(default)]
    pub thinking_budget: u32,
    /// Reasoning effort (GEODE's default `medium`).
    pub effort: crate::vocab::Effort,
    /// Stop sequences.
    #[serde(default)]
    pub stop_sequences: Vec<String>,
    /// Free-form metadata (never sent to providers).
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// The JSON Schema the final answer must match, if any.
    #[serde(default)]
    pub response_schema: Option<ResponseSchema>,
    /// A non-JSON-Schema constraint on the answer text (choice, regex, grammar), if any.
    #[serde(default)]
    pub text_constraint: Option<TextConstraint>,
}

impl AdapterCallRequest {
    /// A request with GEODE's defaults: no tools, `max_tokens` 8192, effort `medium`.
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> Self {
        Self {
            model: model.into(),
            messages,
            system_prompt: String::new(),
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            max_tokens: 8192,
            temperature: None,
            thinking_budget: 0,
            effort: crate::vocab::Effort::Medium,
            stop_sequences: Vec::new(),
            metadata: Map::new(),
            response_schema: None,
            text_constraint: None,
        }
    }

    /// What the ledger keeps of every image and document in the conversation, in order.
    pub fn part_records(&self) -> Vec<PartRecord> {
        self.messages
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(ContentBlock::part_record)
            .collect()
    }

    /// Whether the last turn is the assistant's: a prefill the answer continues.
    pub fn ends_with_prefill(&self) -> bool {
        self.messages
            .last()
            .is_some_and(|m| m.role == Role::Assistant)
    }
}

/// A tool call in a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUse {
    /// The provider's call id.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments. A string that is not a JSON object is kept as `{"_raw": text}`.
    pub input: Value,
}

impl ToolUse {
    /// Builds a tool call from arguments given as JSON text (OpenAI and GLM style):
    /// empty text is `{}`, text that is not a JSON object (unparsable, an array, a number, ...)
    /// is `{"_raw": text}`.
    pub fn from_json_arguments(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: &str,
    ) -> Self {
        let input = if arguments.trim().is_empty() {
            Value::Object(Map::new())
        } else {
            match serde_json::from_str::<Value>(arguments) {
                Ok(v @ Value::Object(_)) => v,
                _ => {
                    let mut m = Map::new();
                    m.insert("_raw".to_owned(), Value::String(arguments.to_owned()));
                    Value::Object(m)
                }
            }
        };
        Self {
            id: id.into(),
            name: name.into(),
            input,
        }
    }
}

/// How the adapter put the structured-output constraint on the wire for one call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WireReport {
    /// The mode actually used (`none` when no constraint was sent).
    pub mode: StructuredOutputMode,
    /// Every rewrite of the caller's schema on the way to the wire.
    #[serde(default)]
    pub transforms: Vec<Transform>,
    /// True when the wire carried the schema's root wrapped under `value`
    /// ([`crate::schema::root::wrap_root`]): the answer's `value` is the caller's answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wrapped_root: bool,
    /// Properties the wire made required and nullable ([`crate::schema::nullable`]): a `null`
    /// there in the answer is read as the property left out.
    #[serde(
        default,
        skip_serializing_if = "crate::schema::nullable::NullPlan::is_empty"
    )]
    pub absent_nulls: crate::schema::nullable::NullPlan,
    /// Set by a fallback chain: every adapter tried, the last one being the one that answered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adapters_tried: Vec<AdapterTry>,
}

/// What an adapter returns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AdapterResponse {
    /// The answer text (text blocks joined).
    pub text: String,
    /// Tool calls the model made.
    #[serde(default)]
    pub tool_uses: Vec<ToolUse>,
    /// Token usage.
    #[serde(default)]
    pub usage: Usage,
    /// Why the model stopped.
    #[serde(default)]
    pub stop_reason: StopReason,
    /// A structured answer the provider returned beside the text (the claude CLI's
    /// `structured_output`, a forced output tool's input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// How the constraint went on the wire.
    #[serde(default)]
    pub wire: WireReport,
}

impl AdapterResponse {
    /// A plain text answer that ended naturally.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_arguments_text_is_parsed_or_kept_raw() {
        assert_eq!(ToolUse::from_json_arguments("1", "t", "").input, json!({}));
        assert_eq!(
            ToolUse::from_json_arguments("1", "t", r#"{"a":1}"#).input,
            json!({"a": 1})
        );
        assert_eq!(
            ToolUse::from_json_arguments("1", "t", "{oops").input,
            json!({"_raw": "{oops"})
        );
    }

    #[test]
    fn stop_reason_round_trips_in_snake_case() {
        for r in [
            StopReason::EndTurn,
            StopReason::ToolUse,
            StopReason::MaxTokens,
            StopReason::Refusal,
            StopReason::StopSequence,
            StopReason::ContentFilter,
        ] {
            let v = serde_json::to_value(&r).unwrap();
            assert_eq!(serde_json::from_value::<StopReason>(v).unwrap(), r);
        }
        assert_eq!(
            serde_json::to_value(StopReason::MaxTokens).unwrap(),
            json!("max_tokens")
        );
    }

    #[test]
    fn request_defaults_follow_the_reference() {
        let r = AdapterCallRequest::new("m", vec![Message::user("hi")]);
        assert_eq!(r.max_tokens, 8192);
        assert_eq!(r.effort, crate::vocab::Effort::Medium);
        assert_eq!(r.tool_choice, ToolChoice::Auto);
        assert!(r.response_schema.is_none());
    }

    #[test]
    fn usage_adds_up() {
        let mut a = Usage {
            input_tokens: 1,
            output_tokens: 2,
            cached_input_tokens: 3,
            cost_usd: None,
        };
        a.add(&Usage {
            input_tokens: 10,
            output_tokens: 20,
            cached_input_tokens: 30,
            cost_usd: Some(0.5),
        });
        assert_eq!(
            (a.input_tokens, a.output_tokens, a.cached_input_tokens),
            (11, 22, 33)
        );
        assert_eq!(a.cost_usd, Some(0.5));
    }
}
