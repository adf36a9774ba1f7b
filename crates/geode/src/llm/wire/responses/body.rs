//! The Responses request body as `Serialize` structs (the module table of the parent names
//! every field; members are declared in wire order).

use crate::llm::request::{AdapterCallRequest, ContentBlock, Role, ToolChoice, ToolSpec};
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

/// A text part of a message (`input_text` / `output_text`).
#[derive(Debug, Serialize)]
pub(super) struct Part<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
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

fn message<'a>(role: Role, texts: &[&'a str]) -> Item<'a> {
    let (role, kind) = match role {
        Role::User => ("user", "input_text"),
        Role::Assistant => ("assistant", "output_text"),
    };
    Item::Message {
        role,
        content: texts.iter().map(|text| Part { kind, text }).collect(),
    }
}

/// The `input` items: runs of text become messages; tool calls and results their own items.
pub(super) fn input(req: &AdapterCallRequest) -> Vec<Item<'_>> {
    let mut items = Vec::new();
    let mut texts: Vec<&str> = Vec::new();
    for m in &req.messages {
        for block in &m.content {
            let item = match block {
                ContentBlock::Text { text } => {
                    texts.push(text);
                    continue;
                }
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
            };
            if !texts.is_empty() {
                items.push(message(m.role, &texts));
                texts.clear();
            }
            items.push(item);
        }
        if !texts.is_empty() {
            items.push(message(m.role, &texts));
            texts.clear();
        }
    }
    if req.messages.iter().all(|m| m.content.is_empty()) {
        items.push(message(Role::User, &["hello"]));
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
