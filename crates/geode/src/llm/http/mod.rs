//! The shared HTTP transport: one pooled `reqwest` client, JSON and SSE POSTs, retry with
//! backoff, and the mapping of every failure to an [`AdapterError`]. Provider-neutral: it knows
//! bytes, statuses and the common JSON error-body shapes, never a provider's endpoints.
//!
//! Contract:
//! - [`HttpClient::post_json`] and [`HttpClient::post_sse`] run under the call's [`CallCx`]:
//!   cancellation gives `Cancelled`, the deadline gives `Timeout`, at any point (connect, send,
//!   body, backoff sleep). The client itself has a connect timeout and a read timeout.
//! - Budget: a JSON reply, or a whole SSE stream, over the call's
//!   [`CallCx::max_response_bytes`] is `ResponseTooLarge` (fatal, never retried); reading stops
//!   at the limit, so memory stays bounded whatever the server sends.
//! - Retries: on 429, 5xx and transport failures (connect refused, reset, read timeout), at
//!   most [`RetryPolicy::max_retries`] times, with exponential backoff plus jitter, or the
//!   provider's `retry-after-ms` / `retry-after` (seconds) when given. Every sleep is capped at
//!   [`RetryPolicy::max_delay`], and a sleep that would pass the deadline is not taken: the last
//!   error is returned instead. Other 4xx are never retried. A stream that has started is never
//!   retried here (its failure is `Truncated`, for the caller to judge).
//! - Error mapping ([`classify_status`]): 401/403 → `Auth`; 429 → `RateLimited` (with
//!   `retry_after`); 400/422 that the request's schema judge ([`PostRequest::schema_judge`],
//!   given by the wire family, which knows its field names) says points at the response
//!   schema → `SchemaRejected`; other 4xx → `BadRequest`; 5xx → `Server`. The message is the provider's own, taken from
//!   the JSON error body (`error.message`, `detail`, `message`), cut to 300 characters, with
//!   every secret of the request scrubbed out. A non-JSON body is described by its size only.
//!
//! ```no_run
//! use geode::llm::call::CallCx;
//! use geode::secret::Secret;
//! use geode::llm::http::{HttpClient, PostRequest};
//! # async fn demo() -> Result<(), geode::llm::call::AdapterError> {
//! let http = HttpClient::shared()?;
//! let req = PostRequest::json("my-adapter", "http://127.0.0.1:8080/v1/x", &serde_json::json!({"a": 1}))?
//!     .bearer(&Secret::new("key"));
//! let reply = http.post_json(&req, &CallCx::new()).await?;
//! # let _ = reply; Ok(()) }
//! ```

use crate::llm::call::{AdapterError, CallCx};
use crate::llm::sse::{SseReader, error_chain};
use crate::secret::Secret;
use bytes::Bytes;
use futures::Stream;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;
use std::pin::Pin;
use std::time::Duration;

/// The byte stream of a response body.
pub type BodyStream = Pin<Box<dyn Stream<Item = Result<Bytes, reqwest::Error>> + Send>>;

/// An SSE reader over an HTTP response body.
pub type HttpSse = SseReader<BodyStream>;

/// The longest provider message kept in an error.
pub const MAX_ERROR_MESSAGE: usize = 300;

/// The most bytes read from an error body.
const MAX_ERROR_BODY: u64 = 64 * 1024;

/// Idle connections kept per host by default: as many as the gateway lets run at once. With 5, a
/// gateway or batch running 64 calls to one provider opened a new connection (over TLS, a new
/// handshake) for most of them; keeping them took the gateway from 11,100 to 17,000 requests/s
/// at 64 clients (docs/benchmarks.md).
pub const POOL_MAX_IDLE_PER_HOST: usize = 256;

/// Client settings: GEODE's httpx timeouts (connect 5 s, read 300 s, idle connections kept 30 s),
/// but up to [`POOL_MAX_IDLE_PER_HOST`] idle connections per host instead of its 5.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpConfig {
    /// TCP + TLS connect timeout.
    pub connect_timeout: Duration,
    /// The longest wait for any read on the connection.
    pub read_timeout: Duration,
    /// The longest wait for one SSE event.
    pub sse_idle_timeout: Duration,
    /// How long an idle pooled connection is kept.
    pub pool_idle_timeout: Duration,
    /// Idle connections kept per host.
    pub pool_max_idle_per_host: usize,
    /// The retry policy.
    pub retry: RetryPolicy,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(300),
            sse_idle_timeout: Duration::from_secs(300),
            pool_idle_timeout: Duration::from_secs(30),
            pool_max_idle_per_host: POOL_MAX_IDLE_PER_HOST,
            retry: RetryPolicy::default(),
        }
    }
}

/// How transient failures are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first try (0 = no retry).
    pub max_retries: u32,
    /// The first backoff; it doubles each retry.
    pub base_delay: Duration,
    /// The cap on any one sleep, `retry-after` included.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
        }
    }
}

impl RetryPolicy {
    /// The sleep before retry number `attempt + 1`: the provider's hint when given, else
    /// `base * 2^attempt` with ±20% jitter; capped at `max_delay`.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let d = match retry_after {
            Some(hint) => hint,
            None => {
                let exp = self
                    .base_delay
                    .saturating_mul(2u32.saturating_pow(attempt.min(16)));
                exp.mul_f64(0.8 + 0.4 * unit_random())
            }
        };
        d.min(self.max_delay)
    }
}

/// A random number in `[0, 1)` from the std hasher's per-process random keys.
fn unit_random() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0x9e37_79b9_7f4a_7c15);
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// One POST: URL, headers and body. Sensitive headers are marked; every [`Secret`] is known to
/// the process-wide scrubber ([`crate::secret::scrub`]), which cleans every error built here.
#[derive(Clone)]
pub struct PostRequest {
    adapter: String,
    url: String,
    headers: Vec<(String, String, bool)>,
    body: Bytes,
    schema_judge: Option<SchemaJudge>,
}

/// Whether a 400/422 error body names the response schema (from the wire family).
pub type SchemaJudge = std::sync::Arc<dyn Fn(&ProviderError) -> bool + Send + Sync>;

impl std::fmt::Debug for PostRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|h| h.0.as_str()).collect();
        f.debug_struct("PostRequest")
            .field("adapter", &self.adapter)
            .field("url", &self.url)
            .field("headers", &names)
            .field("body_bytes", &self.body.len())
            .finish_non_exhaustive()
    }
}

impl PostRequest {
    /// A POST of `body` (already serialised JSON) with `content-type: application/json`.
    pub fn new(adapter: impl Into<String>, url: impl Into<String>, body: Bytes) -> Self {
        Self {
            adapter: adapter.into(),
            url: url.into(),
            headers: vec![("content-type".into(), "application/json".into(), false)],
            body,
            schema_judge: None,
        }
    }

    /// Sets the judge that tells a schema rejection from another bad request; without one a
    /// 400/422 is `BadRequest`.
    pub fn schema_judge(mut self, judge: SchemaJudge) -> Self {
        self.schema_judge = Some(judge);
        self
    }

    /// A POST of `body` serialised as JSON.
    pub fn json(adapter: &str, url: &str, body: &Value) -> Result<Self, AdapterError> {
        let bytes = serde_json::to_vec(body).map_err(|e| AdapterError::Protocol {
            adapter: adapter.to_owned(),
            message: format!("cannot serialise request: {e}"),
        })?;
        Ok(Self::new(adapter, url, Bytes::from(bytes)))
    }

    /// Adds a plain header.
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_owned(), value.into(), false));
        self
    }

    /// Adds `authorization: Bearer <secret>` (marked sensitive; the secret is scrubbed from errors).
    pub fn bearer(self, secret: &Secret) -> Self {
        let value = format!("Bearer {}", secret.expose());
        self.secret_header_value("authorization", value)
    }

    /// Adds a header whose value is `secret` (e.g. `x-api-key`).
    pub fn secret_header(self, name: &str, secret: &Secret) -> Self {
        let value = secret.expose().to_owned();
        self.secret_header_value(name, value)
    }

    fn secret_header_value(mut self, name: &str, value: String) -> Self {
        self.headers.push((name.to_owned(), value, true));
        self
    }

    /// The adapter name errors carry.
    pub fn adapter(&self) -> &str {
        &self.adapter
    }

    /// The serialised body.
    pub fn body(&self) -> &Bytes {
        &self.body
    }
}

/// A pooled HTTP client with a retry policy. Cheap to clone (the pool is shared).
#[derive(Debug, Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    config: HttpConfig,
}

impl HttpClient {
    /// A client with its own connection pool.
    pub fn new(config: HttpConfig) -> Result<Self, AdapterError> {
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .read_timeout(config.read_timeout)
            .pool_idle_timeout(config.pool_idle_timeout)
            .pool_max_idle_per_host(config.pool_max_idle_per_host)
            .user_agent(concat!("geode/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| AdapterError::Config {
                adapter: "http".to_owned(),
                message: format!("cannot build the HTTP client: {}", error_chain(&e)),
            })?;
        Ok(Self { client, config })
    }

    /// The process's client with the default [`HttpConfig`] (one pool for all adapters). Made
    /// once per process: a child forked after a call (multiprocessing, gunicorn and Celery
    /// workers fork) must not use its parent's pool, whose connections belong to the parent's
    /// runtime and would wait for ever.
    pub fn shared() -> Result<Self, AdapterError> {
        static SHARED: std::sync::Mutex<Option<(u32, HttpClient)>> = std::sync::Mutex::new(None);
        let pid = std::process::id();
        let mut shared = SHARED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((owner, c)) = shared.as_ref()
            && *owner == pid
        {
            return Ok(c.clone());
        }
        let c = Self::new(HttpConfig::default())?;
        // The parent's client is forgotten, never dropped here: dropping it would reach into a
        // runtime this process does not run.
        if let Some(old) = shared.replace((pid, c.clone())) {
            std::mem::forget(old);
        }
        Ok(c)
    }

    /// The same pool with another retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.config.retry = retry;
        self
    }

    /// The same pool with another SSE idle timeout.
    pub fn with_sse_idle_timeout(mut self, idle: Duration) -> Self {
        self.config.sse_idle_timeout = idle;
        self
    }

    /// The settings in force.
    pub fn config(&self) -> &HttpConfig {
        &self.config
    }

    /// POSTs and returns the parsed JSON reply (any 2xx). See the module docs for retries
    /// and errors; a 2xx body that is not JSON is a `Protocol` error.
    pub async fn post_json(&self, req: &PostRequest, cx: &CallCx) -> Result<Value, AdapterError> {
        let bytes = cx
            .run(
                &req.adapter,
                self.with_retries(req, cx, || async {
                    let resp = self.send_once(req, "application/json").await?;
                    read_limited(req, resp, cx.max_response_bytes).await
                }),
            )
            .await?;
        json_reply(req, &bytes)
    }

    /// POSTs with `accept: text/event-stream` and returns the reply once a 2xx status arrives
    /// (retrying the status as for [`HttpClient::post_json`]): an SSE reader, to read with
    /// [`SseReader::next_event`] under the same `cx`; or, from a server that ignored the request
    /// to stream (some OpenAI-compatible servers and proxies do), its whole JSON body, which the
    /// wire family reads as a reply it asked for whole. Any other content type (an HTML proxy
    /// page) is a `Protocol` error naming it.
    pub async fn post_sse(&self, req: &PostRequest, cx: &CallCx) -> Result<SseReply, AdapterError> {
        let resp = cx
            .run(
                &req.adapter,
                self.with_retries(req, cx, || self.send_once(req, "text/event-stream")),
            )
            .await?;
        match reply_kind(resp.headers()) {
            ReplyKind::Events => {
                let stream: BodyStream = Box::pin(resp.bytes_stream());
                Ok(SseReply::Events(
                    SseReader::new(req.adapter.clone(), stream, self.config.sse_idle_timeout)
                        .with_max_total_bytes(cx.max_response_bytes),
                ))
            }
            ReplyKind::Json => {
                let read = read_limited(req, resp, cx.max_response_bytes);
                let bytes = cx.run(&req.adapter, read).await?;
                json_reply(req, &bytes).map(SseReply::Whole)
            }
            ReplyKind::Other(kind) => Err(AdapterError::Protocol {
                adapter: req.adapter.clone(),
                message: format!("expected an event stream, got a {kind} reply"),
            }),
        }
    }

    async fn with_retries<T, F, Fut>(
        &self,
        req: &PostRequest,
        cx: &CallCx,
        mut attempt_fn: F,
    ) -> Result<T, AdapterError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, AdapterError>>,
    {
        let policy = self.config.retry;
        let mut attempt = 0u32;
        loop {
            let err = match attempt_fn().await {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            let retry_after = match &err {
                AdapterError::RateLimited { retry_after, .. } => *retry_after,
                AdapterError::Server { .. } | AdapterError::Transport { .. } => None,
                _ => return Err(err),
            };
            if attempt >= policy.max_retries {
                return Err(err);
            }
            let delay = policy.delay(attempt, retry_after);
            if cx.remaining().is_some_and(|left| delay >= left) {
                return Err(err);
            }
            tracing::debug!(adapter = %req.adapter, attempt, kind = %err.kind(), delay_ms = delay.as_millis() as u64, "retrying");
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }

    async fn send_once(
        &self,
        req: &PostRequest,
        accept: &str,
    ) -> Result<reqwest::Response, AdapterError> {
        let mut headers = HeaderMap::new();
        headers.insert(reqwest::header::ACCEPT, HeaderValue::from_static("*/*"));
        if let Ok(v) = HeaderValue::from_str(accept) {
            headers.insert(reqwest::header::ACCEPT, v);
        }
        for (name, value, sensitive) in &req.headers {
            let name = reqwest::header::HeaderName::from_bytes(name.as_bytes());
            let value = HeaderValue::from_str(value);
            let (Ok(name), Ok(mut value)) = (name, value) else {
                return Err(AdapterError::Config {
                    adapter: req.adapter.clone(),
                    message: "a request header has an invalid name or value".to_owned(),
                });
            };
            value.set_sensitive(*sensitive);
            headers.insert(name, value);
        }
        let resp = self
            .client
            .post(&req.url)
            .headers(headers)
            .body(req.body.clone())
            .send()
            .await
            .map_err(|e| transport(req, e))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let retry_after = retry_after(resp.headers());
        let body = read_limited(req, resp, MAX_ERROR_BODY)
            .await
            .unwrap_or_default();
        let judge = |p: &ProviderError| req.schema_judge.as_ref().is_some_and(|j| j(p));
        Err(classify_status(
            &req.adapter,
            status.as_u16(),
            retry_after,
            &body,
            &judge,
        ))
    }
}

fn transport(req: &PostRequest, e: reqwest::Error) -> AdapterError {
    let e = e.without_url();
    let what = if e.is_timeout() {
        "timed out: "
    } else if e.is_connect() {
        "connect failed: "
    } else {
        ""
    };
    AdapterError::Transport {
        adapter: req.adapter.clone(),
        message: truncate(&format!("{what}{}", error_chain(&e))),
    }
}

/// Reads a body up to `limit` bytes; more (announced or read) is `ResponseTooLarge` and
/// reading stops there; a broken read is `Transport`.
async fn read_limited(
    req: &PostRequest,
    mut resp: reqwest::Response,
    limit: u64,
) -> Result<Bytes, AdapterError> {
    let too_large = || AdapterError::ResponseTooLarge {
        adapter: req.adapter.clone(),
        limit,
    };
    if resp.content_length().is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| transport(req, e))? {
        if (out.len() + chunk.len()) as u64 > limit {
            return Err(too_large());
        }
        out.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(out))
}

/// Joins a base URL and a path with exactly one `/`.
pub fn join_url(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

/// A 2xx reply to [`HttpClient::post_sse`].
pub enum SseReply {
    /// An event stream.
    Events(HttpSse),
    /// One whole JSON body (the server ignored the request to stream).
    Whole(Value),
}

/// What the content type of a 2xx reply to an SSE request says it is.
enum ReplyKind {
    /// `text/event-stream`, or no content type at all (the ChatGPT backend sends none).
    Events,
    /// `application/json` or another `+json` type.
    Json,
    /// Anything else, cut to one short token.
    Other(String),
}

fn reply_kind(headers: &reqwest::header::HeaderMap) -> ReplyKind {
    let Some(kind) = headers.get(reqwest::header::CONTENT_TYPE) else {
        return ReplyKind::Events;
    };
    let kind = String::from_utf8_lossy(kind.as_bytes()).to_ascii_lowercase();
    let essence = kind.split(';').next().unwrap_or("").trim();
    if essence.contains("event-stream") {
        ReplyKind::Events
    } else if essence == "application/json" || essence.ends_with("+json") {
        ReplyKind::Json
    } else {
        ReplyKind::Other(crate::secret::clip(essence, 60))
    }
}

/// A reply body parsed as JSON, or the `Protocol` error saying it is not.
fn json_reply(req: &PostRequest, bytes: &[u8]) -> Result<Value, AdapterError> {
    serde_json::from_slice(bytes).map_err(|e| AdapterError::Protocol {
        adapter: req.adapter.clone(),
        message: format!("reply is not JSON ({} bytes): {e}", bytes.len()),
    })
}

mod errors;
pub use errors::{ProviderError, classify_status, provider_error, retry_after, truncate};

#[cfg(test)]
mod tests;
