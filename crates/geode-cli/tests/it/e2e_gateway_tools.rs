//! Client-side tools through `geode gateway` over real HTTP, in front of the Responses fake:
//! the client's tools and the schema travel upstream together, a turn of calls comes back as
//! OpenAI's tool calls (arguments valid against each tool's `parameters`; an invalid call goes
//! back to the model, never to the client), the client's results continue the conversation to a
//! validated answer, streaming writes the calls in both shapes, and a route that takes no tools
//! refuses them instead of dropping them.

use crate::e2e_gateway::{
    Gateway, decision_request, fakes, header, post_text, sandbox, sse_events,
};
use crate::support::{Sandbox, decision_schema, good_answer};
use geode_fakes::{FakeServer, Reply, Script};
use serde_json::{Value, json};

fn weather_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": false
    })
}

fn chat_tools() -> Value {
    json!([{"type": "function", "function": {
        "name": "get_weather", "description": "the weather in a city",
        "parameters": weather_parameters(), "strict": true
    }}])
}

/// The upstream request bodies so far.
fn upstream_bodies(fake: &FakeServer) -> Vec<Value> {
    fake.requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .map(|r| r.body)
        .collect()
}

fn items_of<'v>(body: &'v Value, kind: &str) -> Vec<&'v Value> {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == kind)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_tool_calls_go_to_the_client_and_its_results_continue_to_a_validated_answer() {
    let (openai, glm) = fakes(
        Script::new([
            Reply::tool_call("get_weather", json!({"city": "Oslo"})),
            Reply::Json(good_answer()),
        ]),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let sb = sandbox(&openai, &glm);
    let gw = Gateway::start(&sb, &[]);
    let mut request = decision_request("openai-payg");
    request["tools"] = chat_tools();
    let (status, headers, body) = gw.chat(&request, &[]).await;
    assert_eq!(status, 200, "{body}");
    let choice = &body["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls", "{body}");
    assert_eq!(
        choice["message"]["content"],
        Value::Null,
        "a format request gets no text to parse"
    );
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "get_weather");
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"city": "Oslo"}));
    assert_eq!(header(&headers, "x-geode-validated"), "tool-arguments");
    assert_eq!(body["geode"]["ledger"]["caller_tool_calls"], 1);
    let first = &upstream_bodies(&openai)[0];
    assert_eq!(first["tools"][0]["name"], "get_weather", "{first}");
    assert_eq!(first["text"]["format"]["type"], "json_schema", "{first}");

    let id = call["id"].as_str().unwrap().to_owned();
    let mut next = decision_request("openai-payg");
    next["tools"] = chat_tools();
    let messages = next["messages"].as_array_mut().unwrap();
    messages.push(choice["message"].clone());
    messages.push(json!({"role": "tool", "tool_call_id": id, "content": "{\"sky\": \"clear\"}"}));
    let (status, headers, body) = gw.chat(&next, &[]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    let content: Value =
        serde_json::from_str(body["choices"][0]["message"]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, good_answer());
    assert_eq!(header(&headers, "x-geode-validated"), "true");
    let second = &upstream_bodies(&openai)[1];
    assert_eq!(items_of(second, "function_call")[0]["call_id"], id.as_str());
    let output = items_of(second, "function_call_output")[0];
    assert_eq!(output["call_id"], id.as_str());
    assert!(
        output["output"].as_str().unwrap().contains("clear"),
        "{second}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_call_goes_back_to_the_model_and_the_client_gets_only_the_valid_one() {
    let (openai, glm) = fakes(
        Script::new([
            Reply::tool_call("get_weather", json!({"city": 5})),
            Reply::tool_call("get_weather", json!({"city": "Oslo"})),
        ]),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let sb = sandbox(&openai, &glm);
    let gw = Gateway::start(&sb, &[]);
    let mut request = decision_request("openai-payg");
    request["tools"] = chat_tools();
    let (status, _, body) = gw.chat(&request, &[]).await;
    assert_eq!(status, 200, "{body}");
    let calls = body["choices"][0]["message"]["tool_calls"]
        .as_array()
        .unwrap();
    assert_eq!(calls.len(), 1, "{body}");
    assert_eq!(calls[0]["function"]["arguments"], r#"{"city":"Oslo"}"#);
    let bodies = upstream_bodies(&openai);
    assert_eq!(bodies.len(), 2);
    let feedback = items_of(&bodies[1], "function_call_output")[0]["output"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(feedback.contains("/city"), "{feedback}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_tool_calls_come_back_as_items_streamed_or_not_and_continue() {
    let (openai, glm) = fakes(
        Script::new([
            Reply::tool_call("get_weather", json!({"city": "Oslo"})),
            Reply::tool_call("get_weather", json!({"city": "Oslo"})),
            Reply::Json(good_answer()),
        ]),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let sb = sandbox(&openai, &glm);
    let gw = Gateway::start(&sb, &[]);
    let tools =
        json!([{"type": "function", "name": "get_weather", "parameters": weather_parameters()}]);
    let format = json!({"format": {"type": "json_schema", "name": "decision", "strict": true, "schema": decision_schema()}});
    let request =
        json!({"model": "openai-payg", "input": "Decide.", "tools": tools, "text": format});
    let (status, _, text) = post_text(&gw.url("/v1/responses"), &request).await;
    assert_eq!(status, 200, "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    let output = body["output"].as_array().unwrap();
    assert_eq!(
        output.len(),
        1,
        "only the call, no message to parse: {body}"
    );
    assert_eq!(output[0]["type"], "function_call");
    assert_eq!(output[0]["name"], "get_weather");
    let call_id = output[0]["call_id"].as_str().unwrap().to_owned();

    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    let (status, _, text) = post_text(&gw.url("/v1/responses"), &streamed).await;
    assert_eq!(status, 200, "{text}");
    let events = crate::e2e_gateway::responses_events(&text);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed"
        ],
        "{text}"
    );
    let done: Value = serde_json::from_str(&events[4].1).unwrap();
    assert_eq!(done["arguments"], r#"{"city":"Oslo"}"#);
    let completed: Value = serde_json::from_str(&events[6].1).unwrap();
    assert_eq!(completed["response"]["output"][0]["type"], "function_call");

    let mut next = request.clone();
    next["input"] = json!([
        {"role": "user", "content": "Decide."},
        output[0],
        {"type": "function_call_output", "call_id": call_id, "output": "{\"sky\": \"clear\"}"}
    ]);
    let (status, _, text) = post_text(&gw.url("/v1/responses"), &next).await;
    assert_eq!(status, 200, "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    let answer: Value =
        serde_json::from_str(body["output"][0]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(answer, good_answer());
    let last = upstream_bodies(&openai).pop().unwrap();
    assert_eq!(
        items_of(&last, "function_call_output")[0]["call_id"],
        call_id.as_str()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_stream_writes_the_calls_before_its_final_chunk() {
    let (openai, glm) = fakes(
        Script::always(Reply::tool_call("get_weather", json!({"city": "Oslo"}))),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let sb = sandbox(&openai, &glm);
    let gw = Gateway::start(&sb, &[]);
    let mut request = decision_request("openai-payg");
    request["tools"] = chat_tools();
    request["stream"] = json!(true);
    let (status, _, text) = post_text(&gw.url("/v1/chat/completions"), &request).await;
    assert_eq!(status, 200, "{text}");
    let chunks: Vec<Value> = sse_events(&text)
        .into_iter()
        .filter(|(_, d)| d != "[DONE]")
        .map(|(_, d)| serde_json::from_str(&d).unwrap())
        .collect();
    let calls: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c.pointer("/choices/0/delta/tool_calls/0"))
        .collect();
    assert_eq!(calls.len(), 1, "{text}");
    assert_eq!(calls[0]["index"], 0);
    assert_eq!(calls[0]["function"]["name"], "get_weather");
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(last["geode"]["event"], "final");
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tool_requests_are_refused_naming_the_field_never_dropped() {
    let (openai, glm) = fakes(
        Script::always(Reply::Json(good_answer())),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let sb = sandbox(&openai, &glm);
    let gw = Gateway::start(&sb, &[]);
    let cases = [
        (
            json!({"tools": [{"type": "web_search"}]}),
            "unsupported_parameter",
            "tools",
        ),
        (
            json!({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": 3}}}]}),
            "invalid_tools",
            "tools",
        ),
        (
            json!({"tools": chat_tools(), "tool_choice": {"type": "function", "function": {"name": "nope"}}}),
            "invalid_request",
            "tool_choice",
        ),
        (
            json!({"messages": [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "c9", "content": "y"}]}),
            "invalid_request",
            "messages",
        ),
    ];
    for (patch, code, param) in cases {
        let mut request = decision_request("openai-payg");
        for (k, v) in patch.as_object().unwrap() {
            request[k] = v.clone();
        }
        let (status, _, body) = gw.chat(&request, &[]).await;
        assert_eq!(status, 400, "{patch}: {body}");
        assert_eq!(body["error"]["code"], code, "{patch}: {body}");
        assert_eq!(body["error"]["param"], param, "{patch}: {body}");
    }
    assert!(upstream_bodies(&openai).is_empty(), "nothing went upstream");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_that_takes_no_tools_refuses_them_before_any_call() {
    let sb = Sandbox::with_local_model();
    let gw = Gateway::start(&sb, &[]);
    let mut request = decision_request("claude-cli");
    request["tools"] = chat_tools();
    let (status, _, body) = gw.chat(&request, &[]).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "unsupported_parameter");
    assert_eq!(body["error"]["param"], "tools");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("claude-cli takes no tools"),
        "{body}"
    );
}
