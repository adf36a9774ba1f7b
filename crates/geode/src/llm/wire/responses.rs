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
//! | `tools` | flat `{"type":"function",name,description,parameters,"strict":false}`: explicit, since the API defaults it to true and would reject non-strict parameter schemas; codex sends the same; arguments are validated locally |
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
use crate::llm::wire::json::JsonOut;
use crate::schema::strict::check_strict;
use bytes::Bytes;
use serde_json::Value;
use std::borrow::Cow;

mod family;
mod parse;

pub use family::ResponsesWire;
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

/// Builds and serialises the body (see the module table). More than [`MAX_TOOLS`] tools is
/// `Unsupported`. The body is written with [`JsonOut`] (same bytes as serde, faster; see
/// `benches/wire.rs`), keys in the order of the table.
pub fn build(
    adapter: &str,
    req: &AdapterCallRequest,
    opts: &Options,
) -> Result<Built, AdapterError> {
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
    let reasoning = opts.reasoning == Reasoning::On;
    let mut o = JsonOut::with_capacity(estimate_size(req));
    o.begin_object();
    o.key("model");
    o.string(&req.model);
    o.key("instructions");
    o.string(if req.system_prompt.is_empty() {
        DEFAULT_INSTRUCTIONS
    } else {
        &req.system_prompt
    });
    o.key("input");
    input(&mut o, req);
    if !req.tools.is_empty() {
        o.key("tools");
        o.begin_array();
        for t in &req.tools {
            o.item();
            tool(&mut o, t);
        }
        o.end_array();
        o.key("tool_choice");
        tool_choice(&mut o, &req.tool_choice);
        o.key("parallel_tool_calls");
        o.bool(true);
    }
    o.key("store");
    o.bool(false);
    o.key("stream");
    o.bool(opts.delivery == Delivery::Sse);
    if reasoning {
        o.key("include");
        o.begin_array();
        o.item();
        o.string("reasoning.encrypted_content");
        o.end_array();
        o.key("reasoning");
        o.begin_object();
        o.key("effort");
        o.string(clamp_effort(&req.effort));
        o.key("summary");
        o.string("auto");
        o.end_object();
    } else if let Some(t) = req.temperature {
        o.key("temperature");
        o.f32(t);
    }
    if opts.backend == Backend::Platform {
        o.key("max_output_tokens");
        o.u64(u64::from(req.max_tokens));
    }
    if let Some(key) = prompt_cache_key(&req.system_prompt) {
        o.key("prompt_cache_key");
        o.string(&key);
    }
    let mut wire = WireReport::default();
    if let Some(schema) = &req.response_schema {
        let strict = check_strict(schema.as_value()).compatible;
        wire.mode = if strict {
            StructuredOutputMode::Strict
        } else {
            StructuredOutputMode::Hint
        };
        o.key("text");
        o.begin_object();
        o.key("format");
        o.begin_object();
        o.key("type");
        o.string("json_schema");
        o.key("name");
        o.string(&schema.openai_name());
        o.key("strict");
        o.bool(strict);
        o.key("schema");
        o.value(schema.as_value());
        o.end_object();
        o.end_object();
    }
    o.end_object();
    Ok(Built {
        body: Bytes::from(o.into_bytes()),
        wire,
    })
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

/// Writes `{"type":"message","role":…,"content":[{"type":<part>,"text":…}…]}` for a run of
/// text blocks.
fn message(o: &mut JsonOut, role: Role, texts: &[&str]) {
    let (role, part) = match role {
        Role::User => ("user", "input_text"),
        Role::Assistant => ("assistant", "output_text"),
    };
    o.item();
    o.begin_object();
    o.key("type");
    o.string("message");
    o.key("role");
    o.string(role);
    o.key("content");
    o.begin_array();
    for text in texts {
        o.item();
        o.begin_object();
        o.key("type");
        o.string(part);
        o.key("text");
        o.string(text);
        o.end_object();
    }
    o.end_array();
    o.end_object();
}

fn input(o: &mut JsonOut, req: &AdapterCallRequest) {
    o.begin_array();
    let mut texts: Vec<&str> = Vec::new();
    for m in &req.messages {
        for block in &m.content {
            match block {
                ContentBlock::Text { text } => texts.push(text),
                ContentBlock::ToolUse { id, name, input } => {
                    if !texts.is_empty() {
                        message(o, m.role, &texts);
                        texts.clear();
                    }
                    o.item();
                    o.begin_object();
                    o.key("type");
                    o.string("function_call");
                    o.key("call_id");
                    o.string(id);
                    o.key("name");
                    o.string(name);
                    o.key("arguments");
                    o.string(&arguments(input));
                    o.end_object();
                }
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    ..
                } => {
                    if !texts.is_empty() {
                        message(o, m.role, &texts);
                        texts.clear();
                    }
                    o.item();
                    o.begin_object();
                    o.key("type");
                    o.string("function_call_output");
                    o.key("call_id");
                    o.string(tool_use_id);
                    o.key("output");
                    o.string(content);
                    o.end_object();
                }
            }
        }
        if !texts.is_empty() {
            message(o, m.role, &texts);
            texts.clear();
        }
    }
    if req.messages.iter().all(|m| m.content.is_empty()) {
        message(o, Role::User, &["hello"]);
    }
    o.end_array();
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

fn tool(o: &mut JsonOut, spec: &crate::llm::request::ToolSpec) {
    o.begin_object();
    o.key("type");
    o.string("function");
    o.key("name");
    o.string(&spec.name);
    o.key("description");
    o.string(&spec.description);
    o.key("parameters");
    match &spec.input_schema {
        Value::Object(_) => o.value(&spec.input_schema),
        _ => o.value(&serde_json::json!({"type": "object", "properties": {}})),
    }
    o.key("strict");
    o.bool(false);
    o.end_object();
}

fn tool_choice(o: &mut JsonOut, choice: &ToolChoice) {
    match choice {
        ToolChoice::Auto => o.string("auto"),
        ToolChoice::Any => o.string("required"),
        ToolChoice::None => o.string("none"),
        ToolChoice::Tool(name) => {
            o.begin_object();
            o.key("type");
            o.string("function");
            o.key("name");
            o.string(name);
            o.end_object();
        }
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

/// `geode-<16 hex>`: a stable hash of the system prompt's static prefix (everything before
/// `<dynamic_context>`), so calls sharing a prefix share the provider's prompt cache. The hash
/// reads 8 bytes at a time (little-endian) and is the same on every platform and release.
pub fn prompt_cache_key(system_prompt: &str) -> Option<String> {
    if system_prompt.is_empty() {
        return None;
    }
    let prefix = match system_prompt.find("<dynamic_context>") {
        Some(i) => &system_prompt[..i],
        None => system_prompt,
    };
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mix = |h: u64, w: u64| (h.rotate_left(23) ^ w).wrapping_mul(K);
    let word = |c: &[u8]| {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        u64::from_le_bytes(w)
    };
    let bytes = prefix.as_bytes();
    // Four independent lanes of 8 bytes, so the multiplies overlap.
    let mut lanes = [K, K.rotate_left(16), K.rotate_left(32), K.rotate_left(48)];
    let mut blocks = bytes.chunks_exact(32);
    for b in &mut blocks {
        for (lane, c) in lanes.iter_mut().zip(b.chunks_exact(8)) {
            *lane = mix(*lane, word(c));
        }
    }
    let mut h = (bytes.len() as u64).wrapping_mul(K);
    for lane in lanes {
        h = mix(h, lane);
    }
    for c in blocks.remainder().chunks(8) {
        h = mix(h, word(c));
    }
    // Final avalanche (splitmix64) so near-equal prefixes give unrelated keys.
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    Some(format!("geode-{h:016x}"))
}

#[cfg(test)]
mod tests;
