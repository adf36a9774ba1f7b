use super::*;
use crate::vocab::RetryClass;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn no_schema(_: &ProviderError) -> bool {
    false
}

fn classify(status: u16, body: Value) -> AdapterError {
    classify_status("a", status, None, body.to_string().as_bytes(), &no_schema)
}

#[test]
fn statuses_map_to_error_kinds() {
    use crate::vocab::ErrorKind::{Auth, BadRequest, RateLimited, Server};
    let e = json!({"error": {"message": "m", "type": "t"}});
    let rows = [
        (401, Auth),
        (403, Auth),
        (429, RateLimited),
        (500, Server),
        (503, Server),
        (400, BadRequest),
        (404, BadRequest),
    ];
    for (status, kind) in rows {
        let err = classify(status, e.clone());
        assert_eq!(err.kind(), kind, "{status}");
        let carried = match err {
            AdapterError::Auth { status, .. }
            | AdapterError::Server { status, .. }
            | AdapterError::BadRequest { status, .. } => Some(status),
            _ => None,
        };
        assert_eq!(carried, (kind != RateLimited).then_some(status), "{status}");
    }
}

#[test]
fn a_400_the_judge_names_is_schema_rejected_with_code() {
    let openai = json!({"error": {
        "message": "Invalid schema: 'additionalProperties' is required to be supplied and to be false.",
        "type": "invalid_request_error", "param": "text.format.schema", "code": "invalid_json_schema"}});
    let judge = |p: &ProviderError| p.param.as_deref() == Some("text.format.schema");
    match classify_status("a", 400, None, openai.to_string().as_bytes(), &judge) {
        AdapterError::SchemaRejected {
            status,
            code,
            message,
            ..
        } => {
            assert_eq!(status, 400);
            assert_eq!(code, "invalid_json_schema");
            assert!(message.contains("additionalProperties"));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        classify(400, openai),
        AdapterError::BadRequest { .. }
    ));
}

#[test]
fn provider_messages_come_from_the_common_shapes() {
    let m = |v: Value| provider_error(v.to_string().as_bytes()).unwrap().message;
    assert_eq!(
        m(json!({"detail": "Store must be set to false"})),
        "Store must be set to false"
    );
    assert_eq!(
        m(json!({"error": {"code": "1113", "message": "余额不足"}})),
        "余额不足"
    );
    assert_eq!(m(json!({"message": "plain"})), "plain");
    assert_eq!(m(json!({"error": "just a string"})), "just a string");
    assert!(provider_error(b"<html>oops</html>").is_none());
    let e = classify_status("a", 502, None, b"<html>bad gateway</html>", &no_schema);
    assert_eq!(
        e.to_string(),
        "a: provider error (HTTP 502): non-JSON error body (24 bytes)"
    );
}

#[test]
fn messages_are_truncated_one_line_and_scrubbed_of_secrets() {
    let long = "x".repeat(1000);
    let e = classify(400, json!({"error": {"message": long}}));
    assert!(e.to_string().chars().count() < 400, "{e}");
    let _key = Secret::new("sk-live-abcdef123456");
    let body = json!({"error": {"message": "Incorrect API key provided: sk-live-abcdef123456\nsecond line"}});
    let e = classify_status("a", 401, None, body.to_string().as_bytes(), &no_schema);
    let text = format!("{e} {e:?}");
    assert!(!text.contains("sk-live-abcdef123456"), "{text}");
    assert!(text.contains("provided: ***"), "{text}");
    assert!(!e.to_string().contains('\n'));
}

#[test]
fn a_key_after_long_padding_is_scrubbed_before_the_cut() {
    // A regression: the message was cut at 300 characters and then scrubbed, so the key's first 22
    // characters survived.
    let key = "sk-proj-Padding0Test1Key2Value3Abcdef456789";
    let _key = Secret::new(key);
    let message = format!("{} {key}", "p".repeat(278));
    let e = classify(401, json!({"error": {"message": message}}));
    let text = format!("{e} {e:?}");
    for w in key.as_bytes().windows(8) {
        let w = std::str::from_utf8(w).unwrap();
        assert!(!text.contains(w), "{w} in {text}");
    }
}

#[test]
fn retry_after_reads_ms_then_seconds() {
    let mut h = HeaderMap::new();
    assert_eq!(retry_after(&h), None);
    h.insert("retry-after", HeaderValue::from_static("2"));
    assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
    h.insert("retry-after-ms", HeaderValue::from_static("150"));
    assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
    let mut h = HeaderMap::new();
    h.insert(
        "retry-after",
        HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
    );
    assert_eq!(retry_after(&h), None);
}

#[test]
fn backoff_grows_is_jittered_within_bounds_and_capped() {
    let p = RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_millis(100),
        max_delay: Duration::from_secs(1),
    };
    for attempt in 0..3u32 {
        let d = p.delay(attempt, None);
        let nominal = 100.0 * f64::from(2u32.pow(attempt));
        let ms = d.as_secs_f64() * 1000.0;
        assert!(
            ms >= nominal * 0.8 - 1.0 && ms <= nominal * 1.2 + 1.0,
            "{attempt}: {ms}"
        );
    }
    assert_eq!(p.delay(10, None), Duration::from_secs(1));
    assert_eq!(
        p.delay(0, Some(Duration::from_secs(60))),
        Duration::from_secs(1)
    );
    assert_eq!(
        p.delay(0, Some(Duration::from_millis(7))),
        Duration::from_millis(7)
    );
}

#[test]
fn post_request_debug_shows_no_header_values() {
    let r = PostRequest::new("a", "http://127.0.0.1:1/x", Bytes::from_static(b"{}"))
        .bearer(&Secret::new("tok-123456"))
        .secret_header("x-api-key", &Secret::new("key-987654"));
    let dbg = format!("{r:?}");
    assert!(
        !dbg.contains("tok-123456") && !dbg.contains("key-987654"),
        "{dbg}"
    );
    assert!(dbg.contains("authorization"));
}

/// A listener on a free loopback port, and the URL of `path` on it.
async fn listen(path: &str) -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}{path}", listener.local_addr().unwrap());
    (listener, url)
}

/// A one-connection-per-reply HTTP/1.1 server on 127.0.0.1 playing canned raw replies.
/// `None` closes the connection without answering (a reset).
async fn serve(replies: Vec<Option<String>>) -> (String, Arc<AtomicUsize>) {
    let (listener, url) = listen("/v1/x").await;
    let hits = Arc::new(AtomicUsize::new(0));
    let hits2 = hits.clone();
    tokio::spawn(async move {
        for reply in replies {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            hits2.fetch_add(1, Ordering::SeqCst);
            let mut buf = vec![0u8; 65536];
            let mut got = Vec::new();
            // Read the head and the (small) body.
            loop {
                let n = sock.read(&mut buf).await.unwrap_or(0);
                got.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&got).to_string();
                if n == 0 || text.contains("\r\n\r\n{") && text.ends_with('}') {
                    break;
                }
            }
            match reply {
                Some(r) => {
                    let _ = sock.write_all(r.as_bytes()).await;
                    let _ = sock.shutdown().await;
                }
                None => drop(sock),
            }
        }
    });
    (url, hits)
}

fn reply(status: &str, extra: &str, body: &str) -> Option<String> {
    Some(format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    ))
}

fn client(retries: u32) -> HttpClient {
    HttpClient::new(HttpConfig::default())
        .unwrap()
        .with_retry(RetryPolicy {
            max_retries: retries,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(50),
        })
}

fn req(url: &str) -> PostRequest {
    PostRequest::json("a", url, &json!({"q": 1})).unwrap()
}

async fn bounded<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("test hung")
}

#[tokio::test]
async fn retries_429_and_500_then_succeeds() {
    let (url, hits) = serve(vec![
        reply(
            "429 Too Many Requests",
            "retry-after-ms: 20\r\n",
            r#"{"error":{"message":"slow down"}}"#,
        ),
        reply(
            "500 Internal Server Error",
            "",
            r#"{"error":{"message":"boom"}}"#,
        ),
        None,
        reply("200 OK", "", r#"{"ok":true}"#),
    ])
    .await;
    let v = bounded(client(3).post_json(&req(&url), &CallCx::new()))
        .await
        .unwrap();
    assert_eq!(v, json!({"ok": true}));
    assert_eq!(hits.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn retries_are_bounded_and_the_last_error_is_returned() {
    let five = (0..5)
        .map(|_| {
            reply(
                "503 Service Unavailable",
                "",
                r#"{"error":{"message":"down"}}"#,
            )
        })
        .collect();
    let (url, hits) = serve(five).await;
    let err = bounded(client(2).post_json(&req(&url), &CallCx::new()))
        .await
        .unwrap_err();
    assert!(
        matches!(err, AdapterError::Server { status: 503, .. }),
        "{err:?}"
    );
    assert_eq!(err.retry_class(), RetryClass::Retryable);
    assert_eq!(hits.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn other_4xx_are_never_retried() {
    let (url, hits) = serve(vec![
        reply(
            "400 Bad Request",
            "",
            r#"{"error":{"message":"bad","param":"text.format"}}"#,
        ),
        reply("200 OK", "", "{}"),
    ])
    .await;
    let judge: SchemaJudge =
        Arc::new(|p: &ProviderError| p.param.as_deref() == Some("text.format"));
    let post = req(&url).schema_judge(judge);
    let err = bounded(client(3).post_json(&post, &CallCx::new()))
        .await
        .unwrap_err();
    assert!(
        matches!(err, AdapterError::SchemaRejected { .. }),
        "the request's judge decides: {err:?}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_refused_connection_is_transport_after_retries() {
    // Bind then drop to get a port nobody listens on.
    let (l, url) = listen("/x").await;
    drop(l);
    let err = bounded(client(1).post_json(&req(&url), &CallCx::new()))
        .await
        .unwrap_err();
    assert!(matches!(err, AdapterError::Transport { .. }), "{err:?}");
    assert!(
        !err.to_string().contains("127.0.0.1"),
        "no URL in errors: {err}"
    );
}

#[tokio::test]
async fn a_backoff_that_would_pass_the_deadline_is_not_slept() {
    let (url, hits) = serve(vec![
        reply("429 Too Many Requests", "retry-after: 30\r\n", "{}"),
        reply("200 OK", "", "{}"),
    ])
    .await;
    let c = client(3).with_retry(RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(60),
    });
    let cx = CallCx::new().with_timeout(Duration::from_secs(5));
    let err = bounded(c.post_json(&req(&url), &cx)).await.unwrap_err();
    assert!(
        matches!(
            err,
            AdapterError::RateLimited {
                retry_after: Some(_),
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_server_that_never_answers_hits_the_deadline() {
    let (listener, url) = listen("/x").await;
    let keep = tokio::spawn(async move {
        let (_sock, _) = listener.accept().await.unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
    });
    let cx = CallCx::new().with_timeout(Duration::from_millis(300));
    let err = bounded(client(3).post_json(&req(&url), &cx))
        .await
        .unwrap_err();
    assert!(matches!(err, AdapterError::Timeout { .. }), "{err:?}");
    keep.abort();
}

#[tokio::test]
async fn post_sse_returns_a_reader_and_a_cut_stream_is_truncated() {
    let body = "event: a\ndata: {\"n\":1}\n\ndata: {\"n\":";
    let (url, _) = serve(vec![Some(format!(
        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    ))])
    .await;
    let cx = CallCx::new();
    let SseReply::Events(mut sse) = bounded(client(0).post_sse(&req(&url), &cx)).await.unwrap()
    else {
        panic!("an event stream is read as events")
    };
    let first = bounded(sse.next_event(&cx)).await.unwrap();
    assert_eq!(
        (first.event.as_str(), first.data.as_str()),
        ("a", "{\"n\":1}")
    );
    let err = bounded(sse.next_event(&cx)).await.unwrap_err();
    assert!(matches!(err, AdapterError::Truncated { .. }), "{err:?}");
}

/// A 200 with `body` of content type `kind` (`None`: no content-type header) from a fresh server.
async fn sse_reply(kind: Option<&str>, body: &str) -> Result<SseReply, AdapterError> {
    let header = kind
        .map(|k| format!("content-type: {k}\r\n"))
        .unwrap_or_default();
    let (url, _) = serve(vec![Some(format!(
        "HTTP/1.1 200 OK\r\n{header}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    ))])
    .await;
    bounded(client(0).post_sse(&req(&url), &CallCx::new())).await
}

#[tokio::test]
async fn post_sse_refuses_a_reply_that_is_neither_a_stream_nor_json() {
    for kind in ["text/html; charset=utf-8", "text/plain"] {
        let err = sse_reply(Some(kind), "<html>proxy</html>")
            .await
            .err()
            .unwrap();
        assert!(matches!(err, AdapterError::Protocol { .. }), "{err:?}");
        let essence = kind.split(';').next().unwrap();
        assert!(err.to_string().contains(essence), "{err}");
    }
    // JSON that does not parse is a protocol error too, not a stream.
    let err = sse_reply(Some("application/json"), "{\"id\":")
        .await
        .err()
        .unwrap();
    assert!(matches!(err, AdapterError::Protocol { .. }), "{err:?}");
}

#[tokio::test]
async fn post_sse_hands_on_a_whole_json_body_from_a_server_that_ignored_stream() {
    for kind in [
        "application/json",
        "application/json; charset=utf-8",
        "application/problem+json",
    ] {
        match sse_reply(Some(kind), "{\"id\":\"chatcmpl-1\"}").await {
            Ok(SseReply::Whole(v)) => assert_eq!(v["id"], "chatcmpl-1", "{kind}"),
            Ok(SseReply::Events(_)) => panic!("{kind}: read as a stream"),
            Err(e) => panic!("{kind}: {e}"),
        }
    }
}

#[tokio::test]
async fn post_sse_reads_an_event_stream_or_a_reply_without_a_content_type_as_events() {
    for kind in [Some("text/event-stream; charset=utf-8"), None] {
        let reply = sse_reply(kind, "data: {}\n\n").await;
        assert!(matches!(reply, Ok(SseReply::Events(_))), "{kind:?}");
    }
}

#[test]
fn urls_join_with_one_slash() {
    assert_eq!(join_url("http://h/", "/v1/x"), "http://h/v1/x");
    assert_eq!(join_url("http://h", "v1/x"), "http://h/v1/x");
}

/// An HTTP/1.1 server on 127.0.0.1 that keeps each connection open for more requests, answering
/// each `{"ok":true}` after `delay`, and counts the connections it accepted.
async fn keep_alive_server(delay: Duration) -> (String, Arc<AtomicUsize>) {
    let (listener, url) = listen("/v1/x").await;
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(answer_each_request(sock, delay));
        }
    });
    (url, accepted)
}

async fn answer_each_request(mut sock: tokio::net::TcpStream, delay: Duration) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let mut head_end = None;
        let mut body_len = 0;
        while head_end.is_none_or(|end| got.len() < end + body_len) {
            if head_end.is_none()
                && let Some(i) = got.windows(4).position(|w| w == b"\r\n\r\n")
            {
                let head = String::from_utf8_lossy(&got[..i]).to_ascii_lowercase();
                body_len = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                head_end = Some(i + 4);
                continue;
            }
            match sock.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
        got.drain(..head_end.unwrap_or(0) + body_len);
        tokio::time::sleep(delay).await;
        let body = r#"{"ok":true}"#;
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        if sock.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// 64 calls at once open 64 connections; the next 64 run on them. (With httpx's 5 idle
/// connections per host, 59 of every 64 calls connected anew: on TLS, a handshake each.)
#[tokio::test]
async fn a_busy_client_reuses_its_connections() {
    let (url, accepted) = keep_alive_server(Duration::from_millis(50)).await;
    let http = HttpClient::new(HttpConfig::default()).unwrap();
    for round in 0..3 {
        let calls = (0..64).map(|_| {
            let (http, post) = (http.clone(), req(&url));
            async move { http.post_json(&post, &CallCx::new()).await }
        });
        for answer in bounded(futures::future::join_all(calls)).await {
            assert_eq!(answer.unwrap()["ok"], true, "round {round}");
        }
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 64);
}
