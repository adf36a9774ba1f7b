//! What the two Messages adapters share: endpoint, version header, streaming and the fold.
//!
//! [`MessagesClient`] turns an [`AdapterCallRequest`] into a streamed `POST {base}/v1/messages`
//! (body from [`messages::build`] with [`Delivery::Stream`], header
//! `anthropic-version: 2023-06-01`) and folds the SSE reply with [`StreamFold`]. The adapters add
//! only their auth (and, for OAuth, the identity block and beta header). Retries of statuses and
//! transport failures happen in [`HttpClient`]; a stream that breaks after it started is
//! `Truncated` (retryable) for the caller to judge.
//! API reference: <https://docs.anthropic.com/en/api/messages-streaming>.

use crate::llm::adapter::{AdapterError, CallCx};
use crate::llm::http::{HttpClient, PostRequest};
use crate::llm::request::{AdapterCallRequest, AdapterResponse};
use crate::llm::wire::messages::{self, Built, Delivery, Flow, StreamFold};
use bytes::Bytes;

/// The Messages API base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The environment variable that overrides [`DEFAULT_BASE_URL`] (both Anthropic adapters).
pub const BASE_URL_ENV: &str = "GEODE_ANTHROPIC_BASE_URL";
/// The `anthropic-version` header value.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// The model used when a request names none (the registry normally sets one).
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-6";

/// The shared Messages call path of one adapter.
#[derive(Debug, Clone)]
pub struct MessagesClient {
    name: &'static str,
    base_url: String,
    default_model: String,
    http: HttpClient,
}

impl MessagesClient {
    /// A client for adapter `name` at `base_url` on the process-wide HTTP pool.
    pub fn new(name: &'static str, base_url: impl Into<String>) -> Result<Self, AdapterError> {
        Ok(Self {
            name,
            base_url: base_url.into(),
            default_model: DEFAULT_MODEL.to_owned(),
            http: HttpClient::shared()?,
        })
    }

    /// The base URL from [`BASE_URL_ENV`], else [`DEFAULT_BASE_URL`].
    pub fn base_url_from_env() -> String {
        crate::llm::credentials::env_string(BASE_URL_ENV)
            .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned())
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

    /// The adapter name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// `{base}/v1/messages`.
    pub fn url(&self) -> String {
        super::join_url(&self.base_url, "/v1/messages")
    }

    /// The streamed request body and wire report for `req`.
    pub fn build(&self, req: &AdapterCallRequest) -> Built {
        messages::build(req, &self.default_model, Delivery::Stream)
    }

    /// A POST of `built` with the version header; the caller adds auth.
    pub fn post(&self, built: &Built) -> Result<PostRequest, AdapterError> {
        let body = serde_json::to_vec(&built.body).map_err(|e| AdapterError::Protocol {
            adapter: self.name.to_owned(),
            message: format!("cannot serialise request: {e}"),
        })?;
        Ok(PostRequest::new(self.name, self.url(), Bytes::from(body))
            .header("anthropic-version", ANTHROPIC_VERSION))
    }

    /// Sends `post`, folds the stream and returns the answer with `built`'s wire report.
    pub async fn send(
        &self,
        post: &PostRequest,
        built: Built,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        tracing::debug!(
            adapter = self.name,
            model = %built.body.model,
            mode = %built.wire.mode,
            "messages call"
        );
        let mut sse = self
            .http
            .post_sse(post, cx)
            .await
            .map_err(|e| messages::reclassify(e, &built))?;
        let mut fold = StreamFold::with_max_text_bytes(cx.max_response_bytes);
        let mut sent = 0;
        loop {
            let event = sse.next_event(cx).await?;
            let flow = fold
                .push(Some(&event.event), &event.data)
                .map_err(|e| e.into_adapter_error(self.name))?;
            cx.forward_text(&mut sent, fold.text_so_far());
            if flow == Flow::Done {
                break;
            }
        }
        let mut resp = fold
            .finish(built.output_tool.as_deref())
            .map_err(|e| e.into_adapter_error(self.name))?;
        resp.wire = built.wire;
        Ok(resp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::request::Message;

    #[test]
    fn url_and_version_header_and_streamed_body() {
        let c = MessagesClient::new("anthropic-payg", "http://127.0.0.1:9/").unwrap();
        assert_eq!(c.url(), "http://127.0.0.1:9/v1/messages");
        let built = c.build(&AdapterCallRequest::new("", vec![Message::user("hi")]));
        assert!(built.body.stream);
        assert_eq!(built.body.model, DEFAULT_MODEL);
        let post = c.post(&built).unwrap();
        let body: serde_json::Value = serde_json::from_slice(post.body()).unwrap();
        assert_eq!(body["stream"], true);
        let c = c.with_default_model("claude-x");
        assert_eq!(
            c.build(&AdapterCallRequest::new("", vec![])).body.model,
            "claude-x"
        );
    }
}
