//! The Chat Completions (GLM) fake over the wire.
use crate::common;

use common::*;
use geode_fakes::{Kind, Reply};
use serde_json::{Value, json};

/// The JSON chunks of a Chat stream, without its closing `[DONE]`.
fn chunk_bodies(events: &[Event]) -> Vec<Value> {
    events[..events.len() - 1]
        .iter()
        .map(|e| e.json())
        .collect()
}

#[tokio::test]
async fn text_answer_has_content_finish_reason_and_usage() {
    let (server, status, v) = answer_json(Kind::Chat, Reply::Json(json!({"k": [1, 2]}))).await;
    assert_eq!(status, 200);
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "glm-test");
    let choice = &v["choices"][0];
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], "{\"k\":[1,2]}");
    assert_eq!(choice["finish_reason"], "stop");
    assert_default_usage(&v["usage"], "prompt_tokens", "completion_tokens");
    server.shutdown().await;
}

#[tokio::test]
async fn tool_call_arguments_are_a_string_and_finish_reason_is_tool_calls() {
    let args = json!({"q": "x"});
    let (server, _, v) = answer_json(Kind::Chat, Reply::tool_call("search", args.clone())).await;
    let choice = &v["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], Value::Null);
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "search");
    let parsed: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(parsed, args);
    server.shutdown().await;
}

#[tokio::test]
async fn refusal_and_max_tokens() {
    let (server, refusal, truncated) = refusal_then_truncation(Kind::Chat).await;
    assert_eq!(refusal["choices"][0]["message"]["refusal"], "No.");
    assert_eq!(refusal["choices"][0]["message"]["content"], Value::Null);
    assert_eq!(truncated["choices"][0]["finish_reason"], "length");
    assert_eq!(truncated["choices"][0]["message"]["content"], "{\"a\":");
    server.shutdown().await;
}

#[tokio::test]
async fn any_prefix_is_accepted() {
    let server = start(Kind::Chat, [Reply::text("hi")]).await;
    for prefix in ["/api/paas/v4", "/api/coding/paas/v4", "", "/v1"] {
        let response = send(model_call_at(
            &server,
            &format!("{prefix}/chat/completions"),
        ))
        .await;
        assert_eq!(response.status(), 200, "{prefix}");
    }
    server.shutdown().await;
}

#[tokio::test]
async fn streamed_chunks_end_with_usage_and_done() {
    let server = start(
        Kind::Chat,
        [Reply::text("hello"), Reply::tool_call("f", json!({"a": 1}))],
    )
    .await;
    let events = call_sse(&server, &body(Kind::Chat, true)).await;
    assert!(
        events.iter().all(|e| e.name.is_none()),
        "chat chunks are data-only"
    );
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let chunks = chunk_bodies(&events);
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "hello");
    let last = chunks.last().unwrap();
    assert_eq!(last["object"], "chat.completion.chunk");
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert_eq!(last["usage"]["total_tokens"], 18);

    let events = call_sse(&server, &body(Kind::Chat, true)).await;
    let chunks = chunk_bodies(&events);
    let args: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&args).unwrap(),
        json!({"a": 1})
    );
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn auto_follows_response_format_json_schema() {
    let server = start(Kind::Chat, []).await;
    let mut request = body(Kind::Chat, false);
    request["response_format"] = json!({"type": "json_schema", "json_schema": {"name": "x",
        "schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}});
    let (_, v) = call_json(&server, &request).await;
    let content = v["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(content).unwrap(),
        json!({"ok": true})
    );
    server.shutdown().await;
}
