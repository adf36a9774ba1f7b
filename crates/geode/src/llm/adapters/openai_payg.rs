//! `openai-payg`: the OpenAI platform Responses API
//! (<https://platform.openai.com/docs/api-reference/responses>), `POST {base}/v1/responses`
//! streamed over SSE, with an `OPENAI_API_KEY` bearer token.
//!
//! Settings: `OPENAI_API_KEY` (required), `GEODE_OPENAI_BASE_URL` (default
//! `https://api.openai.com`). The body is [`crate::llm::wire::responses`] with
//! [`Backend::Platform`] (so `max_output_tokens` is sent); the schema goes to `text.format`
//! with `strict` from the strict check, and tools travel in the same request.

use crate::llm::adapter::{Adapter, AdapterError, CallCx};
use crate::llm::adapters::{build_streamed, join_url, stream_responses};
use crate::llm::credentials::{Secret, env_secret, env_string};
use crate::llm::http::{HttpClient, PostRequest};
use crate::llm::request::{AdapterCallRequest, AdapterResponse};
use crate::llm::wire::responses::Backend;

/// The adapter's registry name.
pub const NAME: &str = "openai-payg";
/// The default API base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com";
/// The env var holding the API key.
pub const API_KEY_ENV: &str = "OPENAI_API_KEY";
/// The env var overriding the base URL.
pub const BASE_URL_ENV: &str = "GEODE_OPENAI_BASE_URL";
/// The model used when the request names none.
pub const DEFAULT_MODEL: &str = "gpt-5.5";

/// Explicit settings (for tests and embedding).
#[derive(Debug, Clone)]
pub struct OpenAiPaygSettings {
    /// The API base URL, without `/v1`.
    pub base_url: String,
    /// The API key.
    pub api_key: Secret,
}

/// The `openai-payg` adapter.
#[derive(Debug, Clone)]
pub struct OpenAiPayg {
    settings: OpenAiPaygSettings,
    http: HttpClient,
}

impl OpenAiPayg {
    /// Reads `OPENAI_API_KEY` and `GEODE_OPENAI_BASE_URL`; a missing key is a `Config` error
    /// naming the variable.
    pub fn from_env() -> Result<Self, AdapterError> {
        let api_key = env_secret(NAME, API_KEY_ENV)?;
        let base_url = env_string(BASE_URL_ENV).unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        Self::new(OpenAiPaygSettings { base_url, api_key })
    }

    /// An adapter with explicit settings on the shared HTTP client.
    pub fn new(settings: OpenAiPaygSettings) -> Result<Self, AdapterError> {
        Ok(Self::with_http(settings, HttpClient::shared()?))
    }

    /// An adapter with explicit settings and HTTP client (retry policy, timeouts).
    pub fn with_http(settings: OpenAiPaygSettings, http: HttpClient) -> Self {
        Self { settings, http }
    }

    /// The model-call URL.
    pub fn url(&self) -> String {
        join_url(&self.settings.base_url, "/v1/responses")
    }
}

#[async_trait::async_trait]
impl Adapter for OpenAiPayg {
    fn name(&self) -> &str {
        NAME
    }

    async fn call(
        &self,
        mut req: AdapterCallRequest,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        let built = build_streamed(NAME, Backend::Platform, DEFAULT_MODEL, &mut req)?;
        let post = PostRequest::new(NAME, self.url(), built.body).bearer(&self.settings.api_key);
        let mut resp = stream_responses(&self.http, &post, cx).await?;
        resp.wire = built.wire;
        Ok(resp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_of_the_adapter_hides_the_key() {
        let a = OpenAiPayg::new(OpenAiPaygSettings {
            base_url: "http://127.0.0.1:1".into(),
            api_key: Secret::new("sk-test-abcdef"),
        })
        .unwrap();
        let dbg = format!("{a:?}");
        assert!(!dbg.contains("sk-test-abcdef"), "{dbg}");
        assert_eq!(a.url(), "http://127.0.0.1:1/v1/responses");
    }
}
