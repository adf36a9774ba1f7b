//! `glm-coding-plan`: Z.ai's dedicated Coding Plan endpoint (same wire as `glm-payg`).
//!
//! | | |
//! |---|---|
//! | endpoint | `POST {base}/chat/completions`, base from `GEODE_GLM_CODING_BASE_URL`, default `https://api.z.ai/api/coding/paas/v4` |
//! | auth | `ZAI_CODING_PLAN_KEY` as `Authorization: Bearer` (never falls back to `ZAI_API_KEY`, as in the reference) |
//! | wire | the Chat family ([`crate::llm::wire::chat`]), one JSON reply |
//! | `response_schema` | `response_format: {type: json_object}` + the schema in the system prompt (`json-mode`, never enforced) |
//!
//! API reference: <https://docs.z.ai/api-reference/llm/chat-completion>.

use super::glm::{Glm, GlmEndpoint};

/// The adapter's registry name.
pub const NAME: &str = "glm-coding-plan";
/// The default base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.z.ai/api/coding/paas/v4";
/// The environment variable overriding the base URL.
pub const BASE_URL_ENV: &str = "GEODE_GLM_CODING_BASE_URL";
/// The environment variable holding the key.
pub const KEY_ENV: &str = "ZAI_CODING_PLAN_KEY";

/// The Coding Plan endpoint.
#[derive(Debug, Clone, Copy)]
pub struct CodingPlan;

impl GlmEndpoint for CodingPlan {
    const NAME: &'static str = NAME;
    const DEFAULT_BASE_URL: &'static str = DEFAULT_BASE_URL;
    const BASE_URL_ENV: &'static str = BASE_URL_ENV;
    const KEY_ENV: &'static str = KEY_ENV;
}

/// The GLM Coding Plan adapter. `Debug` never shows the key.
pub type GlmCodingPlan = Glm<CodingPlan>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::StructuredOutputMode;
    use crate::llm::adapter::Adapter;
    use crate::llm::credentials::Secret;
    use crate::schema::ResponseSchema;
    use serde_json::json;

    #[test]
    fn json_mode_with_a_schema_and_no_key_in_debug() {
        let a = GlmCodingPlan::new("http://127.0.0.1:9/", Secret::new("zai-secret-1")).unwrap();
        assert!(!format!("{a:?}").contains("zai-secret-1"));
        let s = ResponseSchema::from_value(json!({"type": "object"})).unwrap();
        assert_eq!(a.wire_mode(Some(&s)), StructuredOutputMode::JsonMode);
        assert_eq!(a.wire_mode(None), StructuredOutputMode::None);
        assert_eq!(a.name(), "glm-coding-plan");
    }
}
