//! The repair tier inside the worker: declared, refused under `require`, never on a cut-off
//! answer, and the one retry still there when repair is not enough.

use crate::agent::task::{Output, RunError, Task};
use crate::agent::worker::{WorkerEnv, run_task};
use crate::ledger::{AnswerMode, CheckFailure, RetryDecision, WorkerCheck};
use crate::llm::request::AdapterResponse;
use crate::llm::scripted::ScriptedAdapter;
use crate::schema::repair::{Repair, RepairKind};
use crate::vocab::{Require, StopReason, StructuredOutputMode};
use serde_json::json;
use std::sync::Arc;

const MALFORMED: &str = "{'decision': 'Accept', 'reason': 'the tests pass',}";
const GOOD: &str = r#"{"decision": "accept", "reason": "the tests pass"}"#;

fn task(repair: bool, require: Require) -> Task {
    Task {
        output: Output::Schema(crate::schema::fixtures::decision()),
        repair,
        require,
        ..Task::new("Decide.")
    }
}

async fn run(
    task: &Task,
    answers: Vec<AdapterResponse>,
    mode: StructuredOutputMode,
) -> (Result<crate::agent::task::Answer, RunError>, usize) {
    let adapter =
        Arc::new(ScriptedAdapter::new(answers.into_iter().map(Ok).collect()).with_mode(mode));
    let result = run_task(task, &WorkerEnv::new(adapter.clone())).await;
    (result, adapter.requests().len())
}

#[tokio::test]
async fn a_repaired_answer_passes_declared_in_the_ledger() {
    let (result, calls) = run(
        &task(true, Require::BestEffort),
        vec![AdapterResponse::text(MALFORMED)],
        StructuredOutputMode::JsonMode,
    )
    .await;
    let answer = result.unwrap();
    assert_eq!(calls, 1);
    assert_eq!(
        answer.value,
        Some(json!({"decision": "accept", "reason": "the tests pass"}))
    );
    let ledger = &answer.ledger;
    assert_eq!(ledger.answer_mode, AnswerMode::Repaired);
    assert_eq!(
        ledger.repairs,
        [
            Repair::new(RepairKind::SingleQuotes, "/decision"),
            Repair::new(RepairKind::SingleQuotes, "/reason"),
            Repair::new(RepairKind::TrailingCommas, ""),
            Repair::new(RepairKind::EnumCase, "/decision"),
        ]
    );
    assert_eq!(ledger.worker_check, WorkerCheck::Pass);
    assert!(ledger.full_validation.as_ref().unwrap().valid);
    assert_eq!(ledger.retry, RetryDecision::FirstPassed);
    assert!(
        ledger.summary().contains("repaired=4"),
        "{}",
        ledger.summary()
    );
}

#[tokio::test]
async fn without_repair_the_same_answer_is_retried_then_invalid() {
    let (result, calls) = run(
        &task(false, Require::BestEffort),
        vec![
            AdapterResponse::text(MALFORMED),
            AdapterResponse::text(MALFORMED),
        ],
        StructuredOutputMode::JsonMode,
    )
    .await;
    let Err(RunError::Invalid { last, .. }) = result else {
        panic!("{result:?}");
    };
    assert_eq!(calls, 2);
    assert!(last.ledger.repairs.is_empty());
    assert_eq!(last.ledger.answer_mode, AnswerMode::AsWritten);
}

#[tokio::test]
async fn require_wired_refuses_a_repaired_answer_and_retries() {
    let (result, calls) = run(
        &task(true, Require::Wired),
        vec![
            AdapterResponse::text(MALFORMED),
            AdapterResponse::text(GOOD),
        ],
        StructuredOutputMode::Hint,
    )
    .await;
    let answer = result.unwrap();
    assert_eq!(calls, 2);
    assert!(answer.ledger.repairs.is_empty());
    let RetryDecision::Ran { trigger } = &answer.ledger.retry else {
        panic!("{:?}", answer.ledger.retry);
    };
    assert!(
        trigger.contains("require=wired accepts no repaired answer"),
        "{trigger}"
    );
    let WorkerCheck::Fail {
        reason: CheckFailure::RepairNotAccepted { require, repairs },
    } = &answer.ledger.attempts[0].check
    else {
        panic!("{:?}", answer.ledger.attempts[0].check);
    };
    assert_eq!((*require, repairs.len()), (Require::Wired, 4));
}

#[tokio::test]
async fn require_enforced_fails_an_answer_that_needs_repair_twice() {
    let (result, _) = run(
        &task(true, Require::Enforced),
        vec![
            AdapterResponse::text(MALFORMED),
            AdapterResponse::text(MALFORMED),
        ],
        StructuredOutputMode::Strict,
    )
    .await;
    let Err(RunError::Invalid { message, last }) = result else {
        panic!("{result:?}");
    };
    assert!(
        message.contains("require=enforced accepts no repaired answer"),
        "{message}"
    );
    assert!(
        last.value.is_none(),
        "a refused repair leaves no value: {:?}",
        last.value
    );
    assert!(last.ledger.repairs.is_empty());
}

#[tokio::test]
async fn a_truncated_answer_is_not_repaired() {
    let cut = AdapterResponse {
        stop_reason: StopReason::MaxTokens,
        ..AdapterResponse::text(r#"{"decision": "accept", "reason": "the tests pass""#)
    };
    let (result, calls) = run(
        &task(true, Require::BestEffort),
        vec![cut],
        StructuredOutputMode::JsonMode,
    )
    .await;
    let Err(e) = result else { panic!("{result:?}") };
    let last = e.last().unwrap();
    assert_eq!(calls, 1, "a truncated answer is not retried either");
    assert!(last.ledger.repairs.is_empty());
    assert!(matches!(
        last.ledger.worker_check,
        WorkerCheck::Fail {
            reason: CheckFailure::FailedRun { .. }
        }
    ));
}

#[tokio::test]
async fn when_repair_is_not_enough_the_retry_still_runs() {
    let (result, calls) = run(
        &task(true, Require::BestEffort),
        vec![
            AdapterResponse::text("{'decision': 'accept'}"),
            AdapterResponse::text(GOOD),
        ],
        StructuredOutputMode::JsonMode,
    )
    .await;
    let answer = result.unwrap();
    assert_eq!(calls, 2);
    assert!(answer.ledger.repairs.is_empty());
    assert!(matches!(answer.ledger.retry, RetryDecision::Ran { .. }));
}
