//! Shared helpers for the geode-fakes integration tests: a loopback-only client, kind-aware
//! request bodies and headers, an SSE parser and a bound on every wait.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)] // shared by several test crates

use geode_fakes::{FakeServer, Kind};
use serde_json::{Value, json};
use std::future::Future;
use std::time::Duration;

/// A credential that must never show up in recorded requests.
pub const SECRET: &str = "sk-test-SECRET-0123456789abcdef";

/// Upper bound for any single wait in these tests.
pub const LIMIT: Duration = Duration::from_secs(20);

/// Runs `f`, failing loudly if it takes longer than [`LIMIT`].
pub async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("the test step did not finish within its bound")
}

/// A fake of `kind` playing its default script ([`geode_fakes::Reply::Auto`]).
pub async fn start_auto(kind: Kind) -> FakeServer {
    FakeServer::start(kind, geode_fakes::Script::default())
        .await
        .expect("start")
}

/// A fake of `kind` playing `replies` in order (then its default).
pub async fn start(
    kind: Kind,
    replies: impl IntoIterator<Item = geode_fakes::Reply>,
) -> FakeServer {
    FakeServer::start(kind, geode_fakes::Script::new(replies))
        .await
        .expect("start")
}

/// A fake of `kind` playing `reply`, and the status and JSON body of one non-streamed call.
pub async fn answer_json(kind: Kind, reply: geode_fakes::Reply) -> (FakeServer, u16, Value) {
    let server = start(kind, [reply]).await;
    let (status, v) = call_json(&server, &body(kind, false)).await;
    (server, status, v)
}

/// A fake of `kind` playing `reply`, and the events of one streamed call.
pub async fn answer_sse(kind: Kind, reply: geode_fakes::Reply) -> (FakeServer, Vec<Event>) {
    let server = start(kind, [reply]).await;
    let events = call_sse(&server, &body(kind, true)).await;
    (server, events)
}

/// Sends `request`, bounded by [`LIMIT`]; the answer, whatever its status.
pub async fn send(request: reqwest::RequestBuilder) -> reqwest::Response {
    bounded(request.send()).await.expect("request failed")
}

/// The JSON body of `response`, bounded by [`LIMIT`].
pub async fn json_of(response: reqwest::Response) -> Value {
    bounded(response.json()).await.expect("a JSON body")
}

/// A fake of `kind` playing a refusal (`No.`) then an answer cut at the token limit (`{"a":`),
/// and the JSON bodies of those two non-streamed calls.
pub async fn refusal_then_truncation(kind: Kind) -> (FakeServer, Value, Value) {
    let replies = [
        geode_fakes::Reply::Refusal("No.".into()),
        geode_fakes::Reply::MaxTokens("{\"a\":".into()),
    ];
    let server = start(kind, replies).await;
    let (_, refusal) = call_json(&server, &body(kind, false)).await;
    let (_, truncated) = call_json(&server, &body(kind, false)).await;
    (server, refusal, truncated)
}

/// Asserts the fakes' default usage under the wire's own names: 11 tokens in, 7 out, and 18 in
/// all where the wire reports a total.
pub fn assert_default_usage(usage: &Value, input: &str, output: &str) {
    assert_eq!(
        (usage[input].as_u64(), usage[output].as_u64()),
        (Some(11), Some(7)),
        "{usage}"
    );
    if let Some(total) = usage.get("total_tokens") {
        assert_eq!(total, 18, "{usage}");
    }
}

/// A client that never uses a proxy and gives up after [`LIMIT`].
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(LIMIT)
        .build()
        .expect("client")
}

/// A minimal valid model-call body for `kind` (the ChatGPT backend needs stream and store).
pub fn body(kind: Kind, stream: bool) -> Value {
    match kind {
        Kind::Responses => json!({"model": "gpt-test", "input": "hi", "stream": stream}),
        Kind::ChatGpt => {
            json!({"model": "gpt-test", "input": "hi", "stream": true, "store": false})
        }
        Kind::Messages => json!({"model": "claude-test", "max_tokens": 64, "stream": stream,
                                 "messages": [{"role": "user", "content": "hi"}]}),
        Kind::Chat => json!({"model": "glm-test", "stream": stream,
                             "messages": [{"role": "user", "content": "hi"}]}),
    }
}

/// A POST of `body` to the kind's model URL with the kind's usual credential headers.
pub fn model_call(server: &FakeServer, body: &Value) -> reqwest::RequestBuilder {
    authorized(server.kind(), client().post(server.model_url()).json(body))
}

/// A POST of the kind's minimal [`body`] to `path` on the server, with the kind's usual
/// credential headers (for the paths beside the model URL).
pub fn model_call_at(server: &FakeServer, path: &str) -> reqwest::RequestBuilder {
    let kind = server.kind();
    let request = client().post(format!("{}{path}", server.base_url()));
    authorized(kind, request.json(&body(kind, false)))
}

/// `request` with `kind`'s usual credential headers.
pub fn authorized(kind: Kind, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    match kind {
        Kind::Messages => request
            .header("x-api-key", SECRET)
            .header("anthropic-version", "2023-06-01"),
        Kind::ChatGpt => request
            .bearer_auth(SECRET)
            .header("chatgpt-account-id", "acct_test"),
        Kind::Responses | Kind::Chat => request.bearer_auth(SECRET),
    }
}

/// A fake of `kind` playing `reply`, and the answer to one model call (`stream` as asked),
/// whose headers must say 200; the body is left to read.
pub async fn open_200(
    kind: Kind,
    stream: bool,
    reply: geode_fakes::Reply,
) -> (FakeServer, reqwest::Response) {
    let server = start(kind, [reply]).await;
    let response = bounded(model_call(&server, &body(kind, stream)).send())
        .await
        .expect("request failed");
    assert_eq!(response.status(), 200, "{kind}");
    (server, response)
}

/// Sends a model call and returns status, headers and body text.
pub async fn call(server: &FakeServer, body: &Value) -> (u16, reqwest::header::HeaderMap, String) {
    let response = bounded(model_call(server, body).send())
        .await
        .expect("request failed");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = bounded(response.text()).await.expect("body failed");
    (status, headers, text)
}

/// Sends a model call and parses the JSON answer.
pub async fn call_json(server: &FakeServer, body: &Value) -> (u16, Value) {
    let (status, _, text) = call(server, body).await;
    let value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    (status, value)
}

/// One parsed SSE event: the `event:` name (if any) and the `data:` payload.
#[derive(Debug, Clone)]
pub struct Event {
    pub name: Option<String>,
    pub data: String,
}

impl Event {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("bad data ({e}): {}", self.data))
    }
}

/// Parses complete SSE frames (a trailing partial frame is ignored).
pub fn parse_sse(text: &str) -> Vec<Event> {
    let mut events = Vec::new();
    let mut rest = text;
    while let Some(end) = rest.find("\n\n") {
        let frame = &rest[..end];
        rest = &rest[end + 2..];
        let mut name = None;
        let mut data = String::new();
        for line in frame.lines() {
            if let Some(v) = line.strip_prefix("event: ") {
                name = Some(v.to_owned());
            } else if let Some(v) = line.strip_prefix("data: ") {
                data.push_str(v);
            }
        }
        events.push(Event { name, data });
    }
    events
}

/// Sends `request`; returns the status and the SSE events of the answer.
pub async fn send_sse(request: reqwest::RequestBuilder) -> (u16, Vec<Event>) {
    let response = bounded(request.send()).await.expect("request failed");
    let status = response.status().as_u16();
    let text = bounded(response.text()).await.expect("body failed");
    (status, parse_sse(&text))
}

/// Sends a streamed model call and parses its events; asserts a 200 SSE answer.
pub async fn call_sse(server: &FakeServer, body: &Value) -> Vec<Event> {
    let (status, headers, text) = call(server, body).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        headers.get("content-type").and_then(|v| v.to_str().ok()),
        Some("text/event-stream")
    );
    assert!(
        text.ends_with("\n\n"),
        "stream did not end on a frame boundary"
    );
    parse_sse(&text)
}

/// The event names, for order assertions.
pub fn names(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| e.name.clone().unwrap_or_default())
        .collect()
}
