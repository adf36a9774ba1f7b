//! The two GLM adapters over HTTP against the `geode-fakes` Chat server on 127.0.0.1.
//!
//! Every test is bounded by [`bounded`]; every recorded request is checked by
//! [`assert_invariants`] (bearer auth, never `tool_choice` other than `auto`, no secret in the
//! recording).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap (HELPERS.md)

use geode::ledger::StructuredOutputMode;
use geode::llm::adapter::{Adapter, AdapterError, CallCx, RetryClass};
use geode::llm::adapters::glm_coding_plan::GlmCodingPlan;
use geode::llm::adapters::glm_payg::GlmPayg;
use geode::llm::credentials::Secret;
use geode::llm::http::{HttpClient, HttpConfig, RetryPolicy};
use geode::llm::request::{
    AdapterCallRequest, ContentBlock, Message, Role, StopReason, ToolChoice, ToolSpec,
};
use geode::llm::wire::schema_prompt::INSTRUCTION_HEADING;
use geode_fakes::{FakeServer, Kind, RecordedRequest, Reply, Script};
use serde_json::{Value, json};
use std::time::Duration;
use support::bounded;

mod support;

const KEY: &str = "zai-test-key-never-shown.abc123";

fn http(max_retries: u32) -> HttpClient {
    HttpClient::new(HttpConfig {
        read_timeout: Duration::from_secs(5),
        retry: RetryPolicy {
            max_retries,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(200),
        },
        ..HttpConfig::default()
    })
    .unwrap()
}

async fn serve(script: Script) -> FakeServer {
    FakeServer::start(Kind::Chat, script).await.unwrap()
}

fn payg(server: &FakeServer, retries: u32) -> GlmPayg {
    GlmPayg::new(
        format!("{}/api/paas/v4", server.base_url()),
        Secret::new(KEY),
    )
    .unwrap()
    .with_http(http(retries))
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
        assert!(!dump.contains(KEY), "the key reached the recording");
    }
}

const PAYG_ROUTE: &str = "/api/paas/v4/chat/completions";

fn error_of<T>(r: Result<T, AdapterError>) -> AdapterError {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

#[tokio::test]
async fn schema_sets_json_object_and_travels_in_the_system_prompt() {
    bounded(async {
        let answer = json!({"decision": "accept", "reason": "fine"});
        let server = serve(Script::always(Reply::Json(answer.clone()))).await;
        let resp = payg(&server, 0)
            .call(with_schema(), &CallCx::new())
            .await
            .unwrap();
        let seen = server.requests();
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
        let server = serve(Script::always(Reply::text("hi"))).await;
        let resp = payg(&server, 0)
            .call(request(), &CallCx::new())
            .await
            .unwrap();
        let body = &server.requests()[0].body;
        assert!(body.get("response_format").is_none());
        assert_eq!(resp.wire.mode, StructuredOutputMode::None);
        assert_eq!(resp.text, "hi");
    })
    .await
}

#[tokio::test]
async fn tool_choice_none_is_never_sent_to_glm() {
    bounded(async {
        let server = serve(Script::always(Reply::text("ok"))).await;
        let adapter = payg(&server, 0);
        for choice in [ToolChoice::Auto, ToolChoice::Any, ToolChoice::None, ToolChoice::Tool("get_weather".into())] {
            adapter.call(with_tools(choice), &CallCx::new()).await.unwrap();
        }
        let seen = server.requests();
        assert_invariants(&seen, PAYG_ROUTE);
        let choices: Vec<Option<&Value>> = seen.iter().map(|r| r.body.get("tool_choice")).collect();
        assert_eq!(choices, [Some(&json!("auto")), Some(&json!("auto")), None, Some(&json!("auto"))]);
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
        let server = serve(Script::new([
            Reply::tool_call("get_weather", json!({"city": "Paris"})),
            Reply::text("18C"),
        ]))
        .await;
        let adapter = payg(&server, 0);
        let first = adapter
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
            adapter.call(next, &CallCx::new()).await.unwrap().text,
            "18C"
        );
        let body = &server.requests()[1].body;
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
        let server = serve(Script::always(Reply::text("ok"))).await;
        let adapter = GlmCodingPlan::new(
            format!("{}/api/coding/paas/v4/", server.base_url()),
            Secret::new(KEY),
        )
        .unwrap()
        .with_http(http(0));
        assert_eq!(
            adapter
                .call(with_schema(), &CallCx::new())
                .await
                .unwrap()
                .wire
                .mode,
            StructuredOutputMode::JsonMode
        );
        assert_invariants(&server.requests(), "/api/coding/paas/v4/chat/completions");
    })
    .await
}

#[tokio::test]
async fn a_schema_rejection_is_typed_and_not_retried() {
    bounded(async {
        let server = serve(Script::always(Reply::SchemaRejection(
            "response_format type json_schema is not supported".into(),
        )))
        .await;
        let err = error_of(payg(&server, 3).call(with_schema(), &CallCx::new()).await);
        assert!(
            matches!(err, AdapterError::SchemaRejected { status: 400, .. }),
            "{err}"
        );
        assert_eq!(err.retry_class(), RetryClass::Fatal);
        assert_eq!(server.requests().len(), 1);
    })
    .await
}

#[tokio::test]
async fn rate_limits_server_errors_and_resets_are_retried() {
    bounded(async {
        let server = serve(Script::always(Reply::rate_limited(4))).await;
        match error_of(payg(&server, 0).call(request(), &CallCx::new()).await) {
            AdapterError::RateLimited { retry_after, .. } => {
                assert_eq!(retry_after, Some(Duration::from_secs(4)))
            }
            other => panic!("expected RateLimited, got {other}"),
        }
        let server = serve(Script::new([
            Reply::rate_limited(1),
            Reply::status(500),
            Reply::ConnectionReset,
            Reply::text("ok"),
        ]))
        .await;
        assert_eq!(
            payg(&server, 3)
                .call(request(), &CallCx::new())
                .await
                .unwrap()
                .text,
            "ok"
        );
        assert_eq!(server.requests().len(), 4);
        assert_invariants(&server.requests(), PAYG_ROUTE);
        let server = serve(Script::always(Reply::status(503))).await;
        let err = error_of(payg(&server, 1).call(request(), &CallCx::new()).await);
        assert!(
            matches!(err, AdapterError::Server { status: 503, .. }),
            "{err}"
        );
        assert_eq!(server.requests().len(), 2);
    })
    .await
}

#[tokio::test]
async fn a_body_cut_mid_json_is_a_retryable_failure() {
    bounded(async {
        let server = serve(Script::always(Reply::StreamCut)).await;
        let err = error_of(payg(&server, 1).call(request(), &CallCx::new()).await);
        assert_eq!(err.retry_class(), RetryClass::Retryable, "{err}");
        let server = serve(Script::new([Reply::StreamCut, Reply::text("whole")])).await;
        assert_eq!(
            payg(&server, 1)
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
        let server = serve(Script::new([
            Reply::Refusal("No.".into()),
            Reply::MaxTokens("{\"decision\":".into()),
        ]))
        .await;
        let adapter = payg(&server, 0);
        let refused = adapter.call(with_schema(), &CallCx::new()).await.unwrap();
        assert_eq!(
            (refused.stop_reason, refused.text.as_str()),
            (StopReason::Refusal, "No.")
        );
        let cut = adapter.call(with_schema(), &CallCx::new()).await.unwrap();
        assert_eq!(
            (cut.stop_reason, cut.text.as_str()),
            (StopReason::MaxTokens, "{\"decision\":")
        );
    })
    .await
}

/// Runs this test binary's ignored [`child_from_env`] test in a child process with exactly `vars`
/// as its environment; returns whether it passed.
async fn run_child(vars: &[(&str, String)]) -> bool {
    let mut cmd = tokio::process::Command::new(std::env::current_exe().unwrap());
    cmd.args(["--ignored", "--exact", "child_from_env", "--test-threads=1"])
        .env_clear()
        .kill_on_drop(true)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("1 passed") || !out.status.success(),
        "child did not run: {text}"
    );
    if !out.status.success() {
        eprintln!("{text}\n{}", String::from_utf8_lossy(&out.stderr));
    }
    out.status.success()
}

#[tokio::test]
async fn from_env_reads_keys_and_base_urls_and_names_what_is_missing() {
    bounded(async {
        assert!(run_child(&[("GEODE_TEST_CHILD", "missing".into())]).await);
        let server = serve(Script::always(Reply::text("from env"))).await;
        let vars = [
            ("GEODE_TEST_CHILD", "configured".to_owned()),
            (
                "GEODE_GLM_BASE_URL",
                format!("{}/api/paas/v4", server.base_url()),
            ),
            (
                "GEODE_GLM_CODING_BASE_URL",
                format!("{}/api/coding/paas/v4", server.base_url()),
            ),
            ("ZAI_API_KEY", KEY.to_owned()),
            ("ZAI_CODING_PLAN_KEY", KEY.to_owned()),
        ];
        assert!(run_child(&vars).await);
        let seen = server.requests();
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
            let err = GlmPayg::from_env().unwrap_err();
            assert!(
                err.kind() == geode::vocab::ErrorKind::Config
                    && err.to_string().contains("ZAI_API_KEY"),
                "{err}"
            );
            let err = GlmCodingPlan::from_env().unwrap_err();
            let text = err.to_string();
            assert!(
                err.kind() == geode::vocab::ErrorKind::Config
                    && text.contains("ZAI_CODING_PLAN_KEY"),
                "{text}"
            );
        }
        "configured" => {
            let payg = GlmPayg::from_env().unwrap();
            assert_eq!(
                payg.call(request(), &CallCx::new()).await.unwrap().text,
                "from env"
            );
            let plan = GlmCodingPlan::from_env().unwrap();
            assert_eq!(
                plan.call(request(), &CallCx::new()).await.unwrap().text,
                "from env"
            );
        }
        other => panic!("unknown child mode {other}"),
    }
}
