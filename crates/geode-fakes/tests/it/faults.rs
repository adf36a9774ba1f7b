//! Errors and faults, for every kind: provider-shaped HTTP errors, retry-after, reset, stream
//! cut, slow body and hang. Every wait is bounded; no assertion depends on precise timings.
use crate::common;

use common::*;
use geode_fakes::{Kind, Reply};
use serde_json::{Value, json};
use std::time::Duration;

/// A wait that is far shorter than the scripted delays below.
const SHORT: Duration = Duration::from_millis(100);
/// A delay far longer than [`SHORT`] but short enough to keep the suite quick.
const DELAY_MS: u64 = 400;

/// The error message in the provider's error body, wherever that provider puts it.
fn error_message(kind: Kind, v: &Value) -> String {
    let found = match kind {
        Kind::Messages => {
            assert_eq!(v["type"], "error");
            v["error"]["message"].as_str()
        }
        _ => v["error"]["message"].as_str().or(v["detail"].as_str()),
    };
    found
        .unwrap_or_else(|| panic!("no error message in {v}"))
        .to_owned()
}

/// Each kind in the delivery it streams its answer in (Chat: one JSON body).
const STREAMING_KINDS: [(Kind, bool); 3] = [
    (Kind::Responses, true),
    (Kind::Messages, true),
    (Kind::Chat, false),
];

#[tokio::test]
async fn http_errors_have_provider_shaped_bodies() {
    for kind in Kind::ALL {
        let server = start(
            kind,
            [Reply::status(400), Reply::status(401), Reply::status(500)],
        )
        .await;
        for expected in [400, 401, 500] {
            let (status, v) = call_json(&server, &body(kind, false)).await;
            assert_eq!(status, expected, "{kind}");
            assert!(!error_message(kind, &v).is_empty(), "{kind} {expected}");
        }
        server.shutdown().await;
    }
}

#[tokio::test]
async fn explicit_status_body_is_sent_verbatim() {
    let custom = json!({"error": {"message": "custom", "type": "x"}});
    let (server, status, v) = answer_json(
        Kind::Chat,
        Reply::Status {
            status: 503,
            body: custom.clone(),
            retry_after: None,
        },
    )
    .await;
    assert_eq!((status, v), (503, custom));
    server.shutdown().await;
}

#[tokio::test]
async fn rate_limit_carries_retry_after() {
    for kind in Kind::ALL {
        let server = start(kind, [Reply::rate_limited(7), Reply::text("after")]).await;
        let (status, headers, text) = call(&server, &body(kind, false)).await;
        assert_eq!(status, 429, "{kind}");
        assert_eq!(headers.get("retry-after").unwrap(), "7", "{kind}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert!(!error_message(kind, &v).is_empty());
        // The next step plays normally.
        let (status, _, text) = call(&server, &body(kind, false)).await;
        assert_eq!(status, 200, "{kind}");
        assert!(text.contains("after"), "{kind}: {text}");
        server.shutdown().await;
    }
}

#[tokio::test]
async fn schema_rejection_is_a_400_naming_the_problem() {
    for kind in Kind::ALL {
        let message = "Invalid schema: 'additionalProperties' is required to be false";
        let server = start(kind, [Reply::SchemaRejection(message.into())]).await;
        let (status, v) = call_json(&server, &body(kind, false)).await;
        assert_eq!(status, 400, "{kind}");
        assert_eq!(error_message(kind, &v), message);
        server.shutdown().await;
    }
    let (server, _, v) = answer_json(Kind::Responses, Reply::SchemaRejection("bad".into())).await;
    assert_eq!(v["error"]["code"], "invalid_json_schema");
    assert_eq!(v["error"]["param"], "text.format.schema");
    server.shutdown().await;
}

#[tokio::test]
async fn connection_reset_is_a_client_error_and_the_server_keeps_serving() {
    for kind in Kind::ALL {
        let server = start(kind, [Reply::ConnectionReset, Reply::text("fine")]).await;
        let result = bounded(model_call(&server, &body(kind, false)).send()).await;
        assert!(
            result.is_err(),
            "{kind}: a reset must not look like an answer"
        );
        let (status, _, text) = call(&server, &body(kind, false)).await;
        assert_eq!(status, 200, "{kind}");
        assert!(text.contains("fine"));
        assert_eq!(
            server.requests().len(),
            2,
            "the reset request is recorded too"
        );
        server.shutdown().await;
    }
}

/// The terminal event name of each kind's stream.
fn terminal(kind: Kind) -> &'static str {
    match kind {
        Kind::Responses | Kind::ChatGpt => "response.completed",
        Kind::Messages => "message_stop",
        Kind::Chat => "[DONE]",
    }
}

#[tokio::test]
async fn stream_cut_ends_mid_event_without_the_terminal_event() {
    for kind in Kind::ALL {
        let server = start(kind, [Reply::StreamCut]).await;
        let (status, headers, text) = call(&server, &body(kind, true)).await;
        assert_eq!(status, 200, "{kind}");
        assert_eq!(headers.get("content-type").unwrap(), "text/event-stream");
        assert!(!text.contains(terminal(kind)), "{kind}: {text}");
        assert!(
            !text.ends_with("\n\n"),
            "{kind}: the stream must end mid-event"
        );
        assert!(
            !parse_sse(&text).is_empty(),
            "{kind}: some events are sent first"
        );
        server.shutdown().await;
    }
}

#[tokio::test]
async fn stream_cut_of_a_json_answer_is_a_body_error() {
    for kind in [Kind::Responses, Kind::Messages, Kind::Chat] {
        let (server, response) = open_200(kind, false, Reply::StreamCut).await;
        let body = bounded(response.bytes()).await;
        assert!(body.is_err(), "{kind}: a cut JSON body must fail to read");
        server.shutdown().await;
    }
}

#[tokio::test]
async fn slow_json_answer_arrives_only_after_its_delay() {
    for kind in [Kind::Responses, Kind::Messages, Kind::Chat] {
        let server = start(kind, [Reply::slow(DELAY_MS, Reply::text("late"))]).await;
        let mut pending = Box::pin(model_call(&server, &body(kind, false)).send());
        assert!(
            tokio::time::timeout(SHORT, &mut pending).await.is_err(),
            "{kind}: the answer came before its delay"
        );
        let response = bounded(pending).await.unwrap();
        assert_eq!(response.status(), 200);
        assert!(bounded(response.text()).await.unwrap().contains("late"));
        server.shutdown().await;
    }
}

#[tokio::test]
async fn slow_stream_sends_headers_then_stalls_before_the_first_event() {
    for kind in Kind::ALL {
        let (server, mut response) =
            open_200(kind, true, Reply::slow(DELAY_MS, Reply::text("late"))).await;
        {
            let mut first = Box::pin(response.chunk());
            assert!(
                tokio::time::timeout(SHORT, &mut first).await.is_err(),
                "{kind}: an event came before the delay"
            );
            let chunk = bounded(first).await.unwrap().expect("a first event");
            assert!(!chunk.is_empty());
        }
        let mut rest = Vec::new();
        while let Some(chunk) = bounded(response.chunk()).await.unwrap() {
            rest.extend_from_slice(&chunk);
        }
        assert!(
            String::from_utf8_lossy(&rest).contains(terminal(kind)),
            "{kind}"
        );
        server.shutdown().await;
    }
}

#[tokio::test]
async fn slow_error_status_is_delayed_too() {
    let server = start(
        Kind::Messages,
        [Reply::slow(DELAY_MS, Reply::rate_limited(1))],
    )
    .await;
    let mut pending = Box::pin(model_call(&server, &body(Kind::Messages, false)).send());
    assert!(tokio::time::timeout(SHORT, &mut pending).await.is_err());
    assert_eq!(bounded(pending).await.unwrap().status(), 429);
    server.shutdown().await;
}

#[tokio::test]
async fn hang_never_answers_and_shutdown_releases_the_client() {
    for kind in Kind::ALL {
        let server = start(kind, [Reply::Hang]).await;
        let request = model_call(&server, &body(kind, true));
        let pending = tokio::spawn(async move { request.send().await });
        // Wait until the server has read the request, so the hang is really in progress.
        bounded(async {
            while server.requests().is_empty() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        tokio::time::sleep(SHORT).await;
        assert!(!pending.is_finished(), "{kind}: a hang must not answer");
        bounded(server.shutdown()).await;
        let result = bounded(pending).await.unwrap();
        assert!(
            result.is_err(),
            "{kind}: the client sees the connection close"
        );
    }
}

#[tokio::test]
async fn hang_mid_body_sends_headers_and_part_then_goes_silent() {
    for (kind, stream) in STREAMING_KINDS {
        let (server, mut response) = open_200(kind, stream, Reply::HangMidBody).await;
        let first = bounded(response.chunk())
            .await
            .unwrap()
            .expect("a first part");
        assert!(!first.is_empty(), "{kind}");
        let mut rest = Vec::new();
        let silent = tokio::time::timeout(Duration::from_millis(DELAY_MS), async {
            while let Some(chunk) = response.chunk().await.unwrap() {
                rest.extend_from_slice(&chunk);
            }
        })
        .await;
        assert!(silent.is_err(), "{kind}: the body must never end");
        server.shutdown().await;
    }
}

#[tokio::test]
async fn reset_mid_body_sends_part_then_fails_the_read() {
    for kind in [Kind::Responses, Kind::Messages, Kind::Chat] {
        let (server, response) = open_200(kind, true, Reply::ResetMidBody).await;
        assert!(
            bounded(response.bytes()).await.is_err(),
            "{kind}: the read must fail"
        );
        server.shutdown().await;
    }
}

#[tokio::test]
async fn endless_body_keeps_coming() {
    for (kind, stream) in STREAMING_KINDS {
        let (server, mut response) = open_200(kind, stream, Reply::Endless).await;
        let mut seen = 0usize;
        while seen < 2 << 20 {
            let chunk = bounded(response.chunk()).await.unwrap().expect("more body");
            seen += chunk.len();
        }
        server.shutdown().await;
    }
}

#[tokio::test]
async fn garbage_and_html_are_200s_that_are_not_json() {
    for kind in Kind::ALL {
        let server = start(kind, [Reply::Garbage, Reply::Html]).await;
        let response = bounded(model_call(&server, &body(kind, true)).send())
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{kind}");
        let bytes = bounded(response.bytes()).await.unwrap();
        assert!(
            std::str::from_utf8(&bytes).is_err(),
            "{kind}: garbage is not UTF-8"
        );
        assert!(
            bytes.starts_with(b"data: "),
            "{kind}: garbage is framed as SSE data"
        );
        let (status, headers, text) = call(&server, &body(kind, false)).await;
        assert_eq!(status, 200, "{kind}");
        assert!(
            headers
                .get("content-type")
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
        assert!(text.contains("<html>") && serde_json::from_str::<Value>(&text).is_err());
        server.shutdown().await;
    }
}

#[tokio::test]
async fn in_band_errors_come_in_each_providers_shape() {
    let message = "The service is overloaded.";
    for kind in Kind::ALL {
        let server = start(kind, [Reply::InBandError(message.into())]).await;
        let streams = kind != Kind::Chat;
        let (status, _, text) = call(&server, &body(kind, streams)).await;
        assert_eq!(status, 200, "{kind}");
        let payload: Value = if streams {
            let events = parse_sse(&text);
            assert_eq!(events.len(), 1, "{kind}: {text}");
            assert_eq!(events[0].name.as_deref(), Some("error"), "{kind}");
            events[0].json()
        } else {
            serde_json::from_str(&text).unwrap()
        };
        assert!(payload.to_string().contains(message), "{kind}: {payload}");
        match kind {
            Kind::Messages => assert_eq!(payload["error"]["type"], "overloaded_error"),
            Kind::Chat => assert_eq!(payload["error"]["code"], "1234"),
            _ => assert_eq!(payload["code"], "server_error"),
        }
        server.shutdown().await;
    }
    let (server, _, v) = answer_json(Kind::Responses, Reply::InBandError(message.into())).await;
    assert_eq!(
        (v["status"].as_str(), v["error"]["code"].as_str()),
        (Some("failed"), Some("server_error"))
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_revoked_refresh_token_is_refused() {
    let server = start(Kind::ChatGpt, [Reply::Auto]).await;
    let token_url = format!("{}/oauth/token", server.base_url());
    let refresh = |rt: &str| {
        client().post(&token_url).json(&json!({
            "grant_type": "refresh_token", "refresh_token": rt, "client_id": "x"}))
    };
    let ok = bounded(refresh("rt_fine").send()).await.unwrap();
    assert_eq!(ok.status(), 200);
    let revoked = format!("{}-1", geode_fakes::chatgpt::REVOKED_REFRESH_PREFIX);
    let refused = bounded(refresh(&revoked).send()).await.unwrap();
    assert_eq!(refused.status(), 401);
    let v = json_of(refused).await;
    assert_eq!(v["error"], "invalid_grant");
    server.shutdown().await;
}
