//! The context and the outcome of one call: [`CallCx`] (cancellation, deadline, response
//! budget, the text sink) and [`AdapterError`] (what went wrong, typed, one line, scrubbed).
//!
//! They live apart from the [`crate::llm::adapter::Adapter`] trait (which re-exports them) so
//! that the transport and the wire families can use them without depending on the registry.

use crate::secret::scrub;
use crate::vocab::{ErrorKind, RetryClass};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The default [`CallCx::max_response_bytes`]: 16 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 16 << 20;

/// Receives answer text as an adapter folds it, delta by delta (see [`CallCx::on_text`]).
/// Cheap to clone; `Debug` does not print the closure.
#[derive(Clone)]
pub struct TextSink(std::sync::Arc<dyn Fn(&str) + Send + Sync>);

impl TextSink {
    /// A sink calling `f` with each delta.
    pub fn new(f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self(std::sync::Arc::new(f))
    }

    /// Hands one delta of answer text to the sink (nothing for an empty delta).
    pub fn send(&self, delta: &str) {
        if !delta.is_empty() {
            (self.0)(delta);
        }
    }
}

/// Two sinks are equal when they are the same closure (one `Arc`).
impl PartialEq for TextSink {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for TextSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TextSink(..)")
    }
}

/// The context of one call: a cancellation token, an optional deadline and a response budget.
#[derive(Debug, Clone)]
pub struct CallCx {
    /// Cancelled when the caller gives up; adapters stop promptly and clean up.
    pub cancel: CancellationToken,
    /// The instant by which the call must end.
    pub deadline: Option<Instant>,
    /// The most bytes the provider may send for this call: an HTTP body, a whole SSE stream,
    /// a CLI's stdout, and the answer text folded from them. More is
    /// [`AdapterError::ResponseTooLarge`], and reading stops there.
    pub max_response_bytes: u64,
    /// Where a streaming adapter hands the answer text as it arrives (`None`: nobody listens).
    /// Adapters that do not stream never call it; the caller then sees only the final answer.
    pub on_text: Option<TextSink>,
}

impl Default for CallCx {
    fn default() -> Self {
        Self {
            cancel: CancellationToken::new(),
            deadline: None,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            on_text: None,
        }
    }
}

impl CallCx {
    /// A context with a fresh token, no deadline and the default response budget.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same context with another response budget (at least 1 byte).
    pub fn with_max_response_bytes(mut self, bytes: u64) -> Self {
        self.max_response_bytes = bytes.max(1);
        self
    }

    /// The [`AdapterError::ResponseTooLarge`] error for `adapter` under this budget.
    pub fn response_too_large(&self, adapter: &str) -> AdapterError {
        AdapterError::ResponseTooLarge {
            adapter: adapter.to_owned(),
            limit: self.max_response_bytes,
        }
    }

    /// The same token with a deadline `timeout` from now (or the earlier existing one).
    pub fn with_timeout(&self, timeout: Duration) -> Self {
        let candidate = Instant::now() + timeout;
        Self {
            cancel: self.cancel.clone(),
            deadline: Some(match self.deadline {
                Some(d) if d < candidate => d,
                _ => candidate,
            }),
            max_response_bytes: self.max_response_bytes,
            on_text: self.on_text.clone(),
        }
    }

    /// Hands what `text` (the answer folded so far) gained since `sent` bytes to
    /// [`Self::on_text`], and moves `sent` on: the one line a stream loop calls after each event.
    pub fn forward_text(&self, sent: &mut usize, text: &str) {
        if self.on_text.is_some() && text.len() > *sent && text.is_char_boundary(*sent) {
            self.text_delta(&text[*sent..]);
        }
        *sent = (*sent).max(text.len());
    }

    /// Hands a delta of answer text to [`Self::on_text`], when someone listens.
    pub fn text_delta(&self, delta: &str) {
        if let Some(sink) = &self.on_text {
            sink.send(delta);
        }
    }

    /// Time left before the deadline (`None` when there is none).
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// Runs `fut` until it ends, the token is cancelled or the deadline passes.
    pub async fn run<T>(
        &self,
        adapter: &str,
        fut: impl std::future::Future<Output = Result<T, AdapterError>>,
    ) -> Result<T, AdapterError> {
        let sleep = async {
            match self.deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(AdapterError::Cancelled { adapter: adapter.to_owned() }),
            _ = sleep => Err(AdapterError::Timeout { adapter: adapter.to_owned() }),
            r = fut => r,
        }
    }
}

/// A failed adapter call. `Display` and `Debug` are one line without secrets or bodies: every
/// provider-given text passes through [`scrub`] whatever built the error.
///
/// It serialises as `{"error": "<snake_case variant>", ...fields}` for the engine protocol
/// ([`crate::llm::engine`]), between geode's own processes only.
#[derive(thiserror::Error, serde::Serialize, serde::Deserialize)]
#[serde(tag = "error", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AdapterError {
    /// The adapter is not configured: a missing key, credential file or binary.
    #[error("{adapter}: not configured: {}", scrub(.message))]
    Config {
        /// The adapter name.
        adapter: String,
        /// What is missing.
        message: String,
    },
    /// The provider refused the credentials (401/403).
    #[error("{adapter}: authentication failed (HTTP {status}): {}", scrub(.message))]
    Auth {
        /// The adapter name.
        adapter: String,
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The provider rate-limited the call (429).
    #[error("{adapter}: rate limited (HTTP 429){}: {}", retry_after.map(|d| format!(", retry after {}s", d.as_secs_f32())).unwrap_or_default(), scrub(.message))]
    RateLimited {
        /// The adapter name.
        adapter: String,
        /// The provider's `retry-after`, when given.
        retry_after: Option<Duration>,
        /// The provider's message.
        message: String,
    },
    /// The provider rejected the schema (a 400 naming the schema or `text.format`).
    #[error("{adapter}: schema rejected by the provider (HTTP {status}, code {}): {}", scrub(.code), scrub(.message))]
    SchemaRejected {
        /// The adapter name.
        adapter: String,
        /// The HTTP status.
        status: u16,
        /// The provider's error code, or `-`.
        code: String,
        /// The provider's message.
        message: String,
    },
    /// Any other 4xx.
    #[error("{adapter}: bad request (HTTP {status}): {}", scrub(.message))]
    BadRequest {
        /// The adapter name.
        adapter: String,
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The provider failed (5xx).
    #[error("{adapter}: provider error (HTTP {status}): {}", scrub(.message))]
    Server {
        /// The adapter name.
        adapter: String,
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The connection failed or was reset.
    #[error("{adapter}: transport failure: {}", scrub(.message))]
    Transport {
        /// The adapter name.
        adapter: String,
        /// What happened.
        message: String,
    },
    /// A stream or process ended before its terminal event.
    #[error("{adapter}: response truncated: {}", scrub(.message))]
    Truncated {
        /// The adapter name.
        adapter: String,
        /// What was missing.
        message: String,
    },
    /// The provider's answer could not be understood.
    #[error("{adapter}: protocol error: {}", scrub(.message))]
    Protocol {
        /// The adapter name.
        adapter: String,
        /// What was wrong.
        message: String,
    },
    /// The provider or CLI reported a failure of the run itself (a CLI's `is_error`,
    /// `turn.failed`, retry exhaustion).
    #[error("{adapter}: run failed ({}): {}", scrub(.kind), scrub(.message))]
    RunFailed {
        /// The adapter name.
        adapter: String,
        /// A short machine-readable kind, e.g. `error_max_turns`.
        kind: String,
        /// The message.
        message: String,
    },
    /// The request cannot be served by this adapter (e.g. a schema over the dialect's limits).
    #[error("{adapter}: unsupported request: {}", scrub(.message))]
    Unsupported {
        /// The adapter name.
        adapter: String,
        /// Why.
        message: String,
    },
    /// The provider sent more than the call's response budget ([`CallCx::max_response_bytes`]):
    /// an HTTP body, an SSE stream, a CLI's stdout or the answer text folded from them. Reading
    /// stopped at the limit; a retry would most likely do the same.
    #[error(
        "{adapter}: response too large: more than {limit} bytes (raise it with max_response_bytes in geode.toml or GEODE_MAX_RESPONSE_BYTES)"
    )]
    ResponseTooLarge {
        /// The adapter name.
        adapter: String,
        /// The budget in bytes.
        limit: u64,
    },
    /// The deadline passed.
    #[error("{adapter}: timed out")]
    Timeout {
        /// The adapter name.
        adapter: String,
    },
    /// The caller cancelled.
    #[error("{adapter}: cancelled")]
    Cancelled {
        /// The adapter name.
        adapter: String,
    },
}

impl std::fmt::Debug for AdapterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("AdapterError")
            .field(&self.kind().as_str())
            .field(&self.to_string())
            .finish()
    }
}

impl AdapterError {
    /// Whether another try could succeed (see [`ErrorKind::retry_class`]).
    pub fn retry_class(&self) -> RetryClass {
        self.kind().retry_class()
    }

    /// What kind of failure this is, for the retry rules, the ledger and the exit code.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Config { .. } => ErrorKind::Config,
            Self::Auth { .. } => ErrorKind::Auth,
            Self::RateLimited { .. } => ErrorKind::RateLimited,
            Self::SchemaRejected { .. } => ErrorKind::SchemaRejected,
            Self::BadRequest { .. } => ErrorKind::BadRequest,
            Self::Server { .. } => ErrorKind::Server,
            Self::Transport { .. } => ErrorKind::Transport,
            Self::Truncated { .. } => ErrorKind::Truncated,
            Self::Protocol { .. } => ErrorKind::Protocol,
            Self::RunFailed { .. } => ErrorKind::RunFailed,
            Self::Unsupported { .. } => ErrorKind::Unsupported,
            Self::ResponseTooLarge { .. } => ErrorKind::ResponseTooLarge,
            Self::Timeout { .. } => ErrorKind::Timeout,
            Self::Cancelled { .. } => ErrorKind::Cancelled,
        }
    }
}
