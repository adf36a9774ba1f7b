//! Building a Chat Completions request body from an [`AdapterCallRequest`] (sans-IO).
//!
//! | request field | wire |
//! |---|---|
//! | `system_prompt` (+ schema instruction) | a `system` message, first |
//! | user text | one `user` message per turn (text blocks joined with `\n`) |
//! | user `tool_result` blocks | one `{role: tool, tool_call_id, content}` message each, before that turn's text (`is_error` has no field and is not carried) |
//! | assistant turn | `{role: assistant, content: text or null, tool_calls: [{id, type: function, function: {name, arguments: JSON text}}]}` |
//! | `tools` | `[{type: function, function: {name, description, parameters}}]` (GLM: at most 128) |
//! | `tool_choice` | only with tools: `"auto"`, `"none"`, `"required"`, `{type: function, function: {name}}` (GLM: `"auto"` only, see below) |
//! | `max_tokens`, `temperature`, `stop_sequences` | `max_tokens`, `temperature`, `stop` |
//! | `response_schema` | as the call's plan says ([`build_with`]): `response_format: {type: json_object}` + the schema in the system prompt → `json-mode` (a root that admits no object is wrapped under `value` first, [`crate::schema::subset::JSON_OBJECT`]: JSON mode answers an object); `json_schema` → `strict` or `hint`; the prompt alone → `prompt` |
//!
//! The tool rules are the server's ([`ChatTools`]). GLM accepts only `tool_choice: "auto"` (it rejects `"none"`, unlike GEODE, which sends
//! it). So: `auto` → `"auto"`; `none` → the tools are withheld from this request (the model cannot
//! call what it is not offered; history with earlier tool calls still travels); `any` and
//! `tool(X)` → `"auto"` with every tool, the model is not forced. Each of the last three is a
//! [`Transform`] on `/tool_choice`. Not sent: `thinking`, `effort` and `metadata`.

use super::BuildError;
use crate::llm::request::{self, AdapterCallRequest, ContentBlock, Role, WireReport};
use crate::llm::wire::schema_prompt;
use crate::media::MediaSource;
use crate::schema::subset::WirePlan;
use crate::vocab::{StructuredOutputMode, Transform};
use serde::Serialize;
use serde_json::{Value, json};

/// GLM's limit on the number of function tools.
pub const MAX_TOOLS: usize = 128;

/// What a Chat server accepts of tools. GLM takes only `tool_choice: "auto"` and at most
/// [`MAX_TOOLS`] tools (docs/wire.md#zai-glm); OpenAI's shape, which OpenAI-compatible servers
/// follow, also takes `"none"`, `"required"` and a named function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChatTools {
    /// Only `"auto"`: `none` withholds the tools, a forced choice is relaxed to `auto`.
    pub auto_only: bool,
    /// The most tools one request may offer.
    pub max: Option<usize>,
}

impl ChatTools {
    /// GLM / Z.ai.
    pub const GLM: Self = Self {
        auto_only: true,
        max: Some(MAX_TOOLS),
    };
    /// OpenAI's Chat Completions shape.
    pub const OPENAI: Self = Self {
        auto_only: false,
        max: None,
    };
}

/// A Chat Completions request body.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Request {
    /// The model id.
    pub model: String,
    /// The conversation, system message first.
    pub messages: Vec<ChatMessage>,
    /// The output token limit.
    pub max_tokens: u32,
    /// Sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// The tools on offer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
    /// Absent without tools; only ever `auto` where [`ChatTools::auto_only`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Stop sequences.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// JSON mode, when a schema is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// Whether the reply is streamed as SSE chunks (set by [`super::ChatWire`]; false from
    /// [`build_with`]).
    pub stream: bool,
    /// `{"include_usage": true}` on a streamed request, so the usage arrives before `[DONE]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
}

/// `stream_options` of a streamed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StreamOptions {
    /// Ask for the usage chunk before `[DONE]`.
    pub include_usage: bool,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    /// The system prompt.
    System {
        /// The text.
        content: String,
    },
    /// A user turn.
    User {
        /// The text, or its parts when it holds images or files.
        content: UserContent,
    },
    /// A model turn.
    Assistant {
        /// The text, `null` when the turn is only tool calls.
        content: Option<String>,
        /// Tool calls.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// A tool result.
    Tool {
        /// The call this answers.
        tool_call_id: String,
        /// The result text.
        content: String,
    },
}

/// A user turn's content: a string when it is text alone (what every server takes), else
/// parts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum UserContent {
    /// Text alone.
    Text(String),
    /// Text, image and file parts, in order.
    Parts(Vec<UserPart>),
}

/// One part of a user turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum UserPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image: `{"url": DATA_URL_OR_URL}`.
    ImageUrl {
        /// Where the image is.
        image_url: ImageUrl,
    },
    /// A file (a PDF): `{"filename", "file_data": DATA_URL}`.
    File {
        /// The file.
        file: FilePart,
    },
}

/// `image_url`'s object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImageUrl {
    /// A `data:` URL or an `https` URL.
    pub url: String,
}

/// `file`'s object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FilePart {
    /// The file name.
    pub filename: String,
    /// The bytes as a `data:` URL.
    pub file_data: String,
}

/// A tool call in an assistant message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCall {
    /// The call id.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: FunctionKind,
    /// The function and its arguments.
    pub function: FunctionCall,
}

/// The only tool kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FunctionKind {
    /// A function tool.
    Function,
}

/// A called function.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionCall {
    /// The tool name.
    pub name: String,
    /// The arguments as JSON text.
    pub arguments: String,
}

/// A tool definition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tool {
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: FunctionKind,
    /// The function.
    pub function: FunctionDef,
}

/// A function definition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionDef {
    /// The name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The arguments' JSON Schema.
    pub parameters: Value,
}

/// `tool_choice` (GLM takes `auto` only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ToolChoice {
    /// `"auto"`, `"none"` or `"required"`.
    Mode(ToolMode),
    /// `{type: function, function: {name}}`: this tool must be called.
    Function {
        /// Always `function`.
        #[serde(rename = "type")]
        kind: FunctionKind,
        /// The tool.
        function: ChosenFunction,
    },
}

/// The string forms of `tool_choice`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolMode {
    /// The model decides.
    Auto,
    /// No tool may be called.
    None,
    /// Some tool must be called.
    Required,
}

/// The function a forced `tool_choice` names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChosenFunction {
    /// The tool name.
    pub name: String,
}

impl ToolChoice {
    /// `"auto"`.
    pub const AUTO: Self = Self::Mode(ToolMode::Auto);
}

/// `response_format`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat {
    /// JSON syntax only; the schema travels in the prompt.
    JsonObject,
    /// The schema itself (OpenAI's shape, which llama-server, vLLM, Ollama and LM Studio take).
    JsonSchema {
        /// Name, schema and `strict`.
        json_schema: JsonSchemaFormat,
    },
}

/// `response_format.json_schema`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JsonSchemaFormat {
    /// The schema's name (`[A-Za-z0-9_-]`, at most 64 characters).
    pub name: String,
    /// The caller's schema.
    pub schema: Value,
    /// Always true: the server is asked to enforce the schema.
    pub strict: bool,
}

/// What the plan's mode means on a Chat request: `strict` asks the server to enforce the
/// schema (`json_schema`, not repeated in the prompt); `hint` sends `json_schema` and the schema
/// in the system prompt; `json-mode` sends `json_object` and the schema in the prompt; `prompt`
/// only the prompt.
fn format_of(plan: &WirePlan, schema: &crate::schema::ResponseSchema) -> Option<ResponseFormat> {
    Some(match plan.mode {
        StructuredOutputMode::Strict | StructuredOutputMode::Hint => ResponseFormat::JsonSchema {
            json_schema: JsonSchemaFormat {
                name: schema.openai_name(),
                schema: plan
                    .wire
                    .clone()
                    .unwrap_or_else(|| schema.as_value().clone()),
                strict: true,
            },
        },
        StructuredOutputMode::JsonMode => ResponseFormat::JsonObject,
        _ => return None,
    })
}

/// A built request and how the schema went on the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct Built {
    /// The body to POST.
    pub body: Request,
    /// The mode (`json-mode` or `none`) and the request rewrites.
    pub wire: WireReport,
}

/// Builds the body for `req` with the schema placed as `plan` (the call's
/// [`crate::llm::registry::SchemaRoute`] plan) says and the tools as `tools` allows;
/// `default_model` is used when `req.model` is empty.
pub fn build_with(
    req: &AdapterCallRequest,
    default_model: &str,
    plan: &WirePlan,
    tools: ChatTools,
) -> Result<Built, BuildError> {
    if let Some(limit) = tools.max
        && req.tools.len() > limit
    {
        return Err(BuildError::TooManyTools {
            count: req.tools.len(),
            limit,
        });
    }
    let mut transforms = Vec::new();
    let (offer_tools, choice) = tool_choice(req, tools, &mut transforms);
    let schema = req.response_schema.as_ref();
    let system = match schema {
        Some(schema) if plan.mode != StructuredOutputMode::Strict => {
            schema_prompt::append_to_system(&req.system_prompt, &plan.wire_schema(schema))
        }
        _ => req.system_prompt.clone(),
    };
    if schema.is_some() {
        transforms.extend(plan.transforms.iter().cloned());
    }
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if !system.trim().is_empty() {
        messages.push(ChatMessage::System { content: system });
    }
    for m in &req.messages {
        push_turn(m, &mut messages);
    }
    let tools: Vec<Tool> = if offer_tools {
        req.tools.iter().map(tool).collect()
    } else {
        Vec::new()
    };
    let body = Request {
        model: if req.model.is_empty() {
            default_model.to_owned()
        } else {
            req.model.clone()
        },
        messages,
        max_tokens: req.max_tokens,
        temperature: req.temperature.map(crate::llm::wire::messages::decimal_f64),
        tool_choice: choice.filter(|_| !tools.is_empty()),
        tools,
        stop: req.stop_sequences.clone(),
        response_format: schema.and_then(|s| format_of(plan, s)),
        stream: false,
        stream_options: None,
    };
    Ok(Built {
        body,
        wire: WireReport {
            mode: match schema {
                Some(_) => plan.mode,
                None => StructuredOutputMode::None,
            },
            transforms,
            wrapped_root: schema.is_some() && plan.wrapped,
            ..WireReport::default()
        },
    })
}

/// Whether the tools are offered and the `tool_choice` sent with them. Where only `auto` is
/// taken, `none` withholds the tools (the model cannot call what it is not offered; history
/// with earlier tool calls still travels) and a forced choice is relaxed to `auto`, each a
/// [`Transform`] on `/tool_choice`.
fn tool_choice(
    req: &AdapterCallRequest,
    tools: ChatTools,
    transforms: &mut Vec<Transform>,
) -> (bool, Option<ToolChoice>) {
    if req.tools.is_empty() {
        return (false, None);
    }
    let mut relax = |action: &str| {
        transforms.push(Transform {
            pointer: "/tool_choice".to_owned(),
            action: action.to_owned(),
        })
    };
    match (&req.tool_choice, tools.auto_only) {
        (request::ToolChoice::Auto, _) => (true, Some(ToolChoice::AUTO)),
        (request::ToolChoice::None, true) => {
            relax("tool choice none: tools withheld (GLM accepts only auto)");
            (false, None)
        }
        (request::ToolChoice::Any | request::ToolChoice::Tool(_), true) => {
            relax("forced tool choice relaxed to auto (GLM accepts only auto)");
            (true, Some(ToolChoice::AUTO))
        }
        (request::ToolChoice::None, false) => (true, Some(ToolChoice::Mode(ToolMode::None))),
        (request::ToolChoice::Any, false) => (true, Some(ToolChoice::Mode(ToolMode::Required))),
        (request::ToolChoice::Tool(name), false) => (
            true,
            Some(ToolChoice::Function {
                kind: FunctionKind::Function,
                function: ChosenFunction { name: name.clone() },
            }),
        ),
    }
}

fn push_turn(m: &request::Message, out: &mut Vec<ChatMessage>) {
    let text = m.text();
    match m.role {
        Role::User => {
            for b in &m.content {
                if let ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    ..
                } = b
                {
                    out.push(ChatMessage::Tool {
                        tool_call_id: tool_use_id.clone(),
                        content: content.clone(),
                    });
                }
            }
            let parts: Vec<UserPart> = m.content.iter().filter_map(user_part).collect();
            if parts.iter().any(|p| !matches!(p, UserPart::Text { .. })) {
                out.push(ChatMessage::User {
                    content: UserContent::Parts(parts),
                });
            } else if !text.is_empty() {
                out.push(ChatMessage::User {
                    content: UserContent::Text(text),
                });
            }
        }
        Role::Assistant => {
            let tool_calls: Vec<ToolCall> = m
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolUse { id, name, input } => Some(ToolCall {
                        id: id.clone(),
                        kind: FunctionKind::Function,
                        function: FunctionCall {
                            name: name.clone(),
                            arguments: arguments(input),
                        },
                    }),
                    _ => None,
                })
                .collect();
            if text.is_empty() && tool_calls.is_empty() {
                return;
            }
            out.push(ChatMessage::Assistant {
                content: (!text.is_empty() || tool_calls.is_empty()).then_some(text),
                tool_calls,
            });
        }
    }
}

/// A user block as a Chat part (`None` for tool results, which are `tool` messages). A
/// document URL has no Chat shape: routing refuses it before this is reached
/// ([`crate::media::Accepts::OPENAI_CHAT`]), and it goes as its URL in text if it is not.
fn user_part(b: &ContentBlock) -> Option<UserPart> {
    Some(match b {
        ContentBlock::Text { text } if text.is_empty() => return None,
        ContentBlock::Text { text } => UserPart::Text { text: text.clone() },
        ContentBlock::Image { source } => UserPart::ImageUrl {
            image_url: ImageUrl {
                url: source.data_url(),
            },
        },
        ContentBlock::Document { source, title } => match source {
            MediaSource::Url { url } => UserPart::Text { text: url.clone() },
            _ => UserPart::File {
                file: FilePart {
                    filename: source.file_name(title.as_deref()).into_owned(),
                    file_data: source.data_url(),
                },
            },
        },
        ContentBlock::ToolUse { .. } | ContentBlock::ToolResult { .. } => return None,
    })
}

/// Tool arguments as JSON text; an input kept raw (`{"_raw": text}`) goes back as its text.
fn arguments(input: &Value) -> String {
    match input.as_object() {
        Some(m) if m.len() == 1 => match m.get("_raw") {
            Some(Value::String(raw)) => raw.clone(),
            _ => input.to_string(),
        },
        Some(_) => input.to_string(),
        None if input.is_null() => "{}".to_owned(),
        None => input.to_string(),
    }
}

fn tool(spec: &request::ToolSpec) -> Tool {
    let parameters = match &spec.input_schema {
        Value::Object(m) if !m.is_empty() => spec.input_schema.clone(),
        _ => json!({"type": "object", "properties": {}}),
    };
    Tool {
        kind: FunctionKind::Function,
        function: FunctionDef {
            name: spec.name.clone(),
            description: spec.description.clone(),
            parameters,
        },
    }
}

#[cfg(test)]
mod tests;
