//! `glm-payg`: Z.ai's general Chat Completions API with a pay-as-you-go key.
//!
//! | | |
//! |---|---|
//! | endpoint | `POST {base}/chat/completions`, base from `GEODE_GLM_BASE_URL`, default `https://api.z.ai/api/paas/v4` |
//! | auth | `ZAI_API_KEY` as `Authorization: Bearer` |
//! | wire | the Chat family ([`crate::llm::wire::chat`]), one JSON reply |
//! | `response_schema` | `response_format: {type: json_object}` + the schema in the system prompt (`json-mode`, never enforced) |
//!
//! API reference: <https://docs.z.ai/api-reference/llm/chat-completion>.

use super::glm::{Glm, GlmEndpoint};

/// The adapter's registry name.
pub const NAME: &str = "glm-payg";
/// The default base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.z.ai/api/paas/v4";
/// The environment variable overriding the base URL.
pub const BASE_URL_ENV: &str = "GEODE_GLM_BASE_URL";
/// The environment variable holding the key.
pub const KEY_ENV: &str = "ZAI_API_KEY";

/// The pay-as-you-go endpoint.
#[derive(Debug, Clone, Copy)]
pub struct Payg;

impl GlmEndpoint for Payg {
    const NAME: &'static str = NAME;
    const DEFAULT_BASE_URL: &'static str = DEFAULT_BASE_URL;
    const BASE_URL_ENV: &'static str = BASE_URL_ENV;
    const KEY_ENV: &'static str = KEY_ENV;
}

/// The GLM pay-as-you-go adapter. `Debug` never shows the key.
pub type GlmPayg = Glm<Payg>;

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
        let a = GlmPayg::new("http://127.0.0.1:9/", Secret::new("zai-secret-1")).unwrap();
        assert!(!format!("{a:?}").contains("zai-secret-1"));
        let s = ResponseSchema::from_value(json!({"type": "object"})).unwrap();
        assert_eq!(a.wire_mode(Some(&s)), StructuredOutputMode::JsonMode);
        assert_eq!(a.wire_mode(None), StructuredOutputMode::None);
        assert_eq!(a.name(), "glm-payg");
    }
}
