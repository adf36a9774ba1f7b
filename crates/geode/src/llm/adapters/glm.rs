//! What the two GLM adapters share: `POST {base}/chat/completions` with a bearer key.
//!
//! [`ChatClient`] builds the body with [`chat::build`] (a request GLM cannot take, e.g. more
//! than 128 tools, is `Unsupported` before any byte is sent), POSTs it as one JSON request
//! (not streamed, like the reference) through [`HttpClient::post_json`] (which retries 429,
//! 5xx and transport failures) and parses the reply with [`chat::parse_value`]. The adapters
//! differ only in name, base URL and key.
//! API reference: <https://docs.z.ai/api-reference/llm/chat-completion>.

use crate::llm::adapter::{AdapterError, CallCx};
use crate::llm::credentials::Secret;
use crate::llm::http::{HttpClient, PostRequest};
use crate::llm::request::{AdapterCallRequest, AdapterResponse};
use crate::llm::wire::chat;
use bytes::Bytes;

/// The model used when a request names none (the registry normally sets one).
pub const DEFAULT_MODEL: &str = "glm-5.2";

/// The shared Chat Completions call path of one GLM adapter.
#[derive(Debug, Clone)]
pub struct ChatClient {
    name: &'static str,
    base_url: String,
    default_model: String,
    http: HttpClient,
}

impl ChatClient {
    /// A client for adapter `name` at `base_url` (e.g. `https://api.z.ai/api/paas/v4`).
    pub fn new(name: &'static str, base_url: impl Into<String>) -> Result<Self, AdapterError> {
        Ok(Self {
            name,
            base_url: base_url.into(),
            default_model: DEFAULT_MODEL.to_owned(),
            http: HttpClient::shared()?,
        })
    }

    /// The same client on another HTTP client (retry policy, timeouts).
    pub fn with_http(mut self, http: HttpClient) -> Self {
        self.http = http;
        self
    }

    /// The same client with another default model.
    pub fn with_default_model(mut self, model: impl Into<String>) -> Self {
        self.default_model = model.into();
        self
    }

    /// `{base}/chat/completions`.
    pub fn url(&self) -> String {
        super::join_url(&self.base_url, "/chat/completions")
    }

    /// Makes one call with `key` as the bearer token.
    pub async fn call(
        &self,
        req: &AdapterCallRequest,
        key: &Secret,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        let built =
            chat::build(req, &self.default_model).map_err(|e| e.into_adapter_error(self.name))?;
        let body = serde_json::to_vec(&built.body).map_err(|e| AdapterError::Protocol {
            adapter: self.name.to_owned(),
            message: format!("cannot serialise request: {e}"),
        })?;
        tracing::debug!(
            adapter = self.name,
            model = %built.body.model,
            mode = %built.wire.mode,
            "chat call"
        );
        let post = PostRequest::new(self.name, self.url(), Bytes::from(body)).bearer(key);
        let reply = self.http.post_json(&post, cx).await?;
        let mut resp = chat::parse_value(reply).map_err(|e| e.into_adapter_error(self.name))?;
        resp.wire = built.wire;
        Ok(resp)
    }
}

/// What differs between the GLM adapters: the name, the base URL and the key's variable.
pub trait GlmEndpoint: Send + Sync + 'static {
    /// The adapter's registry name.
    const NAME: &'static str;
    /// The default base URL.
    const DEFAULT_BASE_URL: &'static str;
    /// The environment variable overriding the base URL.
    const BASE_URL_ENV: &'static str;
    /// The environment variable holding the key.
    const KEY_ENV: &'static str;
}

/// A GLM adapter on endpoint `E`. `Debug` never shows the key.
pub struct Glm<E: GlmEndpoint> {
    client: ChatClient,
    key: Secret,
    endpoint: std::marker::PhantomData<E>,
}

impl<E: GlmEndpoint> std::fmt::Debug for Glm<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct(E::NAME)
            .field("client", &self.client)
            .field("key", &self.key)
            .finish()
    }
}

impl<E: GlmEndpoint> Clone for Glm<E> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            key: self.key.clone(),
            endpoint: std::marker::PhantomData,
        }
    }
}

impl<E: GlmEndpoint> Glm<E> {
    /// From the environment: the key variable (required) and the base URL variable.
    pub fn from_env() -> Result<Self, AdapterError> {
        let key = crate::llm::credentials::env_secret(E::NAME, E::KEY_ENV)?;
        let base = crate::llm::credentials::env_string(E::BASE_URL_ENV)
            .unwrap_or_else(|| E::DEFAULT_BASE_URL.to_owned());
        Self::new(base, key)
    }

    /// An adapter for `base_url` with `key`.
    pub fn new(base_url: impl Into<String>, key: Secret) -> Result<Self, AdapterError> {
        Ok(Self {
            client: ChatClient::new(E::NAME, base_url)?,
            key,
            endpoint: std::marker::PhantomData,
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
impl<E: GlmEndpoint> crate::llm::adapter::Adapter for Glm<E> {
    fn name(&self) -> &str {
        E::NAME
    }

    async fn call(
        &self,
        req: AdapterCallRequest,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        self.client.call(&req, &self.key, cx).await
    }
}
