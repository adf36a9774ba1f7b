//! The Responses transport over the wire: `openai-payg` and `codex-oauth` against the
//! `geode-fakes` servers on 127.0.0.1. Every recorded model call is checked against the wire
//! invariants ([`assert_wire_invariants`]), and the bodies are compared field by field with the
//! real codex captures; codex's token refresh is here too. What every HTTP adapter does alike
//! (retries, faults, stop reasons, configuration) is the table in `http_adapters.rs`.
use geode::llm::call::AdapterError;
use geode::llm::request::{AdapterCallRequest, AdapterResponse, Message, ToolSpec};
use geode::schema::ResponseSchema;
use geode::vocab::StructuredOutputMode;
use geode_fakes::chatgpt::DEFAULT_ACCOUNT_ID as ACCOUNT;
use geode_fakes::{RecordedRequest, Reply, Script};
use serde_json::{Value, json};
use std::path::Path;
use support::http::{Rig, assert_ended_with_fake_usage, assert_wire_invariants};

use geode_testkit as support;

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

/// The rig's model calls, each checked against the wire invariants.
fn model_calls(rig: &Rig) -> Vec<RecordedRequest> {
    assert_wire_invariants(rig.adapter.name(), &rig.server.requests());
    rig.model_calls()
}

fn capture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/captures")
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
/// Known, deliberate differences: we send `instructions` (GEODE does; codex 0.171.0
/// puts its base prompt in a `developer` message instead, docs/wire.md#chatgpt-codex-backend)
/// and our schema name.
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

/// `adapter` on a fake answering with an instance of the request's schema: the answer has the
/// schema's fields and went strict.
async fn strict_auto_answer(adapter: &str) -> (Rig, AdapterResponse) {
    let rig = Rig::start(adapter, Script::always(Reply::Auto)).await;
    let resp = rig.call(request()).await.unwrap();
    assert_answer_matches_schema(&resp);
    assert_eq!(resp.wire.mode, StructuredOutputMode::Strict);
    (rig, resp)
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
    let (rig, resp) = strict_auto_answer("openai-payg").await;
    assert_ended_with_fake_usage(&resp);
    let calls = model_calls(&rig);
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
    let all = format!("{:?}", rig.server.requests());
    assert!(!all.contains(&rig.secret));
}

#[tokio::test]
async fn codex_sends_the_backend_headers_and_body_and_matches_the_captures() {
    let (rig, _) = strict_auto_answer("codex-oauth").await;
    let calls = model_calls(&rig);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].route(), "/backend-api/codex/responses");
    let body = &calls[0].body;
    compare_with_capture(body, &capture("codex-0.171.0-apikey-request.json")["body"]);
    let chatgpt = capture("codex-0.171.0-chatgpt-auth-traffic.json");
    compare_with_capture(body, &chatgpt["responses_post_body"]);
    // No refresh for a valid token.
    assert!(
        rig.server
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
    let resp = rig.call(r).await.unwrap();
    assert_eq!(resp.wire.mode, StructuredOutputMode::Hint);
    assert_eq!(
        model_calls(&rig)[0].body["text"]["format"]["strict"],
        json!(false)
    );
    let mut none = request();
    none.response_schema = None;
    let resp = rig.call(none).await.unwrap();
    assert_eq!(resp.wire.mode, StructuredOutputMode::None);
    assert!(model_calls(&rig)[1].body.get("text").is_none());
}

#[tokio::test]
async fn a_codex_401_refreshes_once_and_retries() {
    let script = Script::new([Reply::status(401), Reply::text("{\"ok\":true}")]);
    let rig = Rig::start("codex-oauth", script).await;
    let r = rig.call(request()).await;
    assert_eq!(r.unwrap().text, "{\"ok\":true}");
    let refreshes = rig
        .server
        .requests()
        .iter()
        .filter(|r| r.route().ends_with("/oauth/token"))
        .count();
    assert_eq!((model_calls(&rig).len(), refreshes), (2, 1));
    // A second 401 after the refresh is the caller's Auth error.
    let rig = Rig::start("codex-oauth", Script::always(Reply::status(401))).await;
    let r = rig.call(request()).await;
    assert!(matches!(r, Err(AdapterError::Auth { .. })), "{r:?}");
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
    let resp = rig.call(request()).await.unwrap();
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
