//! The Responses transport over the wire: `openai-payg` and `codex-oauth` against the
//! `geode-fakes` servers on 127.0.0.1. Every recorded model call is checked against the wire
//! invariants, and the bodies are compared field by field with the real codex captures.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use geode::ledger::StructuredOutputMode;
use geode::llm::adapter::{AdapterError, CallCx};
use geode::llm::request::{AdapterCallRequest, AdapterResponse, Message, StopReason, ToolSpec};
use geode::schema::ResponseSchema;
use geode_fakes::chatgpt::DEFAULT_ACCOUNT_ID as ACCOUNT;
use geode_fakes::{FakeServer, Kind, RecordedRequest, Reply, Script};
use serde_json::{Value, json};
use std::path::Path;
use support::env::MapEnv;
use support::http::{Rig, build};
use support::{assert_kind, bounded, expect_err};

mod support;

/// The schema codex sent in the captures (so the bodies can be compared verbatim).
fn schema() -> ResponseSchema {
    let capture = capture("codex-0.171.0-apikey-request.json");
    ResponseSchema::from_value(capture["body"]["text"]["format"]["schema"].clone()).unwrap()
}

fn request() -> AdapterCallRequest {
    let mut r =
        AdapterCallRequest::new("gpt-5.5", vec![Message::user("Reply with the answer JSON")]);
    r.system_prompt = "You answer in JSON.".into();
    r.response_schema = Some(schema());
    r.tools = vec![ToolSpec {
        name: "exec_command".into(),
        description: "Runs a command.".into(),
        input_schema: json!({"type": "object", "properties": {"cmd": {"type": "string"}},
                             "required": ["cmd"], "additionalProperties": false}),
    }];
    r
}

fn model_calls(server: &FakeServer) -> Vec<RecordedRequest> {
    // Every model call of this family, checked against the invariants.
    let calls: Vec<RecordedRequest> = server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.route().ends_with("/responses"))
        .collect();
    for c in &calls {
        check_invariants(server.kind(), c);
    }
    calls
}

/// What every model call of this family must satisfy.
fn check_invariants(kind: Kind, r: &RecordedRequest) {
    let b = &r.body;
    assert_eq!(b["store"], json!(false), "store");
    assert_eq!(b["stream"], json!(true), "stream");
    assert!(
        b["input"].as_array().is_some_and(|i| !i.is_empty()),
        "input"
    );
    assert!(b["instructions"].is_string(), "instructions");
    assert_eq!(r.header("authorization"), Some("Bearer ***"));
    assert_eq!(r.header("accept"), Some("text/event-stream"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    match kind {
        Kind::ChatGpt => {
            assert!(b.get("max_output_tokens").is_none());
            assert_eq!(r.header("chatgpt-account-id"), Some(ACCOUNT));
            assert!(r.header("originator").is_some() && r.header("session-id").is_some());
        }
        _ => assert!(b["max_output_tokens"].is_u64()),
    }
    if let Some(f) = b.pointer("/text/format") {
        assert_eq!(f["type"], json!("json_schema"));
        assert!(f["strict"].is_boolean() && f["name"].is_string() && f["schema"].is_object());
    }
}

fn capture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/spec/captures")
        .join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("capture {} is missing: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

/// Field-by-field agreement with a real codex request body, for the parts that must agree.
/// Known, deliberate differences: we send `instructions` (the reference does; codex 0.171.0
/// puts its base prompt in a `developer` message instead, wire.md §3.3) and our schema name.
fn compare_with_capture(ours: &Value, theirs: &Value) {
    let (of, tf) = (&ours["text"]["format"], &theirs["text"]["format"]);
    assert_eq!(keys(of), keys(tf), "text.format fields");
    assert_eq!(of["type"], tf["type"]);
    assert_eq!(of["strict"], tf["strict"]);
    assert_eq!(of["schema"], tf["schema"], "the schema travels verbatim");
    for field in [
        "store",
        "stream",
        "tool_choice",
        "parallel_tool_calls",
        "include",
    ] {
        assert_eq!(ours[field], theirs[field], "{field}");
    }
    let their_fn = theirs["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "function")
        .unwrap();
    for tool in ours["tools"].as_array().unwrap() {
        assert_eq!(keys(tool), keys(their_fn), "flat function tool fields");
        assert_eq!(tool["parameters"]["type"], json!("object"));
    }
    assert!(ours["input"].is_array() && theirs["input"].is_array());
    assert_eq!(ours["input"][0]["type"], theirs["input"][0]["type"]);
    let our_text = &ours["input"][0]["content"][0];
    let their_last = theirs["input"].as_array().unwrap().last().unwrap();
    assert_eq!(our_text["type"], their_last["content"][0]["type"]);
    assert!(ours["reasoning"]["effort"].is_string());
    assert!(ours["instructions"].is_string() && theirs.get("instructions").is_none());
}

fn assert_answer_matches_schema(resp: &AdapterResponse) {
    let v: Value =
        serde_json::from_str(&resp.text).unwrap_or_else(|e| panic!("{e}: {}", resp.text));
    for k in ["answer", "confidence", "tags"] {
        assert!(v.get(k).is_some(), "{k} missing in {v}");
    }
}

#[tokio::test]
async fn payg_sends_schema_strict_and_tools_in_one_request_and_matches_the_capture() {
    let rig = Rig::start("openai-payg", Script::always(Reply::Auto)).await;
    let server = &rig.server;
    let resp = bounded(rig.adapter.call(request(), &CallCx::new()))
        .await
        .unwrap();
    assert_answer_matches_schema(&resp);
    assert_eq!(resp.wire.mode, StructuredOutputMode::Strict);
    assert_eq!(resp.stop_reason, StopReason::EndTurn);
    assert_eq!((resp.usage.input_tokens, resp.usage.output_tokens), (11, 7));
    let calls = model_calls(server);
    assert_eq!(calls.len(), 1);
    let body = &calls[0].body;
    assert_eq!(calls[0].route(), "/v1/responses");
    assert_eq!(
        body["text"]["format"]["name"],
        json!("response"),
        "no title"
    );
    assert_eq!(body["text"]["format"]["strict"], json!(true));
    assert_eq!(body["tools"][0]["name"], json!("exec_command"));
    assert_eq!(body["max_output_tokens"], json!(8192));
    compare_with_capture(body, &capture("codex-0.171.0-apikey-request.json")["body"]);
    let all = format!("{:?}", server.requests());
    assert!(!all.contains(&rig.secret));
}

#[tokio::test]
async fn codex_sends_the_backend_headers_and_body_and_matches_the_captures() {
    let rig = Rig::start("codex-oauth", Script::always(Reply::Auto)).await;
    let server = &rig.server;
    let resp = bounded(rig.adapter.call(request(), &CallCx::new()))
        .await
        .unwrap();
    assert_answer_matches_schema(&resp);
    assert_eq!(resp.wire.mode, StructuredOutputMode::Strict);
    let calls = model_calls(server);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].route(), "/backend-api/codex/responses");
    let body = &calls[0].body;
    compare_with_capture(body, &capture("codex-0.171.0-apikey-request.json")["body"]);
    let chatgpt = capture("codex-0.171.0-chatgpt-auth-traffic.json");
    compare_with_capture(body, &chatgpt["responses_post_body"]);
    // No refresh for a valid token.
    assert!(
        server
            .requests()
            .iter()
            .all(|r| !r.route().ends_with("/oauth/token"))
    );
}

#[tokio::test]
async fn a_loose_schema_is_sent_as_a_hint_with_strict_false() {
    let rig = Rig::start("openai-payg", Script::always(Reply::text("{}"))).await;
    let mut r = request();
    r.response_schema = Some(ResponseSchema::from_value(json!({"type": "object"})).unwrap());
    let resp = bounded(rig.adapter.call(r, &CallCx::new())).await.unwrap();
    assert_eq!(resp.wire.mode, StructuredOutputMode::Hint);
    assert_eq!(
        model_calls(&rig.server)[0].body["text"]["format"]["strict"],
        json!(false)
    );
    let mut none = request();
    none.response_schema = None;
    let resp = bounded(rig.adapter.call(none, &CallCx::new()))
        .await
        .unwrap();
    assert_eq!(resp.wire.mode, StructuredOutputMode::None);
    assert!(model_calls(&rig.server)[1].body.get("text").is_none());
}

/// Plays `script` on a fake of `kind` and makes one call with `cx`.
async fn play(
    kind: Kind,
    script: Script,
    cx: CallCx,
) -> (Result<AdapterResponse, AdapterError>, FakeServer) {
    let adapter = match kind {
        Kind::ChatGpt => "codex-oauth",
        _ => "openai-payg",
    };
    let rig = Rig::start(adapter, script).await;
    let result = bounded(rig.adapter.call(request(), &cx)).await;
    (result, rig.server)
}

const BOTH: [Kind; 2] = [Kind::Responses, Kind::ChatGpt];

#[tokio::test]
async fn a_schema_rejection_is_schema_rejected_and_not_retried() {
    for kind in BOTH {
        let script = Script::always(Reply::SchemaRejection(
            "Invalid schema for response_format 'answer'".into(),
        ));
        let (r, server) = play(kind, script, CallCx::new()).await;
        match r {
            Err(AdapterError::SchemaRejected {
                status: 400, code, ..
            }) => assert_eq!(code, "invalid_json_schema"),
            other => panic!("{kind}: {other:?}"),
        }
        assert_eq!(model_calls(&server).len(), 1, "{kind}");
    }
}

#[tokio::test]
async fn a_codex_401_refreshes_once_and_retries() {
    let script = Script::new([Reply::status(401), Reply::text("{\"ok\":true}")]);
    let (r, server) = play(Kind::ChatGpt, script, CallCx::new()).await;
    assert_eq!(r.unwrap().text, "{\"ok\":true}");
    let refreshes = server
        .requests()
        .iter()
        .filter(|r| r.route().ends_with("/oauth/token"))
        .count();
    assert_eq!((model_calls(&server).len(), refreshes), (2, 1));
    // A second 401 after the refresh is the caller's Auth error.
    let (r, _) = play(
        Kind::ChatGpt,
        Script::always(Reply::status(401)),
        CallCx::new(),
    )
    .await;
    assert!(matches!(r, Err(AdapterError::Auth { .. })), "{r:?}");
}

#[tokio::test]
async fn a_429_with_retry_after_is_retried_then_succeeds() {
    for kind in BOTH {
        let script = Script::new([Reply::rate_limited(1), Reply::text("{\"ok\":1}")]);
        let (r, server) = play(kind, script, CallCx::new()).await;
        assert_eq!(r.unwrap().text, "{\"ok\":1}", "{kind}");
        assert_eq!(model_calls(&server).len(), 2, "{kind}");
    }
}

#[tokio::test]
async fn a_500_and_a_reset_are_retried() {
    for kind in BOTH {
        let script = Script::new([
            Reply::status(500),
            Reply::ConnectionReset,
            Reply::text("{\"ok\":2}"),
        ]);
        let (r, server) = play(kind, script, CallCx::new()).await;
        assert_eq!(r.unwrap().text, "{\"ok\":2}", "{kind}");
        assert_eq!(model_calls(&server).len(), 3, "{kind}");
    }
}

#[tokio::test]
async fn resets_past_the_retry_budget_are_transport() {
    let (r, server) = play(
        Kind::Responses,
        Script::always(Reply::ConnectionReset),
        CallCx::new(),
    )
    .await;
    assert!(matches!(r, Err(AdapterError::Transport { .. })), "{r:?}");
    assert_eq!(model_calls(&server).len(), 4, "one try and three retries");
}

#[tokio::test]
async fn refusal_max_tokens_and_tool_calls_keep_their_stop_reasons() {
    for kind in BOTH {
        let (r, _) = play(
            kind,
            Script::always(Reply::Refusal("I can't.".into())),
            CallCx::new(),
        )
        .await;
        let r = r.unwrap();
        assert_eq!(
            (r.stop_reason, r.text.as_str()),
            (StopReason::Refusal, "I can't."),
            "{kind}"
        );
        let (r, _) = play(
            kind,
            Script::always(Reply::MaxTokens("{\"answer\":".into())),
            CallCx::new(),
        )
        .await;
        let r = r.unwrap();
        assert_eq!(
            (r.stop_reason, r.text.as_str()),
            (StopReason::MaxTokens, "{\"answer\":"),
            "{kind}"
        );
        let call = Reply::tool_call("exec_command", json!({"cmd": "echo hi"}));
        let (r, _) = play(kind, Script::always(call), CallCx::new()).await;
        let r = r.unwrap();
        assert_eq!(r.stop_reason, StopReason::ToolUse, "{kind}");
        assert_eq!(r.tool_uses[0].name, "exec_command");
        assert_eq!(r.tool_uses[0].input, json!({"cmd": "echo hi"}));
        assert!(
            r.tool_uses[0].id.starts_with("call"),
            "{:?}",
            r.tool_uses[0]
        );
    }
}

#[tokio::test]
async fn an_expired_codex_token_is_refreshed_and_auth_json_rewritten() {
    let rig = Rig::start_with(
        "codex-oauth",
        Script::always(Reply::text("{\"ok\":3}")),
        -60,
    )
    .await;
    let auth = rig.home.path().join("auth.json");
    let before: Value = serde_json::from_str(&std::fs::read_to_string(&auth).unwrap()).unwrap();
    let resp = bounded(rig.adapter.call(request(), &CallCx::new()))
        .await
        .unwrap();
    assert_eq!(resp.text, "{\"ok\":3}");
    let reqs = rig.server.requests();
    let refresh: Vec<&RecordedRequest> = reqs
        .iter()
        .filter(|r| r.route() == "/oauth/token")
        .collect();
    assert_eq!(refresh.len(), 1);
    assert_eq!(refresh[0].body["grant_type"], json!("refresh_token"));
    assert_eq!(
        refresh[0].body["client_id"],
        json!("app_EMoamEEZ73f0CkXaXp7hrann")
    );
    assert_eq!(
        refresh[0].body["refresh_token"],
        json!("***"),
        "masked by the fake"
    );
    // The refresh came before the model call.
    let order: Vec<&str> = reqs.iter().map(|r| r.route()).collect();
    assert_eq!(order, vec!["/oauth/token", "/backend-api/codex/responses"]);
    let after: Value = serde_json::from_str(&std::fs::read_to_string(&auth).unwrap()).unwrap();
    assert_ne!(
        after["tokens"]["access_token"],
        before["tokens"]["access_token"]
    );
    assert!(
        after["tokens"]["refresh_token"]
            .as_str()
            .unwrap()
            .starts_with("rt_refreshed")
    );
    assert_eq!(after["tokens"]["account_id"], json!(ACCOUNT));
    assert_eq!(after["auth_mode"], json!("chatgpt"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&auth).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}

#[tokio::test]
async fn missing_credentials_are_config_errors_that_name_what_is_missing() {
    // openai-payg without its key.
    let env = MapEnv::new().set("GEODE_OPENAI_BASE_URL", "http://127.0.0.1:9");
    let err = expect_err(build("openai-payg", &env));
    assert_kind(&err, "config");
    assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");
    // codex-oauth without its auth file (nothing is sent: port 9 is closed anyway).
    let env = MapEnv::new()
        .set("GEODE_CODEX_BASE_URL", "http://127.0.0.1:9")
        .set("GEODE_CODEX_AUTH_URL", "http://127.0.0.1:9")
        .set("CODEX_HOME", "/nonexistent/codex");
    let err = match build("codex-oauth", &env) {
        Err(e) => e,
        Ok(adapter) => expect_err(bounded(adapter.call(request(), &CallCx::new())).await),
    };
    assert!(matches!(err, AdapterError::Config { .. }), "{err:?}");
    assert!(
        err.to_string().contains("/nonexistent/codex/auth.json"),
        "{err}"
    );
}
