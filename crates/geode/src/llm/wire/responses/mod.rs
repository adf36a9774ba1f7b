//! The OpenAI Responses wire family (`POST /v1/responses` and the ChatGPT backend's
//! `/backend-api/codex/responses`), sans-IO: [`build`] turns an [`AdapterCallRequest`] into a
//! request body; [`classify`] turns one SSE frame into an [`Event`]; [`Fold`] folds events into
//! an [`AdapterResponse`](crate::llm::request::AdapterResponse); [`parse_response`] reads a complete response object.
//! [`ResponsesWire`] is this family's [`crate::llm::wire::family::Wire`].
//!
//! Request (as GEODE's Responses builder makes it; the wire: docs/wire.md#openai-responses-api):
//!
//! | field | value |
//! |---|---|
//! | `instructions` | the system prompt; when it is empty, none on the platform API (nothing the caller did not write), and `Mode: general assistance.` on the ChatGPT backend, which has refused requests without instructions (docs/wire.md) |
//! | `input` | user/assistant text as `message` items (`input_text` / `output_text` parts); `ToolUse` → `function_call`; `ToolResult` → `function_call_output` |
//! | `tools` | flat `{"type":"function",name,description,parameters,"strict":false}`: explicit, since the API defaults it to true and would reject non-strict parameter schemas; codex sends the same; arguments are validated locally |
//! | `tool_choice` | `auto` / `required` (Any) / `none` / `{"type":"function","name"}`, with `parallel_tool_calls: true` |
//! | `store` | always `false` |
//! | `reasoning`, `include` | for reasoning models: `{"effort","summary":"auto"}` and `["reasoning.encrypted_content"]`; no temperature |
//! | `max_output_tokens` | [`Backend::Platform`] only (the ChatGPT backend rejects it) |
//! | `text.format` | with a schema: `{"type":"json_schema","name": openai_name,"strict": <plan>,"schema": <the plan's copy>}`, the plan being the call's [`crate::llm::registry::SchemaRoute::OpenAiStrict`] plan (root wrapped, unsupported keywords removed; the caller's schema when nothing needed rewriting) |
//!
//! The [`WireReport`] says `strict` when `strict:true` was sent, `hint` when `false`, `none`
//! without a schema. Response: text from `output_text` parts; tool calls from `function_call`
//! items; usage with cached tokens; stop reasons kept apart: `incomplete` +
//! `max_output_tokens` → `MaxTokens`, `content_filter` → `ContentFilter`, a `refusal` part →
//! `Refusal` (text = the refusal), tool calls → `ToolUse`, else `EndTurn`.

use crate::llm::call::AdapterError;
use crate::llm::request::{AdapterCallRequest, WireReport};
use crate::schema::subset::WirePlan;
use crate::vocab::StructuredOutputMode;
use bytes::Bytes;

mod body;
mod family;
mod parse;

pub use family::ResponsesWire;
pub use parse::{Event, Fold, adapter_error, classify, parse_response};

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

/// The instructions the ChatGPT backend gets when the system prompt is empty (GEODE's
/// fallback): that backend has refused requests without them.
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
/// `Unsupported`. The body is `Serialize` structs (`responses/body.rs`), keys in the order of
/// the table, like the other families' bodies (`benches/wire.rs` showed the former hand
/// writer saved nothing that shows in a whole call).
pub fn build(
    adapter: &str,
    req: &AdapterCallRequest,
    opts: &Options,
    plan: &WirePlan,
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
    let tools = !req.tools.is_empty();
    let mut wire = WireReport::default();
    let text = req.response_schema.as_ref().map(|schema| {
        wire.mode = plan.mode;
        wire.transforms.clone_from(&plan.transforms);
        wire.wrapped_root = plan.wrapped;
        wire.absent_nulls.clone_from(&plan.absent_nulls);
        body::Text {
            format: body::Format {
                kind: "json_schema",
                name: schema.openai_name(),
                strict: plan.mode == StructuredOutputMode::Strict,
                schema: plan.wire.as_ref().unwrap_or(schema.as_value()),
            },
        }
    });
    let body = body::Body {
        model: &req.model,
        instructions: match (req.system_prompt.is_empty(), opts.backend) {
            (false, _) => Some(&req.system_prompt),
            (true, Backend::Codex) => Some(DEFAULT_INSTRUCTIONS),
            (true, Backend::Platform) => None,
        },
        input: body::input(req),
        tools: req.tools.iter().map(body::tool).collect(),
        tool_choice: tools.then(|| body::choice(&req.tool_choice)),
        parallel_tool_calls: tools.then_some(true),
        store: false,
        stream: opts.delivery == Delivery::Sse,
        include: reasoning.then_some(["reasoning.encrypted_content"]),
        reasoning: reasoning.then(|| body::ReasoningConfig {
            effort: req.effort.as_str(),
            summary: "auto",
        }),
        temperature: req.temperature.filter(|_| !reasoning).map(f64::from),
        max_output_tokens: (opts.backend == Backend::Platform).then_some(u64::from(req.max_tokens)),
        prompt_cache_key: prompt_cache_key(&req.system_prompt),
        text,
    };
    Ok(Built {
        body: crate::llm::wire::family::to_body(adapter, &body)?,
        wire,
    })
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
