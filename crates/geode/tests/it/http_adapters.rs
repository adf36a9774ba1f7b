//! What every HTTP adapter does the same way, as a table: each row is a script the
//! `geode-fakes` server plays (a fault, a retryable failure followed by an answer, a refusal,
//! ...) and the outcome every one of the six HTTP adapters must reach: an answer (its text, stop
//! reason and the number of model calls it took) or a typed error (its kind, retry class, the
//! number of model calls, and details such as the status or `retry-after`). One test per row;
//! inside it the six adapters run at once, each on its own fake on 127.0.0.1, and every recorded
//! request must keep its family's wire invariants ([`assert_wire_invariants`]).
//!
//! Also here: building each adapter from the real process environment, and the configuration
//! errors that name what is missing. The family-specific wire shapes stay in `http_chat.rs`,
//! `http_messages.rs` and `http_responses.rs`.

use geode_testkit as support;

use geode::llm::call::{AdapterError, CallCx};
use geode::llm::request::{AdapterCallRequest, AdapterResponse, Message, ToolChoice};
use geode::vocab::{ErrorKind, RetryClass, StopReason};
use geode_fakes::{FakeServer, Kind, Reply, Script};
use serde_json::json;
use std::time::Duration;
use support::env::MapEnv;
use support::http::{
    Rig, assert_wire_invariants, base_url, base_url_var, build, build_from_process_env,
    http_adapters, kind_of, run_child, secret_var, short_deadline, test_secret, write_codex_auth,
};
use support::{assert_kind, bounded, decision_schema, expect_err, weather_tool};

/// The request every row sends: a system prompt, the `Decision` schema and one tool.
fn request() -> AdapterCallRequest {
    let mut req = AdapterCallRequest::new("test-model", vec![Message::user("decide")]);
    req.system_prompt = "Be terse.".into();
    req.response_schema = Some(decision_schema());
    req.tools = vec![weather_tool()];
    req.tool_choice = ToolChoice::Auto;
    req
}

/// The outcome a row must end in, for every HTTP adapter.
#[derive(Clone)]
enum Expect {
    /// An answer with this text and stop reason after this many model calls.
    Answer {
        text: &'static str,
        stop: StopReason,
        calls: usize,
    },
    /// A tool call to `get_weather` for Paris, with the provider's call id.
    ToolCall,
    /// A typed error after this many model calls; `detail` checks what else it must carry.
    Fails {
        kind: ErrorKind,
        class: RetryClass,
        calls: usize,
        detail: fn(Kind, &AdapterError),
    },
}

/// One scenario.
#[derive(Clone)]
struct Row {
    /// What the fake of `kind` plays.
    script: fn(Kind) -> Script,
    /// The call's context (deadline, budget).
    cx: fn() -> CallCx,
    /// Cancel the call after this long, if set.
    cancel_after: Option<Duration>,
    /// The outcome.
    expect: Expect,
}

const fn row(script: fn(Kind) -> Script, expect: Expect) -> Row {
    Row {
        script,
        cx: CallCx::new,
        cancel_after: None,
        expect,
    }
}

/// One try and the default policy's three retries.
const EXHAUSTED: usize = 4;

fn no_detail(_: Kind, _: &AdapterError) {}

/// The provider's call-id prefix in the fake's tool calls.
fn tool_id_prefix(kind: Kind) -> &'static str {
    match kind {
        Kind::Messages => "toolu",
        _ => "call",
    }
}

/// Runs `row` against all six HTTP adapters at once; fails with every adapter that missed.
async fn run(name: &str, row: Row) {
    let mut set = tokio::task::JoinSet::new();
    let mut adapters = std::collections::HashMap::new();
    for adapter in http_adapters() {
        adapters.insert(set.spawn(run_one(adapter, row.clone())).id(), adapter);
    }
    let mut failures = Vec::new();
    while let Some(joined) = set.join_next_with_id().await {
        if let Err(e) = joined {
            let adapter = adapters[&e.id()];
            let why = match e.try_into_panic() {
                Ok(p) => p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default(),
                Err(e) => e.to_string(),
            };
            failures.push(format!("{adapter}: {why}"));
        }
    }
    failures.sort();
    assert!(failures.is_empty(), "row {name}:\n{}", failures.join("\n"));
}

/// Runs `row` against `adapter` on its own fake; panics with what missed.
async fn run_one(adapter: &'static str, row: Row) {
    let kind = kind_of(adapter);
    let rig = Rig::start(adapter, (row.script)(kind)).await;
    let cx = (row.cx)();
    if let Some(after) = row.cancel_after {
        let cancel = cx.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            cancel.cancel();
        });
    }
    let result = bounded(rig.adapter.call(request(), &cx)).await;
    let calls = rig.model_calls().len();
    assert_wire_invariants(adapter, &rig.server.requests());
    check(kind, &row.expect, result, calls);
}

/// Fails unless `result` (after `calls` model calls on a fake of `kind`) is what `expect` says.
fn check(kind: Kind, expect: &Expect, result: Result<AdapterResponse, AdapterError>, calls: usize) {
    match *expect {
        Expect::Answer {
            text,
            ref stop,
            calls: want,
        } => {
            let resp = result.unwrap();
            assert_eq!((resp.text.as_str(), &resp.stop_reason), (text, stop));
            assert_eq!(calls, want, "model calls");
        }
        Expect::ToolCall => {
            let resp = result.unwrap();
            assert_eq!(resp.stop_reason, StopReason::ToolUse);
            assert_eq!(resp.tool_uses.len(), 1);
            let call = &resp.tool_uses[0];
            assert_eq!(
                (call.name.as_str(), &call.input),
                ("get_weather", &json!({"city": "Paris"}))
            );
            assert!(call.id.starts_with(tool_id_prefix(kind)), "{call:?}");
            assert_eq!(calls, 1, "model calls");
        }
        Expect::Fails {
            kind: want,
            class,
            calls: want_calls,
            detail,
        } => {
            let err = expect_err(result);
            assert_kind(&err, want);
            assert_eq!(err.retry_class(), class, "{err}");
            assert_eq!(calls, want_calls, "model calls ({err})");
            detail(kind, &err);
        }
    }
}

/// Declares one test per row.
macro_rules! rows {
    ($($(#[doc = $doc:expr])* $name:ident => $row:expr;)*) => {$(
        $(#[doc = $doc])*
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            run(stringify!($name), $row).await
        }
    )*};
}

/// The schema rejection each family's provider sends (the words its classifier knows).
fn schema_rejection(kind: Kind) -> Script {
    let message = match kind {
        Kind::Messages => "output_config.format.schema: Too many recursive definitions in schema",
        Kind::Chat => "response_format type json_schema is not supported",
        _ => "Invalid schema for response_format 'answer'",
    };
    Script::always(Reply::SchemaRejection(message.into()))
}

fn schema_rejected_400(kind: Kind, err: &AdapterError) {
    match err {
        AdapterError::SchemaRejected { status, code, .. } => {
            assert_eq!(*status, 400);
            if matches!(kind, Kind::Responses | Kind::ChatGpt) {
                assert_eq!(code, "invalid_json_schema");
            }
        }
        other => panic!("expected SchemaRejected, got {other}"),
    }
}

fn retry_after_4s(_: Kind, err: &AdapterError) {
    match err {
        AdapterError::RateLimited { retry_after, .. } => {
            assert_eq!(*retry_after, Some(Duration::from_secs(4)))
        }
        other => panic!("expected RateLimited, got {other}"),
    }
}

fn status(err: &AdapterError) -> u16 {
    match err {
        AdapterError::Server { status, .. } => *status,
        other => panic!("expected Server, got {other}"),
    }
}

fn too_large_at_1_mib(_: Kind, err: &AdapterError) {
    match err {
        AdapterError::ResponseTooLarge { limit, .. } => assert_eq!(*limit, MIB),
        other => panic!("expected ResponseTooLarge, got {other}"),
    }
    assert!(err.to_string().contains("max_response_bytes"), "{err}");
}

const MIB: u64 = 1 << 20;

const fn fails(kind: ErrorKind, class: RetryClass, calls: usize) -> Expect {
    Expect::Fails {
        kind,
        class,
        calls,
        detail: no_detail,
    }
}

const fn answer(text: &'static str, stop: StopReason, calls: usize) -> Expect {
    Expect::Answer { text, stop, calls }
}

rows! {
    /// A schema rejection is typed, fatal and not retried.
    schema_rejection_is_typed_and_not_retried => row(schema_rejection, Expect::Fails {
        kind: ErrorKind::SchemaRejected, class: RetryClass::Fatal, calls: 1, detail: schema_rejected_400,
    });
    /// A 429 reports its `retry-after`; a wait past the call's deadline is not taken.
    rate_limit_reports_retry_after => Row {
        cx: short_deadline,
        ..row(|_| Script::always(Reply::rate_limited(4)), Expect::Fails {
            kind: ErrorKind::RateLimited, class: RetryClass::Retryable, calls: 1, detail: retry_after_4s,
        })
    };
    /// A 429 with `retry-after: 1` is waited for, then the answer comes.
    rate_limit_is_retried_then_answered => row(
        |_| Script::new([Reply::rate_limited(1), Reply::text("after")]),
        answer("after", StopReason::EndTurn, 2),
    );
    /// A 429, a 500 and a reset are each retried; the fourth try answers.
    rate_limit_500_and_reset_are_retried_then_answered => row(
        |_| Script::new([Reply::rate_limited(1), Reply::status(500), Reply::ConnectionReset, Reply::text("ok")]),
        answer("ok", StopReason::EndTurn, 4),
    );
    /// A 503 that persists is a server error after the retries.
    http_503_exhausts_the_retries => row(|_| Script::always(Reply::status(503)), Expect::Fails {
        kind: ErrorKind::Server, class: RetryClass::Retryable, calls: EXHAUSTED,
        detail: |_, e| assert_eq!(status(e), 503),
    });
    /// Anthropic's 529 (overloaded) likewise.
    http_529_exhausts_the_retries => row(|_| Script::always(Reply::status(529)), Expect::Fails {
        kind: ErrorKind::Server, class: RetryClass::Retryable, calls: EXHAUSTED,
        detail: |_, e| assert_eq!(status(e), 529),
    });
    /// Resets that persist are a transport failure after the retries.
    resets_exhaust_the_retries_as_transport => row(
        |_| Script::always(Reply::ConnectionReset),
        fails(ErrorKind::Transport, RetryClass::Retryable, EXHAUSTED),
    );
    /// A stream cut short is retryable but not retried by the transport: a stream that has
    /// begun is the caller's to retry (the worker's), so the good reply that would follow is
    /// never asked for.
    a_cut_stream_is_truncated_and_left_to_the_caller => row(
        |_| Script::new([Reply::StreamCut, Reply::text("whole")]),
        fails(ErrorKind::Truncated, RetryClass::Retryable, 1),
    );
    /// A refusal keeps its stop reason and text.
    a_refusal_keeps_its_stop_reason => row(
        |_| Script::always(Reply::Refusal("No.".into())),
        answer("No.", StopReason::Refusal, 1),
    );
    /// A cut at the token limit keeps its stop reason and the partial text.
    max_tokens_keeps_its_stop_reason_and_text => row(
        |_| Script::always(Reply::MaxTokens("{\"decision\":".into())),
        answer("{\"decision\":", StopReason::MaxTokens, 1),
    );
    /// A tool call comes back parsed, with the provider's id.
    a_tool_call_comes_back_parsed => row(
        |_| Script::always(Reply::tool_call("get_weather", json!({"city": "Paris"}))),
        Expect::ToolCall,
    );
    /// A cancel stops a call whose request is never answered.
    cancel_stops_a_hanging_call => Row {
        cancel_after: Some(Duration::from_millis(100)),
        ..row(|_| Script::always(Reply::Hang), fails(ErrorKind::Cancelled, RetryClass::Fatal, 1))
    };
    /// A stream that never ends stops at the response budget, and is not retried.
    an_endless_body_ends_at_the_budget => Row {
        cx: || CallCx::new().with_max_response_bytes(MIB),
        ..row(|_| Script::always(Reply::Endless), Expect::Fails {
            kind: ErrorKind::ResponseTooLarge, class: RetryClass::Fatal, calls: 1, detail: too_large_at_1_mib,
        })
    };
    /// A small answer fits a small budget.
    a_small_answer_fits_a_small_budget => Row {
        cx: || CallCx::new().with_max_response_bytes(64 << 10),
        ..row(|_| Script::always(Reply::text("{\"ok\":true}")), answer("{\"ok\":true}", StopReason::EndTurn, 1))
    };
}

/// The variable whose absence each adapter's configuration error names (`openai-compatible`
/// needs no key, only a base URL: it has no default server).
fn named_when_missing(adapter: &str) -> &'static str {
    if adapter == "openai-compatible" {
        return base_url_var(adapter);
    }
    secret_var(adapter).unwrap_or("auth.json")
}

#[tokio::test]
async fn a_missing_credential_is_a_config_error_naming_it() {
    let home = tempfile::tempdir().unwrap();
    let home_str = home.path().display().to_string();
    for adapter in http_adapters() {
        // Closed port, empty home: nothing to read, nowhere to send (and for
        // `openai-compatible`, no server named).
        let mut env = MapEnv::new()
            .set("HOME", home_str.clone())
            .set("CODEX_HOME", home_str.clone());
        if adapter != "openai-compatible" {
            env = env.set(
                base_url_var(adapter),
                base_url(adapter, "http://127.0.0.1:9"),
            );
        }
        let err = match build(adapter, &env) {
            Err(e) => e,
            Ok(built) => expect_err(bounded(built.call(request(), &CallCx::new())).await),
        };
        assert_kind(&err, ErrorKind::Config);
        let text = err.to_string();
        assert!(
            text.contains(named_when_missing(adapter)),
            "{adapter}: {text}"
        );
        if adapter == "anthropic-oauth" {
            assert!(text.contains(".credentials.json"), "{text}");
        }
        if adapter == "codex-oauth" {
            assert!(text.contains(&format!("{home_str}/auth.json")), "{text}");
        }
    }
}

#[tokio::test]
async fn every_adapter_builds_from_the_process_environment() {
    bounded(async {
        let home = tempfile::tempdir().unwrap();
        let home_str = home.path().display().to_string();
        let missing = [
            ("GEODE_TEST_CHILD", "missing".to_owned()),
            ("HOME", home_str.clone()),
            ("CODEX_HOME", home_str.clone()),
        ];
        assert!(
            run_child(
                &support::cli::test_name(module_path!(), "child_from_env"),
                &missing
            )
            .await
        );
        // One fake per wire kind: the two Messages adapters share their base URL variable.
        let mut fakes = std::collections::BTreeMap::new();
        for kind in Kind::ALL {
            let fake = FakeServer::start(kind, Script::always(Reply::text("from env")));
            fakes.insert(kind.name(), fake.await.unwrap());
        }
        write_codex_auth(home.path(), geode_fakes::chatgpt::DEFAULT_ACCOUNT_ID, 3600);
        let mut vars = vec![
            ("GEODE_TEST_CHILD", "configured".to_owned()),
            ("HOME", home_str.clone()),
            ("CODEX_HOME", home_str.clone()),
            (
                "GEODE_CODEX_AUTH_URL",
                fakes[Kind::ChatGpt.name()].base_url(),
            ),
        ];
        for adapter in http_adapters() {
            let origin = fakes[kind_of(adapter).name()].base_url();
            vars.push((base_url_var(adapter), base_url(adapter, &origin)));
            if let Some(var) = secret_var(adapter) {
                vars.push((var, test_secret(adapter)));
            }
        }
        assert!(
            run_child(
                &support::cli::test_name(module_path!(), "child_from_env"),
                &vars
            )
            .await
        );
        for adapter in http_adapters() {
            let seen = fakes[kind_of(adapter).name()].requests();
            // The Messages adapters differ by their credential header.
            let mine: Vec<_> = support::http::model_calls(adapter, seen)
                .into_iter()
                .filter(|r| match adapter {
                    "anthropic-payg" => r.header("x-api-key").is_some(),
                    "anthropic-oauth" => r.header("x-api-key").is_none(),
                    _ => true,
                })
                .collect();
            assert_eq!(mine.len(), 1, "{adapter}: one call from the child");
            assert_wire_invariants(adapter, &mine);
        }
    })
    .await
}

/// Run only by [`every_adapter_builds_from_the_process_environment`], which sets its
/// environment (tests cannot set variables in-process: `set_var` is unsafe).
#[tokio::test]
#[ignore = "run by every_adapter_builds_from_the_process_environment in a child process"]
async fn child_from_env() {
    let mode = std::env::var("GEODE_TEST_CHILD").expect("run by the parent test only");
    for adapter in http_adapters() {
        match mode.as_str() {
            "missing" => {
                let err = expect_err(build_from_process_env(adapter));
                assert_eq!(err.kind(), ErrorKind::Config, "{adapter}: {err}");
                assert!(
                    err.to_string().contains(named_when_missing(adapter)),
                    "{err}"
                );
            }
            "configured" => {
                let built = build_from_process_env(adapter).unwrap();
                let resp = built.call(request(), &CallCx::new()).await.unwrap();
                assert_eq!(resp.text, "from env", "{adapter}");
            }
            other => panic!("unknown child mode {other}"),
        }
    }
}
