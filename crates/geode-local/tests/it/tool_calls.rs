//! The caller's tools on the real model: a call is well-formed whatever the model is (the
//! grammar allows nothing else), names an offered tool, matches its parameters, and continues
//! to an answer once its result is in the conversation.

use crate::common::{engine, serial};
use geode::llm::adapter::Adapter;
use geode::llm::call::{CallCx, TextSink};
use geode::llm::request::{AdapterCallRequest, Message, ToolChoice, ToolSpec};
use geode::schema::ResponseSchema;
use geode::schema::validate::CompiledSchema;
use geode::vocab::StopReason;
use geode_local::LocalAdapter;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "get_weather".to_owned(),
            description: "Today's weather in a city".to_owned(),
            input_schema: json!({
                "type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
                "required": ["city", "unit"],
                "additionalProperties": false,
            }),
        },
        ToolSpec {
            name: "get_time".to_owned(),
            description: "The local time in a time zone".to_owned(),
            input_schema: json!({
                "type": "object",
                "properties": {"zone": {"type": "string"}},
                "required": ["zone"],
            }),
        },
    ]
}

fn weather_request(choice: ToolChoice, seed: u64) -> AdapterCallRequest {
    let mut req = AdapterCallRequest::new(
        "",
        vec![Message::user("What is the weather in Porto today?")],
    );
    req.tools = tools();
    req.tool_choice = choice;
    req.max_tokens = 96;
    req.metadata.insert("seed".to_owned(), json!(seed));
    req
}

#[tokio::test]
async fn a_required_call_is_always_an_offered_tool_with_valid_arguments_and_is_not_streamed() {
    let _serial = serial().await;
    let adapter = LocalAdapter::new(engine());
    let params: Vec<CompiledSchema> = tools()
        .iter()
        .map(|t| {
            CompiledSchema::compile(&ResponseSchema::from_value(t.input_schema.clone()).unwrap())
                .unwrap()
        })
        .collect();
    let choices = [
        ToolChoice::Any,
        ToolChoice::Tool("get_time".to_owned()),
        ToolChoice::Any,
        ToolChoice::Tool("get_weather".to_owned()),
    ];
    for (seed, choice) in choices.into_iter().enumerate() {
        let streamed = Arc::new(Mutex::new(String::new()));
        let mut cx = CallCx::new();
        let sink = streamed.clone();
        cx.on_text = Some(TextSink::new(move |d| sink.lock().unwrap().push_str(d)));
        let resp = adapter
            .call(weather_request(choice.clone(), seed as u64), &cx)
            .await
            .unwrap_or_else(|e| panic!("{choice:?}: {e}"));
        println!("{choice:?}: {:?}", resp.tool_uses);
        assert_eq!(resp.stop_reason, StopReason::ToolUse, "{resp:?}");
        assert_eq!(resp.text, "", "a call is not answer text");
        assert_eq!(*streamed.lock().unwrap(), "", "a call is never streamed");
        let [call] = resp.tool_uses.as_slice() else {
            panic!("one call: {resp:?}");
        };
        let at = tools().iter().position(|t| t.name == call.name).unwrap();
        if let ToolChoice::Tool(name) = &choice {
            assert_eq!(&call.name, name);
        }
        let issues = params[at].validate(&call.input);
        assert!(issues.is_empty(), "{call:?}: {issues:?}");
        assert!(call.id.starts_with("call_"), "{call:?}");
    }
}

#[tokio::test]
async fn a_call_result_in_the_conversation_leads_to_an_answer_in_the_schema() {
    let _serial = serial().await;
    let adapter = LocalAdapter::new(engine());
    let schema = ResponseSchema::from_value(json!({
        "type": "object",
        "properties": {"summary": {"type": "string", "maxLength": 80}},
        "required": ["summary"],
        "additionalProperties": false,
    }))
    .unwrap();
    let first = adapter
        .call(weather_request(ToolChoice::Any, 7), &CallCx::new())
        .await
        .unwrap();
    let call = first.tool_uses[0].clone();
    // With the result in, the last round forbids calls: the answer is the schema's JSON.
    let mut req = weather_request(ToolChoice::None, 7);
    req.response_schema = Some(schema.clone());
    req.messages
        .push(Message::tool_call(&call.id, &call.name, call.input.clone()));
    req.messages.push(Message::tool_result(
        &call.id,
        r#"{"sky": "clear", "temperature": 19}"#,
        false,
    ));
    let resp = adapter.call(req, &CallCx::new()).await.unwrap();
    assert!(resp.tool_uses.is_empty());
    let value: Value = serde_json::from_str(&resp.text).unwrap();
    let issues = CompiledSchema::compile(&schema).unwrap().validate(&value);
    assert!(issues.is_empty(), "{value}: {issues:?}");
    // Offered but not required: a call or an answer in the schema, never anything else.
    let mut req = weather_request(ToolChoice::Auto, 3);
    req.response_schema = Some(schema.clone());
    let resp = adapter.call(req, &CallCx::new()).await.unwrap();
    println!("auto: {:?} {:?}", resp.text, resp.tool_uses);
    if resp.tool_uses.is_empty() {
        let value: Value = serde_json::from_str(&resp.text).unwrap();
        assert!(
            CompiledSchema::compile(&schema)
                .unwrap()
                .validate(&value)
                .is_empty()
        );
    } else {
        assert_eq!(resp.stop_reason, StopReason::ToolUse);
    }
}

#[tokio::test]
async fn tools_beside_a_text_constraint_or_naming_an_unknown_tool_are_refused_before_decoding() {
    let adapter = LocalAdapter::new(engine());
    let mut req = weather_request(ToolChoice::Auto, 1);
    req.text_constraint = Some(geode::schema::TextConstraint::Regex("yes|no".to_owned()));
    let e = adapter.call(req, &CallCx::new()).await.unwrap_err();
    assert!(e.to_string().contains("tools and a regex"), "{e}");
    let req = weather_request(ToolChoice::Tool("launch".to_owned()), 1);
    let e = adapter.call(req, &CallCx::new()).await.unwrap_err();
    assert!(e.to_string().contains("\"launch\""), "{e}");
}
