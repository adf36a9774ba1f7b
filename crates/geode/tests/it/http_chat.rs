//! The Chat Completions wire of the two GLM adapters against the `geode-fakes` Chat server on
//! 127.0.0.1: JSON mode with the schema in the system prompt, `tool_choice` (auto only), tool
//! calls and their replay, the coding plan's own base. What every HTTP adapter does alike
//! (retries, faults, stop reasons, configuration) is the table in `http_adapters.rs`.
//!
//! Every test is bounded by [`bounded`]; every recorded request is checked by
//! [`assert_wire_invariants`] (bearer auth, never `tool_choice` other than `auto`, no secret
//! in the recording).

use geode::llm::request::{AdapterCallRequest, Message, ToolChoice};
use geode::llm::wire::schema_prompt::INSTRUCTION_HEADING;
use geode::vocab::{StopReason, StructuredOutputMode};
use geode_fakes::{Reply, Script};
use serde_json::{Value, json};
use support::http::{Rig, assert_ended_with_fake_usage, assert_wire_invariants};
use support::{bounded, weather_tool};

use geode_testkit as support;

async fn payg(script: Script) -> Rig {
    Rig::start("glm-payg", script).await
}

fn request() -> AdapterCallRequest {
    AdapterCallRequest::new("glm-test", vec![Message::user("decide")])
}

fn with_schema() -> AdapterCallRequest {
    let mut req = request();
    req.system_prompt = "Be terse.".into();
    req.response_schema = Some(support::decision_schema());
    req
}

fn with_tools(choice: ToolChoice) -> AdapterCallRequest {
    let mut req = request();
    req.tools = vec![weather_tool()];
    req.tool_choice = choice;
    req
}

#[tokio::test]
async fn schema_sets_json_object_and_travels_in_the_system_prompt() {
    bounded(async {
        let answer = json!({"decision": "accept", "reason": "fine"});
        let rig = payg(Script::always(Reply::Json(answer.clone()))).await;
        let resp = rig.call(with_schema()).await.unwrap();
        let seen = rig.server.requests();
        assert_wire_invariants("glm-payg", &seen);
        let body = &seen[0].body;
        assert_eq!(body["model"], "glm-test");
        assert_eq!(body["response_format"], json!({"type": "json_object"}));
        assert_eq!(body["messages"][0]["role"], "system");
        let system = body["messages"][0]["content"].as_str().unwrap();
        assert!(system.starts_with("Be terse.") && system.contains(INSTRUCTION_HEADING));
        assert!(
            system.contains("\"minLength\": 3"),
            "the original schema travels whole: {system}"
        );
        assert_eq!(
            body["messages"][1],
            json!({"role": "user", "content": "decide"})
        );
        assert_eq!(resp.wire.mode, StructuredOutputMode::JsonMode);
        assert_eq!(serde_json::from_str::<Value>(&resp.text).unwrap(), answer);
        assert_ended_with_fake_usage(&resp);
    })
    .await
}

#[tokio::test]
async fn no_schema_sends_no_response_format() {
    bounded(async {
        let rig = payg(Script::always(Reply::text("hi"))).await;
        let resp = rig.call(request()).await.unwrap();
        let body = &rig.server.requests()[0].body;
        assert!(body.get("response_format").is_none());
        assert_eq!(resp.wire.mode, StructuredOutputMode::None);
        assert_eq!(resp.text, "hi");
    })
    .await
}

#[tokio::test]
async fn tool_choice_none_is_never_sent_to_glm() {
    bounded(async {
        let rig = payg(Script::always(Reply::text("ok"))).await;
        for choice in [
            ToolChoice::Auto,
            ToolChoice::Any,
            ToolChoice::None,
            ToolChoice::Tool("get_weather".into()),
        ] {
            rig.call(with_tools(choice)).await
                .unwrap();
        }
        let seen = rig.server.requests();
        assert_wire_invariants("glm-payg", &seen);
        let choices: Vec<Option<&Value>> = seen.iter().map(|r| r.body.get("tool_choice")).collect();
        assert_eq!(
            choices,
            [Some(&json!("auto")), Some(&json!("auto")), None, Some(&json!("auto"))]
        );
        assert!(seen[2].body.get("tools").is_none(), "none withholds the tools");
        assert_eq!(
            seen[0].body["tools"][0],
            json!({"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}})
        );
    })
    .await
}

#[tokio::test]
async fn tool_calls_come_back_parsed_and_replay_as_tool_messages() {
    bounded(async {
        let rig = payg(Script::new([
            Reply::tool_call("get_weather", json!({"city": "Paris"})),
            Reply::text("18C"),
        ]))
        .await;
        let first = rig.call(with_tools(ToolChoice::Auto)).await.unwrap();
        assert_eq!(first.stop_reason, StopReason::ToolUse);
        assert_eq!(first.tool_uses.len(), 1);
        assert_eq!(
            (first.tool_uses[0].name.as_str(), &first.tool_uses[0].input),
            ("get_weather", &json!({"city": "Paris"}))
        );
        let call = &first.tool_uses[0];
        let mut next = with_tools(ToolChoice::Auto);
        next.messages.push(Message::tool_call(
            call.id.clone(),
            call.name.clone(),
            call.input.clone(),
        ));
        next.messages
            .push(Message::tool_result(call.id.clone(), "18C", false));
        assert_eq!(rig.call(next).await.unwrap().text, "18C");
        let body = &rig.server.requests()[1].body;
        assert_eq!(
            body["messages"][1]["tool_calls"][0]["function"]["arguments"],
            "{\"city\":\"Paris\"}"
        );
        assert_eq!(
            body["messages"][2],
            json!({"role": "tool", "tool_call_id": call.id, "content": "18C"})
        );
    })
    .await
}

#[tokio::test]
async fn coding_plan_posts_to_its_own_base_with_its_own_key() {
    bounded(async {
        let rig = Rig::start("glm-coding-plan", Script::always(Reply::text("ok"))).await;
        assert_eq!(
            rig.call(with_schema()).await.unwrap().wire.mode,
            StructuredOutputMode::JsonMode
        );
        assert_wire_invariants("glm-coding-plan", &rig.server.requests());
    })
    .await
}
