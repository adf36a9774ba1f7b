//! `geode gateway`: an OpenAI-compatible HTTP server in front of every geode route, so that any
//! OpenAI SDK (Python, TypeScript, ...) gets geode's contract without a line of Rust: the schema
//! on the route's own wire, full validation against the caller's schema with one retry, a
//! refusal before any upstream call when the route cannot give the required guarantee, and the
//! ledger in headers and body.
//!
//! | file | job |
//! |---|---|
//! | [`chat`] | `POST /v1/chat/completions`: the request read into a task, the answer written back |
//! | [`responses`] | `POST /v1/responses`: the same for the Responses API |
//! | [`convert`] | what both share: turns into a task, text out of content parts, a format into the task's output |
//! | `handler.rs` | the endpoints' shared path: slot, task, run, answer or stream, access log |
//! | [`route`] | the request's `model` → a route; the per-request policy |
//! | [`error`] | every failure in OpenAI's error shape, mapped from the run's typed error |
//! | [`ledger`] | the `x-geode-*` headers and the body's `geode` object |
//! | [`auth`] | inbound keys, compared in constant time |
//! | [`models`] | `GET /v1/models` |
//! | [`observe`] | the access-log line and `/metrics` |
//! | [`stream`] | `stream: true`: the run's progress, owned by the response (a client gone cancels it) |
//! | [`tools`] | client-side tools: function tools and `tool_choice` into the task's caller tools |
//!
//! Each request runs through [`geode::Client::run_task`], the worker `geode run` uses: adapters
//! are built once and shared. Bounds: the body size ([`Limits::max_body_bytes`]), requests in
//! flight ([`Limits::max_in_flight`], a 429 with `Retry-After` beyond it) and each request's
//! time ([`Limits::request_timeout`]).

pub mod auth;
pub mod chat;
pub mod convert;
pub mod error;
mod handler;
pub mod ledger;
pub mod models;
pub mod observe;
pub mod responses;
pub mod route;
pub mod stream;
pub mod tools;

use auth::InboundKeys;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use error::ApiError;
use geode::Client;
use geode::Environment;
use geode::Settings;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;
use tokio::sync::Semaphore;

/// What one gateway process allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Requests served at once; one more is answered 429 at once.
    pub max_in_flight: usize,
    /// The longest one request may take, retry included.
    pub request_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: 4 << 20,
            max_in_flight: 256,
            request_timeout: Duration::from_secs(600),
        }
    }
}

/// One gateway: the client that runs every request, the settings it routes by, its
/// inbound keys and limits.
pub struct Gateway {
    client: Client,
    settings: Settings,
    env: Arc<dyn Environment + Send + Sync>,
    keys: InboundKeys,
    limits: Limits,
    in_flight: Arc<Semaphore>,
    metrics: observe::Metrics,
    next_id: AtomicU64,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("keys", &self.keys)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// A gateway running requests on `client` (built from `settings` and `env`, with whatever
    /// adapter factories the binary adds, such as `local`).
    pub fn new(
        client: Client,
        settings: Settings,
        env: Arc<dyn Environment + Send + Sync>,
        keys: InboundKeys,
        limits: Limits,
    ) -> Arc<Self> {
        Arc::new(Self {
            client,
            settings,
            env,
            keys,
            in_flight: Arc::new(Semaphore::new(limits.max_in_flight.max(1))),
            metrics: observe::Metrics::default(),
            limits,
            next_id: AtomicU64::new(1),
        })
    }

    /// The HTTP routes.
    pub fn router(self: &Arc<Self>) -> Router {
        let api = Router::new()
            .route("/v1/chat/completions", post(handler::chat_completions))
            .route("/v1/responses", post(handler::responses_create))
            .route("/v1/models", get(list_models))
            .route("/metrics", get(metrics))
            .layer(axum::middleware::from_fn_with_state(
                self.clone(),
                authorize,
            ))
            .layer(DefaultBodyLimit::max(self.limits.max_body_bytes));
        Router::new()
            .route(
                "/health",
                get(|| async { Json(serde_json::json!({ "status": "ok" })) }),
            )
            .merge(api)
            .fallback(|| async {
                ApiError::new(
                    StatusCode::NOT_FOUND,
                    "invalid_request_error",
                    "not_found",
                    "no such endpoint",
                )
            })
            .with_state(self.clone())
    }
}

/// Refuses a request without an admitted inbound key; the key never goes further.
async fn authorize(State(gw): State<Arc<Gateway>>, mut request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.as_bytes());
    if !gw.keys.admits(presented) {
        return ApiError::new(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "invalid_api_key",
            "a missing or wrong gateway key",
        )
        .into_response();
    }
    request.headers_mut().remove(header::AUTHORIZATION);
    next.run(request).await
}

async fn metrics(State(gw): State<Arc<Gateway>>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        gw.metrics.render(),
    )
        .into_response()
}

async fn list_models(State(gw): State<Arc<Gateway>>) -> Response {
    Json(models::list(&gw.settings, gw.env.as_ref())).into_response()
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets requests in flight finish.
/// Each connection has `TCP_NODELAY`: a stream's events are small writes, and Nagle's algorithm
/// would hold each one back until the client acknowledged the one before.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY not set on a connection: {e}");
        }
    });
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}
