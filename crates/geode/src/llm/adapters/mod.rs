//! HTTP adapters, one file per adapter: endpoint, auth and the few hooks that differ. The
//! JSON shapes live in [`crate::llm::wire`], the transport in [`crate::llm::http`].
//!
//! | adapter | wire | auth | schema on the wire |
//! |---|---|---|---|
//! | [`openai_payg::OpenAiPayg`] (`openai-payg`) | Responses, `POST {base}/v1/responses`, SSE | `OPENAI_API_KEY` bearer | `text.format` json_schema, `strict` from the strict check |
//! | [`codex_oauth::CodexOauth`] (`codex-oauth`) | ChatGPT backend, `POST {base}/backend-api/codex/responses`, SSE | `$CODEX_HOME/auth.json` bearer + `chatgpt-account-id`, refreshed when expired | same |
//! | [`anthropic_payg::AnthropicPayg`] (`anthropic-payg`) | Messages, `POST {base}/v1/messages`, SSE | `ANTHROPIC_API_KEY` as `x-api-key` | `output_config.format` when the projection fits (`strict`), else a forced output tool (`tool`), else the prompt (`prompt`) |
//! | [`anthropic_oauth::AnthropicOauth`] (`anthropic-oauth`) | same | `CLAUDE_CODE_OAUTH_TOKEN` or `~/.claude/.credentials.json` bearer + `anthropic-beta: oauth-2025-04-20`, identity system block | same |
//! | [`glm_payg::GlmPayg`] (`glm-payg`) | Chat Completions, `POST {base}/chat/completions`, JSON | `ZAI_API_KEY` bearer | `response_format: json_object` + schema in the system prompt (`json-mode`) |
//! | [`glm_coding_plan::GlmCodingPlan`] (`glm-coding-plan`) | same, Coding Plan base | `ZAI_CODING_PLAN_KEY` bearer | same |
//! | [`claude_cli::ClaudeCliAdapter`] (`claude-cli`) | `claude -p --output-format stream-json` subprocess | the CLI's login | `--json-schema`; `structured_output` read (`cli-validated`) |
//! | [`codex_cli::CodexCliAdapter`] (`codex-cli`) | `codex exec --json` subprocess | the CLI's login | 0600 temp file + `--output-schema` (`cli-flag`) |

pub mod anthropic;
pub mod anthropic_oauth;
pub mod anthropic_payg;
pub mod claude_cli;
pub mod cli_common;
pub mod codex_cli;
pub mod codex_config;
pub mod codex_oauth;
pub mod glm;
pub mod glm_coding_plan;
pub mod glm_payg;
pub mod openai_payg;

use crate::llm::adapter::{AdapterError, CallCx};
use crate::llm::http::{HttpClient, PostRequest};
use crate::llm::request::AdapterResponse;
use crate::llm::wire::responses::{self, Fold, Reasoning};

/// Whether an OpenAI model id names a reasoning model (gpt-5 family, o-series).
// TODO(registry): move this model-family table into registry.rs once it exists.
pub fn openai_reasoning(model: &str) -> Reasoning {
    let m = model.to_ascii_lowercase();
    let o_series = m.starts_with('o') && m[1..].starts_with(|c: char| c.is_ascii_digit());
    if m.starts_with("gpt-5") || o_series || m.starts_with("codex-") {
        Reasoning::On
    } else {
        Reasoning::Off
    }
}

/// Builds a streamed Responses request for `backend`, filling in `default_model` when the
/// request names none (the body the two Responses adapters send).
pub(crate) fn build_streamed(
    adapter: &'static str,
    backend: responses::Backend,
    default_model: &str,
    req: &mut crate::llm::request::AdapterCallRequest,
) -> Result<responses::Built, AdapterError> {
    if req.model.is_empty() {
        req.model = default_model.to_owned();
    }
    let opts = responses::Options {
        backend,
        reasoning: openai_reasoning(&req.model),
        delivery: responses::Delivery::Sse,
    };
    responses::build(adapter, req, &opts)
}

/// POSTs a Responses request and folds its SSE stream into a response. A stream that ends
/// before `response.completed` / `response.incomplete` is `Truncated`.
pub(crate) async fn stream_responses(
    http: &HttpClient,
    req: &PostRequest,
    cx: &CallCx,
) -> Result<AdapterResponse, AdapterError> {
    let adapter = req.adapter();
    let mut sse = http.post_sse(req, cx).await?;
    let mut fold = Fold::with_max_text_bytes(cx.max_response_bytes);
    let mut sent = 0;
    loop {
        let frame = sse.next_event(cx).await?;
        let event = responses::classify(adapter, &frame)?;
        let done = fold.push(adapter, event)?;
        cx.forward_text(&mut sent, fold.text_so_far());
        if let Some(resp) = done {
            return Ok(resp);
        }
    }
}

/// A random UUID v4 string (per-call session ids), from the std hasher's random keys.
pub(crate) fn uuid_v4() -> String {
    use std::hash::{BuildHasher, Hasher};
    let word = |salt: u64| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(salt);
        h.finish()
    };
    let (a, b) = (word(1), word(2));
    let a = (a & 0xffff_ffff_ffff_0fff) | 0x0000_0000_0000_4000;
    let b = (b & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}

/// Joins a base URL and a path with exactly one `/`.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::StructuredOutputMode;
    use crate::schema::ResponseSchema;
    use serde_json::json;

    #[test]
    fn wire_mode_follows_the_strict_check() {
        let strict = ResponseSchema::from_value(json!({"type": "object", "properties": {},
            "required": [], "additionalProperties": false}))
        .unwrap();
        let loose = ResponseSchema::from_value(json!({"type": "object"})).unwrap();
        for name in ["openai-payg", "codex-oauth"] {
            let spec = crate::llm::registry::spec(name).unwrap();
            let mode = |s| spec.mode_for(s, false);
            assert_eq!(mode(Some(&strict)), StructuredOutputMode::Strict);
            assert_eq!(mode(Some(&loose)), StructuredOutputMode::Hint);
            assert_eq!(mode(None), StructuredOutputMode::None);
        }
    }

    #[test]
    fn reasoning_models_are_recognised() {
        for m in ["gpt-5.5", "gpt-5-mini", "o3", "o4-mini", "O1"] {
            assert_eq!(openai_reasoning(m), Reasoning::On, "{m}");
        }
        for m in ["gpt-4.1", "gpt-4o", "omni-x", ""] {
            assert_eq!(openai_reasoning(m), Reasoning::Off, "{m}");
        }
    }

    #[test]
    fn uuids_have_the_v4_shape_and_differ() {
        let (a, b) = (uuid_v4(), uuid_v4());
        assert_ne!(a, b);
        let parts: Vec<&str> = a.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            vec![8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('4'), "{a}");
        assert!(matches!(&parts[3][..1], "8" | "9" | "a" | "b"), "{a}");
    }

    #[test]
    fn urls_join_with_one_slash() {
        assert_eq!(join_url("http://h/", "/v1/x"), "http://h/v1/x");
        assert_eq!(join_url("http://h", "v1/x"), "http://h/v1/x");
    }
}
