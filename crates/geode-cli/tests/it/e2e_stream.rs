//! `geode run --stream` end to end through the binary for each of the six HTTP adapters,
//! against `geode-fakes` servers on 127.0.0.1: JSON lines on stdout, partials that never
//! contradict the final value, a `retry` event when the first answer fails, a `final` event with
//! the value and the ledger, and an `error` event with the exit code when the retry fails too.

use crate::support;

use geode_fakes::{Reply, Script};
use serde_json::Value;
use support::http_cases::*;
use support::{SECRET, decision_schema_path, good_answer};

async fn stream(case: Case, script: Script) -> (support::Outcome, Vec<Value>) {
    let server = fake(&case, script).await;
    let sb = case.sandbox(&server);
    let schema = decision_schema_path();
    let out = sb
        .run(case.adapter, &schema, &["--stream", "Decide."])
        .await;
    assert!(!out.stdout.contains(SECRET) && !out.stderr.contains(SECRET));
    let evs = out.json_lines();
    (out, evs)
}

async fn streams_to_a_final_value(case: Case) {
    let (out, evs) = stream(case, Script::always(Reply::Json(good_answer()))).await;
    out.assert_exit(0);
    let last = evs.last().unwrap();
    assert_eq!(last["event"], "final", "{}", out.dump());
    assert_eq!(last["value"], good_answer());
    assert_eq!(last["ledger"]["adapter"], case.adapter);
    assert_eq!(last["ledger"]["wire_mode"], case.mode);
    for e in &evs[..evs.len() - 1] {
        assert_eq!(e["event"], "partial", "{e}");
        let guarantee = if case.mode == "strict" {
            "enforced"
        } else {
            "unchecked"
        };
        assert_eq!(e["guarantee"], guarantee, "{e}");
        for p in e["complete"].as_array().unwrap() {
            let p = p.as_str().unwrap();
            assert_eq!(
                e["value"].pointer(p),
                good_answer().pointer(p),
                "{p} in {e}"
            );
        }
    }
}

async fn a_failed_first_answer_shows_the_retry(case: Case) {
    let (out, evs) = stream(case, Script::new([case.bad(), Reply::Json(good_answer())])).await;
    out.assert_exit(0);
    let kinds: Vec<&str> = evs
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .filter(|k| *k != "partial")
        .collect();
    assert_eq!(kinds, ["retry", "final"], "{}", out.dump());
    let retry = evs.iter().find(|e| e["event"] == "retry").unwrap();
    assert!(!retry["reason"].as_str().unwrap().is_empty());
    assert_eq!(evs.last().unwrap()["ledger"]["retry"]["decision"], "ran");
}

async fn invalid_after_the_retry_ends_with_an_error_event(case: Case) {
    let (out, evs) = stream(case, Script::always(case.bad())).await;
    out.assert_exit(1);
    let last = evs.last().unwrap();
    assert_eq!(last["event"], "error", "{}", out.dump());
    assert_eq!(last["exit_code"], 1);
    assert_eq!(last["ledger"]["attempts"].as_array().unwrap().len(), 2);
}

macro_rules! stream_tests {
    ($module:ident, $case:expr) => {
        mod $module {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn run_stream_prints_json_lines_ending_in_the_final_value() {
                streams_to_a_final_value($case).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn run_stream_shows_the_retry() {
                a_failed_first_answer_shows_the_retry($case).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn run_stream_ends_with_an_error_event_and_exit_1() {
                invalid_after_the_retry_ends_with_an_error_event($case).await;
            }
        }
    };
}

for_each_http_case!(stream_tests);
