//! The OpenAI Responses wire family (`POST /v1/responses` and the ChatGPT backend's
//! `/backend-api/codex/responses`), sans-IO: [`build`] turns an [`AdapterCallRequest`] into a
//! request body; [`classify`] turns one SSE frame into an [`Event`]; [`Fold`] folds events into
//! an [`AdapterResponse`]; [`parse_response`] reads a complete response object.
//!
//! Request (`reference-behaviour.md` §2.A, `wire.md` §2):
//!
//! | field | value |
//! |---|---|
//! | `instructions` | the system prompt, or `Mode: general assistance.` when empty |
//! | `input` | user/assistant text as `message` items (`input_text` / `output_text` parts); `ToolUse` → `function_call`; `ToolResult` → `function_call_output` |
//! | `tools` | flat `{"type":"function",name,description,parameters,strict}`, `strict` from the strict check of the parameters (the API defaults it to true) |
//! | `tool_choice` | `auto` / `required` (Any) / `none` / `{"type":"function","name"}`, with `parallel_tool_calls: true` |
//! | `store` | always `false` |
//! | `reasoning`, `include` | for reasoning models: `{"effort","summary":"auto"}` and `["reasoning.encrypted_content"]`; no temperature |
//! | `max_output_tokens` | [`Backend::Platform`] only (the ChatGPT backend rejects it) |
//! | `text.format` | with a schema: `{"type":"json_schema","name": openai_name,"strict": <strict check>,"schema": <schema verbatim>}` |
//!
//! The [`WireReport`] says `strict` when `strict:true` was sent, `hint` when `false`, `none`
//! without a schema. Response: text from `output_text` parts; tool calls from `function_call`
//! items; usage with cached tokens; stop reasons kept apart: `incomplete` +
//! `max_output_tokens` → `MaxTokens`, `content_filter` → `ContentFilter`, a `refusal` part →
//! `Refusal` (text = the refusal), tool calls → `ToolUse`, else `EndTurn`.

use crate::ledger::StructuredOutputMode;
use crate::llm::adapter::AdapterError;
use crate::llm::request::{AdapterCallRequest, ContentBlock, Role, ToolChoice, WireReport};
use crate::schema::strict::check_strict;
use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;

mod parse;

pub use parse::{Event, Fold, classify, parse_response};

/// Which Responses server the body is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The OpenAI platform API (`/v1/responses`).
    Platform,
    /// The ChatGPT/Codex backend: no `max_output_tokens`, streaming required.
    Codex,
}

/// Whether the model takes `reasoning` (and no temperature).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reasoning {
    /// A classic model: `temperature` is sent when set.
    Off,
    /// A reasoning model: `reasoning` + `include`, never `temperature`.
    On,
}

/// Whether the reply is one JSON object or an SSE stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// `stream: false`.
    Json,
    /// `stream: true`.
    Sse,
}

/// How to build the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// The server.
    pub backend: Backend,
    /// Reasoning model or not.
    pub reasoning: Reasoning,
    /// JSON or SSE reply.
    pub delivery: Delivery,
}

/// The most function tools one request may carry.
pub const MAX_TOOLS: usize = 128;

/// The instructions sent when the system prompt is empty (the reference's fallback).
pub const DEFAULT_INSTRUCTIONS: &str = "Mode: general assistance.";

/// A built request: the serialised body and how the schema went on the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct Built {
    /// The JSON body.
    pub body: Bytes,
    /// The structured-output mode of this body.
    pub wire: WireReport,
}

/// The Responses request body. Serialise-only; borrows from the [`AdapterCallRequest`].
#[derive(Debug, Serialize)]
pub struct Request<'a> {
    model: &'a str,
    instructions: &'a str,
    input: Vec<InputItem<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<ToolChoiceWire<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    store: bool,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    include: Option<[&'static str; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<ReasoningWire<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<Text<'a>>,
}

/// One `input` item.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum InputItem<'a> {
    Message {
        role: &'static str,
        content: Vec<Part<'a>>,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: Cow<'a, str>,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: &'a str,
    },
}

/// One content part of a message item.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    InputText { text: &'a str },
    OutputText { text: &'a str },
}

#[derive(Debug, Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: Cow<'a, Value>,
    strict: bool,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum ToolChoiceWire<'a> {
    Mode(&'static str),
    Function {
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'a str,
    },
}

#[derive(Debug, Serialize)]
struct ReasoningWire<'a> {
    effort: &'a str,
    summary: &'static str,
}

#[derive(Debug, Serialize)]
struct Text<'a> {
    format: Format<'a>,
}

#[derive(Debug, Serialize)]
struct Format<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: String,
    strict: bool,
    schema: &'a Value,
}

/// Builds and serialises the body (see the module table). More than [`MAX_TOOLS`] tools is
/// `Unsupported`.
pub fn build(
    adapter: &str,
    req: &AdapterCallRequest,
    opts: &Options,
) -> Result<Built, AdapterError> {
    let (request, wire) = request(adapter, req, opts)?;
    let mut out = Vec::with_capacity(estimate_size(req));
    serde_json::to_writer(&mut out, &request).map_err(|e| AdapterError::Protocol {
        adapter: adapter.to_owned(),
        message: format!("cannot serialise the request: {e}"),
    })?;
    Ok(Built {
        body: Bytes::from(out),
        wire,
    })
}

/// The body as a value tree, with its [`WireReport`] (for tests and inspection).
pub fn request<'a>(
    adapter: &str,
    req: &'a AdapterCallRequest,
    opts: &Options,
) -> Result<(Request<'a>, WireReport), AdapterError> {
    if req.tools.len() > MAX_TOOLS {
        return Err(AdapterError::Unsupported {
            adapter: adapter.to_owned(),
            message: format!(
                "{} tools; the Responses API takes at most {MAX_TOOLS}",
                req.tools.len()
            ),
        });
    }
    if !req.stop_sequences.is_empty() {
        tracing::warn!(
            adapter,
            "stop_sequences unsupported by the Responses API; dropped"
        );
    }
    let tools: Vec<Tool<'_>> = req.tools.iter().map(tool).collect();
    let has_tools = !tools.is_empty();
    let (text, wire) = match &req.response_schema {
        None => (None, WireReport::default()),
        Some(schema) => {
            let strict = check_strict(schema.as_value()).compatible;
            let mode = if strict {
                StructuredOutputMode::Strict
            } else {
                StructuredOutputMode::Hint
            };
            let format = Format {
                kind: "json_schema",
                name: schema.openai_name(),
                strict,
                schema: schema.as_value(),
            };
            (
                Some(Text { format }),
                WireReport {
                    mode,
                    transforms: Vec::new(),
                },
            )
        }
    };
    let reasoning = opts.reasoning == Reasoning::On;
    let request = Request {
        model: &req.model,
        instructions: if req.system_prompt.is_empty() {
            DEFAULT_INSTRUCTIONS
        } else {
            &req.system_prompt
        },
        input: input(req),
        tool_choice: has_tools.then(|| tool_choice(&req.tool_choice)),
        parallel_tool_calls: has_tools.then_some(true),
        tools,
        store: false,
        stream: opts.delivery == Delivery::Sse,
        include: reasoning.then_some(["reasoning.encrypted_content"]),
        reasoning: reasoning.then(|| ReasoningWire {
            effort: clamp_effort(&req.effort),
            summary: "auto",
        }),
        temperature: if reasoning { None } else { req.temperature },
        max_output_tokens: (opts.backend == Backend::Platform).then_some(req.max_tokens),
        prompt_cache_key: prompt_cache_key(&req.system_prompt),
        text,
    };
    Ok((request, wire))
}

fn estimate_size(req: &AdapterCallRequest) -> usize {
    let msgs: usize = req
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .map(|b| match b {
            ContentBlock::Text { text } => text.len() + 64,
            ContentBlock::ToolResult { content, .. } => content.len() + 96,
            ContentBlock::ToolUse { .. } => 256,
        })
        .sum();
    1024 + req.system_prompt.len() + msgs + req.tools.len() * 512
}

fn flush<'a>(role: &'static str, parts: &mut Vec<Part<'a>>, items: &mut Vec<InputItem<'a>>) {
    if !parts.is_empty() {
        items.push(InputItem::Message {
            role,
            content: std::mem::take(parts),
        });
    }
}

fn input(req: &AdapterCallRequest) -> Vec<InputItem<'_>> {
    let mut items = Vec::with_capacity(req.messages.len() + 1);
    for m in &req.messages {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let mut parts: Vec<Part<'_>> = Vec::new();
        for block in &m.content {
            match block {
                ContentBlock::Text { text } => parts.push(match m.role {
                    Role::User => Part::InputText { text },
                    Role::Assistant => Part::OutputText { text },
                }),
                ContentBlock::ToolUse { id, name, input } => {
                    flush(role, &mut parts, &mut items);
                    items.push(InputItem::FunctionCall {
                        call_id: id,
                        name,
                        arguments: arguments(input),
                    });
                }
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    ..
                } => {
                    flush(role, &mut parts, &mut items);
                    items.push(InputItem::FunctionCallOutput {
                        call_id: tool_use_id,
                        output: content,
                    });
                }
            }
        }
        flush(role, &mut parts, &mut items);
    }
    if items.is_empty() {
        items.push(InputItem::Message {
            role: "user",
            content: vec![Part::InputText { text: "hello" }],
        });
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

fn tool(spec: &crate::llm::request::ToolSpec) -> Tool<'_> {
    let parameters = match &spec.input_schema {
        Value::Object(_) => Cow::Borrowed(&spec.input_schema),
        _ => Cow::Owned(serde_json::json!({"type": "object", "properties": {}})),
    };
    Tool {
        kind: "function",
        name: &spec.name,
        description: &spec.description,
        strict: check_strict(&parameters).compatible,
        parameters,
    }
}

fn tool_choice(choice: &ToolChoice) -> ToolChoiceWire<'_> {
    match choice {
        ToolChoice::Auto => ToolChoiceWire::Mode("auto"),
        ToolChoice::Any => ToolChoiceWire::Mode("required"),
        ToolChoice::None => ToolChoiceWire::Mode("none"),
        ToolChoice::Tool(name) => ToolChoiceWire::Function {
            kind: "function",
            name,
        },
    }
}

/// The effort label on the Responses ladder: known labels pass, `max` is `xhigh`, anything
/// else is `medium`.
pub fn clamp_effort(effort: &str) -> &'static str {
    match effort.trim().to_ascii_lowercase().as_str() {
        "none" => "none",
        "minimal" => "minimal",
        "low" => "low",
        "high" => "high",
        "xhigh" | "max" => "xhigh",
        _ => "medium",
    }
}

/// `geode-<16 hex>`: a stable FNV-1a hash of the system prompt's static prefix (everything
/// before `<dynamic_context>`), so calls sharing a prefix share the provider's prompt cache.
pub fn prompt_cache_key(system_prompt: &str) -> Option<String> {
    if system_prompt.is_empty() {
        return None;
    }
    let prefix = system_prompt
        .split("<dynamic_context>")
        .next()
        .unwrap_or(system_prompt);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in prefix.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    Some(format!("geode-{h:016x}"))
}

#[cfg(test)]
mod tests;
