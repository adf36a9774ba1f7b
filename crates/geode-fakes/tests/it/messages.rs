//! The Messages fake over the wire: JSON and SSE answers shaped like fake_anthropic.py, plus
//! the endpoints the claude CLI probes.
use crate::common;

use common::*;
use geode_fakes::{Kind, Reply};
use serde_json::{Value, json};

/// The stop reason a Messages stream's `message_delta` (the event before `message_stop`) gives.
fn stream_stop_reason(events: &[Event]) -> Value {
    events[events.len() - 2].json()["delta"]["stop_reason"].clone()
}

/// The `field` of every `content_block_delta`, joined; each delta must be of `delta_type`.
fn block_deltas(events: &[Event], delta_type: &str, field: &str) -> String {
    events
        .iter()
        .filter(|e| e.name.as_deref() == Some("content_block_delta"))
        .map(|e| {
            let d = e.json();
            assert_eq!(d["delta"]["type"], delta_type);
            d["delta"][field].as_str().unwrap().to_owned()
        })
        .collect()
}

#[tokio::test]
async fn text_answer_is_a_message_with_end_turn_and_usage() {
    let server = start(Kind::Messages, [Reply::text("hello")]).await;
    let (status, headers, text) = call(&server, &body(Kind::Messages, false)).await;
    assert_eq!(status, 200);
    assert!(headers.get("request-id").is_some());
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["type"], "message");
    assert_eq!(v["role"], "assistant");
    assert_eq!(v["model"], "claude-test");
    assert_eq!(v["content"], json!([{"type": "text", "text": "hello"}]));
    assert_eq!(v["stop_reason"], "end_turn");
    assert_eq!(v["stop_sequence"], Value::Null);
    assert_default_usage(&v["usage"], "input_tokens", "output_tokens");
    server.shutdown().await;
}

#[tokio::test]
async fn streamed_text_has_the_full_event_sequence() {
    let (server, events) = answer_sse(
        Kind::Messages,
        Reply::Json(json!({"answer": "fake", "n": 1})),
    )
    .await;
    assert_eq!(
        names(&events),
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    for event in &events {
        assert_eq!(event.json()["type"], json!(event.name));
    }
    let start = events[0].json();
    assert_eq!(start["message"]["content"], json!([]));
    assert_eq!(start["message"]["usage"]["input_tokens"], 11);
    let text = block_deltas(&events, "text_delta", "text");
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"answer": "fake", "n": 1})
    );
    let delta = events[6].json();
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    assert_eq!(delta["usage"]["output_tokens"], 7);
    server.shutdown().await;
}

#[tokio::test]
async fn tool_call_is_a_tool_use_block_streamed_as_input_json_deltas() {
    let input = json!({"city": "Paris", "days": 2});
    let (server, _, v) = answer_json(
        Kind::Messages,
        Reply::tool_call("get_weather", input.clone()),
    )
    .await;
    assert_eq!(v["stop_reason"], "tool_use");
    assert_eq!(v["content"][0]["type"], "tool_use");
    assert_eq!(v["content"][0]["name"], "get_weather");
    assert_eq!(v["content"][0]["input"], input);
    assert!(
        v["content"][0]["id"]
            .as_str()
            .unwrap()
            .starts_with("toolu_")
    );

    let events = call_sse(&server, &body(Kind::Messages, true)).await;
    let start = events[2].json();
    assert_eq!(start["content_block"]["type"], "tool_use");
    assert_eq!(start["content_block"]["input"], json!({}));
    let partial = block_deltas(&events, "input_json_delta", "partial_json");
    assert_eq!(serde_json::from_str::<Value>(&partial).unwrap(), input);
    assert_eq!(stream_stop_reason(&events), "tool_use");
    server.shutdown().await;
}

#[tokio::test]
async fn refusal_and_max_tokens_set_their_stop_reasons() {
    let (server, refusal, truncated) = refusal_then_truncation(Kind::Messages).await;
    assert_eq!(refusal["stop_reason"], "refusal");
    assert_eq!(truncated["stop_reason"], "max_tokens");
    assert_eq!(truncated["content"][0]["text"], "{\"a\":");
    let events = call_sse(&server, &body(Kind::Messages, true)).await;
    assert_eq!(stream_stop_reason(&events), "max_tokens");
    server.shutdown().await;
}

#[tokio::test]
async fn auto_calls_the_structured_output_tool_like_the_python_fake() {
    let server = start(Kind::Messages, []).await;
    let schema = json!({"type": "object", "properties": {"answer": {"type": "string"},
                        "n": {"type": "integer"}}, "required": ["answer", "n"],
                        "additionalProperties": false});
    let mut request = body(Kind::Messages, true);
    request["tools"] =
        json!([{"name": "StructuredOutput", "description": "…", "input_schema": schema}]);
    let events = call_sse(&server, &request).await;
    assert_eq!(
        events[2].json()["content_block"]["name"],
        "StructuredOutput"
    );
    let input: String = events
        .iter()
        .filter(|e| e.name.as_deref() == Some("content_block_delta"))
        .map(|e| {
            e.json()["delta"]["partial_json"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&input).unwrap(),
        json!({"answer": "fake", "n": 1})
    );
    server.shutdown().await;
}

#[tokio::test]
async fn claude_cli_probes_are_answered() {
    let server = start(Kind::Messages, [Reply::text("ok")]).await;
    let head = send(client().head(format!("{}/", server.base_url()))).await;
    assert_eq!(head.status(), 200);
    let count = send(
        client()
            .post(format!("{}/v1/messages/count_tokens", server.base_url()))
            .json(&json!({"messages": []})),
    )
    .await;
    let count = json_of(count).await;
    assert_eq!(count["input_tokens"], 42);
    let beta = send(
        client()
            .post(format!("{}/v1/messages?beta=true", server.base_url()))
            .header("x-api-key", SECRET)
            .json(&body(Kind::Messages, false)),
    )
    .await;
    assert_eq!(beta.status(), 200);
    let v = json_of(beta).await;
    assert_eq!(v["content"][0]["text"], "ok");
    let missing = send(client().post(format!("{}/v2/other", server.base_url()))).await;
    assert_eq!(missing.status(), 404);
    let v = json_of(missing).await;
    assert_eq!(v["error"]["type"], "not_found_error");
    let paths: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(
        paths,
        [
            "/",
            "/v1/messages/count_tokens",
            "/v1/messages?beta=true",
            "/v2/other"
        ]
    );
    server.shutdown().await;
}
