//! `geode gateway` under a hostile client, over raw TCP on 127.0.0.1 where a well-behaved HTTP
//! client would not do what an attacker does: half-sent heads (slowloris), more connections
//! than the gateway allows, bodies sent slowly or declared larger than allowed, and a stop
//! asked for while a client holds a connection half open; and streams whose first answer
//! fails its check, which once reached the client as two answers run together.

use crate::e2e_gateway::{
    Gateway, decision_request, fakes, header, post_text, sandbox, sse_events,
};
use crate::support::{bad_enum_answer, decision_schema, good_answer, model_calls};
use geode_fakes::{Reply, Script};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const INBOUND: &str = "gw-hostile-inbound-key-4c7d";

/// The longest any step here waits for the gateway: past it, the gateway is taken to hang.
const HANG: Duration = Duration::from_secs(20);

/// A gateway (with the variables `vars` and the flags `extra`) in front of fakes that both
/// answer a valid Decision, and the fakes.
async fn plain_gateway(
    vars: &[(&str, &str)],
    extra: &[&str],
) -> (geode_fakes::FakeServer, geode_fakes::FakeServer, Gateway) {
    let (openai, glm) = fakes(
        Script::always(Reply::Json(good_answer())),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let mut sb = sandbox(&openai, &glm);
    for (k, v) in vars {
        sb.var(k, v);
    }
    let gw = Gateway::start(&sb, extra);
    (openai, glm, gw)
}

/// [`plain_gateway`] with the inbound key [`INBOUND`].
async fn keyed_gateway(extra: &[&str]) -> (geode_fakes::FakeServer, Gateway) {
    let (openai, _glm, gw) = plain_gateway(&[("GEODE_GATEWAY_KEYS", INBOUND)], extra).await;
    (openai, gw)
}

/// A TCP connection to the gateway.
async fn connect(gw: &Gateway) -> TcpStream {
    TcpStream::connect(gw.base.trim_start_matches("http://"))
        .await
        .unwrap()
}

/// Writes a request head for the chat endpoint that stops before its blank line.
async fn half_head(gw: &Gateway) -> TcpStream {
    let mut tcp = connect(gw).await;
    tcp.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\n")
        .await
        .unwrap();
    tcp
}

/// Everything the gateway writes on `tcp` until it closes it, or `None` if it has not closed it
/// within [`HANG`].
async fn until_closed(tcp: &mut TcpStream) -> Option<String> {
    let mut out = Vec::new();
    match tokio::time::timeout(HANG, tcp.read_to_end(&mut out)).await {
        Ok(_) => Some(String::from_utf8_lossy(&out).into_owned()),
        Err(_) => None,
    }
}

/// The open sockets of process `pid`.
fn sockets(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            std::fs::read_link(e.path()).is_ok_and(|t| t.to_string_lossy().starts_with("socket:"))
        })
        .count()
}

/// A keyed chat request.
async fn keyed_chat(gw: &Gateway) -> (u16, Value) {
    let bearer = format!("Bearer {INBOUND}");
    let (status, _, body) = gw
        .chat(
            &decision_request("openai-payg"),
            &[("authorization", &bearer)],
        )
        .await;
    (status, body)
}

/// The head of a keyed chat request declaring `length` body bytes.
fn keyed_head(length: usize) -> String {
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer {INBOUND}\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    )
}

/// The JSON body of a raw HTTP response.
fn body_of(response: &str) -> Value {
    let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body).unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_sent_head_is_closed_after_the_client_timeout_and_never_holds_up_a_stop() {
    let (_openai, mut gw) = keyed_gateway(&["--client-timeout", "1"]).await;
    let mut slow = half_head(&gw).await;
    assert!(
        until_closed(&mut slow).await.is_some(),
        "a head never finished keeps its connection open"
    );
    // Another one is half sent when the stop comes: the stop still finishes.
    let _held = half_head(&gw).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let log = gw.log();
    let stopped = tokio::task::spawn_blocking(move || gw.stop())
        .await
        .unwrap();
    assert_eq!(stopped, Some(0), "SIGTERM did not finish: {log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_limit_wait_outside_the_process_and_keyed_clients_still_get_in() {
    let (_openai, gw) = keyed_gateway(&["--max-connections", "2", "--client-timeout", "2"]).await;
    let idle = sockets(gw.pid());
    let mut held = Vec::new();
    for _ in 0..6 {
        held.push(half_head(&gw).await);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let open = sockets(gw.pid());
    assert!(
        open <= idle + 2,
        "{open} sockets: the {idle} it had idle and at most 2 connections"
    );
    // The half-sent heads time out in turn; a keyed client behind them is served.
    let served = tokio::time::timeout(Duration::from_secs(60), keyed_chat(&gw)).await;
    let (status, body) = served.expect("a keyed client never got in");
    assert_eq!(status, 200, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_is_read_only_inside_its_slot_bounded_and_a_stalled_one_is_a_408() {
    let (openai, gw) = keyed_gateway(&["--max-in-flight", "2", "--client-timeout", "2"]).await;
    // Two clients declare 4 MiB bodies and send a kilobyte of each.
    let mut slow = Vec::new();
    for _ in 0..2 {
        let mut tcp = connect(&gw).await;
        tcp.write_all(keyed_head(4 << 20).as_bytes()).await.unwrap();
        tcp.write_all(&[b' '; 1024]).await.unwrap();
        slow.push(tcp);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Their bodies hold both slots: a third request is turned away at once.
    let (status, body) = keyed_chat(&gw).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["code"], "gateway_busy");
    assert!(openai.requests().is_empty());
    // The stalled bodies are answered 408 in OpenAI's shape, and their slots are free again.
    for tcp in &mut slow {
        let response = until_closed(tcp).await.expect("a stalled body was kept");
        assert!(response.starts_with("HTTP/1.1 408"), "{response}");
        assert_eq!(body_of(&response)["error"]["code"], "request_timeout");
    }
    let (status, body) = keyed_chat(&gw).await;
    assert_eq!(status, 200, "{body}");

    // A body declared past the bound is refused before it is read, in OpenAI's shape.
    let mut tcp = connect(&gw).await;
    tcp.write_all(keyed_head(1 << 30).as_bytes()).await.unwrap();
    let response = until_closed(&mut tcp).await.expect("no answer");
    assert!(response.starts_with("HTTP/1.1 413"), "{response}");
    assert_eq!(body_of(&response)["error"]["code"], "request_too_large");
    assert_eq!(body_of(&response)["error"]["type"], "invalid_request_error");
}

/// The text of a streamed answer as every accumulator assembles it: Chat `delta.content`, or
/// Responses `response.output_text.delta`.
fn assembled(text: &str) -> String {
    sse_events(text)
        .iter()
        .filter_map(|(_, d)| serde_json::from_str::<Value>(d).ok())
        .filter_map(|e| {
            e.pointer("/choices/0/delta/content")
                .or_else(|| (e["type"] == "response.output_text.delta").then(|| &e["delta"]))
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_needed_the_retry_delivers_only_the_checked_value() {
    // JSON mode only: the first answer breaks the enum, the retry is valid, on both endpoints.
    let flaky = Script::new([
        Reply::Json(bad_enum_answer()),
        Reply::Json(good_answer()),
        Reply::Json(bad_enum_answer()),
        Reply::Json(good_answer()),
    ]);
    let (openai, glm) = fakes(Script::always(Reply::Json(good_answer())), flaky).await;
    let sb = sandbox(&openai, &glm);
    let gw = Gateway::start(&sb, &[]);
    let mut chat = decision_request("glm-payg");
    chat["stream"] = json!(true);
    let (status, _, text) = post_text(&gw.url("/v1/chat/completions"), &chat).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("\"retry\""), "the retry is announced: {text}");
    let content = assembled(&text);
    assert_eq!(
        serde_json::from_str::<Value>(&content).ok(),
        Some(good_answer()),
        "what the client assembles is the checked value: {content}"
    );

    let responses = json!({
        "model": "glm-payg",
        "input": "Decide.",
        "stream": true,
        "text": {"format": {"type": "json_schema", "name": "decision", "schema": decision_schema()}},
    });
    let (status, _, text) = post_text(&gw.url("/v1/responses"), &responses).await;
    assert_eq!(status, 200, "{text}");
    let content = assembled(&text);
    assert_eq!(
        serde_json::from_str::<Value>(&content).ok(),
        Some(good_answer()),
        "{text}"
    );
    assert_eq!(glm.requests().len(), 4, "two attempts per request");

    // Free text is still relayed as it arrives.
    let free = json!({"model": "openai-payg", "stream": true, "messages": [{"role": "user", "content": "Hi."}]});
    let (status, _, text) = post_text(&gw.url("/v1/chat/completions"), &free).await;
    assert_eq!(status, 200, "{text}");
    let pieces = sse_events(&text)
        .iter()
        .filter_map(|(_, d)| serde_json::from_str::<Value>(d).ok())
        .filter(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .is_some_and(|s| !s.is_empty())
        })
        .count();
    assert!(pieces > 1, "free text came in several deltas: {text}");
}

/// The access-log lines the gateway wrote so far.
fn access_lines(gw: &Gateway) -> Vec<Value> {
    gw.log()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_and_abandoned_requests_are_logged_and_counted_too() {
    let (openai, glm) = fakes(
        Script::always(Reply::slow(5000, Reply::Json(good_answer()))),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let mut sb = sandbox(&openai, &glm);
    sb.var("GEODE_GATEWAY_KEYS", INBOUND);
    let gw = Gateway::start(&sb, &[]);
    let (status, _, _) = gw.chat(&decision_request("openai-payg"), &[]).await;
    assert_eq!(status, 401);
    // A client that gives up before the (slow) answer.
    let bearer = format!("Bearer {INBOUND}");
    let gave_up = reqwest::Client::new()
        .post(gw.url("/v1/chat/completions"))
        .header("authorization", &bearer)
        .json(&decision_request("openai-payg"))
        .timeout(Duration::from_millis(500))
        .send()
        .await;
    assert!(gave_up.is_err());
    let mut lines = Vec::new();
    for _ in 0..200 {
        lines = access_lines(&gw);
        if lines.len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(lines.len(), 2, "{}", gw.log());
    assert_eq!(lines[0]["status"], 401);
    assert_eq!(lines[0]["outcome"], "invalid_api_key");
    assert_eq!(lines[0]["endpoint"], "/v1/chat/completions");
    assert_eq!(lines[1]["status"], 499);
    assert_eq!(lines[1]["outcome"], "client_closed");
    assert_eq!(lines[1]["model"], "openai-payg");
    let metrics = reqwest::Client::new()
        .get(gw.url("/metrics"))
        .header("authorization", &bearer)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for outcome in ["invalid_api_key", "client_closed"] {
        assert!(
            metrics.contains(&format!("outcome=\"{outcome}\"")),
            "{outcome} is not counted: {metrics}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_failure_says_what_happened_in_openai_s_shape() {
    // The upstream rate-limits with a wait longer than the request may last.
    let (openai, glm) = fakes(
        Script::always(Reply::rate_limited(30)),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let mut sb = crate::support::Sandbox::new();
    sb.var("GEODE_OPENAI_BASE_URL", openai.base_url())
        .var("OPENAI_API_KEY", crate::support::SECRET)
        .var("GEODE_LOCAL_MODEL", "/srv/hidden-place/models/m.gguf");
    let gw = Gateway::start(&sb, &["--request-timeout", "5"]);
    drop(glm);

    let (status, headers, body) = gw.chat(&decision_request("openai-payg"), &[]).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(body["error"]["code"], "upstream_rate_limited");
    assert_eq!(header(&headers, "retry-after"), "30", "the provider's wait");
    assert_eq!(
        header(&headers, "x-geode-validated"),
        "false",
        "no answer passed a check"
    );

    // Free text for a model whose family has nothing configured: the route's problem.
    let text = json!({"model": "glm-4.6", "messages": [{"role": "user", "content": "Hi."}]});
    let (status, _, body) = gw.chat(&text, &[]).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "route_unavailable");

    // A server-side failure names no path on the host.
    let (status, _, body) = gw.chat(&decision_request("local"), &[]).await;
    assert!(status >= 500, "{status} {body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        !message.contains("hidden-place"),
        "a host path in: {message}"
    );

    // Headers past the bound.
    let (status, _, body) = gw
        .chat(
            &decision_request("openai-payg"),
            &[("x-padding", &"p".repeat(40 << 10))],
        )
        .await;
    assert_eq!(status, 431, "{body}");
    assert_eq!(body["error"]["code"], "headers_too_large");

    // A method the endpoint does not take.
    let wrong = reqwest::get(gw.url("/v1/chat/completions")).await.unwrap();
    assert_eq!(wrong.status().as_u16(), 405);
    let body: Value = wrong.json().await.unwrap();
    assert_eq!(body["error"]["code"], "method_not_allowed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_tenants_cached_answer_never_answers_another() {
    const OTHER: &str = "gw-hostile-other-tenant-93b1";
    let (openai, glm) = fakes(
        Script::always(Reply::Json(good_answer())),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let mut sb = sandbox(&openai, &glm);
    sb.var("GEODE_GATEWAY_KEYS", format!("{INBOUND},{OTHER}"));
    sb.trusted_config("[cache]\ndir = \"cache\"\n");
    let gw = Gateway::start(&sb, &[]);
    let ask = |key: &'static str| {
        let bearer = format!("Bearer {key}");
        let gw = &gw;
        async move {
            let (status, headers, body) = gw
                .chat(
                    &decision_request("openai-payg"),
                    &[("authorization", &bearer)],
                )
                .await;
            assert_eq!(status, 200, "{body}");
            !header(&headers, "x-geode-replayed").is_empty()
        }
    };
    assert!(!ask(INBOUND).await, "the first answer is made");
    assert!(ask(INBOUND).await, "the same tenant's repeat is replayed");
    assert!(!ask(OTHER).await, "another tenant's is made afresh");
    assert!(ask(OTHER).await);
    assert_eq!(
        model_calls(&openai).len(),
        2,
        "one upstream call per tenant"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_in_the_other_endpoints_spelling_is_refused_not_dropped() {
    let (openai, _glm, gw) = plain_gateway(&[], &[]).await;
    let format = json!({"type": "json_schema", "name": "decision", "schema": decision_schema()});
    let chat = json!({
        "model": "openai-payg",
        "messages": [{"role": "user", "content": "Decide."}],
        "text": {"format": format},
    });
    let (status, _, body) = gw.chat(&chat, &[]).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "unsupported_parameter");
    assert_eq!(body["error"]["param"], "text");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("response_format")
    );

    let responses = json!({
        "model": "openai-payg",
        "input": "Decide.",
        "response_format": {"type": "json_schema", "json_schema": {"name": "decision", "schema": decision_schema()}},
    });
    let (status, _, text) = post_text(&gw.url("/v1/responses"), &responses).await;
    assert_eq!(status, 400, "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["error"]["param"], "response_format");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("text.format")
    );
    assert!(model_calls(&openai).is_empty(), "nothing went upstream");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_is_cut_off_after_the_client_timeout() {
    // An answer far larger than what the sockets' buffers hold between the two ends.
    let big = "x".repeat(8 << 20);
    let (openai, glm) = fakes(
        Script::always(Reply::text(big)),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let mut sb = sandbox(&openai, &glm);
    // The upstream's stream carries the text three times over; let it all in.
    sb.var("GEODE_MAX_RESPONSE_BYTES", (64u32 << 20).to_string());
    let gw = Gateway::start(&sb, &["--client-timeout", "1"]);
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut tcp = socket
        .connect(gw.base.trim_start_matches("http://").parse().unwrap())
        .await
        .unwrap();
    let body = json!({"model": "openai-payg", "messages": [{"role": "user", "content": "Hi."}]})
        .to_string();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    tcp.write_all((head + &body).as_bytes()).await.unwrap();
    // The client reads nothing for a while, then everything it can.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let mut got = Vec::new();
    let read = tokio::time::timeout(HANG, async {
        let mut buf = vec![0; 1 << 16];
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the connection was never closed");
    assert!(
        got.len() < 8 << 20,
        "{} bytes: the whole answer waited for a client that did not read",
        got.len()
    );
}
