use super::*;
use crate::llm::request::{Message, ToolChoice as Choice, ToolSpec};
use crate::llm::wire::schema_prompt::INSTRUCTION_HEADING;
use crate::schema::ResponseSchema;

/// `req` built as a GLM row builds it: JSON mode, GLM's tool rules.
fn build(req: &AdapterCallRequest, default_model: &str) -> Result<Built, BuildError> {
    let plan = crate::llm::registry::SchemaRoute::JsonObject.plan_call(req, None);
    build_with(req, default_model, &plan, ChatTools::GLM)
}

fn body(req: &AdapterCallRequest) -> Value {
    serde_json::to_value(build(req, "glm-default").unwrap().body).unwrap()
}

fn with_tools(choice: Choice) -> AdapterCallRequest {
    let mut req = AdapterCallRequest::new("glm-x", vec![Message::user("hi")]);
    req.tools = vec![ToolSpec {
        name: "get_weather".into(),
        description: "Weather".into(),
        input_schema: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    }];
    req.tool_choice = choice;
    req
}

fn decision() -> ResponseSchema {
    ResponseSchema::from_value(json!({"title": "Decision", "type": "object",
        "properties": {"decision": {"type": "string", "enum": ["accept", "reject"]}},
        "required": ["decision"]}))
    .unwrap()
}

#[test]
fn plain_request_shape() {
    let mut req = AdapterCallRequest::new("", vec![Message::user("hi")]);
    req.system_prompt = "Be terse.".into();
    req.temperature = Some(0.3);
    req.stop_sequences = vec!["END".into()];
    assert_eq!(
        body(&req),
        json!({
            "model": "glm-default",
            "messages": [
                {"role": "system", "content": "Be terse."},
                {"role": "user", "content": "hi"}
            ],
            "max_tokens": 8192,
            "temperature": 0.3,
            "stop": ["END"],
            "stream": false
        })
    );
    let built = build(&req, "d").unwrap();
    assert_eq!(built.wire.mode, StructuredOutputMode::None);
    assert!(built.wire.transforms.is_empty());
}

#[test]
fn tools_are_nested_functions_with_auto_choice() {
    let v = body(&with_tools(Choice::Auto));
    assert_eq!(
        v["tools"],
        json!([{"type": "function", "function": {"name": "get_weather", "description": "Weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])
    );
    assert_eq!(v["tool_choice"], "auto");
}

#[test]
fn tool_choice_none_is_never_sent() {
    let built = build(&with_tools(Choice::None), "d").unwrap();
    let v = serde_json::to_value(&built.body).unwrap();
    assert!(v.get("tool_choice").is_none(), "{v}");
    assert!(v.get("tools").is_none(), "tools withheld: {v}");
    assert_eq!(built.wire.transforms[0].pointer, "/tool_choice");
}

#[test]
fn forced_choices_are_relaxed_to_auto_with_a_transform() {
    for c in [Choice::Any, Choice::Tool("get_weather".into())] {
        let built = build(&with_tools(c), "d").unwrap();
        let v = serde_json::to_value(&built.body).unwrap();
        assert_eq!(v["tool_choice"], "auto");
        assert_eq!(v["tools"].as_array().unwrap().len(), 1);
        assert!(built.wire.transforms[0].action.contains("relaxed to auto"));
    }
}

#[test]
fn every_tool_choice_serialises_as_auto_or_nothing() {
    for c in [
        Choice::Auto,
        Choice::Any,
        Choice::None,
        Choice::Tool("x".into()),
    ] {
        for with in [true, false] {
            let mut req = with_tools(c.clone());
            if !with {
                req.tools.clear();
            }
            let v = body(&req);
            match v.get("tool_choice") {
                None => {}
                Some(choice) => assert_eq!(choice, "auto"),
            }
            if !with {
                assert!(v.get("tool_choice").is_none());
            }
        }
    }
}

#[test]
fn schema_sets_json_object_and_goes_into_the_system_prompt() {
    let mut req = AdapterCallRequest::new("m", vec![Message::user("decide")]);
    req.system_prompt = "Be terse.".into();
    req.response_schema = Some(decision());
    let built = build(&req, "d").unwrap();
    let v = serde_json::to_value(&built.body).unwrap();
    assert_eq!(built.wire.mode, StructuredOutputMode::JsonMode);
    assert_eq!(v["response_format"], json!({"type": "json_object"}));
    let system = v["messages"][0]["content"].as_str().unwrap();
    assert_eq!(v["messages"][0]["role"], "system");
    assert!(system.starts_with("Be terse.") && system.contains(INSTRUCTION_HEADING));
    assert!(system.contains("\"accept\""), "{system}");
}

#[test]
fn schema_without_system_prompt_still_gets_a_system_message() {
    let mut req = AdapterCallRequest::new("m", vec![Message::user("decide")]);
    req.response_schema = Some(decision());
    let v = body(&req);
    assert_eq!(v["messages"][0]["role"], "system");
    assert!(
        v["messages"][0]["content"]
            .as_str()
            .unwrap()
            .starts_with(INSTRUCTION_HEADING)
    );
}

#[test]
fn tool_round_trip_history_uses_tool_calls_and_tool_messages() {
    let mut req = AdapterCallRequest::new("m", vec![Message::user("weather?")]);
    req.messages.push(Message {
        role: Role::Assistant,
        content: vec![ContentBlock::ToolUse {
            id: "call_1".into(),
            name: "get_weather".into(),
            input: json!({"city": "Paris"}),
        }],
    });
    req.messages.push(Message {
        role: Role::User,
        content: vec![
            ContentBlock::ToolResult {
                tool_use_id: "call_1".into(),
                content: "18C".into(),
                is_error: false,
            },
            ContentBlock::Text {
                text: "and tomorrow?".into(),
            },
        ],
    });
    req.messages.push(Message {
        role: Role::Assistant,
        content: vec![
            ContentBlock::Text {
                text: "Checking.".into(),
            },
            ContentBlock::ToolUse {
                id: "call_2".into(),
                name: "raw".into(),
                input: json!({"_raw": "{oops"}),
            },
        ],
    });
    let v = body(&req);
    assert_eq!(
        v["messages"],
        json!([
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
            {"role": "user", "content": "and tomorrow?"},
            {"role": "assistant", "content": "Checking.", "tool_calls": [{"id": "call_2", "type": "function",
                "function": {"name": "raw", "arguments": "{oops"}}]}
        ])
    );
}

#[test]
fn more_than_128_tools_is_an_error() {
    let mut req = with_tools(Choice::Auto);
    req.tools = (0..129)
        .map(|i| ToolSpec {
            name: format!("t{i}"),
            description: String::new(),
            input_schema: Value::Null,
        })
        .collect();
    assert_eq!(
        build(&req, "d"),
        Err(BuildError::TooManyTools {
            count: 129,
            limit: 128
        })
    );
    req.tools.truncate(128);
    assert!(build(&req, "d").is_ok());
}

#[test]
fn an_openai_shaped_server_gets_every_tool_choice_as_asked_and_no_tool_limit() {
    let openai = |req: &AdapterCallRequest| {
        let plan = crate::llm::registry::SchemaRoute::JsonObject.plan_call(req, None);
        build_with(req, "m", &plan, ChatTools::OPENAI).unwrap()
    };
    for (choice, sent) in [
        (Choice::Auto, json!("auto")),
        (Choice::None, json!("none")),
        (Choice::Any, json!("required")),
        (
            Choice::Tool("get_weather".into()),
            json!({"type": "function", "function": {"name": "get_weather"}}),
        ),
    ] {
        let built = openai(&with_tools(choice));
        let v = serde_json::to_value(&built.body).unwrap();
        assert_eq!(v["tool_choice"], sent);
        assert_eq!(v["tools"].as_array().unwrap().len(), 1);
        assert!(built.wire.transforms.is_empty(), "nothing relaxed");
    }
    let mut many = with_tools(Choice::Auto);
    many.tools = (0..200)
        .map(|i| ToolSpec {
            name: format!("t{i}"),
            description: String::new(),
            input_schema: json!({"type": "object"}),
        })
        .collect();
    assert_eq!(openai(&many).body.tools.len(), 200);
}

#[test]
fn each_placement_puts_the_schema_where_its_mode_says() {
    let mut req = AdapterCallRequest::new("m", vec![Message::user("hi")]);
    req.system_prompt = "Be terse.".into();
    req.response_schema = Some(decision());
    for (mode, format, in_prompt) in [
        (StructuredOutputMode::Strict, Some("json_schema"), false),
        (StructuredOutputMode::Hint, Some("json_schema"), true),
        (StructuredOutputMode::JsonMode, Some("json_object"), true),
        (StructuredOutputMode::Prompt, None, true),
    ] {
        let plan = WirePlan::identity(mode, req.response_schema.as_ref());
        let built = build_with(&req, "m", &plan, ChatTools::OPENAI).unwrap();
        let v = serde_json::to_value(&built.body).unwrap();
        assert_eq!(built.wire.mode, mode);
        assert_eq!(v["response_format"]["type"].as_str(), format, "{mode}");
        let system = v["messages"][0]["content"].as_str().unwrap();
        assert_eq!(
            system.contains(INSTRUCTION_HEADING),
            in_prompt,
            "{mode}: {system}"
        );
    }
}
