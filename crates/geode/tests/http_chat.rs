//! The two GLM adapters over HTTP against the `geode-fakes` Chat server on 127.0.0.1.
//!
//! Every test is bounded by [`bounded`]; every recorded request is checked by
//! [`assert_invariants`] (bearer auth, never `tool_choice` other than `auto`, no secret in the
//! recording).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap (HELPERS.md)

use geode::ledger::StructuredOutputMode;
use geode::llm::adapter::{AdapterError, CallCx, RetryClass};
use geode::llm::request::{
    AdapterCallRequest, ContentBlock, Message, Role, StopReason, ToolChoice, ToolSpec,
};
use geode::llm::wire::schema_prompt::INSTRUCTION_HEADING;
use geode_fakes::{RecordedRequest, Reply, Script};
use serde_json::{Value, json};
use std::time::Duration;
use support::http::{
    Rig, base_url, build_from_process_env, run_child, short_deadline, test_secret,
};
use support::{assert_kind, bounded, expect_err};

mod support;

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
    req.tools = vec![ToolSpec {
        name: "get_weather".into(),
        description: "Weather for a city".into(),
        input_schema: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    }];
    req.tool_choice = choice;
    req
}

/// What every GLM request must look like, whichever adapter sent it.
fn assert_invariants(seen: &[RecordedRequest], route: &str) {
    assert!(!seen.is_empty(), "no request reached the fake");
    for r in seen {
        assert_eq!((r.method.as_str(), r.route()), ("POST", route));
        assert_eq!(r.header("authorization"), Some("Bearer ***"));
        assert_eq!(r.header("x-api-key"), None);
        match r.body.get("tool_choice") {
            None => {}
            Some(choice) => {
                assert_eq!(choice, "auto", "GLM accepts only auto");
                assert!(r.body["tools"].as_array().is_some_and(|t| !t.is_empty()));
            }
        }
        assert_ne!(r.body["stream"], true);
        let dump = serde_json::to_string(r).unwrap();
        for adapter in ["glm-payg", "glm-coding-plan"] {
            assert!(
                !dump.contains(&test_secret(adapter)),
                "the key reached the recording"
            );
        }
    }
}

const PAYG_ROUTE: &str = "/api/paas/v4/chat/completions";

#[tokio::test]
async fn schema_sets_json_object_and_travels_in_the_system_prompt() {
    bounded(async {
        let answer = json!({"decision": "accept", "reason": "fine"});
        let rig = payg(Script::always(Reply::Json(answer.clone()))).await;
        let resp = rig
            .adapter
            .call(with_schema(), &CallCx::new())
            .await
            .unwrap();
        let seen = rig.server.requests();
        assert_invariants(&seen, PAYG_ROUTE);
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
        assert_eq!(resp.stop_reason, StopReason::EndTurn);
        assert_eq!((resp.usage.input_tokens, resp.usage.output_tokens), (11, 7));
    })
    .await
}

#[tokio::test]
async fn no_schema_sends_no_response_format() {
    bounded(async {
        let rig = payg(Script::always(Reply::text("hi"))).await;
        let resp = rig.adapter.call(request(), &CallCx::new()).await.unwrap();
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
            rig.adapter
                .call(with_tools(choice), &CallCx::new())
                .await
                .unwrap();
        }
        let seen = rig.server.requests();
        assert_invariants(&seen, PAYG_ROUTE);
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
        let first = rig
            .adapter
            .call(with_tools(ToolChoice::Auto), &CallCx::new())
            .await
            .unwrap();
        assert_eq!(first.stop_reason, StopReason::ToolUse);
        assert_eq!(first.tool_uses.len(), 1);
        assert_eq!(
            (first.tool_uses[0].name.as_str(), &first.tool_uses[0].input),
            ("get_weather", &json!({"city": "Paris"}))
        );
        let call = &first.tool_uses[0];
        let mut next = with_tools(ToolChoice::Auto);
        next.messages.push(Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolUse {
                id: call.id.clone(),
                name: call.name.clone(),
                input: call.input.clone(),
            }],
        });
        next.messages.push(Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: call.id.clone(),
                content: "18C".into(),
                is_error: false,
            }],
        });
        assert_eq!(
            rig.adapter.call(next, &CallCx::new()).await.unwrap().text,
            "18C"
        );
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
            rig.adapter
                .call(with_schema(), &CallCx::new())
                .await
                .unwrap()
                .wire
                .mode,
            StructuredOutputMode::JsonMode
        );
        assert_invariants(
            &rig.server.requests(),
            "/api/coding/paas/v4/chat/completions",
        );
    })
    .await
}

#[tokio::test]
async fn a_schema_rejection_is_typed_and_not_retried() {
    bounded(async {
        let rig = payg(Script::always(Reply::SchemaRejection(
            "response_format type json_schema is not supported".into(),
        )))
        .await;
        let err = expect_err(rig.adapter.call(with_schema(), &CallCx::new()).await);
        assert!(
            matches!(err, AdapterError::SchemaRejected { status: 400, .. }),
            "{err}"
        );
        assert_eq!(err.retry_class(), RetryClass::Fatal);
        assert_eq!(rig.server.requests().len(), 1);
    })
    .await
}

#[tokio::test]
async fn rate_limits_server_errors_and_resets_are_retried() {
    bounded(async {
        let rig = payg(Script::always(Reply::rate_limited(4))).await;
        match expect_err(rig.adapter.call(request(), &short_deadline()).await) {
            AdapterError::RateLimited { retry_after, .. } => {
                assert_eq!(retry_after, Some(Duration::from_secs(4)))
            }
            other => panic!("expected RateLimited, got {other}"),
        }
        assert_eq!(
            rig.server.requests().len(),
            1,
            "a wait past the deadline is not taken"
        );
        let rig = payg(Script::new([
            Reply::rate_limited(1),
            Reply::status(500),
            Reply::ConnectionReset,
            Reply::text("ok"),
        ]))
        .await;
        assert_eq!(
            rig.adapter
                .call(request(), &CallCx::new())
                .await
                .unwrap()
                .text,
            "ok"
        );
        assert_eq!(rig.server.requests().len(), 4);
        assert_invariants(&rig.server.requests(), PAYG_ROUTE);
        let rig = payg(Script::always(Reply::status(503))).await;
        let err = expect_err(rig.adapter.call(request(), &CallCx::new()).await);
        assert!(
            matches!(err, AdapterError::Server { status: 503, .. }),
            "{err}"
        );
        assert_eq!(rig.server.requests().len(), 4, "one try and three retries");
    })
    .await
}

#[tokio::test]
async fn a_body_cut_mid_json_is_a_retryable_failure() {
    bounded(async {
        let rig = payg(Script::always(Reply::StreamCut)).await;
        let err = expect_err(rig.adapter.call(request(), &CallCx::new()).await);
        assert_eq!(err.retry_class(), RetryClass::Retryable, "{err}");
        let rig = payg(Script::new([Reply::StreamCut, Reply::text("whole")])).await;
        assert_eq!(
            rig.adapter
                .call(request(), &CallCx::new())
                .await
                .unwrap()
                .text,
            "whole"
        );
    })
    .await
}

#[tokio::test]
async fn refusal_and_length_keep_their_stop_reasons() {
    bounded(async {
        let rig = payg(Script::new([
            Reply::Refusal("No.".into()),
            Reply::MaxTokens("{\"decision\":".into()),
        ]))
        .await;
        let refused = rig
            .adapter
            .call(with_schema(), &CallCx::new())
            .await
            .unwrap();
        assert_eq!(
            (refused.stop_reason, refused.text.as_str()),
            (StopReason::Refusal, "No.")
        );
        let cut = rig
            .adapter
            .call(with_schema(), &CallCx::new())
            .await
            .unwrap();
        assert_eq!(
            (cut.stop_reason, cut.text.as_str()),
            (StopReason::MaxTokens, "{\"decision\":")
        );
    })
    .await
}
#[tokio::test]
async fn from_env_reads_keys_and_base_urls_and_names_what_is_missing() {
    bounded(async {
        assert!(run_child("child_from_env", &[("GEODE_TEST_CHILD", "missing".into())]).await);
        let rig = payg(Script::always(Reply::text("from env"))).await;
        let origin = rig.server.base_url();
        let vars = [
            ("GEODE_TEST_CHILD", "configured".to_owned()),
            ("GEODE_GLM_BASE_URL", base_url("glm-payg", &origin)),
            (
                "GEODE_GLM_CODING_BASE_URL",
                base_url("glm-coding-plan", &origin),
            ),
            ("ZAI_API_KEY", test_secret("glm-payg")),
            ("ZAI_CODING_PLAN_KEY", test_secret("glm-coding-plan")),
        ];
        assert!(run_child("child_from_env", &vars).await);
        let seen = rig.server.requests();
        assert_eq!(seen.len(), 2);
        assert_invariants(&seen[..1], PAYG_ROUTE);
        assert_invariants(&seen[1..], "/api/coding/paas/v4/chat/completions");
    })
    .await
}

/// Run only by [`from_env_reads_keys_and_base_urls_and_names_what_is_missing`], which sets its
/// environment (tests cannot set variables in-process: `set_var` is unsafe).
#[tokio::test]
#[ignore = "run by from_env_reads_keys_and_base_urls_and_names_what_is_missing in a child process"]
async fn child_from_env() {
    let mode = std::env::var("GEODE_TEST_CHILD").expect("run by the parent test only");
    match mode.as_str() {
        "missing" => {
            for (adapter, var) in [
                ("glm-payg", "ZAI_API_KEY"),
                ("glm-coding-plan", "ZAI_CODING_PLAN_KEY"),
            ] {
                let err = expect_err(build_from_process_env(adapter));
                assert_kind(&err, "config");
                assert!(err.to_string().contains(var), "{err}");
            }
        }
        "configured" => {
            for adapter in ["glm-payg", "glm-coding-plan"] {
                let built = build_from_process_env(adapter).unwrap();
                assert_eq!(
                    built.call(request(), &CallCx::new()).await.unwrap().text,
                    "from env"
                );
            }
        }
        other => panic!("unknown child mode {other}"),
    }
}
