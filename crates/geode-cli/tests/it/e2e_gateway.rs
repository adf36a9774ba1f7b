//! `geode gateway` through the real binary on 127.0.0.1, in front of `geode-fakes` providers,
//! driven over real HTTP: a schema enforced and validated with the ledger in headers and body,
//! a refusal before any upstream call when the route cannot give the required guarantee, an
//! answer still invalid after the retry as a 422, OpenAI-shaped errors for bad requests,
//! inbound keys (never forwarded, never shown), the concurrency bound, the loopback default and
//! a clean stop on SIGTERM.

use crate::support;

use geode_fakes::{FakeServer, Kind, Reply, Script};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{SECRET, Sandbox, bad_enum_answer, decision_schema, good_answer, model_calls};

/// An inbound key for the gateway (distinct from the upstream key [`SECRET`]).
const INBOUND: &str = "gw-inbound-key-7f3a9c2e51";

/// A running `geode gateway`: its base URL and everything it wrote on stderr so far.
pub(crate) struct Gateway {
    child: Child,
    pub(crate) base: String,
    stderr: Arc<Mutex<String>>,
}

impl Gateway {
    /// Starts `geode gateway --listen 127.0.0.1:0 EXTRA` in `sb` and waits for its address.
    pub(crate) fn start(sb: &Sandbox, extra: &[&str]) -> Gateway {
        let mut args = vec!["gateway", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let mut child = sb.spawn(&args);
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let pipe = child.stderr.take().unwrap();
        let log = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if let Some(addr) = line.strip_prefix("geode gateway: listening on ") {
                    let _ = tx.send(addr.to_owned());
                }
                log.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        let base = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("the gateway did not start: {}", stderr.lock().unwrap()));
        Gateway {
            child,
            base,
            stderr,
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// POSTs `body` to the chat endpoint with `headers`.
    pub(crate) async fn chat(
        &self,
        body: &Value,
        headers: &[(&str, &str)],
    ) -> (u16, reqwest::header::HeaderMap, Value) {
        let mut req = reqwest::Client::new()
            .post(self.url("/v1/chat/completions"))
            .json(body);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, headers, body)
    }

    pub(crate) fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The gateway's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM and waits (at most 30 s) for its exit code.
    pub(crate) fn stop(&mut self) -> Option<i32> {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.pid() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        wait_exit(&mut self.child)
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A request for a Decision on `model`.
pub(crate) fn decision_request(model: &str) -> Value {
    json!({
        "model": model,
        "messages": [
            {"role": "system", "content": "You review pull requests."},
            {"role": "user", "content": "Decide."}
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "decision", "strict": true, "schema": decision_schema()}
        }
    })
}

/// A sandbox for `openai-payg` (strict) and `glm-payg` (JSON mode) on their fakes.
pub(crate) fn sandbox(openai: &FakeServer, glm: &FakeServer) -> Sandbox {
    let mut sb = Sandbox::new();
    sb.var("GEODE_OPENAI_BASE_URL", openai.base_url())
        .var("OPENAI_API_KEY", SECRET)
        .var("GEODE_GLM_BASE_URL", glm.base_url())
        .var("ZAI_API_KEY", SECRET);
    sb
}

pub(crate) async fn fakes(openai: Script, glm: Script) -> (FakeServer, FakeServer) {
    (
        FakeServer::start(Kind::Responses, openai).await.unwrap(),
        FakeServer::start(Kind::Chat, glm).await.unwrap(),
    )
}

pub(crate) fn header<'h>(h: &'h reqwest::header::HeaderMap, name: &str) -> &'h str {
    h.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_is_enforced_validated_and_accounted_for_in_headers_and_body() {
    let (openai, glm) = fakes(
        Script::always(Reply::Json(good_answer())),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let sb = sandbox(&openai, &glm);
    let gw = Gateway::start(&sb, &[]);
    let (status, headers, body) = gw
        .chat(&decision_request("openai-payg/gpt-5-mini"), &[])
        .await;
    assert_eq!(status, 200, "{body}");
    let content: Value =
        serde_json::from_str(body["choices"][0]["message"]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, good_answer());
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "openai-payg/gpt-5-mini");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    assert!(body["usage"]["total_tokens"].as_u64().is_some(), "{body}");
    assert_eq!(
        (
            header(&headers, "x-geode-adapter"),
            header(&headers, "x-geode-mode"),
            header(&headers, "x-geode-guarantee"),
            header(&headers, "x-geode-validated"),
            header(&headers, "x-geode-attempts"),
        ),
        ("openai-payg", "strict", "enforced", "true", "1")
    );
    let ledger = &body["geode"]["ledger"];
    assert_eq!(ledger["adapter"], "openai-payg");
    assert_eq!(ledger["model"], "gpt-5-mini");
    assert_eq!(ledger["full_validation"]["valid"], true);
    // The caller's schema went on OpenAI's wire, strict, with the system prompt.
    let calls = model_calls(&openai);
    assert_eq!(calls.len(), 1);
    let sent = &calls[0].body;
    assert_eq!(sent["text"]["format"]["type"], "json_schema", "{sent}");
    assert_eq!(sent["text"]["format"]["strict"], true);
    assert_eq!(sent["model"], "gpt-5-mini");
    assert!(
        sent.to_string().contains("You review pull requests."),
        "{sent}"
    );
    assert!(!gw.log().contains(SECRET));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_enforced_refuses_a_json_mode_route_before_any_upstream_call() {
    let (openai, glm) = fakes(
        Script::always(Reply::Json(good_answer())),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let sb = sandbox(&openai, &glm);
    let gw = Gateway::start(&sb, &[]);
    // Raised by the header.
    let (status, _, body) = gw
        .chat(
            &decision_request("glm-payg"),
            &[("x-geode-require", "enforced")],
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "schema_not_enforceable");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    let candidates = body["error"]["geode"]["candidates"].as_array().unwrap();
    assert_eq!(candidates[0]["adapter"], "glm-payg", "{body}");
    assert!(
        candidates[0]["reason"]
            .as_str()
            .unwrap()
            .contains("json-mode"),
        "{body}"
    );
    // Raised by the body extension, for clients that cannot set headers.
    let mut req = decision_request("glm-payg");
    req["geode"] = json!({"require": "enforced"});
    let (status, _, body) = gw.chat(&req, &[]).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (400, &json!("schema_not_enforceable"))
    );
    assert!(model_calls(&glm).is_empty(), "no upstream request was made");
    // Without the requirement the same route serves, and says what it guaranteed.
    let (status, headers, body) = gw.chat(&decision_request("glm-payg"), &[]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(header(&headers, "x-geode-guarantee"), "best-effort");
    assert_eq!(header(&headers, "x-geode-validated"), "true");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_still_invalid_after_the_retry_is_a_422_with_its_errors() {
    let (openai, glm) = fakes(
        Script::always(Reply::Json(good_answer())),
        Script::always(Reply::Json(bad_enum_answer())),
    )
    .await;
    let sb = sandbox(&openai, &glm);
    let gw = Gateway::start(&sb, &[]);
    let (status, headers, body) = gw.chat(&decision_request("glm-payg"), &[]).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "schema_validation_failed");
    let errors = body["error"]["geode"]["validation_errors"]
        .as_array()
        .unwrap();
    assert!(
        errors.iter().any(|e| e["instance_path"] == "/decision"),
        "{body}"
    );
    assert_eq!(
        body["error"]["geode"]["ledger"]["attempts"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(header(&headers, "x-geode-attempts"), "2");
    assert_eq!(header(&headers, "x-geode-validated"), "false");
    assert_eq!(model_calls(&glm).len(), 2, "the first answer and the retry");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_openai_shaped_errors_naming_the_field() {
    let (openai, glm) = fakes(
        Script::always(Reply::Json(good_answer())),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let sb = sandbox(&openai, &glm);
    let gw = Gateway::start(&sb, &["--max-body-bytes", "65536"]);
    let with = |f: &dyn Fn(&mut Value)| {
        let mut r = decision_request("openai-payg");
        f(&mut r);
        r
    };
    for (body, status, code, param) in [
        (
            with(&|r| r["tools"] = json!([{"type": "code_interpreter"}])),
            400,
            "unsupported_parameter",
            "tools",
        ),
        (
            with(&|r| r["n"] = json!(2)),
            400,
            "unsupported_parameter",
            "n",
        ),
        (
            with(&|r| r["messages"] = json!([])),
            400,
            "invalid_request",
            "messages",
        ),
        (
            with(&|r| r["messages"] = json!([{"role": "assistant", "content": "hi"}])),
            400,
            "invalid_request",
            "messages",
        ),
        (
            with(&|r| r["response_format"]["json_schema"]["schema"] = json!({"type": 12})),
            400,
            "invalid_schema",
            "response_format",
        ),
        (
            with(&|r| r["response_format"] = json!({"type": "xml"})),
            400,
            "invalid_request",
            "response_format",
        ),
        (
            with(&|r| r["model"] = json!("")),
            400,
            "invalid_request",
            "model",
        ),
        (
            with(&|r| r["geode"] = json!({"require": "strict"})),
            400,
            "invalid_request",
            "geode.require",
        ),
        (json!([1, 2]), 400, "invalid_request", "body"),
    ] {
        let (got, _, answer) = gw.chat(&body, &[]).await;
        assert_eq!(got, status, "{body} → {answer}");
        assert_eq!(answer["error"]["code"], code, "{body} → {answer}");
        assert_eq!(answer["error"]["param"], param, "{body} → {answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
    }
    // Not JSON at all, and too large.
    let client = reqwest::Client::new();
    let resp = client
        .post(gw.url("/v1/chat/completions"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let huge = "x".repeat(70_000);
    let resp = client
        .post(gw.url("/v1/chat/completions"))
        .json(&json!({"model": "m", "messages": [{"role": "user", "content": huge}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);
    let resp = client.get(gw.url("/v1/nothing")).send().await.unwrap();
    assert_eq!(resp.status(), 404);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "not_found");
    assert!(
        model_calls(&openai).is_empty(),
        "no bad request reached the upstream"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbound_keys_are_required_never_forwarded_and_never_shown() {
    let (openai, glm) = fakes(
        Script::always(Reply::Json(good_answer())),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let mut sb = sandbox(&openai, &glm);
    sb.var("GEODE_GATEWAY_KEYS", format!("another-key-0000, {INBOUND}"));
    let gw = Gateway::start(&sb, &[]);
    let request = decision_request("openai-payg");
    for auth in [
        None,
        Some("Bearer wrong-key-123456789".to_owned()),
        Some(INBOUND.to_owned()),
    ] {
        let headers: Vec<(&str, &str)> =
            auth.iter().map(|a| ("authorization", a.as_str())).collect();
        let (status, _, body) = gw.chat(&request, &headers).await;
        assert_eq!(status, 401, "{auth:?}: {body}");
        assert_eq!(body["error"]["code"], "invalid_api_key");
        assert!(!body.to_string().contains(INBOUND));
    }
    let models = reqwest::Client::new()
        .get(gw.url("/v1/models"))
        .send()
        .await
        .unwrap();
    assert_eq!(models.status(), 401, "the model list needs a key too");
    let bearer = format!("Bearer {INBOUND}");
    let (status, headers, body) = gw.chat(&request, &[("authorization", &bearer)]).await;
    assert_eq!(status, 200, "{body}");
    let calls = model_calls(&openai);
    assert_eq!(calls.len(), 1);
    let auths: Vec<_> = calls[0]
        .headers
        .iter()
        .filter(|(k, _)| k == "authorization")
        .collect();
    assert_eq!(
        auths.len(),
        1,
        "only geode's own upstream credential: {:?}",
        calls[0].headers
    );
    assert!(calls[0].headers.iter().all(|(_, v)| !v.contains(INBOUND)));
    for text in [body.to_string(), format!("{headers:?}"), gw.log()] {
        assert!(!text.contains(INBOUND) && !text.contains(SECRET), "{text}");
    }
    let health = reqwest::get(gw.url("/health")).await.unwrap();
    assert_eq!(health.status(), 200, "health needs no key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_lists_aliases_and_routes_with_their_best_guarantee() {
    let (openai, glm) = fakes(
        Script::always(Reply::Json(good_answer())),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let sb = sandbox(&openai, &glm);
    sb.config("[gateway.models.reviewer]\nadapter = \"openai-payg\"\nmodel = \"gpt-5-mini\"\n");
    let gw = Gateway::start(&sb, &[]);
    let list: Value = reqwest::get(gw.url("/v1/models"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["object"], "list");
    let find = |id: &str| {
        list["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("{id}: {list}"))
    };
    assert_eq!(find("reviewer")["geode"]["adapter"], "openai-payg");
    assert_eq!(find("openai-payg")["geode"]["best_guarantee"], "enforced");
    assert_eq!(find("glm-payg")["geode"]["configured"], true);
    assert_eq!(find("local")["geode"]["best_guarantee"], "enforced");
    // The alias routes.
    let (status, headers, body) = gw.chat(&decision_request("reviewer"), &[]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(header(&headers, "x-geode-adapter"), "openai-payg");
    assert_eq!(model_calls(&openai)[0].body["model"], "gpt-5-mini");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beyond_its_concurrency_the_gateway_answers_429_with_retry_after() {
    let slow = Script::always(Reply::slow(1500, Reply::Json(good_answer())));
    let (openai, glm) = fakes(slow, Script::always(Reply::Json(good_answer()))).await;
    let sb = sandbox(&openai, &glm);
    let gw = Arc::new(Gateway::start(&sb, &["--max-in-flight", "1"]));
    let first = {
        let gw = gw.clone();
        tokio::spawn(async move { gw.chat(&decision_request("openai-payg"), &[]).await.0 })
    };
    // Wait until the first request holds the slot (its upstream call has arrived).
    for _ in 0..200 {
        if !openai.requests().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (status, headers, body) = gw.chat(&decision_request("openai-payg"), &[]).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["code"], "gateway_busy");
    assert_eq!(header(&headers, "retry-after"), "1");
    assert_eq!(first.await.unwrap(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn it_refuses_a_public_bind_without_keys_and_stops_cleanly_on_sigterm() {
    let sb = Sandbox::new();
    let out = sb.geode(&["gateway", "--listen", "0.0.0.0:0"], "").await;
    out.assert_exit(2)
        .assert_stderr_has(&["without inbound keys", "GEODE_GATEWAY_KEYS"]);

    let (openai, glm) = fakes(
        Script::always(Reply::slow(500, Reply::Json(good_answer()))),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let sb = sandbox(&openai, &glm);
    let mut gw = Gateway::start(&sb, &[]);
    let url = gw.url("/v1/chat/completions");
    let in_flight = tokio::spawn(async move {
        reqwest::Client::new()
            .post(url)
            .json(&decision_request("openai-payg"))
            .send()
            .await
            .map(|r| r.status().as_u16())
    });
    for _ in 0..200 {
        if !openai.requests().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let stopped = std::thread::spawn(move || (gw.stop(), gw.log()));
    assert_eq!(
        in_flight.await.unwrap().unwrap(),
        200,
        "the request in flight finished"
    );
    let (status, log) = stopped.join().unwrap();
    assert_eq!(status, Some(0), "{log}");
}

/// The child's exit code, waiting at most 30 s.
fn wait_exit(child: &mut Child) -> Option<i32> {
    for _ in 0..3000 {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_responses_endpoint_reads_input_items_and_text_format() {
    let (openai, glm) = fakes(
        Script::always(Reply::Json(good_answer())),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let sb = sandbox(&openai, &glm);
    let gw = Gateway::start(&sb, &[]);
    let request = json!({
        "model": "openai-payg/gpt-5-mini",
        "instructions": "You review pull requests.",
        "input": [
            {"role": "user", "content": "Here is a diff."},
            {"role": "assistant", "content": [{"type": "output_text", "text": "Seen."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Decide."}]}
        ],
        "text": {"format": {"type": "json_schema", "name": "decision", "strict": true, "schema": decision_schema()}},
        "max_output_tokens": 300
    });
    let resp = reqwest::Client::new()
        .post(gw.url("/v1/responses"))
        .json(&request)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(header(resp.headers(), "x-geode-guarantee"), "enforced");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    let text = body["output"][0]["content"][0]["text"].as_str().unwrap();
    assert_eq!(serde_json::from_str::<Value>(text).unwrap(), good_answer());
    assert_eq!(body["geode"]["ledger"]["full_validation"]["valid"], true);
    // The earlier turns went upstream as history, in order, with the instructions as system.
    let sent = model_calls(&openai)[0].body.to_string();
    let (diff, seen, decide) = (
        sent.find("Here is a diff.").unwrap(),
        sent.find("Seen.").unwrap(),
        sent.rfind("Decide.").unwrap(),
    );
    assert!(diff < seen && seen < decide, "{sent}");
    assert!(sent.contains("You review pull requests."));
    assert_eq!(model_calls(&openai)[0].body["max_output_tokens"], 300);
    // Refused before any call, in the same shape as for Chat.
    let mut strict = request.clone();
    strict["model"] = json!("glm-payg");
    strict["geode"] = json!({"require": "enforced"});
    let resp = reqwest::Client::new()
        .post(gw.url("/v1/responses"))
        .json(&strict)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "schema_not_enforceable");
    assert!(model_calls(&glm).is_empty());
    for (bad, param) in [
        (
            json!({"model": "openai-payg", "input": [{"type": "function_call_output", "output": "x"}]}),
            "input",
        ),
        (json!({"model": "openai-payg", "input": 7}), "input"),
        (
            json!({"model": "openai-payg", "input": "hi", "text": {"format": {"type": "yaml"}}}),
            "text.format",
        ),
    ] {
        let resp = reqwest::Client::new()
            .post(gw.url("/v1/responses"))
            .json(&bad)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400, "{bad}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["param"], param, "{bad} → {body}");
    }
}

/// The `data:` payloads (and `event:` names) of a whole SSE body.
pub(crate) fn sse_events(text: &str) -> Vec<(String, String)> {
    text.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let mut name = String::new();
            let mut data = String::new();
            for line in e.lines() {
                if let Some(n) = line.strip_prefix("event:") {
                    name = n.trim().to_owned();
                } else if let Some(d) = line.strip_prefix("data:") {
                    data.push_str(d.trim_start());
                }
            }
            (name, data)
        })
        .collect()
}

/// A Responses stream's events, less the `[DONE]` line it must end with.
#[track_caller]
pub(crate) fn responses_events(text: &str) -> Vec<(String, String)> {
    let mut events = sse_events(text);
    assert_eq!(
        events.pop(),
        Some((String::new(), "[DONE]".to_owned())),
        "the stream must end with [DONE]: {text}"
    );
    events
}

pub(crate) async fn post_text(url: &str, body: &Value) -> (u16, String, String) {
    let resp = reqwest::Client::new()
        .post(url)
        .json(body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let kind = header(resp.headers(), "content-type").to_owned();
    (status, kind, resp.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_stream_relays_deltas_then_ends_with_the_validation_and_the_ledger() {
    let (openai, glm) = fakes(
        Script::always(Reply::Json(good_answer())),
        Script::always(Reply::Json(bad_enum_answer())),
    )
    .await;
    let sb = sandbox(&openai, &glm);
    let gw = Gateway::start(&sb, &[]);
    let mut request = decision_request("openai-payg");
    request["stream"] = json!(true);
    let (status, kind, text) = post_text(&gw.url("/v1/chat/completions"), &request).await;
    assert_eq!(status, 200, "{text}");
    assert!(kind.starts_with("text/event-stream"), "{kind}");
    let events = sse_events(&text);
    assert_eq!(events.last().unwrap().1, "[DONE]", "{text}");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk")
    );
    let content: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&content).unwrap(),
        good_answer(),
        "{text}"
    );
    let deltas = chunks
        .iter()
        .filter(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .is_some_and(|s| !s.is_empty())
        })
        .count();
    assert_eq!(deltas, 1, "a format's text is sent once, checked: {text}");
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert_eq!(last["geode"]["event"], "final");
    assert_eq!(last["geode"]["value"], good_answer());
    assert_eq!(last["geode"]["ledger"]["full_validation"]["valid"], true);
    assert!(last["usage"]["total_tokens"].as_u64().is_some());
    assert_eq!(
        model_calls(&openai)[0].body["stream"],
        true,
        "the upstream call streamed too"
    );

    // Refused before any call: a plain HTTP 400, not a stream.
    let mut refused = decision_request("glm-payg");
    refused["stream"] = json!(true);
    refused["geode"] = json!({"require": "enforced"});
    let (status, kind, text) = post_text(&gw.url("/v1/chat/completions"), &refused).await;
    assert_eq!(status, 400, "{text}");
    assert!(kind.starts_with("application/json"), "{kind}");
    // Invalid twice: the retry is announced, and the stream ends with an error event, no [DONE].
    let mut invalid = decision_request("glm-payg");
    invalid["stream"] = json!(true);
    let (status, _, text) = post_text(&gw.url("/v1/chat/completions"), &invalid).await;
    assert_eq!(status, 200, "the stream had started: {text}");
    let events = sse_events(&text);
    assert!(events.iter().all(|(_, d)| d != "[DONE]"), "{text}");
    let datas: Vec<Value> = events
        .iter()
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    assert!(
        datas.iter().any(|d| d["geode"]["event"] == "retry"),
        "{text}"
    );
    assert_eq!(
        datas.last().unwrap()["error"]["code"],
        "schema_validation_failed",
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_responses_stream_sends_the_events_in_order_and_completes_with_the_ledger() {
    let (openai, glm) = fakes(
        Script::always(Reply::Json(good_answer())),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let sb = sandbox(&openai, &glm);
    let gw = Gateway::start(&sb, &[]);
    let request = json!({
        "model": "openai-payg",
        "input": "Decide.",
        "stream": true,
        "text": {"format": {"type": "json_schema", "name": "decision", "strict": true, "schema": decision_schema()}}
    });
    let (status, _, text) = post_text(&gw.url("/v1/responses"), &request).await;
    assert_eq!(status, 200, "{text}");
    let events = responses_events(&text);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        &names[..4],
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added"
        ],
        "{text}"
    );
    assert_eq!(
        &names[names.len() - 4..],
        [
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed"
        ],
        "{text}"
    );
    let datas: Vec<Value> = events
        .iter()
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    let seqs: Vec<u64> = datas
        .iter()
        .map(|d| d["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
    let relayed: String = datas
        .iter()
        .filter(|d| d["type"] == "response.output_text.delta")
        .map(|d| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&relayed).unwrap(),
        good_answer()
    );
    let done = &datas.last().unwrap()["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["geode"]["ledger"]["wire_mode"], "strict");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_cancels_the_upstream_call_and_frees_its_slot() {
    let (openai, glm) = fakes(
        Script::always(Reply::Endless),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let sb = sandbox(&openai, &glm);
    let gw = Gateway::start(&sb, &["--max-in-flight", "1"]);
    let mut request = decision_request("openai-payg");
    request["stream"] = json!(true);
    let mut resp = reqwest::Client::new()
        .post(gw.url("/v1/chat/completions"))
        .json(&request)
        .send()
        .await
        .unwrap();
    if resp.status() != 200 {
        panic!("{}", resp.text().await.unwrap());
    }
    // Some text arrives, from an upstream answer that would never end.
    let first = resp.chunk().await.unwrap().unwrap();
    assert!(!first.is_empty());
    assert_eq!(
        openai.open_bodies(),
        1,
        "the upstream answer is being streamed"
    );
    drop(resp);
    let mut closed = false;
    for _ in 0..500 {
        if openai.open_bodies() == 0 {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        closed,
        "the upstream connection was closed after the client left"
    );
    // The slot is free again: the next request is served, not refused as busy.
    let (status, _, body) = gw.chat(&decision_request("glm-payg"), &[]).await;
    assert_eq!(status, 200, "{body}");
    let left = gw
        .log()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["stream"] == true);
    assert_eq!(
        left.map(|l| l["outcome"].clone()),
        Some(json!("client_closed")),
        "{}",
        gw.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbound_keys_can_come_from_a_file() {
    let (openai, glm) = fakes(
        Script::always(Reply::Json(good_answer())),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let sb = sandbox(&openai, &glm);
    let keys = sb.cwd.path().join("keys.txt");
    std::fs::write(
        &keys,
        format!("# the team's keys\n{INBOUND}\n\nsecond-key-1234567\n"),
    )
    .unwrap();
    let gw = Gateway::start(&sb, &["--keys-file", keys.to_str().unwrap()]);
    let bearer = format!("Bearer {INBOUND}");
    let (status, _, body) = gw
        .chat(
            &decision_request("openai-payg"),
            &[("authorization", &bearer)],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, _, _) = gw
        .chat(
            &decision_request("openai-payg"),
            &[("authorization", "Bearer # the team's keys")],
        )
        .await;
    assert_eq!(status, 401, "a comment line is not a key");
    let (status, _, _) = gw.chat(&decision_request("openai-payg"), &[]).await;
    assert_eq!(status, 401);
    let out = sb
        .geode(
            &[
                "gateway",
                "--listen",
                "127.0.0.1:0",
                "--keys-file",
                "missing.txt",
            ],
            "",
        )
        .await;
    out.assert_exit(2)
        .assert_stderr_has(&["--keys-file", "missing.txt"]);
    std::fs::write(&keys, "a key with spaces\n").unwrap();
    let out = sb
        .geode(
            &[
                "gateway",
                "--listen",
                "127.0.0.1:0",
                "--keys-file",
                keys.to_str().unwrap(),
            ],
            "",
        )
        .await;
    out.assert_exit(2).assert_stderr_has(&["inbound key #1"]);
    assert!(
        !out.stderr.contains("spaces"),
        "a malformed key is not echoed: {}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_request_gets_one_access_log_line_and_is_counted_in_metrics() {
    let (openai, glm) = fakes(
        Script::always(Reply::Json(good_answer())),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let sb = sandbox(&openai, &glm);
    let gw = Gateway::start(&sb, &[]);
    let (status, _, _) = gw.chat(&decision_request("openai-payg"), &[]).await;
    assert_eq!(status, 200);
    let (status, _, _) = gw
        .chat(
            &decision_request("glm-payg"),
            &[("x-geode-require", "enforced")],
        )
        .await;
    assert_eq!(status, 400);
    let mut streamed = decision_request("openai-payg");
    streamed["stream"] = json!(true);
    let (status, _, _) = post_text(&gw.url("/v1/chat/completions"), &streamed).await;
    assert_eq!(status, 200);
    let metrics = reqwest::get(gw.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for needle in [
        r#"geode_gateway_requests_total{endpoint="/v1/chat/completions",adapter="openai-payg",mode="strict",outcome="valid"} 2"#,
        r#"geode_gateway_requests_total{endpoint="/v1/chat/completions",adapter="",mode="",outcome="schema_not_enforceable"} 1"#,
        r#"geode_gateway_request_seconds_count{endpoint="/v1/chat/completions"} 3"#,
        r#"geode_gateway_tokens_total{adapter="openai-payg",direction="input"}"#,
    ] {
        assert!(metrics.contains(needle), "{needle} in:\n{metrics}");
    }
    let lines: Vec<Value> = gw
        .log()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(lines.len(), 3, "{}", gw.log());
    assert_eq!(
        (
            &lines[0]["outcome"],
            &lines[0]["adapter"],
            &lines[0]["mode"],
            &lines[0]["guarantee"],
            &lines[0]["validated"],
            &lines[0]["attempts"]
        ),
        (
            &json!("valid"),
            &json!("openai-payg"),
            &json!("strict"),
            &json!("enforced"),
            &json!("true"),
            &json!(1)
        )
    );
    assert!(
        lines[0]["latency_ms"].as_f64().is_some() && lines[0]["input_tokens"].as_u64().unwrap() > 0
    );
    assert_eq!(
        (&lines[1]["status"], &lines[1]["outcome"]),
        (&json!(400), &json!("schema_not_enforceable"))
    );
    assert_eq!(
        (&lines[2]["stream"], &lines[2]["outcome"]),
        (&json!(true), &json!("valid"))
    );
    let log = gw.log();
    assert!(
        !log.contains("Decide.") && !log.contains("the tests pass"),
        "no prompt or answer text: {log}"
    );
    assert!(!log.contains(SECRET));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncation_refusal_and_a_hung_upstream_each_get_their_own_error() {
    let openai_script = Script::new([
        Reply::MaxTokens(r#"{"decision": "acc"#.to_owned()),
        Reply::Refusal("I will not decide this.".to_owned()),
        Reply::Hang,
    ]);
    let (openai, glm) = fakes(openai_script, Script::always(Reply::Json(good_answer()))).await;
    let sb = sandbox(&openai, &glm);
    let gw = Gateway::start(&sb, &["--request-timeout", "1"]);
    let (status, _, body) = gw.chat(&decision_request("openai-payg"), &[]).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (422, &json!("answer_truncated")),
        "{body}"
    );
    let (status, _, body) = gw.chat(&decision_request("openai-payg"), &[]).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (422, &json!("model_refused")),
        "{body}"
    );
    let (status, _, body) = gw.chat(&decision_request("openai-payg"), &[]).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (504, &json!("upstream_timeout")),
        "{body}"
    );
    assert_eq!(
        model_calls(&openai).len(),
        3,
        "neither a cut answer nor a refusal is retried"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_from_configuration_is_a_route_like_any_adapter() {
    let router = FakeServer::builder(Kind::Chat)
        .script(Script::always(Reply::Json(good_answer())))
        .start()
        .await
        .unwrap();
    let mut sb = Sandbox::new();
    sb.var("ROUTER_KEY", SECRET);
    sb.config(&format!(
        "[providers.router]\nwire = \"chat\"\nbase_url = \"{}/v1\"\nkey_env = \"ROUTER_KEY\"\nmodel = \"default-model\"\nschema = \"json_schema\"\n",
        router.base_url()
    ));
    let gw = Gateway::start(&sb, &[]);
    let (status, headers, body) = gw
        .chat(
            &decision_request("router/vendor/model-x"),
            &[("x-geode-require", "enforced")],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(header(&headers, "x-geode-adapter"), "router");
    assert_eq!(header(&headers, "x-geode-guarantee"), "enforced");
    let sent = &model_calls(&router)[0].body;
    assert_eq!(sent["model"], "vendor/model-x");
    assert_eq!(sent["response_format"]["type"], "json_schema", "{sent}");
    let list: Value = reqwest::get(gw.url("/v1/models"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        list["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["id"] == "router"),
        "{list}"
    );
    assert!(!gw.log().contains(SECRET) && !body.to_string().contains(SECRET));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_model_is_enforced_end_to_end_offline() {
    let sb = Sandbox::with_local_model();
    let gw = Gateway::start(&sb, &[]);
    let mut request = decision_request("local");
    request["max_completion_tokens"] = json!(200);
    let (status, headers, body) = gw.chat(&request, &[("x-geode-require", "enforced")]).await;
    assert_eq!(status, 200, "{body}\n{}", gw.log());
    assert_eq!(header(&headers, "x-geode-adapter"), "local");
    assert_eq!(header(&headers, "x-geode-guarantee"), "enforced");
    assert_eq!(header(&headers, "x-geode-validated"), "true");
    let content: Value =
        serde_json::from_str(body["choices"][0]["message"]["content"].as_str().unwrap()).unwrap();
    assert!(
        ["accept", "reject"].contains(&content["decision"].as_str().unwrap()),
        "{content}"
    );
    assert!(content["reason"].is_string());
}

/// Hardening, over the real process: keys that were given but parse to none never open the
/// gateway, a keys file is one key per line and may not be writable by others, the Bearer scheme
/// is read case-insensitively, and a misspelled adapter is a 404 that reaches no upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_that_say_nothing_never_open_it_and_a_misspelled_adapter_is_not_found() {
    let (openai, glm) = fakes(
        Script::always(Reply::Json(good_answer())),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let mut sb = sandbox(&openai, &glm);
    let listen = ["gateway", "--listen", "127.0.0.1:0"];
    for keys in ["#prod-key", ",", "   ", "decision"] {
        sb.var("GEODE_GATEWAY_KEYS", keys);
        let out = sb.geode(&listen, "").await;
        out.assert_exit(2).assert_stderr_has(&["inbound key"]);
    }
    sb.var("GEODE_GATEWAY_KEYS", "");
    let file = sb.cwd.path().join("keys.txt");
    let path = file.to_str().unwrap().to_owned();
    let with_file = [&listen[..], &["--keys-file", path.as_str()]].concat();
    std::fs::write(&file, "# only a comment\n").unwrap();
    sb.geode(&with_file, "")
        .await
        .assert_exit(2)
        .assert_stderr_has(&["holds no key"]);
    std::fs::write(&file, format!("{INBOUND}\n")).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    }
    sb.geode(&with_file, "")
        .await
        .assert_exit(2)
        .assert_stderr_has(&["writable by every user"]);
    let tiny = [&listen[..], &["--request-timeout", "1e-300"]].concat();
    sb.geode(&tiny, "")
        .await
        .assert_exit(2)
        .assert_stderr_has(&["--request-timeout"]);

    sb.var("GEODE_GATEWAY_KEYS", INBOUND);
    let gw = Gateway::start(&sb, &[]);
    let lower = format!("bearer  {INBOUND}");
    let (status, _, body) = gw
        .chat(
            &decision_request("openai-payg"),
            &[("authorization", &lower)],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let before = model_calls(&openai).len() + model_calls(&glm).len();
    let bearer = format!("Bearer {INBOUND}");
    for model in ["opnai-payg/gpt-5", "OPENAI-PAYG/gpt-5", "nosuch/x"] {
        let (status, _, body) = gw
            .chat(&decision_request(model), &[("authorization", &bearer)])
            .await;
        assert_eq!(status, 404, "{model}: {body}");
        assert_eq!(body["error"]["code"], "model_not_found", "{body}");
    }
    assert_eq!(
        model_calls(&openai).len() + model_calls(&glm).len(),
        before,
        "no upstream request for a route that does not exist"
    );
}

/// Streamed deltas pass the scrubber the whole answer passes: an upstream key the model echoes is
/// not relayed, even where the deltas cut it in two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_answer_never_relays_a_secret_in_its_deltas() {
    let leaky = json!({"decision": "accept", "reason": format!("the key is {SECRET} here")});
    let (openai, glm) = fakes(
        Script::always(Reply::Json(leaky)),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let sb = sandbox(&openai, &glm);
    let gw = Gateway::start(&sb, &[]);
    let mut request = decision_request("openai-payg");
    request["stream"] = json!(true);
    let (status, _, text) = post_text(&gw.url("/v1/chat/completions"), &request).await;
    assert_eq!(status, 200, "{text}");
    assert!(!text.contains(SECRET), "a secret in the stream: {text}");
    let content: String = sse_events(&text)
        .iter()
        .filter_map(|(_, d)| serde_json::from_str::<Value>(d).ok())
        .filter_map(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert!(content.contains("the key is *** here"), "{content}");
}
