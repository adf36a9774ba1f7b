//! The Messages wire of the two Anthropic adapters against the `geode-fakes` Messages server on
//! 127.0.0.1: where a schema goes (native `output_config`, a forced output tool, the system
//! prompt), the OAuth identity block and token file, and the 400s that are schema rejections.
//! What every HTTP adapter does alike (retries, faults, stop reasons, configuration) is the
//! table in `http_adapters.rs`.
//!
//! Every test is bounded by [`bounded`]; every recorded request is checked by
//! [`assert_wire_invariants`] (endpoint, version and credential headers, streaming, no secret
//! in the recording).

use geode::llm::call::{AdapterError, CallCx};
use geode::llm::request::{AdapterCallRequest, Message, ToolChoice};
use geode::llm::wire::schema_prompt::INSTRUCTION_HEADING;
use geode::schema::ResponseSchema;
use geode::vocab::{ErrorKind, StopReason, StructuredOutputMode};
use geode_fakes::{FakeServer, Kind, Reply, Script};
use serde_json::{Value, json};
use support::env::MapEnv;
use support::http::{
    Rig, assert_ended_with_fake_usage, assert_wire_invariants, build, test_secret, tool_names,
};
use support::{assert_kind, bounded, expect_err, weather_tool};

use geode_testkit as support;

/// The identity block Anthropic requires first in an OAuth request's system (without it non-Haiku
/// models answer a bare 400; docs/wire.md#anthropic-messages-api).
const IDENTITY: &str = "You are Claude Code, Anthropic's official CLI for Claude.";

async fn payg(script: Script) -> Rig {
    Rig::start("anthropic-payg", script).await
}

fn request() -> AdapterCallRequest {
    AdapterCallRequest::new("claude-test", vec![Message::user("Give the answer")])
}

fn with_schema(schema: Value) -> AdapterCallRequest {
    let mut req = request();
    req.response_schema = Some(ResponseSchema::from_value(schema).unwrap());
    req
}

fn fitting() -> Value {
    json!({"title": "Answer", "type": "object",
           "properties": {"answer": {"type": "string", "maxLength": 40}, "n": {"type": "integer"}},
           "required": ["answer", "n"]})
}

fn recursive() -> Value {
    json!({"title": "Tree", "type": "object",
           "properties": {"name": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#"}}},
           "required": ["name"]})
}

#[tokio::test]
async fn payg_sends_api_key_and_native_output_config_for_a_fitting_schema() {
    bounded(async {
        let rig = payg(Script::always(Reply::Auto)).await;
        let resp = rig.call(with_schema(fitting())).await.unwrap();
        let seen = rig.server.requests();
        assert_wire_invariants("anthropic-payg", &seen);
        let r = &seen[0];
        assert_eq!(r.body["model"], "claude-test");
        let schema = &r.body["output_config"]["format"];
        assert_eq!(schema["type"], "json_schema");
        assert_eq!(schema["schema"]["additionalProperties"], false);
        assert!(
            schema["schema"]["properties"]["answer"]
                .get("maxLength")
                .is_none()
        );
        assert!(r.body.get("tools").is_none());
        assert_eq!(resp.wire.mode, StructuredOutputMode::Strict);
        assert!(
            resp.wire
                .transforms
                .iter()
                .any(|t| t.action.contains("maxLength"))
        );
        let answer: Value = serde_json::from_str(&resp.text).unwrap();
        assert!(
            answer["answer"].is_string() && answer["n"].is_i64(),
            "{answer}"
        );
        assert_ended_with_fake_usage(&resp);
    })
    .await
}

#[tokio::test]
async fn oauth_sends_bearer_beta_and_identity_block_first() {
    bounded(async {
        let rig = Rig::start("anthropic-oauth", Script::always(Reply::text("hi"))).await;
        let mut req = request();
        req.system_prompt = "Be terse.".into();
        let resp = rig.call(req).await.unwrap();
        assert_eq!(resp.text, "hi");
        let seen = rig.server.requests();
        assert_wire_invariants("anthropic-oauth", &seen);
        let r = &seen[0];
        assert_eq!(
            r.body["system"],
            json!([{"type": "text", "text": IDENTITY}, {"type": "text", "text": "Be terse."}])
        );
    })
    .await
}

#[tokio::test]
async fn oauth_token_comes_from_the_claude_credentials_file() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".credentials.json");
        let token = test_secret("anthropic-oauth");
        std::fs::write(
            &path,
            json!({"claudeAiOauth": {"accessToken": token, "expiresAt": u64::MAX / 2}}).to_string(),
        )
        .unwrap();
        let server = FakeServer::start(Kind::Messages, Script::always(Reply::text("ok")))
            .await
            .unwrap();
        // No token variable: the token comes from `CLAUDE_CONFIG_DIR/.credentials.json`.
        let env = MapEnv::new()
            .set("GEODE_ANTHROPIC_BASE_URL", server.base_url())
            .set("CLAUDE_CONFIG_DIR", dir.path().display().to_string());
        let adapter = build("anthropic-oauth", &env).unwrap();
        assert_eq!(
            adapter.call(request(), &CallCx::new()).await.unwrap().text,
            "ok"
        );
        let seen = server.requests();
        assert_wire_invariants("anthropic-oauth", &seen);
        std::fs::remove_file(&path).unwrap();
        let err = expect_err(adapter.call(request(), &CallCx::new()).await);
        assert_kind(&err, ErrorKind::Config);
        assert_eq!(server.requests().len(), 1, "no request without a token");
    })
    .await
}

#[tokio::test]
async fn unfitting_schema_travels_as_a_forced_output_tool_and_comes_back_structured() {
    bounded(async {
        let answer = json!({"name": "root", "kids": [{"name": "leaf"}]});
        let rig = payg(Script::always(Reply::tool_call(
            "emit_Tree",
            answer.clone(),
        )))
        .await;
        let resp = rig.call(with_schema(recursive())).await.unwrap();
        let seen = rig.server.requests();
        assert_wire_invariants("anthropic-payg", &seen);
        let body = &seen[0].body;
        assert_eq!(
            body["tools"],
            json!([{"name": "emit_Tree", "description": body["tools"][0]["description"],
            "input_schema": recursive()}])
        );
        assert_eq!(
            body["tool_choice"],
            json!({"type": "tool", "name": "emit_Tree", "disable_parallel_tool_use": true})
        );
        assert!(body.get("output_config").is_none());
        assert_eq!(resp.wire.mode, StructuredOutputMode::Tool);
        assert_eq!(resp.structured, Some(answer.clone()));
        assert_eq!(serde_json::from_str::<Value>(&resp.text).unwrap(), answer);
        assert!(resp.tool_uses.is_empty());
        assert_eq!(resp.stop_reason, StopReason::EndTurn);
    })
    .await
}

#[tokio::test]
async fn framework_tool_calls_beside_the_output_tool_go_back_to_the_loop() {
    bounded(async {
        let rig = payg(Script::always(Reply::tool_call(
            "get_weather",
            json!({"city": "Paris"}),
        )))
        .await;
        let mut req = with_schema(recursive());
        req.tools = vec![weather_tool()];
        req.tool_choice = ToolChoice::Auto;
        let resp = rig.call(req).await.unwrap();
        let body = &rig.server.requests()[0].body;
        assert_eq!(body["tool_choice"], json!({"type": "any"}));
        assert_eq!(tool_names(body), ["get_weather", "emit_Tree"]);
        assert_eq!(resp.stop_reason, StopReason::ToolUse);
        assert_eq!(resp.tool_uses.len(), 1);
        assert_eq!(resp.tool_uses[0].input, json!({"city": "Paris"}));
        assert!(resp.structured.is_none());
    })
    .await
}

#[tokio::test]
async fn with_thinking_an_unfitting_schema_goes_into_the_system_prompt() {
    bounded(async {
        let rig = payg(Script::always(Reply::text("{\"name\":\"x\"}"))).await;
        let mut req = with_schema(recursive());
        req.thinking_budget = 1024;
        let resp = rig.call(req).await.unwrap();
        let body = &rig.server.requests()[0].body;
        assert!(
            body["system"]
                .as_str()
                .is_some_and(|s| s.contains(INSTRUCTION_HEADING) && s.contains("\"kids\""))
        );
        assert!(body.get("tools").is_none() && body.get("output_config").is_none());
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 1024})
        );
        assert_eq!(resp.wire.mode, StructuredOutputMode::Prompt);
    })
    .await
}

#[tokio::test]
async fn a_400_about_the_output_tool_schema_is_a_schema_rejection() {
    bounded(async {
        let body = json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "tools.0.custom.input_schema: JSON schema is invalid"}});
        let rig = payg(Script::always(Reply::Status {
            status: 400,
            body,
            retry_after: None,
        }))
        .await;
        let err = expect_err(rig.call(with_schema(recursive())).await);
        assert!(
            matches!(err, AdapterError::SchemaRejected { status: 400, .. }),
            "{err}"
        );
        assert_eq!(rig.server.requests().len(), 1);
    })
    .await
}
