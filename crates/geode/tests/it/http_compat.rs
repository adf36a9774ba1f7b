//! The `openai-compatible` adapter against `geode-fakes` Chat servers that enforce, ignore or
//! refuse `response_format: json_schema` ([`SchemaSupport`]): the probe's verdict and mode, one
//! probe per server and model, what each verdict puts on the wire, the ledger's reason, and
//! `require`: a server that ignores the schema never passes `enforced` (refused before any
//! model call, exit 2). The same adapter against the real llama-server is in
//! `compat_llama_server.rs`; the shared fault rows are in `http_adapters.rs` and the fault
//! matrix.

use geode_testkit as support;

use geode::agent::worker::WorkerEnv;
use geode::llm::adapter::Adapter;
use geode::llm::call::CallCx;
use geode::llm::request::{AdapterCallRequest, Message};
use geode::llm::wire::schema_prompt::INSTRUCTION_HEADING;
use geode::protocol::exit;
use geode::protocol::{WorkerRequest, run_worker};
use geode::vocab::{Require, StructuredOutputMode};
use geode_fakes::{FakeServer, Kind, RecordedRequest, Reply, SchemaSupport, Script};
use serde_json::{Value, json};
use std::sync::Arc;
use support::env::MapEnv;
use support::http::{build, model_calls};
use support::{bounded, decision_schema};

const ADAPTER: &str = "openai-compatible";
/// A key that shares no 12-character window with the adapter's name (the scrubber would hide
/// the name in messages otherwise).
const KEY: &str = "sk-compat-Zr7Wq2Xn5Lp8Tb4Y";
const ANSWER: &str = r#"{"decision":"accept","reason":"Looks fine."}"#;

/// A Chat fake with `support` that answers every model call with the Decision answer.
async fn server(support: SchemaSupport) -> FakeServer {
    FakeServer::builder(Kind::Chat)
        .script(Script::always(Reply::text(ANSWER)))
        .schema_support(support)
        .start()
        .await
        .unwrap()
}

/// `openai-compatible` on `server`, with a key when `key` is set.
fn adapter(server: &FakeServer, key: bool) -> Arc<dyn Adapter> {
    let mut env = MapEnv::new().set(
        "GEODE_OPENAI_COMPAT_BASE_URL",
        format!("{}/v1", server.base_url()),
    );
    if key {
        env = env.set("GEODE_OPENAI_COMPAT_API_KEY", KEY);
    }
    build(ADAPTER, &env).unwrap()
}

fn request(model: &str) -> AdapterCallRequest {
    let mut req = AdapterCallRequest::new(model, vec![Message::user("Decide.")]);
    req.system_prompt = "Be terse.".into();
    req.response_schema = Some(decision_schema());
    req
}

fn probes(server: &FakeServer) -> Vec<RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| geode_fakes::chat::is_probe(&r.body))
        .collect()
}

fn system_text(body: &Value) -> &str {
    body["messages"][0]["content"].as_str().unwrap_or_default()
}

/// The verdict's mode, the body's `response_format` type, whether the schema is in the prompt,
/// and the words the ledger's reason must carry, for each kind of server.
#[tokio::test]
async fn each_verdict_places_the_schema_and_says_why() {
    for (support, mode, format, in_prompt, why) in [
        (
            SchemaSupport::Enforce,
            StructuredOutputMode::Strict,
            "json_schema",
            false,
            "enforced",
        ),
        (
            SchemaSupport::Ignore,
            StructuredOutputMode::Hint,
            "json_schema",
            true,
            "not enforced",
        ),
        (
            SchemaSupport::Refuse,
            StructuredOutputMode::JsonMode,
            "json_object",
            true,
            "refused",
        ),
    ] {
        let server = server(support).await;
        let adapter = adapter(&server, true);
        assert_eq!(
            adapter.wire_mode(Some(&decision_schema())),
            StructuredOutputMode::Strict,
            "{support:?}: before the probe the row claims its best"
        );
        let resp = bounded(adapter.call(request(""), &CallCx::new()))
            .await
            .unwrap();
        assert_eq!(resp.text, ANSWER);
        assert_eq!(resp.wire.mode, mode, "{support:?}");
        let reason = resp
            .wire
            .transforms
            .iter()
            .find(|t| t.pointer == "/response_format")
            .unwrap_or_else(|| panic!("{support:?}: no probe reason in {:?}", resp.wire));
        assert!(
            reason.action.contains(why),
            "{support:?}: {}",
            reason.action
        );
        assert_eq!(
            adapter.wire_mode(Some(&decision_schema())),
            mode,
            "{support:?}: after the probe the adapter reports the verdict"
        );
        let calls = model_calls(ADAPTER, server.requests());
        assert_eq!(calls.len(), 1, "{support:?}");
        let body = &calls[0].body;
        assert_eq!(body["response_format"]["type"], format, "{support:?}");
        if format == "json_schema" {
            assert_eq!(body["response_format"]["json_schema"]["strict"], true);
            assert_eq!(body["response_format"]["json_schema"]["name"], "Decision");
        }
        assert_eq!(
            system_text(body).contains(INSTRUCTION_HEADING),
            in_prompt,
            "{support:?}: {}",
            system_text(body)
        );
        assert_eq!(calls[0].header("authorization"), Some("Bearer ***"));
    }
}

/// One probe per server and model for the whole process; a call without a schema probes
/// nothing; a keyless server gets no `authorization` header, the probe included.
#[tokio::test]
async fn one_probe_per_server_and_model() {
    let server = server(SchemaSupport::Enforce).await;
    let adapter = adapter(&server, false);
    let mut plain = request("");
    plain.response_schema = None;
    bounded(adapter.call(plain, &CallCx::new())).await.unwrap();
    assert!(probes(&server).is_empty(), "no schema, no probe");
    for _ in 0..3 {
        bounded(adapter.call(request(""), &CallCx::new()))
            .await
            .unwrap();
    }
    assert_eq!(probes(&server).len(), 1, "three calls, one probe");
    // Another adapter value on the same server and model reuses the verdict.
    let again = self::adapter(&server, false);
    bounded(again.call(request("default"), &CallCx::new()))
        .await
        .unwrap();
    assert_eq!(probes(&server).len(), 1);
    bounded(adapter.call(request("other-model"), &CallCx::new()))
        .await
        .unwrap();
    let seen = probes(&server);
    assert_eq!(seen.len(), 2, "a new model is probed");
    assert_eq!(seen[1].body["model"], "other-model");
    for r in server.requests() {
        assert_eq!(r.header("authorization"), None, "keyless: {:?}", r.path);
    }
    // The probe's nonce is only in the schema, never in the prompt.
    let nonce = seen[0]
        .body
        .pointer("/response_format/json_schema/schema/properties/geode_probe/const")
        .and_then(Value::as_str)
        .unwrap();
    assert_eq!(seen[0].body["temperature"], json!(0.0));
    assert!(!seen[0].body["messages"].to_string().contains(nonce));
}

fn worker_request(require: Require) -> WorkerRequest {
    let mut req = WorkerRequest::new("compat", "Decide.");
    req.response_schema = Some(decision_schema());
    req.require = require;
    req.timeout_s = 15.0;
    req
}

/// A server that ignores the schema never passes `require=enforced`: the worker probes, then
/// refuses before any model call (exit 2); `wired` accepts its hint mode. A server that refuses
/// `json_schema` (json-mode) passes only `best-effort`. An enforcing server passes `enforced`.
#[tokio::test]
async fn require_follows_the_probe_verdict() {
    for (support, require, passes) in [
        (SchemaSupport::Ignore, Require::Enforced, false),
        (SchemaSupport::Ignore, Require::Wired, true),
        (SchemaSupport::Refuse, Require::Wired, false),
        (SchemaSupport::Refuse, Require::BestEffort, true),
        (SchemaSupport::Enforce, Require::Enforced, true),
    ] {
        let server = server(support).await;
        let env = WorkerEnv::new(adapter(&server, true));
        let result = bounded(run_worker(&worker_request(require), &env)).await;
        let calls = model_calls(ADAPTER, server.requests()).len();
        assert_eq!(probes(&server).len(), 1, "{support:?} {require:?}");
        if passes {
            assert!(
                result.success,
                "{support:?} {require:?}: {:?}",
                result.error
            );
            assert_eq!(calls, 1);
            assert_eq!(exit::for_result(&result), exit::VALID);
        } else {
            let error = result.error.clone().unwrap_or_default();
            assert!(!result.success);
            assert_eq!(calls, 0, "{support:?} {require:?}: refused before any call");
            assert!(result.ledger.attempts.is_empty());
            assert_eq!(exit::for_result(&result), exit::USAGE);
            assert!(
                error.contains(&format!("require={}", require.as_str())) && error.contains(ADAPTER),
                "{error}"
            );
        }
    }
}

/// A server that is down is the call's transport error, and nothing is remembered: the next
/// call probes again.
#[tokio::test]
async fn a_failed_probe_is_the_calls_error_and_is_not_remembered() {
    let server = server(SchemaSupport::Enforce).await;
    let origin = server.base_url();
    let env = MapEnv::new().set("GEODE_OPENAI_COMPAT_BASE_URL", format!("{origin}/v1"));
    let adapter = build(ADAPTER, &env).unwrap();
    server.shutdown().await;
    let cx = CallCx::new().with_timeout(std::time::Duration::from_secs(10));
    let err = support::expect_err(bounded(adapter.call(request(""), &cx)).await);
    support::assert_kind(&err, geode::vocab::ErrorKind::Transport);
    assert_eq!(
        adapter.wire_mode(Some(&decision_schema())),
        StructuredOutputMode::Strict,
        "no verdict was remembered"
    );
}
