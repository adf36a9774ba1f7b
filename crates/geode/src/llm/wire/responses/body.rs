//! The Responses request body as `Serialize` structs (the module table of the parent names
//! every field; members are declared in wire order).

use crate::llm::request::{AdapterCallRequest, ContentBlock, Role, ToolChoice, ToolSpec};
use crate::media::MediaSource;
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;

/// The body.
#[derive(Debug, Serialize)]
pub(super) struct Body<'a> {
    pub model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<&'a str>,
    pub input: Vec<Item<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<Choice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    pub store: bool,
    pub stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include: Option<[&'static str; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<Text<'a>>,
}

/// One `input` item.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Item<'a> {
    /// A run of text blocks of one role.
    Message {
        role: &'static str,
        content: Vec<Part<'a>>,
    },
    /// A tool call the model made.
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: Cow<'a, str>,
    },
    /// A tool's result.
    FunctionCallOutput { call_id: &'a str, output: &'a str },
}

/// A part of a message: text (`input_text` / `output_text`), an image or a file.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Part<'a> {
    /// The caller's text.
    InputText { text: &'a str },
    /// The model's earlier text.
    OutputText { text: &'a str },
    /// An image: a data URL or a URL in `image_url`.
    InputImage {
        image_url: String,
        detail: &'static str,
    },
    /// A file: its bytes as a data URL in `file_data` (with the `filename` that requires), or
    /// a `file_url`.
    InputFile {
        #[serde(skip_serializing_if = "Option::is_none")]
        filename: Option<Cow<'a, str>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        file_data: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        file_url: Option<&'a str>,
    },
}

/// A function tool.
#[derive(Debug, Serialize)]
pub(super) struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: Cow<'a, Value>,
    strict: bool,
}

/// `tool_choice`: a keyword or one named function.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum Choice<'a> {
    /// `auto`, `required`, `none`.
    Keyword(&'static str),
    /// `{"type":"function","name"}`.
    Function {
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'a str,
    },
}

/// `reasoning`.
#[derive(Debug, Serialize)]
pub(super) struct ReasoningConfig {
    pub effort: &'static str,
    pub summary: &'static str,
}

/// `text.format`.
#[derive(Debug, Serialize)]
pub(super) struct Text<'a> {
    pub format: Format<'a>,
}

/// The `json_schema` format.
#[derive(Debug, Serialize)]
pub(super) struct Format<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub name: String,
    pub strict: bool,
    pub schema: &'a Value,
}

fn message(role: Role, content: Vec<Part<'_>>) -> Item<'_> {
    let role = match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    Item::Message { role, content }
}

/// A block as a message part (`None` for tool calls and results, which are items).
fn part(role: Role, block: &ContentBlock) -> Option<Part<'_>> {
    Some(match block {
        ContentBlock::Text { text } if role == Role::Assistant => Part::OutputText { text },
        ContentBlock::Text { text } => Part::InputText { text },
        ContentBlock::Image { source } => Part::InputImage {
            image_url: source.data_url(),
            detail: "auto",
        },
        ContentBlock::Document { source, title } => match source {
            MediaSource::Url { url } => Part::InputFile {
                filename: None,
                file_data: None,
                file_url: Some(url),
            },
            MediaSource::Base64 { .. } | MediaSource::Text { .. } => Part::InputFile {
                filename: Some(source.file_name(title.as_deref())),
                file_data: Some(source.data_url()),
                file_url: None,
            },
        },
        ContentBlock::ToolUse { .. } | ContentBlock::ToolResult { .. } => return None,
    })
}

/// The `input` items: runs of text, image and file parts become messages; tool calls and
/// results their own items.
pub(super) fn input(req: &AdapterCallRequest) -> Vec<Item<'_>> {
    let mut items = Vec::new();
    let mut parts: Vec<Part<'_>> = Vec::new();
    for m in &req.messages {
        for block in &m.content {
            if let Some(p) = part(m.role, block) {
                parts.push(p);
                continue;
            }
            let item = match block {
                ContentBlock::ToolUse { id, name, input } => Item::FunctionCall {
                    call_id: id,
                    name,
                    arguments: arguments(input),
                },
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    ..
                } => Item::FunctionCallOutput {
                    call_id: tool_use_id,
                    output: content,
                },
                _ => continue,
            };
            if !parts.is_empty() {
                items.push(message(m.role, std::mem::take(&mut parts)));
            }
            items.push(item);
        }
        if !parts.is_empty() {
            items.push(message(m.role, std::mem::take(&mut parts)));
        }
    }
    if req.messages.iter().all(|m| m.content.is_empty()) {
        items.push(message(Role::User, vec![Part::InputText { text: "hello" }]));
    }
    items
}

/// Tool arguments as the model sent them: JSON text, or the raw text kept by
/// [`crate::llm::request::ToolUse::from_json_arguments`] for unparsable arguments.
fn arguments(input: &Value) -> Cow<'_, str> {
    if let Value::Object(m) = input
        && m.len() == 1
        && let Some(Value::String(raw)) = m.get("_raw")
    {
        return Cow::Borrowed(raw);
    }
    Cow::Owned(input.to_string())
}

/// A function tool with `strict: false` (parameters are validated locally).
pub(super) fn tool(spec: &ToolSpec) -> Tool<'_> {
    let parameters = match &spec.input_schema {
        Value::Object(_) => Cow::Borrowed(&spec.input_schema),
        _ => Cow::Owned(serde_json::json!({"type": "object", "properties": {}})),
    };
    Tool {
        kind: "function",
        name: &spec.name,
        description: &spec.description,
        parameters,
        strict: false,
    }
}

/// `tool_choice` on this wire.
pub(super) fn choice(choice: &ToolChoice) -> Choice<'_> {
    match choice {
        ToolChoice::Auto => Choice::Keyword("auto"),
        ToolChoice::Any => Choice::Keyword("required"),
        ToolChoice::None => Choice::Keyword("none"),
        ToolChoice::Tool(name) => Choice::Function {
            kind: "function",
            name,
        },
    }
}
