//! The two model endpoints' shared path: take a slot (or answer 429), read the body into a
//! task, run it, and answer as JSON or as a stream, with one access-log line and the metrics.
//! Each endpoint says only how its request becomes a task and how an answer is written
//! ([`Endpoint`]).

use crate::convert::Reply;
use crate::error::ApiError;
use crate::observe::{Access, Ending};
use crate::stream::{self, Progress, Written};
use crate::{Gateway, body, chat, convert, ledger, responses, route};
use axum::Json;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::sync::OwnedSemaphorePermit;

/// The body as JSON, or OpenAI's 400 for it.
fn json_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid("body", format!("the body is not a valid request: {e}")))
}

/// One endpoint's request: its route, its policy extension, and the task it describes.
trait Endpoint: serde::de::DeserializeOwned {
    /// The path, for the access log and metrics.
    const NAME: &'static str;
    /// The fields both endpoints share (route, stream, extension).
    fn head(&self) -> &convert::Head;
    /// The task the request describes, laid over the gateway's defaults.
    fn task(&self, base: geode::Task) -> Result<geode::Task, ApiError>;
    /// The success body.
    fn answer(r: &Reply, answer: &geode::Answer) -> serde_json::Value;
    /// The events that open a stream.
    fn opening(r: &Reply, w: &mut Written) -> Vec<Event>;
    /// The events of one step.
    fn events(r: &Reply, step: Progress, w: &mut Written) -> Vec<Event>;
}

impl Endpoint for chat::ChatRequest {
    const NAME: &'static str = "/v1/chat/completions";
    fn head(&self) -> &convert::Head {
        &self.head
    }
    fn task(&self, base: geode::Task) -> Result<geode::Task, ApiError> {
        chat::ChatRequest::task(self, base)
    }
    fn answer(r: &Reply, answer: &geode::Answer) -> serde_json::Value {
        chat::completion(r, answer)
    }
    fn opening(r: &Reply, w: &mut Written) -> Vec<Event> {
        chat::opening(r, w)
    }
    fn events(r: &Reply, step: Progress, w: &mut Written) -> Vec<Event> {
        chat::chunks(r, step, w)
    }
}

impl Endpoint for responses::ResponsesRequest {
    const NAME: &'static str = "/v1/responses";
    fn head(&self) -> &convert::Head {
        &self.head
    }
    fn task(&self, base: geode::Task) -> Result<geode::Task, ApiError> {
        responses::ResponsesRequest::task(self, base)
    }
    fn answer(r: &Reply, answer: &geode::Answer) -> serde_json::Value {
        responses::response(r, answer)
    }
    fn opening(r: &Reply, w: &mut Written) -> Vec<Event> {
        responses::opening(r, w)
    }
    fn events(r: &Reply, step: Progress, w: &mut Written) -> Vec<Event> {
        responses::events(r, step, w)
    }
}

pub(crate) async fn chat_completions(State(gw): State<Arc<Gateway>>, request: Request) -> Response {
    handle::<chat::ChatRequest>(gw, request).await
}

pub(crate) async fn responses_create(State(gw): State<Arc<Gateway>>, request: Request) -> Response {
    handle::<responses::ResponsesRequest>(gw, request).await
}

/// Takes a slot (or answers 429), reads the body inside it, runs the request, and answers in
/// the endpoint's shape.
async fn handle<E: Endpoint>(gw: Arc<Gateway>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let mut access = Access::start(E::NAME, &gw.metrics);
    let Ok(slot) = gw.in_flight.clone().try_acquire_owned() else {
        let mut busy = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            "gateway_busy",
            "the gateway is serving as many requests as it allows; try again",
        );
        busy.retry_after = Some(1);
        access.finish(&Ending::failed(&busy, 429));
        return busy.into_response();
    };
    let read = tokio::time::timeout(gw.limits.request_timeout, body::read(body, &gw.limits));
    let body = match read.await {
        Ok(Ok(body)) => body,
        Ok(Err(e)) => {
            access.finish(&Ending::failed(&e, e.status.as_u16()));
            return e.into_response();
        }
        Err(_) => {
            let e = ApiError::timeout();
            access.finish(&Ending::failed(&e, e.status.as_u16()));
            return e.into_response();
        }
    };
    match serve_one::<E>(&gw, &parts, &body, slot, &mut access).await {
        Ok(Served::Answer(response, ledger)) => {
            access.finish(&Ending::served(&ledger));
            response
        }
        Ok(Served::Stream(response)) => response,
        Err(e) => {
            access.finish(&Ending::failed(&e, e.status.as_u16()));
            e.into_response()
        }
    }
}

/// A request served: an answer (logged by the caller) or a stream (logged by itself).
enum Served {
    Answer(Response, Box<geode::GuaranteeLedger>),
    Stream(Response),
}

async fn serve_one<E: Endpoint>(
    gw: &Arc<Gateway>,
    parts: &axum::http::request::Parts,
    body: &[u8],
    slot: OwnedSemaphorePermit,
    access: &mut Access,
) -> Result<Served, ApiError> {
    let headers = &parts.headers;
    let req: E = json_body(body)?;
    let head = req.head();
    let streamed = head.stream == Some(true);
    access.asked(&head.model, streamed);
    let routed = route::route(&head.model, &gw.settings)?;
    let header_require = headers
        .get("x-geode-require")
        .map(|v| v.to_str().unwrap_or("?"));
    let body_require = head.geode.as_ref().and_then(|g| g.require.as_deref());
    let mut task = req.task(gw.client.new_task(""))?;
    task.cache_scope = parts
        .extensions
        .get::<crate::auth::Tenant>()
        .and_then(|t| t.0.clone());
    task.route = routed.route;
    task.fallback = routed.fallback;
    let header = |name: &str| headers.get(name).map(|v| v.to_str().unwrap_or("?"));
    let body_repair = head.geode.as_ref().and_then(|g| g.repair);
    let body_cache = head.geode.as_ref().and_then(|g| g.cache);
    // The request's headers and `geode` fields, parsed here, change the task through the same
    // overrides type as flags and keyword arguments.
    geode::CallSettings {
        require: Some(route::require(
            gw.settings.gateway.require,
            header_require,
            body_require,
        )?),
        repair: Some(route::repair(
            task.repair,
            header("x-geode-repair"),
            body_repair,
        )?),
        cache: Some(route::cache(header("x-geode-cache"), body_cache)?),
        timeout: Some(task.budgets.timeout.min(gw.limits.request_timeout)),
        ..geode::CallSettings::default()
    }
    .apply(&mut task);
    let reply = Reply {
        id: gw.next_id.fetch_add(1, Ordering::Relaxed),
        model: head.model.clone(),
        shaped: task.output != geode::Output::Text,
    };
    if streamed {
        let mut progress = Box::pin(stream::run(
            gw.client.clone(),
            task,
            gw.limits.request_timeout,
            slot,
            !reply.shaped,
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
        let opening = E::opening(&reply, &mut written);
        let steps = futures::stream::once(async move { first }).chain(progress);
        // The stream owns the account: dropped before its end, it logs `client_closed`.
        let mut log = Some(access.into_stream());
        let events = futures::stream::iter(opening).chain(steps.flat_map(move |step| {
            let mut out = Vec::new();
            if let Progress::Done(end) = &step {
                if let Some(access) = log.take() {
                    access.finish(&match end {
                        Ok(answer) => Ending::served(&answer.ledger),
                        Err(e) => Ending::failed(e, 200),
                    });
                }
                // A format's text was held back (see `stream`): the checked value goes out now.
                if let (true, Ok(answer)) = (reply.shaped, end)
                    && let Some(text) = reply.content(answer)
                {
                    out.extend(E::events(&reply, Progress::Delta(text), &mut written));
                }
            }
            out.extend(E::events(&reply, step, &mut written));
            futures::stream::iter(out)
        }));
        // While a held answer is being written, comments keep idle-closing proxies away.
        let sse =
            Sse::new(events.map(Ok::<_, std::convert::Infallible>)).keep_alive(KeepAlive::new());
        return Ok(Served::Stream(sse.into_response()));
    }
    let run = gw.client.run_task(task, |_, _| {});
    let answer = match tokio::time::timeout(gw.limits.request_timeout, run).await {
        Ok(result) => result.map_err(ApiError::from_run)?,
        Err(_) => return Err(ApiError::timeout()),
    };
    drop(slot);
    let mut response = Json(E::answer(&reply, &answer)).into_response();
    ledger::put_headers(response.headers_mut(), &answer.ledger);
    Ok(Served::Answer(response, Box::new(answer.ledger)))
}
