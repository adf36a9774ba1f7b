//! The Responses fake over the wire: JSON and SSE answers in the shapes of
//! docs/wire.md#openai-responses-api.
use crate::common;

use common::*;
use geode_fakes::{Kind, Reply};
use serde_json::{Value, json};

#[tokio::test]
async fn text_answer_is_a_completed_response_with_usage() {
    let (server, status, v) = answer_json(Kind::Responses, Reply::text("hello there")).await;
    assert_eq!(status, 200);
    assert_eq!(v["object"], "response");
    assert_eq!(v["status"], "completed");
    assert_eq!(v["model"], "gpt-test");
    assert_eq!(v["output"][0]["type"], "message");
    assert_eq!(v["output"][0]["role"], "assistant");
    assert_eq!(v["output"][0]["content"][0]["type"], "output_text");
    assert_eq!(v["output"][0]["content"][0]["text"], "hello there");
    assert_default_usage(&v["usage"], "input_tokens", "output_tokens");
    server.shutdown().await;
}

#[tokio::test]
async fn streamed_text_follows_the_event_order_codex_accepts() {
    let (server, events) =
        answer_sse(Kind::Responses, Reply::Json(json!({"answer": "é", "n": 1}))).await;
    assert_eq!(names(&events), geode_fakes::responses::TEXT_EVENT_ORDER);
    let mut text = String::new();
    for (i, event) in events.iter().enumerate() {
        let data = event.json();
        assert_eq!(
            data["type"],
            json!(event.name),
            "type mirrors the event name"
        );
        assert_eq!(data["sequence_number"], json!(i));
        if event.name.as_deref() == Some("response.output_text.delta") {
            text.push_str(data["delta"].as_str().unwrap());
        }
    }
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"answer": "é", "n": 1})
    );
    let done = events.last().unwrap().json();
    assert_eq!(done["response"]["status"], "completed");
    assert_eq!(done["response"]["usage"]["total_tokens"], 18);
    assert_eq!(done["response"]["output"][0]["content"][0]["text"], text);
    server.shutdown().await;
}

#[tokio::test]
async fn tool_call_is_a_function_call_item_with_string_arguments() {
    let args = json!({"cmd": "echo hi"});
    let (server, _, v) = answer_json(
        Kind::Responses,
        Reply::tool_call("exec_command", args.clone()),
    )
    .await;
    let item = &v["output"][0];
    assert_eq!(item["type"], "function_call");
    assert_eq!(item["name"], "exec_command");
    assert!(item["call_id"].as_str().unwrap().starts_with("call_"));
    let parsed: Value = serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(parsed, args);

    let events = call_sse(&server, &body(Kind::Responses, true)).await;
    let deltas: String = events
        .iter()
        .filter(|e| e.name.as_deref() == Some("response.function_call_arguments.delta"))
        .map(|e| e.json()["delta"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(serde_json::from_str::<Value>(&deltas).unwrap(), args);
    assert!(names(&events).contains(&"response.function_call_arguments.done".to_owned()));
    assert_eq!(names(&events).last().unwrap(), "response.completed");
    server.shutdown().await;
}

/// A refusal is a `refusal` content part; an answer cut at the token limit is `incomplete` with
/// its reason, in JSON and streamed (the same shared fixture as the Messages and Chat fakes).
#[tokio::test]
async fn refusal_is_a_refusal_part_and_max_tokens_is_incomplete_with_reason() {
    let (server, refusal, truncated) = refusal_then_truncation(Kind::Responses).await;
    assert_eq!(refusal["status"], "completed");
    assert_eq!(refusal["output"][0]["content"][0]["type"], "refusal");
    assert_eq!(refusal["output"][0]["content"][0]["refusal"], "No.");
    assert_eq!(truncated["status"], "incomplete");
    assert_eq!(
        truncated["incomplete_details"]["reason"],
        "max_output_tokens"
    );
    assert_eq!(truncated["output"][0]["status"], "incomplete");
    assert!(truncated["usage"].is_object());
    // The script repeats its last reply: the stream is cut at the token limit too.
    let events = names(&call_sse(&server, &body(Kind::Responses, true)).await);
    assert_eq!(events.last().unwrap(), "response.incomplete");
    assert!(!events.contains(&"response.completed".to_owned()));
    server.shutdown().await;
    let (server, events) = answer_sse(Kind::Responses, Reply::Refusal("No.".into())).await;
    assert!(names(&events).contains(&"response.refusal.done".to_owned()));
    server.shutdown().await;
}

#[tokio::test]
async fn auto_answers_with_an_instance_of_the_requested_schema() {
    let server = start_auto(Kind::Responses).await;
    let mut request = body(Kind::Responses, false);
    request["text"] = json!({"format": {"type": "json_schema", "name": "x", "strict": true,
        "schema": {"type": "object", "properties": {"answer": {"type": "string"},
                   "tags": {"type": "array", "items": {"type": "string"}}},
                   "required": ["answer", "tags"], "additionalProperties": false}}});
    let (_, v) = call_json(&server, &request).await;
    let text = v["output"][0]["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({"answer": "fake", "tags": ["fake"]})
    );
    server.shutdown().await;
}

#[tokio::test]
async fn bare_responses_path_and_models_list_are_served() {
    let server = start(Kind::Responses, [Reply::text("ok")]).await;
    let response = send(model_call_at(&server, "/responses")).await;
    assert_eq!(response.status(), 200);
    let v = json_of(response).await;
    assert_eq!(v["output"][0]["content"][0]["text"], "ok");

    let models = send(client().get(format!("{}/v1/models", server.base_url()))).await;
    assert_eq!(models.status(), 200);
    let missing = send(client().get(format!("{}/v1/nope", server.base_url()))).await;
    assert_eq!(missing.status(), 404);
    let v = json_of(missing).await;
    assert_eq!(v["error"]["type"], "invalid_request_error");
    server.shutdown().await;
}
