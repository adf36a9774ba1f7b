//! The two Messages adapters over HTTP against the `geode-fakes` Messages server on 127.0.0.1.
//!
//! Every test is bounded by [`bounded`]; every recorded request is checked by
//! [`assert_invariants`] (endpoint, version header, streaming, no secret in the recording).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap (HELPERS.md)

use geode::ledger::StructuredOutputMode;
use geode::llm::adapter::{Adapter, AdapterError, CallCx, RetryClass};
use geode::llm::adapters::anthropic_oauth::{self, AnthropicOauth};
use geode::llm::adapters::anthropic_payg::AnthropicPayg;
use geode::llm::credentials::Secret;
use geode::llm::http::{HttpClient, HttpConfig, RetryPolicy};
use geode::llm::request::{AdapterCallRequest, Message, StopReason, ToolChoice, ToolSpec};
use geode::llm::wire::schema_prompt::INSTRUCTION_HEADING;
use geode::schema::ResponseSchema;
use geode_fakes::{FakeServer, Kind, RecordedRequest, Reply, Script};
use serde_json::{Value, json};
use std::time::Duration;

const KEY: &str = "sk-ant-api03-test-key-never-shown";
const TOKEN: &str = "sk-ant-oat01-test-token-never-shown";

async fn bounded<T>(fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), fut)
        .await
        .expect("test exceeded its 20 s bound")
}

fn http(max_retries: u32) -> HttpClient {
    HttpClient::new(HttpConfig {
        sse_idle_timeout: Duration::from_secs(3),
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
    FakeServer::start(Kind::Messages, script).await.unwrap()
}

fn payg(server: &FakeServer, retries: u32) -> AnthropicPayg {
    AnthropicPayg::new(server.base_url(), Secret::new(KEY))
        .unwrap()
        .with_http(http(retries))
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

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Weather for a city".into(),
        input_schema: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    }
}

/// What every Messages request must look like, whichever adapter sent it.
fn assert_invariants(seen: &[RecordedRequest]) {
    assert!(!seen.is_empty(), "no request reached the fake");
    for r in seen {
        assert_eq!((r.method.as_str(), r.route()), ("POST", "/v1/messages"));
        assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.body["stream"], true);
        assert!(r.body["max_tokens"].as_u64().is_some_and(|n| n > 0));
        if r.body.get("tool_choice").is_some() {
            assert!(
                r.body["tools"].as_array().is_some_and(|t| !t.is_empty()),
                "tool_choice without tools"
            );
        }
        let dump = serde_json::to_string(r).unwrap();
        assert!(
            !dump.contains(KEY) && !dump.contains(TOKEN),
            "a secret reached the recording"
        );
    }
}

fn kind_of<T>(r: Result<T, AdapterError>) -> AdapterError {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

#[tokio::test]
async fn payg_sends_api_key_and_native_output_config_for_a_fitting_schema() {
    bounded(async {
        let server = serve(Script::always(Reply::Auto)).await;
        let resp = payg(&server, 0)
            .call(with_schema(fitting()), &CallCx::new())
            .await
            .unwrap();
        let seen = server.requests();
        assert_invariants(&seen);
        let r = &seen[0];
        assert_eq!(r.header("x-api-key"), Some("***"));
        assert_eq!(r.header("authorization"), None);
        assert_eq!(r.header("anthropic-beta"), None);
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
        assert_eq!(resp.stop_reason, StopReason::EndTurn);
        assert_eq!((resp.usage.input_tokens, resp.usage.output_tokens), (11, 7));
    })
    .await
}

#[tokio::test]
async fn oauth_sends_bearer_beta_and_identity_block_first() {
    bounded(async {
        let server = serve(Script::always(Reply::text("hi"))).await;
        let adapter = AnthropicOauth::new(server.base_url(), Secret::new(TOKEN)).unwrap().with_http(http(0));
        let mut req = request();
        req.system_prompt = "Be terse.".into();
        let resp = adapter.call(req, &CallCx::new()).await.unwrap();
        assert_eq!(resp.text, "hi");
        let seen = server.requests();
        assert_invariants(&seen);
        let r = &seen[0];
        assert_eq!(r.header("authorization"), Some("Bearer ***"));
        assert_eq!(r.header("x-api-key"), None);
        assert!(r.header("anthropic-beta").is_some_and(|b| b.split(',').any(|x| x.trim() == "oauth-2025-04-20")));
        assert_eq!(
            r.body["system"],
            json!([{"type": "text", "text": anthropic_oauth::IDENTITY}, {"type": "text", "text": "Be terse."}])
        );
    })
    .await
}

#[tokio::test]
async fn oauth_token_comes_from_the_claude_credentials_file() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".credentials.json");
        std::fs::write(
            &path,
            json!({"claudeAiOauth": {"accessToken": TOKEN, "expiresAt": u64::MAX / 2}}).to_string(),
        )
        .unwrap();
        let server = serve(Script::always(Reply::text("ok"))).await;
        let adapter = AnthropicOauth::with_credentials_file(server.base_url(), &path)
            .unwrap()
            .with_http(http(0));
        assert_eq!(
            adapter.call(request(), &CallCx::new()).await.unwrap().text,
            "ok"
        );
        assert_invariants(&server.requests());
        std::fs::remove_file(&path).unwrap();
        let err = kind_of(adapter.call(request(), &CallCx::new()).await);
        assert_eq!(err.kind(), geode::vocab::ErrorKind::Config);
        assert_eq!(server.requests().len(), 1, "no request without a token");
    })
    .await
}

#[tokio::test]
async fn unfitting_schema_travels_as_a_forced_output_tool_and_comes_back_structured() {
    bounded(async {
        let answer = json!({"name": "root", "kids": [{"name": "leaf"}]});
        let server = serve(Script::always(Reply::tool_call(
            "emit_Tree",
            answer.clone(),
        )))
        .await;
        let resp = payg(&server, 0)
            .call(with_schema(recursive()), &CallCx::new())
            .await
            .unwrap();
        let seen = server.requests();
        assert_invariants(&seen);
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
        let server = serve(Script::always(Reply::tool_call(
            "get_weather",
            json!({"city": "Paris"}),
        )))
        .await;
        let mut req = with_schema(recursive());
        req.tools = vec![weather_tool()];
        req.tool_choice = ToolChoice::Auto;
        let resp = payg(&server, 0).call(req, &CallCx::new()).await.unwrap();
        let body = &server.requests()[0].body;
        assert_eq!(body["tool_choice"], json!({"type": "any"}));
        let names: Vec<&str> = body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(names, ["get_weather", "emit_Tree"]);
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
        let server = serve(Script::always(Reply::text("{\"name\":\"x\"}"))).await;
        let mut req = with_schema(recursive());
        req.thinking_budget = 1024;
        let resp = payg(&server, 0).call(req, &CallCx::new()).await.unwrap();
        let body = &server.requests()[0].body;
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
async fn schema_rejection_400_is_typed_and_not_retried() {
    bounded(async {
        let msg = "output_config.format.schema: Too many recursive definitions in schema";
        let server = serve(Script::always(Reply::SchemaRejection(msg.into()))).await;
        let err = kind_of(
            payg(&server, 3)
                .call(with_schema(fitting()), &CallCx::new())
                .await,
        );
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
async fn a_400_about_the_output_tool_schema_is_a_schema_rejection() {
    bounded(async {
        let body = json!({"type": "error", "error": {"type": "invalid_request_error",
            "message": "tools.0.custom.input_schema: JSON schema is invalid"}});
        let server = serve(Script::always(Reply::Status {
            status: 400,
            body,
            retry_after: None,
        }))
        .await;
        let err = kind_of(
            payg(&server, 3)
                .call(with_schema(recursive()), &CallCx::new())
                .await,
        );
        assert!(
            matches!(err, AdapterError::SchemaRejected { status: 400, .. }),
            "{err}"
        );
        assert_eq!(server.requests().len(), 1);
    })
    .await
}

#[tokio::test]
async fn rate_limit_429_reports_retry_after_and_is_retried() {
    bounded(async {
        let server = serve(Script::always(Reply::rate_limited(7))).await;
        let err = kind_of(payg(&server, 0).call(request(), &CallCx::new()).await);
        match err {
            AdapterError::RateLimited { retry_after, .. } => {
                assert_eq!(retry_after, Some(Duration::from_secs(7)))
            }
            other => panic!("expected RateLimited, got {other}"),
        }
        let server = serve(Script::new([Reply::rate_limited(1), Reply::text("after")])).await;
        let resp = payg(&server, 2)
            .call(request(), &CallCx::new())
            .await
            .unwrap();
        assert_eq!(resp.text, "after");
        assert_eq!(server.requests().len(), 2);
        assert_invariants(&server.requests());
    })
    .await
}

#[tokio::test]
async fn server_errors_and_resets_are_retried_then_reported() {
    bounded(async {
        let server = serve(Script::new([
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
        assert_eq!(server.requests().len(), 3);
        let server = serve(Script::always(Reply::status(529))).await;
        let err = kind_of(payg(&server, 2).call(request(), &CallCx::new()).await);
        assert!(
            matches!(err, AdapterError::Server { status: 529, .. }),
            "{err}"
        );
        assert_eq!(server.requests().len(), 3);
        let server = serve(Script::always(Reply::ConnectionReset)).await;
        let err = kind_of(payg(&server, 1).call(request(), &CallCx::new()).await);
        assert_eq!(
            (err.kind(), err.retry_class()),
            (geode::vocab::ErrorKind::Transport, RetryClass::Retryable)
        );
    })
    .await
}

#[tokio::test]
async fn refusal_and_max_tokens_keep_their_stop_reasons() {
    bounded(async {
        let server = serve(Script::new([
            Reply::Refusal("I can't help.".into()),
            Reply::MaxTokens("{\"answer\":".into()),
        ]))
        .await;
        let adapter = payg(&server, 0);
        let refused = adapter
            .call(with_schema(fitting()), &CallCx::new())
            .await
            .unwrap();
        assert_eq!(
            (refused.stop_reason, refused.text.as_str()),
            (StopReason::Refusal, "I can't help.")
        );
        let cut = adapter
            .call(with_schema(fitting()), &CallCx::new())
            .await
            .unwrap();
        assert_eq!(
            (cut.stop_reason, cut.text.as_str()),
            (StopReason::MaxTokens, "{\"answer\":")
        );
    })
    .await
}

#[tokio::test]
async fn cancel_stops_a_hanging_call() {
    bounded(async {
        let server = serve(Script::always(Reply::Hang)).await;
        let adapter = payg(&server, 0);
        let cx = CallCx::new();
        let cancel = cx.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            cancel.cancel();
        });
        assert_eq!(
            kind_of(adapter.call(request(), &cx).await).kind(),
            geode::vocab::ErrorKind::Cancelled
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
async fn from_env_reads_keys_and_base_url_and_names_what_is_missing() {
    bounded(async {
        let empty = tempfile::tempdir().unwrap();
        let home = empty.path().display().to_string();
        assert!(run_child(&[("GEODE_TEST_CHILD", "missing".into()), ("HOME", home)]).await);
        let server = serve(Script::always(Reply::text("from env"))).await;
        let vars = [
            ("GEODE_TEST_CHILD", "configured".to_owned()),
            ("GEODE_ANTHROPIC_BASE_URL", server.base_url()),
            ("ANTHROPIC_API_KEY", KEY.to_owned()),
            ("CLAUDE_CODE_OAUTH_TOKEN", TOKEN.to_owned()),
        ];
        assert!(run_child(&vars).await);
        let seen = server.requests();
        assert_eq!(seen.len(), 2);
        assert_invariants(&seen);
        assert_eq!(seen[0].header("x-api-key"), Some("***"));
        assert_eq!(seen[1].header("authorization"), Some("Bearer ***"));
    })
    .await
}

/// Run only by [`from_env_reads_keys_and_base_url_and_names_what_is_missing`], which sets its
/// environment (tests cannot set variables in-process: `set_var` is unsafe).
#[tokio::test]
#[ignore = "run by from_env_reads_keys_and_base_url_and_names_what_is_missing in a child process"]
async fn child_from_env() {
    let mode = std::env::var("GEODE_TEST_CHILD").expect("run by the parent test only");
    match mode.as_str() {
        "missing" => {
            let err = AnthropicPayg::from_env().unwrap_err();
            assert_eq!(err.kind(), geode::vocab::ErrorKind::Config);
            assert!(err.to_string().contains("ANTHROPIC_API_KEY"), "{err}");
            let err = AnthropicOauth::from_env().unwrap_err();
            assert_eq!(err.kind(), geode::vocab::ErrorKind::Config);
            let text = err.to_string();
            assert!(
                text.contains("CLAUDE_CODE_OAUTH_TOKEN") && text.contains(".credentials.json"),
                "{text}"
            );
        }
        "configured" => {
            let payg = AnthropicPayg::from_env().unwrap();
            assert_eq!(
                payg.call(request(), &CallCx::new()).await.unwrap().text,
                "from env"
            );
            let oauth = AnthropicOauth::from_env().unwrap();
            assert_eq!(
                oauth.call(request(), &CallCx::new()).await.unwrap().text,
                "from env"
            );
        }
        other => panic!("unknown child mode {other}"),
    }
}
