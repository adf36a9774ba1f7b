//! Building a Messages request body from an [`AdapterCallRequest`] (sans-IO).
//!
//! | request field | wire |
//! |---|---|
//! | `system_prompt` | `system` (a string; blocks when an identity block is prepended) |
//! | `messages` | `messages` with `text` / `tool_use` / `tool_result` blocks; empty text blocks and empty turns are dropped |
//! | `tools` | `tools: [{name, description, input_schema}]` (a missing input schema becomes an empty object schema) |
//! | `tool_choice` | `{type: auto | any | none | tool}`; omitted without tools; `any`/`tool` become `auto` with extended thinking (a transform) |
//! | `max_tokens` | `max_tokens` (plus the thinking budget when thinking is on) |
//! | `temperature` | `temperature`, dropped with extended thinking (a transform) |
//! | `thinking_budget > 0` | `thinking: {type: enabled, budget_tokens}` |
//! | `stop_sequences` | `stop_sequences` |
//! | `response_schema` | see [`super::placement`] |
//!
//! `effort` and `metadata` are not sent (`output_config.effort` is model-gated).

use super::placement::{Placement, placement};
use crate::llm::request::{self, AdapterCallRequest, Role, WireReport};
use crate::llm::wire::schema_prompt;
use crate::schema::subset::WirePlan;
use crate::vocab::Transform;
use serde::Serialize;
use serde_json::{Map, Value, json};

/// A Messages request body.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Request {
    /// The model id.
    pub model: String,
    /// The output token limit.
    pub max_tokens: u32,
    /// The system prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<System>,
    /// The conversation.
    pub messages: Vec<WireMessage>,
    /// The tools on offer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
    /// How tools may be used (never without tools).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Extended thinking.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
    /// Stop sequences.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stop_sequences: Vec<String>,
    /// Native structured output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_config: Option<OutputConfig>,
    /// Whether the reply is an SSE stream.
    pub stream: bool,
}

/// The `system` field: a plain string or text blocks.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum System {
    /// One string.
    Text(String),
    /// Text blocks, in order.
    Blocks(Vec<SystemBlock>),
}

/// One block of a `system` array.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SystemBlock {
    /// A text block.
    Text {
        /// The text.
        text: String,
    },
}

/// One turn on the wire.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WireMessage {
    /// `user` or `assistant`.
    pub role: Role,
    /// The blocks.
    pub content: Vec<ContentBlock>,
}

/// One content block on the wire: the neutral block, whose JSON is the Messages shape.
use crate::llm::request::ContentBlock;
use crate::media::{Format, MediaSource};

/// A tool definition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tool {
    /// The name.
    pub name: String,
    /// What it does.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The arguments' JSON Schema.
    pub input_schema: Value,
}

/// `tool_choice` on the wire.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// The model must call some tool.
    Any,
    /// The model must not call a tool.
    None,
    /// The model must call this tool.
    Tool {
        /// The tool name.
        name: String,
        /// Set to allow one call only.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        disable_parallel_tool_use: bool,
    },
}

/// `thinking` on the wire.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Thinking {
    /// Extended thinking with a token budget.
    Enabled {
        /// The budget.
        budget_tokens: u32,
    },
}

/// `output_config` on the wire.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutputConfig {
    /// The output format.
    pub format: OutputFormat,
}

/// `output_config.format` on the wire.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputFormat {
    /// A JSON Schema the final text must match.
    JsonSchema {
        /// The projected schema.
        schema: Value,
    },
}

/// Whether the reply is one JSON object or an SSE stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// One JSON response (`stream: false`).
    Whole,
    /// Server-sent events (`stream: true`).
    Stream,
}

/// A built request: the body, how the schema went on the wire, and the output tool's name.
#[derive(Debug, Clone, PartialEq)]
pub struct Built {
    /// The body to POST.
    pub body: Request,
    /// The mode and every rewrite of the schema or the request.
    pub wire: WireReport,
    /// The forced output tool's name, when the schema travels as a tool.
    pub output_tool: Option<String>,
}

/// Description of the forced output tool, for the model.
const OUTPUT_TOOL_DESCRIPTION: &str = "Return your final answer by calling this tool exactly once. \
     Its input is the answer and must match the input schema. Do not call it before you are done.";

/// Builds the request body for `req` with its schema placed as `plan` (the call's
/// [`crate::llm::registry::SchemaRoute::AnthropicLadder`] plan) says; `default_model` is used
/// when `req.model` is empty.
pub fn build(
    req: &AdapterCallRequest,
    default_model: &str,
    delivery: Delivery,
    plan: &WirePlan,
) -> Built {
    let thinking = req.thinking_budget > 0;
    let mut transforms = plan.transforms.clone();
    let mut tools: Vec<Tool> = req.tools.iter().map(tool).collect();
    let mut output_config = None;
    let mut output_tool = None;
    let mut system = req.system_prompt.clone();
    let framework_tools = !tools.is_empty();
    let mut tool_choice =
        framework_tools.then(|| choice(&req.tool_choice, thinking, &mut transforms));
    match placement(plan, req) {
        Placement::None => {}
        Placement::Native { schema } => {
            output_config = Some(OutputConfig {
                format: OutputFormat::JsonSchema { schema },
            });
        }
        Placement::OutputTool { name, input_schema } => {
            tool_choice = Some(match (&req.tool_choice, framework_tools) {
                (request::ToolChoice::Auto | request::ToolChoice::Any, true) => ToolChoice::Any,
                (request::ToolChoice::Tool(x), true) => ToolChoice::Tool {
                    name: x.clone(),
                    disable_parallel_tool_use: false,
                },
                _ => ToolChoice::Tool {
                    name: name.clone(),
                    disable_parallel_tool_use: true,
                },
            });
            tools.push(Tool {
                name: name.clone(),
                description: OUTPUT_TOOL_DESCRIPTION.to_owned(),
                input_schema,
            });
            output_tool = Some(name);
        }
        Placement::Prompt => {
            if let Some(schema) = &req.response_schema {
                system = schema_prompt::append_to_system(&system, schema);
            }
        }
    }
    let mut temperature = req.temperature;
    if thinking && temperature.take().is_some() {
        transforms.push(request_transform(
            "/temperature",
            "dropped temperature (extended thinking takes the default)",
        ));
    }
    let body = Request {
        model: if req.model.is_empty() {
            default_model.to_owned()
        } else {
            req.model.clone()
        },
        max_tokens: req.max_tokens.saturating_add(req.thinking_budget),
        system: (!system.is_empty()).then_some(System::Text(system)),
        messages: req.messages.iter().filter_map(message).collect(),
        tools,
        tool_choice,
        temperature: temperature.map(crate::llm::wire::messages::decimal_f64),
        thinking: thinking.then_some(Thinking::Enabled {
            budget_tokens: req.thinking_budget,
        }),
        stop_sequences: req.stop_sequences.clone(),
        output_config,
        stream: delivery == Delivery::Stream,
    };
    Built {
        body,
        wire: WireReport {
            mode: plan.mode,
            transforms,
            wrapped_root: plan.wrapped,
            ..WireReport::default()
        },
        output_tool,
    }
}

/// Puts `identity` first in `system` (turning it into blocks) and removes any later copy of it.
pub fn prepend_identity(body: &mut Request, identity: &str) {
    let mut blocks = vec![SystemBlock::Text {
        text: identity.to_owned(),
    }];
    let rest = match body.system.take() {
        None => Vec::new(),
        Some(System::Text(text)) => vec![SystemBlock::Text { text }],
        Some(System::Blocks(b)) => b,
    };
    blocks.extend(
        rest.into_iter()
            .filter(|SystemBlock::Text { text }| text.trim() != identity),
    );
    body.system = Some(System::Blocks(blocks));
}

fn request_transform(pointer: &str, action: &str) -> Transform {
    Transform {
        pointer: pointer.to_owned(),
        action: action.to_owned(),
    }
}

fn choice(c: &request::ToolChoice, thinking: bool, tf: &mut Vec<Transform>) -> ToolChoice {
    match c {
        request::ToolChoice::Auto => ToolChoice::Auto,
        request::ToolChoice::None => ToolChoice::None,
        request::ToolChoice::Any | request::ToolChoice::Tool(_) if thinking => {
            tf.push(request_transform(
                "/tool_choice",
                "forced tool choice relaxed to auto (extended thinking forbids any/tool)",
            ));
            ToolChoice::Auto
        }
        request::ToolChoice::Any => ToolChoice::Any,
        request::ToolChoice::Tool(name) => ToolChoice::Tool {
            name: name.clone(),
            disable_parallel_tool_use: false,
        },
    }
}

fn tool(spec: &request::ToolSpec) -> Tool {
    let input_schema = match &spec.input_schema {
        Value::Object(m) if !m.is_empty() => spec.input_schema.clone(),
        _ => json!({"type": "object", "properties": {}}),
    };
    Tool {
        name: spec.name.clone(),
        description: spec.description.clone(),
        input_schema,
    }
}

fn message(m: &request::Message) -> Option<WireMessage> {
    let content: Vec<ContentBlock> = m.content.iter().filter_map(wire_block).collect();
    (!content.is_empty()).then_some(WireMessage {
        role: m.role,
        content,
    })
}

/// A block as the Messages API takes it (`None`: an empty text, which it refuses). The
/// `claude` CLI's stream-json input takes the same blocks.
pub fn wire_block(b: &ContentBlock) -> Option<ContentBlock> {
    match b {
        ContentBlock::Text { text } if text.is_empty() => None,
        ContentBlock::ToolUse { id, name, input } => Some(ContentBlock::ToolUse {
            id: id.clone(),
            name: name.clone(),
            input: match input {
                Value::Object(_) => input.clone(),
                Value::Null => Value::Object(Map::new()),
                other => json!({ "_raw": other }),
            },
        }),
        // A text document goes as text: the base64 source takes PDFs only.
        ContentBlock::Document {
            source: source @ MediaSource::Base64 { .. },
            title,
        } if source.format() == Some(Format::Text) => {
            let text = source.bytes().and_then(|b| String::from_utf8(b).ok());
            Some(match text {
                Some(data) => ContentBlock::Document {
                    source: MediaSource::Text {
                        media_type: Format::Text.mime().to_owned(),
                        data,
                    },
                    title: title.clone(),
                },
                None => b.clone(),
            })
        }
        other => Some(other.clone()),
    }
}

#[cfg(test)]
mod tests;
