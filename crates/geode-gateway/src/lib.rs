//! `geode gateway`: an OpenAI-compatible HTTP server in front of every geode route, so that any
//! OpenAI SDK (Python, TypeScript, ...) gets geode's contract without a line of Rust: the schema
//! on the route's own wire, full validation against the caller's schema with one retry, a
//! refusal before any upstream call when the route cannot give the required guarantee, and the
//! ledger in headers and body.
//!
//! | file | job |
//! |---|---|
//! | [`chat`] | `POST /v1/chat/completions`: the request read into a task, the answer written back |
//! | [`responses`] | `POST /v1/responses`: the same for the Responses API, complete as the Open Responses specification asks |
//! | [`fields`] | every request field of both endpoints: carried, kept, accepted at its default, or refused |
//! | [`stored`] | what a stored response keeps, `previous_response_id`, `GET`/`DELETE /v1/responses/{id}`, `input_items` |
//! | [`media`] | image and file content parts (Chat `image_url` / `file`, Responses `input_image` / `input_file`) into geode's parts |
//! | [`convert`] | what both share: turns into a task, text out of content parts, a format into the task's output |
//! | `handler.rs` | the endpoints' shared path: slot, task, run, answer or stream, access log |
//! | [`contract`] | `model: "contract/NAME"`: a `[contracts.NAME]` of geode.toml, its inputs the last user turn's JSON |
//! | [`serve`] | what each server binary sets up alike: inbound keys, the client with `local` in its own process |
//! | [`route`] | the request's `model` → a route; the per-request policy |
//! | [`error`] | every failure in OpenAI's error shape, mapped from the run's typed error |
//! | [`ledger`] | the `x-geode-*` headers and the body's `geode` object |
//! | [`auth`] | inbound keys, compared in constant time |
//! | [`models`] | `GET /v1/models` |
//! | [`observe`] | the access-log line and `/metrics` |
//! | [`stream`] | `stream: true`: the run's progress, owned by the response (a client gone cancels it) |
//! | [`tools`] | client-side tools: function tools and `tool_choice` into the task's caller tools |
//! | [`conn`] | the accept loop: the connection limit, the header-read timeout, the graceful stop |
//! | [`body`] | the one bounded reader every request body goes through, inside its slot |
//! | [`store`] | stored responses: kept per inbound key, embedded or Redis, bounded in size and age |
//!
//! Each request runs through [`geode::Client::run_task`], the worker `geode run` uses: adapters
//! are built once and shared. Every bound is in [`Limits`]: connections, the time to send a head
//! or the next piece of a body, the body's size, requests in flight (a 429 with `Retry-After`
//! beyond it; a body is read only once its request has a slot) and each request's time.

pub mod auth;
pub mod body;
pub mod chat;
pub mod conn;
pub mod contract;
pub mod convert;
pub mod error;
pub mod fields;
mod handler;
pub mod ledger;
pub mod media;
pub mod models;
pub mod observe;
pub mod responses;
pub mod route;
pub mod serve;
pub mod store;
pub mod stored;
pub mod stream;
pub mod tools;

use auth::InboundKeys;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use error::ApiError;
use geode::Client;
use geode::Environment;
use geode::Settings;
use observe::{Access, Ending};
use std::sync::Arc;
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
    /// Connections open at once; more wait in the kernel's backlog.
    pub max_connections: usize,
    /// The longest a client may stall: to send a request head or the next piece of a body,
    /// or to take the next piece of an answer (an idle keep-alive connection is closed after
    /// it too).
    pub client_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: 32 << 20,
            max_in_flight: 256,
            request_timeout: Duration::from_secs(600),
            max_connections: 1024,
            client_timeout: Duration::from_secs(10),
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
    metrics: Arc<observe::Metrics>,
    store: Arc<store::ResponseStore>,
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
    /// adapter factories the binary adds, such as `local`), keeping responses in `store`.
    pub fn new(
        client: Client,
        settings: Settings,
        env: Arc<dyn Environment + Send + Sync>,
        keys: InboundKeys,
        limits: Limits,
        store: store::ResponseStore,
    ) -> Arc<Self> {
        Arc::new(Self {
            client,
            settings,
            env,
            keys,
            in_flight: Arc::new(Semaphore::new(limits.max_in_flight.max(1))),
            metrics: Arc::default(),
            limits,
            store: Arc::new(store),
        })
    }

    /// Serves the gateway on `listener` within its limits until `shutdown` resolves
    /// ([`conn::serve`]).
    pub async fn serve(
        self: &Arc<Self>,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        conn::serve(listener, self.router(), self.limits, shutdown).await
    }

    /// The HTTP routes.
    pub fn router(self: &Arc<Self>) -> Router {
        let api = Router::new()
            .route("/v1/chat/completions", post(handler::chat_completions))
            .route("/v1/responses", post(handler::responses_create))
            .route(
                "/v1/responses/{id}",
                get(stored::retrieve).delete(stored::delete),
            )
            .route("/v1/responses/{id}/input_items", get(stored::input_items))
            .route("/v1/models", get(list_models))
            .route("/metrics", get(metrics))
            .layer(axum::middleware::from_fn_with_state(
                self.clone(),
                authorize,
            ))
            .layer(axum::middleware::from_fn(limit_head));
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
            .method_not_allowed_fallback(|| async {
                ApiError::new(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "invalid_request_error",
                    "method_not_allowed",
                    "this endpoint does not take that method",
                )
            })
            .with_state(self.clone())
    }
}

/// The most bytes of header names and values a request may send. hyper refuses a head past its
/// own buffer (about 400 KiB) with a bare 431 before any of this runs; below that, the refusal
/// is in OpenAI's shape.
pub const MAX_HEAD_BYTES: usize = 32 << 10;

/// Refuses a request whose headers hold more than [`MAX_HEAD_BYTES`].
async fn limit_head(request: Request, next: Next) -> Response {
    let size: usize = request
        .headers()
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len())
        .sum();
    if size > MAX_HEAD_BYTES {
        return ApiError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "invalid_request_error",
            "headers_too_large",
            format!("the request's headers hold more than {MAX_HEAD_BYTES} bytes"),
        )
        .into_response();
    }
    next.run(request).await
}

/// Refuses a request without an admitted inbound key; the key never goes further.
async fn authorize(State(gw): State<Arc<Gateway>>, mut request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(|v| v.as_bytes());
    let Some(tenant) = gw.keys.admit(presented) else {
        let refused = ApiError::new(
            StatusCode::UNAUTHORIZED,
            "authentication_error",
            "invalid_api_key",
            "a missing or wrong gateway key",
        );
        Access::start(endpoint(&request), &gw.metrics).finish(&Ending::failed(&refused, 401));
        return refused.into_response();
    };
    request.headers_mut().remove(header::AUTHORIZATION);
    request.extensions_mut().insert(tenant);
    next.run(request).await
}

/// The endpoint a request was routed to, as the access log names it (never the raw path, which
/// the client chose).
fn endpoint(request: &Request) -> &'static str {
    match request
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str)
    {
        Some("/v1/chat/completions") => "/v1/chat/completions",
        Some("/v1/responses") => "/v1/responses",
        Some("/v1/responses/{id}") => "/v1/responses/{id}",
        Some("/v1/responses/{id}/input_items") => "/v1/responses/{id}/input_items",
        Some("/v1/models") => "/v1/models",
        Some("/metrics") => "/metrics",
        _ => "other",
    }
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
