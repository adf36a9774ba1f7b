//! `anthropic-payg`: the Anthropic Messages API with an API key.
//!
//! | | |
//! |---|---|
//! | endpoint | `POST {base}/v1/messages`, base from `GEODE_ANTHROPIC_BASE_URL`, default `https://api.anthropic.com` |
//! | auth | `ANTHROPIC_API_KEY` as `x-api-key`, plus `anthropic-version: 2023-06-01` |
//! | wire | the Messages family ([`crate::llm::wire::messages`]), streamed |
//! | `response_schema` | `output_config.format` (`strict`), else a forced output tool (`tool`), else the prompt (`prompt`) |
//! | `wire_mode` | the mode of a plain request; extended thinking or an assistant prefill can make `call` pick a weaker one, and the response's `wire` report says which |
//!
//! API reference: <https://docs.anthropic.com/en/api/messages>.

use super::anthropic::MessagesClient;
use crate::ledger::StructuredOutputMode;
use crate::llm::adapter::{Adapter, AdapterError, CallCx};
use crate::llm::credentials::{Secret, env_secret};
use crate::llm::http::HttpClient;
use crate::llm::request::{AdapterCallRequest, AdapterResponse};
use crate::llm::wire::messages;
use crate::schema::ResponseSchema;

/// The adapter's registry name.
pub const NAME: &str = "anthropic-payg";
/// The environment variable holding the API key.
pub const KEY_ENV: &str = "ANTHROPIC_API_KEY";

/// The Anthropic pay-as-you-go adapter. `Debug` never shows the key.
#[derive(Debug, Clone)]
pub struct AnthropicPayg {
    client: MessagesClient,
    key: Secret,
}

impl AnthropicPayg {
    /// From the environment: `ANTHROPIC_API_KEY` (required) and `GEODE_ANTHROPIC_BASE_URL`.
    pub fn from_env() -> Result<Self, AdapterError> {
        let key = env_secret(NAME, KEY_ENV)?;
        Self::new(MessagesClient::base_url_from_env(), key)
    }

    /// An adapter for `base_url` (without `/v1`) with `key`.
    pub fn new(base_url: impl Into<String>, key: Secret) -> Result<Self, AdapterError> {
        Ok(Self {
            client: MessagesClient::new(NAME, base_url)?,
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
impl Adapter for AnthropicPayg {
    fn name(&self) -> &str {
        NAME
    }

    fn wire_mode(&self, schema: Option<&ResponseSchema>) -> StructuredOutputMode {
        messages::mode_for(schema)
    }

    async fn call(
        &self,
        req: AdapterCallRequest,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        let built = self.client.build(&req);
        let post = self
            .client
            .post(&built)?
            .secret_header("x-api-key", &self.key);
        self.client.send(&post, built, cx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn debug_never_shows_the_key() {
        let a = AnthropicPayg::new("http://127.0.0.1:9", Secret::new("sk-ant-secret-123")).unwrap();
        let text = format!("{a:?}");
        assert!(!text.contains("sk-ant-secret-123"), "{text}");
        assert_eq!(a.name(), NAME);
    }

    #[test]
    fn wire_mode_follows_the_placement_rule() {
        let a = AnthropicPayg::new("http://127.0.0.1:9", Secret::new("k")).unwrap();
        let fits = ResponseSchema::from_value(json!({"type": "object", "properties": {}})).unwrap();
        let recursive = ResponseSchema::from_value(
            json!({"type": "object", "properties": {"k": {"$ref": "#"}}}),
        )
        .unwrap();
        assert_eq!(a.wire_mode(None), StructuredOutputMode::None);
        assert_eq!(a.wire_mode(Some(&fits)), StructuredOutputMode::Strict);
        assert_eq!(a.wire_mode(Some(&recursive)), StructuredOutputMode::Tool);
        assert!(a.supports_tools());
    }
}
