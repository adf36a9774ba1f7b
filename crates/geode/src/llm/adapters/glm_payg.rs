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

use super::glm::ChatClient;
use crate::ledger::StructuredOutputMode;
use crate::llm::adapter::{Adapter, AdapterError, CallCx};
use crate::llm::credentials::{Secret, env_secret, env_string};
use crate::llm::http::HttpClient;
use crate::llm::request::{AdapterCallRequest, AdapterResponse};
use crate::llm::wire::chat;
use crate::schema::ResponseSchema;

/// The adapter's registry name.
pub const NAME: &str = "glm-payg";
/// The default base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.z.ai/api/paas/v4";
/// The environment variable overriding the base URL.
pub const BASE_URL_ENV: &str = "GEODE_GLM_BASE_URL";
/// The environment variable holding the key.
pub const KEY_ENV: &str = "ZAI_API_KEY";

/// The GLM pay-as-you-go adapter. `Debug` never shows the key.
#[derive(Debug, Clone)]
pub struct GlmPayg {
    client: ChatClient,
    key: Secret,
}

impl GlmPayg {
    /// From the environment: `ZAI_API_KEY` (required) and `GEODE_GLM_BASE_URL`.
    pub fn from_env() -> Result<Self, AdapterError> {
        let key = env_secret(NAME, KEY_ENV)?;
        let base = env_string(BASE_URL_ENV).unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        Self::new(base, key)
    }

    /// An adapter for `base_url` with `key`.
    pub fn new(base_url: impl Into<String>, key: Secret) -> Result<Self, AdapterError> {
        Ok(Self {
            client: ChatClient::new(NAME, base_url)?,
            key,
        })
    }

    /// The same adapter on another HTTP client (retry policy, timeouts).
    pub fn with_http(mut self, http: HttpClient) -> Self {
        self.client = self.client.with_http(http);
        self
    }

    /// The same adapter with another default model.
    pub fn with_default_model(mut self, model: impl Into<String>) -> Self {
        self.client = self.client.with_default_model(model);
        self
    }
}

#[async_trait::async_trait]
impl Adapter for GlmPayg {
    fn name(&self) -> &str {
        NAME
    }

    fn wire_mode(&self, schema: Option<&ResponseSchema>) -> StructuredOutputMode {
        chat::mode_for(schema)
    }

    async fn call(
        &self,
        req: AdapterCallRequest,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        self.client.call(&req, &self.key, cx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
