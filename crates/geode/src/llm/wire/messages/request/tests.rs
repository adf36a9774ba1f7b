use super::*;
use crate::llm::request::{ContentBlock as Block, Message, ToolChoice as Choice, ToolSpec};
use crate::llm::wire::schema_prompt::INSTRUCTION_HEADING;
use crate::schema::ResponseSchema;
use crate::vocab::StructuredOutputMode;
use serde_json::json;

/// `req` built with the plan its adapter would make for it.
fn planned(req: &AdapterCallRequest, default_model: &str, delivery: Delivery) -> Built {
    let plan = crate::llm::registry::SchemaRoute::AnthropicLadder.plan_call(req, None);
    build(req, default_model, delivery, &plan)
}

fn body(req: &AdapterCallRequest) -> Value {
    serde_json::to_value(planned(req, "default-model", Delivery::Whole).body).unwrap()
}

fn with_tools(choice: Choice) -> AdapterCallRequest {
    let mut req = AdapterCallRequest::new("claude-x", vec![Message::user("hi")]);
    req.tools = vec![ToolSpec {
        name: "get_weather".into(),
        description: "Weather for a city".into(),
        input_schema: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    }];
    req.tool_choice = choice;
    req
}

fn schema(v: Value) -> Option<ResponseSchema> {
    Some(ResponseSchema::from_value(v).unwrap())
}

fn recursive() -> Value {
    json!({"title": "Tree", "type": "object",
           "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}})
}

#[test]
fn plain_request_has_model_system_messages_and_no_tool_fields() {
    let mut req = AdapterCallRequest::new("", vec![Message::user("hi")]);
    req.system_prompt = "Be terse.".into();
    req.temperature = Some(0.5);
    req.stop_sequences = vec!["END".into()];
    let v = body(&req);
    assert_eq!(
        v,
        json!({
            "model": "default-model",
            "max_tokens": 8192,
            "system": "Be terse.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "temperature": 0.5,
            "stop_sequences": ["END"],
            "stream": false
        })
    );
}

#[test]
fn stream_delivery_sets_stream_true() {
    let req = AdapterCallRequest::new("m", vec![Message::user("hi")]);
    let built = planned(&req, "d", Delivery::Stream);
    assert!(built.body.stream);
    assert_eq!(built.wire.mode, StructuredOutputMode::None);
    assert!(built.output_tool.is_none());
}

#[test]
fn tool_choice_maps_each_variant() {
    let cases = [
        (Choice::Auto, json!({"type": "auto"})),
        (Choice::Any, json!({"type": "any"})),
        (Choice::None, json!({"type": "none"})),
        (
            Choice::Tool("get_weather".into()),
            json!({"type": "tool", "name": "get_weather"}),
        ),
    ];
    for (c, expected) in cases {
        let v = body(&with_tools(c));
        assert_eq!(v["tool_choice"], expected);
        assert_eq!(v["tools"][0]["name"], "get_weather");
        assert_eq!(
            v["tools"][0]["input_schema"]["properties"]["city"]["type"],
            "string"
        );
    }
}

#[test]
fn no_tool_choice_is_sent_without_tools() {
    for c in [Choice::Any, Choice::None, Choice::Tool("x".into())] {
        let mut req = AdapterCallRequest::new("m", vec![Message::user("hi")]);
        req.tool_choice = c;
        let v = body(&req);
        assert!(
            v.get("tool_choice").is_none() && v.get("tools").is_none(),
            "{v}"
        );
    }
}

#[test]
fn tool_without_input_schema_gets_an_empty_object_schema() {
    let mut req = with_tools(Choice::Auto);
    req.tools[0].input_schema = Value::Null;
    assert_eq!(
        body(&req)["tools"][0]["input_schema"],
        json!({"type": "object", "properties": {}})
    );
}

#[test]
fn thinking_adds_budget_drops_temperature_and_relaxes_forced_choice() {
    let mut req = with_tools(Choice::Any);
    req.thinking_budget = 2000;
    req.temperature = Some(0.2);
    let built = planned(&req, "d", Delivery::Whole);
    let v = serde_json::to_value(&built.body).unwrap();
    assert_eq!(
        v["thinking"],
        json!({"type": "enabled", "budget_tokens": 2000})
    );
    assert_eq!(v["max_tokens"], 8192 + 2000);
    assert!(v.get("temperature").is_none());
    assert_eq!(v["tool_choice"], json!({"type": "auto"}));
    let pointers: Vec<&str> = built
        .wire
        .transforms
        .iter()
        .map(|t| t.pointer.as_str())
        .collect();
    assert_eq!(pointers, ["/tool_choice", "/temperature"]);
}

#[test]
fn conversation_blocks_keep_order_and_drop_empty_text() {
    let mut req = AdapterCallRequest::new("m", vec![Message::user("weather?")]);
    req.messages.push(Message {
        role: Role::Assistant,
        content: vec![
            Block::Text {
                text: String::new(),
            },
            Block::ToolUse {
                id: "toolu_1".into(),
                name: "get_weather".into(),
                input: json!({"city": "Paris"}),
            },
        ],
    });
    req.messages.push(Message {
        role: Role::User,
        content: vec![
            Block::ToolResult {
                tool_use_id: "toolu_1".into(),
                content: "18C".into(),
                is_error: false,
            },
            Block::ToolResult {
                tool_use_id: "toolu_2".into(),
                content: "boom".into(),
                is_error: true,
            },
        ],
    });
    req.messages.push(Message::assistant(""));
    let v = body(&req);
    assert_eq!(
        v["messages"].as_array().unwrap().len(),
        3,
        "empty turn dropped: {v}"
    );
    assert_eq!(
        v["messages"][1]["content"],
        json!([{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}])
    );
    assert_eq!(
        v["messages"][2]["content"],
        json!([
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "boom", "is_error": true}
        ])
    );
}

#[test]
fn fitting_schema_travels_as_output_config_format() {
    let mut req = with_tools(Choice::Auto);
    req.response_schema = schema(json!({"type": "object",
        "properties": {"answer": {"type": "string", "minLength": 2}}, "required": ["answer"]}));
    let built = planned(&req, "d", Delivery::Whole);
    let v = serde_json::to_value(&built.body).unwrap();
    assert_eq!(built.wire.mode, StructuredOutputMode::Strict);
    assert_eq!(
        v["output_config"],
        json!({"format": {"type": "json_schema", "schema": {"type": "object",
            "properties": {"answer": {"type": "string"}}, "required": ["answer"],
            "additionalProperties": false}}})
    );
    assert_eq!(
        v["tools"].as_array().unwrap().len(),
        1,
        "no output tool in strict mode"
    );
    assert_eq!(v["tool_choice"], json!({"type": "auto"}));
    assert!(!built.wire.transforms.is_empty());
    assert!(built.output_tool.is_none());
}

#[test]
fn output_tool_is_forced_when_no_framework_tools() {
    let mut req = AdapterCallRequest::new("m", vec![Message::user("hi")]);
    req.response_schema = schema(recursive());
    let built = planned(&req, "d", Delivery::Whole);
    let v = serde_json::to_value(&built.body).unwrap();
    assert_eq!(built.wire.mode, StructuredOutputMode::Tool);
    assert_eq!(built.output_tool.as_deref(), Some("emit_Tree"));
    assert_eq!(v["tools"][0]["name"], "emit_Tree");
    assert_eq!(v["tools"][0]["input_schema"], recursive());
    assert_eq!(
        v["tool_choice"],
        json!({"type": "tool", "name": "emit_Tree", "disable_parallel_tool_use": true})
    );
    assert!(v.get("output_config").is_none());
}

#[test]
fn output_tool_beside_framework_tools_follows_the_callers_choice() {
    let cases = [
        (Choice::Auto, json!({"type": "any"})),
        (Choice::Any, json!({"type": "any"})),
        (
            Choice::None,
            json!({"type": "tool", "name": "emit_Tree", "disable_parallel_tool_use": true}),
        ),
        (
            Choice::Tool("get_weather".into()),
            json!({"type": "tool", "name": "get_weather"}),
        ),
    ];
    for (c, expected) in cases {
        let mut req = with_tools(c);
        req.response_schema = schema(recursive());
        let v = body(&req);
        assert_eq!(v["tool_choice"], expected);
        let names: Vec<&str> = v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(names, ["get_weather", "emit_Tree"]);
    }
}

#[test]
fn schema_goes_into_the_system_prompt_when_thinking_rules_out_the_tool() {
    let mut req = AdapterCallRequest::new("m", vec![Message::user("hi")]);
    req.system_prompt = "Be terse.".into();
    req.thinking_budget = 1024;
    req.response_schema = schema(recursive());
    let built = planned(&req, "d", Delivery::Whole);
    let v = serde_json::to_value(&built.body).unwrap();
    assert_eq!(built.wire.mode, StructuredOutputMode::Prompt);
    let system = v["system"].as_str().unwrap();
    assert!(
        system.starts_with("Be terse.") && system.contains(INSTRUCTION_HEADING),
        "{system}"
    );
    assert!(system.contains("\"kids\""));
    assert!(v.get("tools").is_none() && v.get("output_config").is_none());
}

#[test]
fn identity_block_goes_first_and_is_not_duplicated() {
    let identity = "You are Claude Code, Anthropic's official CLI for Claude.";
    let mut req = AdapterCallRequest::new("m", vec![Message::user("hi")]);
    req.system_prompt = "Be terse.".into();
    let mut b = planned(&req, "d", Delivery::Whole).body;
    prepend_identity(&mut b, identity);
    prepend_identity(&mut b, identity);
    let v = serde_json::to_value(&b).unwrap();
    assert_eq!(
        v["system"],
        json!([{"type": "text", "text": identity}, {"type": "text", "text": "Be terse."}])
    );
    let mut empty = planned(&AdapterCallRequest::new("m", vec![]), "d", Delivery::Whole).body;
    prepend_identity(&mut empty, identity);
    assert_eq!(
        serde_json::to_value(&empty).unwrap()["system"],
        json!([{"type": "text", "text": identity}])
    );
}
