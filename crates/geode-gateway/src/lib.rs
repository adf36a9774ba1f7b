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
//! | [`route`] | the request's `model` → a route; the per-request policy |
//! | [`error`] | every failure in OpenAI's error shape, mapped from the run's typed error |
//! | [`ledger`] | the `x-geode-*` headers and the body's `geode` object |
//! | [`auth`] | inbound keys, compared in constant time |
//! | [`models`] | `GET /v1/models` |
//! | [`observe`] | the access-log line and `/metrics` |
//! | [`stream`] | `stream: true`: the run's progress, owned by the response (a client gone cancels it) |
//!
//! Each request runs through [`geode::Client::run_task`], the worker `geode run` uses: adapters
//! are built once and shared. Bounds: the body size ([`Limits::max_body_bytes`]), requests in
//! flight ([`Limits::max_in_flight`], a 429 with `Retry-After` beyond it) and each request's
//! time ([`Limits::request_timeout`]).

pub mod auth;
pub mod chat;
pub mod convert;
pub mod error;
pub mod ledger;
pub mod models;
pub mod observe;
pub mod responses;
pub mod route;
pub mod stream;

use auth::InboundKeys;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use error::ApiError;
use futures::StreamExt;
use geode::Client;
use geode::config::Config;
use geode::llm::registry::Environment;
use observe::{Access, Ending};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use stream::{Progress, Written};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

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

/// One gateway: the client that runs every request, the configuration it routes by, its
/// inbound keys and limits.
pub struct Gateway {
    client: Client,
    cfg: Config,
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
    /// A gateway running requests on `client` (built from `cfg` and `env`, with whatever
    /// adapter factories the binary adds, such as `local`).
    pub fn new(
        client: Client,
        cfg: Config,
        env: Arc<dyn Environment + Send + Sync>,
        keys: InboundKeys,
        limits: Limits,
    ) -> Arc<Self> {
        Arc::new(Self {
            client,
            cfg,
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
            .route("/v1/chat/completions", post(chat_completions))
            .route("/v1/responses", post(responses_create))
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
    Json(models::list(&gw.cfg, gw.env.as_ref())).into_response()
}

/// The body as JSON, or OpenAI's 400 for it.
fn json_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid("body", format!("the body is not a valid request: {e}")))
}

/// One endpoint's request: its route, its policy extension, and the task it describes.
trait Endpoint: serde::de::DeserializeOwned {
    /// The path, for the access log and metrics.
    const NAME: &'static str;
    fn model(&self) -> &str;
    fn extension(&self) -> Option<&convert::Extension>;
    fn task(&self, base: geode::agent::task::Task) -> Result<geode::agent::task::Task, ApiError>;
    /// The success body.
    fn answer(id: u64, model: &str, answer: &geode::agent::task::Answer) -> serde_json::Value;
    /// Whether the client asked for a stream.
    fn streamed(&self) -> bool;
    /// The events that open a stream.
    fn opening(id: u64, model: &str, w: &mut Written) -> Vec<Event>;
    /// The events of one step.
    fn events(id: u64, model: &str, step: Progress, w: &mut Written) -> Vec<Event>;
}

impl Endpoint for chat::ChatRequest {
    const NAME: &'static str = "/v1/chat/completions";
    fn model(&self) -> &str {
        &self.model
    }
    fn extension(&self) -> Option<&convert::Extension> {
        self.geode.as_ref()
    }
    fn task(&self, base: geode::agent::task::Task) -> Result<geode::agent::task::Task, ApiError> {
        chat::ChatRequest::task(self, base)
    }
    fn answer(id: u64, model: &str, answer: &geode::agent::task::Answer) -> serde_json::Value {
        chat::completion(id, model, answer)
    }
    fn streamed(&self) -> bool {
        self.stream == Some(true)
    }
    fn opening(id: u64, model: &str, w: &mut Written) -> Vec<Event> {
        chat::opening(id, model, w)
    }
    fn events(id: u64, model: &str, step: Progress, w: &mut Written) -> Vec<Event> {
        chat::chunks(id, model, step, w)
    }
}

impl Endpoint for responses::ResponsesRequest {
    const NAME: &'static str = "/v1/responses";
    fn model(&self) -> &str {
        &self.model
    }
    fn extension(&self) -> Option<&convert::Extension> {
        self.geode.as_ref()
    }
    fn task(&self, base: geode::agent::task::Task) -> Result<geode::agent::task::Task, ApiError> {
        responses::ResponsesRequest::task(self, base)
    }
    fn answer(id: u64, model: &str, answer: &geode::agent::task::Answer) -> serde_json::Value {
        responses::response(id, model, answer)
    }
    fn streamed(&self) -> bool {
        self.stream == Some(true)
    }
    fn opening(id: u64, model: &str, w: &mut Written) -> Vec<Event> {
        responses::opening(id, model, w)
    }
    fn events(id: u64, model: &str, step: Progress, w: &mut Written) -> Vec<Event> {
        responses::events(id, model, step, w)
    }
}

async fn chat_completions(
    State(gw): State<Arc<Gateway>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    handle::<chat::ChatRequest>(gw, &headers, &body).await
}

async fn responses_create(
    State(gw): State<Arc<Gateway>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    handle::<responses::ResponsesRequest>(gw, &headers, &body).await
}

/// Takes a slot (or answers 429), runs the request, and answers in the endpoint's shape.
async fn handle<E: Endpoint>(gw: Arc<Gateway>, headers: &HeaderMap, body: &[u8]) -> Response {
    let mut access = Access::start(E::NAME);
    let Ok(slot) = gw.in_flight.clone().try_acquire_owned() else {
        let mut busy = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            "gateway_busy",
            "the gateway is serving as many requests as it allows; try again",
        );
        busy.retry_after = Some(1);
        access.finish(&gw.metrics, &Ending::failed(&busy, 429));
        return busy.into_response();
    };
    match serve_one::<E>(&gw, headers, body, slot, &mut access).await {
        Ok(Served::Answer(response, ledger)) => {
            access.finish(&gw.metrics, &Ending::served(&ledger));
            response
        }
        Ok(Served::Stream(response)) => response,
        Err(e) => {
            access.finish(&gw.metrics, &Ending::failed(&e, e.status.as_u16()));
            e.into_response()
        }
    }
}

/// A request served: an answer (logged by the caller) or a stream (logged at its end).
enum Served {
    Answer(Response, Box<geode::ledger::GuaranteeLedger>),
    Stream(Response),
}

async fn serve_one<E: Endpoint>(
    gw: &Arc<Gateway>,
    headers: &HeaderMap,
    body: &[u8],
    slot: OwnedSemaphorePermit,
    access: &mut Access,
) -> Result<Served, ApiError> {
    let req: E = json_body(body)?;
    access.asked(req.model(), req.streamed());
    let routed = route::route(req.model(), &gw.cfg)?;
    let header_require = headers
        .get("x-geode-require")
        .map(|v| v.to_str().unwrap_or("?"));
    let body_require = req.extension().and_then(|g| g.require.as_deref());
    let mut task = req.task(gw.client.new_task(""))?;
    task.route = routed.route;
    task.fallback = routed.fallback;
    task.require = route::require(gw.cfg.gateway.require, header_require, body_require)?;
    task.budgets.timeout = task.budgets.timeout.min(gw.limits.request_timeout);
    let id = gw.next_id.fetch_add(1, Ordering::Relaxed);
    let model = req.model().to_owned();
    if req.streamed() {
        let mut progress = Box::pin(stream::run(
            gw.client.clone(),
            task,
            gw.limits.request_timeout,
            slot,
        ));
        // A run refused or failed before its first delta is an HTTP error, not a stream.
        let first = match progress.next().await {
            Some(Progress::Done(Err(e))) => return Err(e),
            Some(step) => step,
            None => {
                return Err(ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "server_error",
                    "internal_error",
                    "the run ended without a word",
                ));
            }
        };
        let mut written = Written::default();
        let opening = E::opening(id, &model, &mut written);
        let steps = futures::stream::once(async move { first }).chain(progress);
        let (gw, access) = (
            gw.clone(),
            std::mem::replace(access, Access::start(E::NAME)),
        );
        let events = futures::stream::iter(opening).chain(steps.flat_map(move |step| {
            match &step {
                Progress::Done(Ok(answer)) => {
                    access.finish(&gw.metrics, &Ending::served(&answer.ledger));
                }
                Progress::Done(Err(e)) => access.finish(&gw.metrics, &Ending::failed(e, 200)),
                _ => {}
            }
            futures::stream::iter(E::events(id, &model, step, &mut written))
        }));
        let sse = Sse::new(events.map(Ok::<_, std::convert::Infallible>));
        return Ok(Served::Stream(sse.into_response()));
    }
    let run = gw.client.run_task(task, |_| {});
    let answer = match tokio::time::timeout(gw.limits.request_timeout, run).await {
        Ok(result) => result.map_err(ApiError::from_run)?,
        Err(_) => return Err(ApiError::timeout()),
    };
    drop(slot);
    let mut response = Json(E::answer(id, &model, &answer)).into_response();
    ledger::put_headers(response.headers_mut(), &answer.ledger);
    Ok(Served::Answer(response, Box::new(answer.ledger)))
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets requests in flight finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}
