//! The two model endpoints' shared path: take a slot (or answer 429), read the body into a
//! task, run it, and answer as JSON or as a stream, with one access-log line and the metrics.
//! Each endpoint says only how its request becomes a task and how an answer is written
//! ([`Endpoint`]).

use crate::convert::Reply;
use crate::error::ApiError;
use crate::observe::{Access, Ending};
use crate::stored::Keep;
use crate::stream::{self, Progress, Written};
use crate::{Gateway, body, chat, convert, fields, ledger, responses, route};
use axum::Json;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Map, Value};
use std::sync::Arc;
use tokio::sync::OwnedSemaphorePermit;

/// The body as a JSON object whose every field [`fields::check`] passes, or OpenAI's 400.
fn json_body(
    body: &[u8],
    api: &str,
    table: &[fields::Field],
) -> Result<Map<String, Value>, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid("body", format!("the body is not a valid request: {e}")))?;
    let Value::Object(map) = value else {
        return Err(ApiError::invalid("body", "the body must be a JSON object"));
    };
    fields::check(api, table, &map)?;
    Ok(map)
}

/// One endpoint's request: its route, its policy extension, and the task it describes.
trait Endpoint: Sized {
    /// The path, for the access log and metrics.
    const NAME: &'static str;
    /// The API's name, for errors.
    const API: &'static str;
    /// What it does with each request field.
    const FIELDS: &'static [fields::Field];
    /// The field that holds the conversation (`messages`, `input`), named in its errors.
    const CONVERSATION: &'static str;
    /// The request read from a body [`fields::check`] has passed.
    fn read(body: Map<String, Value>) -> Result<Self, ApiError>;
    /// The fields both endpoints share (route, stream, extension).
    fn head(&self) -> &convert::Head;
    /// The stored response this request continues.
    fn previous(&self) -> Option<&str> {
        None
    }
    /// Whether the answer is to be kept (when the gateway has a store).
    fn stores(&self) -> bool {
        false
    }
    /// This request's input items, each with an id made from `id`.
    fn input_items(&self, _id: &str) -> Result<Vec<Value>, ApiError> {
        Ok(Vec::new())
    }
    /// The task the request describes, laid over the gateway's defaults, after the `earlier`
    /// items of the stored conversation it continues.
    fn task(&self, base: geode::Task, earlier: &[Value]) -> Result<geode::Task, ApiError>;
    /// The request's fields the answer repeats.
    fn echo(&self, _stored: bool) -> Map<String, Value> {
        Map::new()
    }
    /// The success body.
    fn answer(r: &Reply, answer: &geode::Answer) -> Value;
    /// The events that open a stream.
    fn opening(r: &Reply, w: &mut Written) -> Vec<Event>;
    /// The events of one step.
    fn events(r: &Reply, step: Progress, w: &mut Written) -> Vec<Event>;
}

impl Endpoint for chat::ChatRequest {
    const NAME: &'static str = "/v1/chat/completions";
    const API: &'static str = "Chat Completions";
    const FIELDS: &'static [fields::Field] = fields::CHAT;
    const CONVERSATION: &'static str = "messages";
    fn read(body: Map<String, Value>) -> Result<Self, ApiError> {
        serde_json::from_value(Value::Object(body))
            .map_err(|e| ApiError::invalid("body", format!("the body is not a valid request: {e}")))
    }
    fn head(&self) -> &convert::Head {
        &self.head
    }
    fn task(&self, base: geode::Task, _: &[Value]) -> Result<geode::Task, ApiError> {
        chat::ChatRequest::task(self, base)
    }
    fn answer(r: &Reply, answer: &geode::Answer) -> Value {
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
    const API: &'static str = "Responses";
    const FIELDS: &'static [fields::Field] = fields::RESPONSES;
    const CONVERSATION: &'static str = "input";
    fn read(body: Map<String, Value>) -> Result<Self, ApiError> {
        responses::ResponsesRequest::read(body)
    }
    fn head(&self) -> &convert::Head {
        &self.head
    }
    fn previous(&self) -> Option<&str> {
        self.previous_response_id.as_deref()
    }
    fn stores(&self) -> bool {
        self.store != Some(false)
    }
    fn input_items(&self, id: &str) -> Result<Vec<Value>, ApiError> {
        responses::ResponsesRequest::input_items(self, id)
    }
    fn task(&self, base: geode::Task, earlier: &[Value]) -> Result<geode::Task, ApiError> {
        responses::ResponsesRequest::task(self, base, earlier)
    }
    fn echo(&self, stored: bool) -> Map<String, Value> {
        responses::object::echo(&self.sent, stored)
    }
    fn answer(r: &Reply, answer: &geode::Answer) -> Value {
        responses::object::response(r, answer)
    }
    fn opening(r: &Reply, w: &mut Written) -> Vec<Event> {
        responses::events::opening(r, w)
    }
    fn events(r: &Reply, step: Progress, w: &mut Written) -> Vec<Event> {
        responses::events::events(r, step, w)
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
    let req = E::read(json_body(body, E::API, E::FIELDS)?)?;
    let head = req.head();
    let streamed = head.stream == Some(true);
    access.asked(&head.model, streamed);
    let contract = crate::contract::named(&head.model);
    let routed = match contract {
        Some(_) => None,
        None => Some(route::route(&head.model, &gw.settings)?),
    };
    let header_require = headers
        .get("x-geode-require")
        .map(|v| v.to_str().unwrap_or("?"));
    let body_require = head.geode.as_ref().and_then(|g| g.require.as_deref());
    let scope = parts
        .extensions
        .get::<crate::auth::Tenant>()
        .and_then(|t| t.0.clone());
    let earlier = match req.previous() {
        Some(id) => crate::stored::context(&gw.store, scope.as_deref(), id).await?,
        None => Vec::new(),
    };
    let mut task = req.task(gw.client.new_task(""), &earlier)?;
    // The floor the request may raise: the gateway's, or the contract's when it asks more.
    let mut floor = gw.settings.gateway.require;
    if let Some(name) = contract {
        task = crate::contract::task(&gw.settings, name, task, E::CONVERSATION)?;
        floor = floor.max(task.require);
    } else if let Some(routed) = routed {
        task.route = routed.route;
        task.fallback = routed.fallback;
    }
    task.cache_scope = scope.clone();
    let header = |name: &str| headers.get(name).map(|v| v.to_str().unwrap_or("?"));
    let body_repair = head.geode.as_ref().and_then(|g| g.repair);
    let body_cache = head.geode.as_ref().and_then(|g| g.cache);
    // The request's headers and `geode` fields, parsed here, change the task through the same
    // overrides type as flags and keyword arguments.
    geode::CallSettings {
        require: Some(route::require(floor, header_require, body_require)?),
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
    let id = convert::new_id();
    let keep = if req.stores() && gw.store.enabled() {
        Some(Keep::new(
            &gw.store,
            scope,
            &id,
            req.input_items(&id)?,
            earlier,
        ))
    } else {
        None
    };
    let reply = Reply {
        echo: req.echo(keep.is_some()),
        id,
        created_at: convert::now(),
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
        let kept = reply.clone();
        let steps = futures::stream::once(async move { first })
            .chain(progress)
            .then(move |step| {
                // A finished response is kept before its last event goes out, so a client that
                // continues it as soon as it has read the stream finds it.
                let keep = keep.clone();
                let body = match &step {
                    Progress::Done(Ok(answer)) => Some(E::answer(&kept, answer)),
                    _ => None,
                };
                async move {
                    if let (Some(keep), Some(body)) = (keep, body) {
                        keep.put(body).await;
                    }
                    step
                }
            });
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
        Ok(result) => convert::settle(result, !reply.shaped)?,
        Err(_) => return Err(ApiError::timeout()),
    };
    drop(slot);
    let mut body = E::answer(&reply, &answer);
    if let Some(keep) = keep
        && !keep.put(body.clone()).await
    {
        body["store"] = Value::Bool(false);
    }
    let mut response = Json(body).into_response();
    ledger::put_headers(response.headers_mut(), &answer.ledger);
    Ok(Served::Answer(response, Box::new(answer.ledger)))
}
