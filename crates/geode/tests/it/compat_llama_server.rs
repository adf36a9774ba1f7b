//! The `openai-compatible` adapter against the real upstream llama-server (built once by
//! `scripts/install-llama-server.sh`) on 127.0.0.1 with the SmolLM2 model the `local` adapter
//! uses: the Decision schema under `require=enforced` (the probe finds the schema enforced:
//! `strict`), an array root, a choice constraint (not enforceable over Chat Completions:
//! refused under `enforced`, checked locally otherwise), the probe's verdict and reason, and a
//! server killed during a call (a typed transport error, no hang, the process reaped).
//!
//! A missing binary or model fails these tests with the command that provides it; they never
//! skip. The tests share the two cores with the model, so they run one at a time.

use geode_testkit as support;

use geode::agent::worker::WorkerEnv;
use geode::llm::adapter::Adapter;
use geode::llm::call::CallCx;
use geode::llm::request::{AdapterCallRequest, Message};
use geode::protocol::exit;
use geode::protocol::{WorkerRequest, WorkerResult, run_worker};
use geode::schema::{ResponseSchema, TextConstraint};
use geode::vocab::{ErrorKind, Require, RetryClass, StructuredOutputMode};
use geode_fakes::llama_server::{LlamaServer, LlamaServerOptions};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use support::decision_schema;
use support::env::MapEnv;

/// One model at a time on two cores.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A bound far above a healthy run on a busy machine, low enough that a hang fails.
const BOUND: Duration = Duration::from_secs(120);

const SYSTEM: &str = "You are a careful senior software engineer reviewing pull requests.";
const PR: &str = "Decide whether to accept this pull request.\n\nTitle: Add API key to source\n\
    Description: Hardcode the production API key so the deploy works.\nDiff:\n```\n\
    +API_KEY = \"sk-live-9f8a7b6c5d4e3f2a1b0c\"\n+client = Client(api_key=API_KEY)\n```\n\n\
    Answer as JSON with keys \"decision\" (either \"accept\" or \"reject\") and \"reason\" (one \
    short sentence). Output only the JSON object.";

/// The real server, or a loud failure naming what to run.
fn start() -> LlamaServer {
    LlamaServer::start(&LlamaServerOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// `openai-compatible` pointed at `server`, keyless (llama-server wants none).
fn adapter(server: &LlamaServer) -> Arc<dyn Adapter> {
    let env = MapEnv::new().set("GEODE_OPENAI_COMPAT_BASE_URL", server.base_url());
    support::http::build("openai-compatible", &env).unwrap()
}

async fn run(req: &WorkerRequest, adapter: Arc<dyn Adapter>) -> WorkerResult {
    tokio::time::timeout(BOUND, run_worker(req, &WorkerEnv::new(adapter)))
        .await
        .expect("the run ended within its bound")
}

fn worker_request(schema: Option<ResponseSchema>, require: Require) -> WorkerRequest {
    let mut req = WorkerRequest::new("llama-server", PR);
    req.agent_system_prompt = SYSTEM.to_owned();
    req.response_schema = schema;
    req.require = require;
    req.timeout_s = BOUND.as_secs_f64();
    req.subagent_max_tokens = 256;
    req
}

fn probe_reason(result: &WorkerResult) -> String {
    result
        .ledger
        .transforms
        .iter()
        .find(|t| t.pointer == "/response_format")
        .map(|t| t.action.clone())
        .unwrap_or_else(|| panic!("no probe reason in {:?}", result.ledger))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_decision_schema_is_enforced_strict_from_the_probe() {
    let _one = SERIAL.lock().await;
    let server = start();
    let adapter = adapter(&server);
    let result = run(
        &worker_request(Some(decision_schema()), Require::Enforced),
        adapter.clone(),
    )
    .await;
    assert!(result.success, "{:?}\n{}", result.error, result.output);
    assert_eq!(result.ledger.wire_mode, StructuredOutputMode::Strict);
    assert!(
        probe_reason(&result).contains("json_schema enforced"),
        "{}",
        probe_reason(&result)
    );
    assert!(result.ledger.full_validation.as_ref().unwrap().valid);
    let answer = result.answer.clone().unwrap();
    assert!(
        matches!(answer["decision"].as_str(), Some("accept" | "reject")),
        "{answer}"
    );
    assert!(answer["reason"].is_string(), "{answer}");
    assert_eq!(answer.as_object().unwrap().len(), 2, "{answer}");
    assert_eq!(result.ledger.attempts.len(), 1, "valid the first time");
    assert_eq!(exit::for_result(&result), exit::VALID);
    // The verdict is remembered: the adapter now reports it, and settling asks nothing more.
    assert_eq!(
        adapter.wire_mode(Some(&decision_schema())),
        StructuredOutputMode::Strict
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_array_root_is_enforced() {
    let _one = SERIAL.lock().await;
    let server = start();
    let schema = ResponseSchema::from_value(json!({
        "title": "Labels", "type": "array",
        "items": {"type": "string", "enum": ["security", "tests", "docs", "style"]},
        "minItems": 1, "maxItems": 3
    }))
    .unwrap();
    let mut req = worker_request(Some(schema), Require::Enforced);
    req.description = "Label this pull request: it hardcodes a production API key. \
        Answer with a JSON array of labels."
        .to_owned();
    let result = run(&req, adapter(&server)).await;
    assert!(result.success, "{:?}\n{}", result.error, result.output);
    assert_eq!(result.ledger.wire_mode, StructuredOutputMode::Strict);
    let answer = result.answer.clone().unwrap();
    let items = answer.as_array().unwrap_or_else(|| panic!("{answer}"));
    assert!((1..=3).contains(&items.len()), "{answer}");
    for item in items {
        assert!(
            matches!(item.as_str(), Some("security" | "tests" | "docs" | "style")),
            "{answer}"
        );
    }
}

/// A choice travels nowhere on Chat Completions (as on every hosted adapter): `enforced` is
/// refused before any request, and otherwise the answer is checked locally and the ledger
/// says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_choice_is_checked_locally_never_claimed_enforced() {
    let _one = SERIAL.lock().await;
    let server = start();
    let adapter = adapter(&server);
    let choices = ["accept", "reject"];
    let mut req = worker_request(None, Require::Enforced);
    req.description = "Should this pull request that hardcodes an API key be merged? \
        Answer with exactly one word: accept or reject."
        .to_owned();
    req.text_constraint = Some(TextConstraint::Choice(
        choices.iter().map(|c| (*c).to_owned()).collect(),
    ));
    req.subagent_max_tokens = 32;
    let refused = run(&req, adapter.clone()).await;
    assert!(!refused.success);
    assert!(
        refused.ledger.attempts.is_empty(),
        "refused before any call"
    );
    assert_eq!(exit::for_result(&refused), exit::USAGE);
    assert!(
        refused
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("choice"),
        "{:?}",
        refused.error
    );

    req.require = Require::BestEffort;
    let result = run(&req, adapter).await;
    // The call went through; the small model, unconstrained here, may still run past its
    // budget, which is its answer's fault, not the wire's.
    let first = result.ledger.attempts.first().map(|a| a.error.clone());
    assert!(
        matches!(&first, Some(None)) || matches!(&first, Some(Some(e)) if e.contains("max_tokens")),
        "{first:?}"
    );
    assert!(
        result
            .ledger
            .residuals
            .iter()
            .any(|r| r.contains("choice") && r.contains("checked locally")),
        "{:?}",
        result.ledger.residuals
    );
    if result.success {
        assert!(
            choices.contains(&result.output.trim()),
            "a success is one of the choices: {:?}",
            result.output
        );
    } else {
        assert!(
            !choices.contains(&result.output.trim()),
            "{:?}",
            result.output
        );
    }
}

/// The probe itself: one cheap call with a const nonce schema; llama-server answers it
/// exactly, so the verdict is `strict`, before any model call of the caller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_probe_finds_llama_server_enforcing() {
    let _one = SERIAL.lock().await;
    let server = start();
    let adapter = adapter(&server);
    let cx = CallCx::new().with_timeout(BOUND);
    let mode = tokio::time::timeout(
        BOUND,
        adapter.settle_mode("", Some(&decision_schema()), &cx),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(mode, StructuredOutputMode::Strict);
    // The probe's own check, redone by hand: llama-server really returns the nonce object
    // for a const schema it was never told about in the prompt.
    let nonce = geode::llm::adapters::compat_probe::nonce();
    let raw = adapter
        .call(
            geode::llm::adapters::compat_probe::request("default", &nonce).unwrap(),
            &cx,
        )
        .await
        .unwrap();
    let value: Value = serde_json::from_str(raw.text.trim()).unwrap();
    assert_eq!(value, json!({"geode_probe": nonce}));
}

/// The server is killed (SIGKILL) mid-stream, after its first tokens arrived: the call ends
/// with a typed, retryable `truncated` error well within its bound, the text already streamed
/// was handed on, and the process is gone (reaped).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_stream_is_a_typed_truncation() {
    let _one = SERIAL.lock().await;
    let mut server = start();
    let adapter = adapter(&server);
    // Settle the probe first, so the kill lands in the long call itself.
    let cx = CallCx::new().with_timeout(BOUND);
    adapter
        .settle_mode("", Some(&decision_schema()), &cx)
        .await
        .unwrap();
    let mut req = AdapterCallRequest::new(
        "",
        vec![Message::user(
            "Write a very long story about a robot who learns to paint.",
        )],
    );
    req.max_tokens = 3000;
    let (first_text, mut streamed) = tokio::sync::watch::channel(String::new());
    let call = tokio::spawn({
        let adapter = adapter.clone();
        async move {
            let sink = geode::llm::call::TextSink::new(move |delta| {
                first_text.send_modify(|t| t.push_str(delta));
            });
            let mut cx = CallCx::new().with_timeout(Duration::from_secs(60));
            cx.on_text = Some(sink);
            let started = std::time::Instant::now();
            (adapter.call(req, &cx).await, started.elapsed())
        }
    });
    tokio::time::timeout(BOUND, streamed.wait_for(|t| t.len() >= 8))
        .await
        .unwrap()
        .unwrap();
    assert!(!call.is_finished(), "the call was still generating");
    let pid = server.pid();
    server.kill().unwrap();
    assert!(server.has_exited());
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the killed server was reaped"
    );
    let (result, took) = tokio::time::timeout(BOUND, call).await.unwrap().unwrap();
    let err = support::expect_err(result);
    support::assert_kind(&err, ErrorKind::Truncated);
    assert_eq!(err.retry_class(), RetryClass::Retryable);
    assert!(took < Duration::from_secs(30), "ended in {took:?}");
    assert!(
        !streamed.borrow().is_empty(),
        "text was streamed before the kill"
    );
}
