//! End to end through the `geode` binary for each of the seven HTTP adapters, against
//! `geode-fakes` servers on 127.0.0.1: `geode worker` retries a bad first answer once,
//! `geode run` prints the answer and the ledger, and the exit codes (1 invalid after the retry,
//! 3 provider failure without leaking the key, 2 missing credential).

use crate::support;

use geode_fakes::{Reply, Script};
use support::http_cases::*;
use support::{DECIDE, SECRET, good_answer, model_calls, worker_line};

/// 1a: a bad first answer, a good second one: one WorkerResult line, success after the retry.
async fn worker_retries_once(case: Case) {
    let (server, sb) = case
        .serve(Script::new([case.bad(), Reply::Json(good_answer())]))
        .await;
    let out = sb.worker(&worker_line("t-1", case.adapter)).await;
    out.assert_exit(0).assert_hides(SECRET);
    assert_eq!(out.stdout.lines().count(), 1, "{}", out.dump());
    let result = out.json();
    assert_eq!(result["task_id"], "t-1");
    assert_eq!(result["success"], true, "{result}");
    assert_eq!(result["answer"], good_answer(), "{result}");
    let ledger = &result["ledger"];
    assert_eq!(ledger["adapter"], case.adapter, "{ledger}");
    assert_eq!(ledger["retry"]["decision"], "ran", "{ledger}");
    assert_eq!(ledger["attempts"].as_array().unwrap().len(), 2, "{ledger}");
    // A probed server whose answer broke the schema it was said to enforce loses the verdict:
    // the retry goes as a hint, and the ledger says so (hostile_probe.rs).
    let probed = case.adapter == "openai-compatible";
    let mode = if probed { "hint" } else { case.mode };
    assert_eq!(ledger["wire_mode"], mode, "{ledger}");

    let calls = model_calls(&server);
    assert_eq!(calls.len(), 2, "{calls:#?}");
    for (i, call) in calls.iter().enumerate() {
        if !(probed && i == 1) {
            case.assert_schema_on_wire(&call.body);
        }
        case.assert_credential_header(call);
    }
}

/// 1b: `geode run` prints the answer, names the wire mode, and `--json` a WorkerResult.
async fn run_prints_answer_and_ledger(case: Case) {
    let (server, sb) = case.serve(Script::always(Reply::Json(good_answer()))).await;
    let out = sb.run_decision(case.adapter, &[], DECIDE).await;
    out.assert_exit(0).assert_stderr_has(&[
        &format!("wire_mode={}", case.mode),
        &format!("adapter={}", case.adapter),
    ]);
    assert_eq!(out.json(), good_answer(), "{}", out.dump());

    let out = sb.run_decision(case.adapter, &["--json"], DECIDE).await;
    out.assert_exit(0).assert_hides(SECRET);
    let result = out.json();
    assert_eq!(result["success"], true, "{result}");
    assert_eq!(result["answer"], good_answer(), "{result}");
    assert_eq!(result["ledger"]["wire_mode"], case.mode, "{result}");
    assert_eq!(result["ledger"]["retry"]["decision"], "first_passed");
    assert_eq!(model_calls(&server).len(), 2);
}

/// 1b: `--timeout` becomes the request's `timeout_s`: a bad first answer that took over half of
/// it skips the retry, and the ledger says so with the value.
async fn run_timeout_reaches_the_retry_gate(case: Case) {
    let slow_bad = Reply::slow(2_100, case.bad());
    let (server, sb) = case
        .serve(Script::new([slow_bad, Reply::Json(good_answer())]))
        .await;
    let out = sb
        .run_decision(case.adapter, &["--timeout", "4", "--json"], DECIDE)
        .await;
    out.assert_exit(1);
    let result = out.json();
    let retry = &result["ledger"]["retry"];
    assert_eq!(retry["decision"], "skipped", "{result}");
    assert!(
        retry["why"].as_str().unwrap().contains("timeout_s=4"),
        "{retry}"
    );
    assert_eq!(model_calls(&server).len(), 1);
}

/// 1c: always prose → exit 1 after exactly two attempts.
async fn always_invalid_exits_1_after_two_attempts(case: Case) {
    let (server, sb) = case.serve(Script::always(case.bad())).await;
    let out = sb.run_decision(case.adapter, &[], DECIDE).await;
    out.assert_exit(1)
        .assert_stderr_has(&["attempts=2", "retry=ran("]);
    assert!(out.stdout.trim().is_empty(), "{}", out.dump());
    assert_eq!(model_calls(&server).len(), 2);
}

/// 1c: a 401 → exit 3, the error names the adapter and the status, never the key.
async fn unauthorized_exits_3_without_the_key(case: Case) {
    let (_server, sb) = case.serve(Script::always(Reply::status(401))).await;
    let out = sb.run_decision(case.adapter, &[], DECIDE).await;
    out.assert_exit(3).assert_hides(SECRET);
    let error = out.error_line();
    assert!(error.contains(case.adapter), "{error}");
    assert!(error.contains("401"), "{error}");
    // The codex auth file's tokens are secrets too.
    if matches!(case.credential, Credential::CodexHome) {
        out.assert_hides("eyJ");
    }

    let out = sb.worker(&worker_line("t-401", case.adapter)).await;
    out.assert_exit(3).assert_hides(SECRET);
    let result = out.json();
    assert_eq!(result["success"], false);
    let error = result["error"].as_str().unwrap();
    assert!(
        error.contains(case.adapter) && error.contains("401"),
        "{error}"
    );
}

/// 1c: no credential → exit 2 naming what is missing, and no request.
async fn missing_credential_exits_2_naming_it(case: Case) {
    let server = fake(&case, Script::always(Reply::Json(good_answer()))).await;
    let sb = case.sandbox_without_credential(&server);
    let out = sb.run_decision(case.adapter, &[], DECIDE).await;
    let needle = match case.credential {
        Credential::Key(var) => var,
        Credential::OptionalKey(_) => case.base_env,
        Credential::CodexHome => "auth.json",
        Credential::ClaudeToken => "CLAUDE_CODE_OAUTH_TOKEN",
    };
    out.assert_exit(2).assert_stderr_has(&[needle]);
    assert!(model_calls(&server).is_empty(), "{:#?}", server.requests());
}

/// One module per adapter, one test per behaviour above.
macro_rules! adapter_tests {
    ($module:ident, $case:expr) => {
        mod $module {
            use super::*;

            behaviours!($case;
                worker_retries_a_bad_first_answer_once_and_succeeds_with_the_schema_on_the_wire
                    => worker_retries_once,
                run_prints_the_json_answer_and_names_the_wire_mode => run_prints_answer_and_ledger,
                run_timeout_flag_becomes_timeout_s_of_the_retry_gate
                    => run_timeout_reaches_the_retry_gate,
                an_always_invalid_answer_exits_1_after_two_attempts
                    => always_invalid_exits_1_after_two_attempts,
                a_401_exits_3_naming_adapter_and_status_but_not_the_key
                    => unauthorized_exits_3_without_the_key,
                a_missing_credential_exits_2_naming_it_before_any_request
                    => missing_credential_exits_2_naming_it,
            );
        }
    };
}

/// `#[tokio::test] async fn NAME() { BEHAVIOUR(CASE).await }` for each pair.
macro_rules! behaviours {
    ($case:expr; $($name:ident => $behaviour:ident),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            $behaviour($case).await;
        }
    )*};
}

for_each_http_case!(adapter_tests);

/// `openai-compatible` on a server that answers 200 but ignores `json_schema`: `--require
/// enforced` is refused after the probe and before any model call (exit 2, naming the mode);
/// without it the run goes ahead in `hint` mode and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ignoring_server_never_passes_require_enforced() {
    let case = OPENAI_COMPATIBLE;
    let server = geode_fakes::FakeServer::builder(case.kind)
        .script(Script::always(Reply::Json(good_answer())))
        .schema_support(geode_fakes::SchemaSupport::Ignore)
        .start()
        .await
        .unwrap();
    let sb = case.sandbox(&server);
    let out = sb
        .run_decision(case.adapter, &["--require", "enforced"], DECIDE)
        .await;
    out.assert_exit(2)
        .assert_hides(SECRET)
        .assert_stderr_has(&["require=enforced", "hint"]);
    assert!(model_calls(&server).is_empty(), "{:#?}", server.requests());
    let out = sb.run_decision(case.adapter, &[], DECIDE).await;
    out.assert_exit(0).assert_stderr_has(&["wire_mode=hint"]);
    assert_eq!(model_calls(&server).len(), 1);
}
