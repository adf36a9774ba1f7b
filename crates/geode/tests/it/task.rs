//! The typed core: a `Task` runs to `Result<Answer, RunError>`, each failure a variant with its
//! typed source and a scrubbed `Display`; the process protocol converts `WorkerRequest` into a
//! `Task` at the edge and names the GEODE fields it does not act on.

use geode::agent::protocol::{WorkerError, WorkerRequest, run_worker};
use geode::agent::task::{Output, Route, RunError, Task};
use geode::agent::worker::{WorkerEnv, run_task};
use geode::llm::call::AdapterError;
use geode::llm::request::AdapterResponse;
use geode::llm::scripted::ScriptedAdapter;
use geode::schema::{ResponseSchema, TextConstraint};
use geode::vocab::{ErrorKind, Require};
use serde_json::json;
use std::error::Error as _;
use std::sync::Arc;
use std::time::Duration;

fn decision() -> ResponseSchema {
    ResponseSchema::from_value(json!({
        "type": "object",
        "properties": {"decision": {"type": "string", "enum": ["accept", "reject"]}},
        "required": ["decision"],
        "additionalProperties": false
    }))
    .unwrap()
}

fn env(outcomes: Vec<Result<AdapterResponse, AdapterError>>) -> WorkerEnv {
    WorkerEnv::new(Arc::new(ScriptedAdapter::new(outcomes)))
}

fn schema_task() -> Task {
    let mut task = Task::new("Decide.");
    task.output = Output::Schema(decision());
    task
}

#[tokio::test]
async fn a_valid_answer_is_ok_with_its_value_usage_and_ledger() {
    let answer = run_task(
        &schema_task(),
        &env(vec![Ok(AdapterResponse::text(r#"{"decision": "accept"}"#))]),
    )
    .await
    .unwrap();
    assert_eq!(answer.value, Some(json!({"decision": "accept"})));
    assert_eq!(answer.ledger.attempts.len(), 1);
}

#[tokio::test]
async fn an_adapter_failure_keeps_the_adapter_error_as_its_source_and_scrubs_display() {
    let secret = "sk-proj-task-test-Jq8Rv2Nx6Kw4Tz9Hb3Mc";
    // As an adapter does with the key it was built with.
    geode::secret::register(secret);
    let auth = AdapterError::Auth {
        adapter: "scripted".into(),
        status: 401,
        message: format!("bad key {secret}"),
    };
    let err = run_task(&schema_task(), &env(vec![Err(auth)]))
        .await
        .unwrap_err();
    let RunError::Adapter { source, last, .. } = &err else {
        panic!("expected an adapter error, got {err:?}");
    };
    assert_eq!(source.kind(), ErrorKind::Auth);
    let chained = err.source().expect("a source");
    assert!(chained.to_string().contains("authentication failed"));
    assert!(!err.to_string().contains(secret), "{err}");
    assert!(!format!("{err:?}").contains(secret));
    assert_eq!(last.ledger.attempts.len(), 1, "auth is not retried");
}

#[tokio::test]
async fn an_answer_still_invalid_after_the_retry_is_invalid_with_both_attempts() {
    let bad = || Ok(AdapterResponse::text(r#"{"decision": "maybe"}"#));
    let err = run_task(&schema_task(), &env(vec![bad(), bad()]))
        .await
        .unwrap_err();
    let RunError::Invalid { message, last } = &err else {
        panic!("expected invalid, got {err:?}");
    };
    assert!(message.starts_with("answer failed the check"), "{message}");
    assert_eq!(last.ledger.attempts.len(), 2);
    assert_eq!(last.value, Some(json!({"decision": "maybe"})));
}

#[tokio::test]
async fn an_uncompilable_schema_is_a_schema_error_before_any_call() {
    let mut task = Task::new("Decide.");
    task.output = Output::Schema(
        ResponseSchema::from_value(json!({"type": "object", "properties": {"a": {"type": 5}}}))
            .unwrap(),
    );
    let adapter = Arc::new(ScriptedAdapter::new(vec![]));
    let err = run_task(&task, &WorkerEnv::new(adapter.clone()))
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::Schema { .. }), "{err:?}");
    assert!(err.source().is_some());
    assert!(adapter.requests().is_empty());
}

#[tokio::test]
async fn a_constraint_that_require_cannot_have_on_this_adapter_is_refused_before_any_call() {
    let mut task = Task::new("Decide.");
    task.output = Output::Constraint(TextConstraint::Choice(vec!["a".into(), "b".into()]));
    task.require = Require::Enforced;
    let adapter = Arc::new(ScriptedAdapter::new(vec![]));
    let err = run_task(&task, &WorkerEnv::new(adapter.clone()))
        .await
        .unwrap_err();
    let RunError::Refused { reason, last } = &err else {
        panic!("expected a refusal, got {err:?}");
    };
    assert!(reason.starts_with("require=enforced"), "{reason}");
    assert!(last.ledger.attempts.is_empty());
    assert!(adapter.requests().is_empty());
}

#[test]
fn a_request_becomes_a_task_with_durations_and_a_route() {
    let mut req = WorkerRequest::new("t", "Decide.");
    req.args.insert("pr".into(), json!(7));
    req.timeout_s = 1.5;
    req.time_budget_s = 0.25;
    req.model = "gpt-5-mini".into();
    req.response_schema = Some(decision());
    let task = req.task().unwrap();
    assert_eq!(task.budgets.timeout, Duration::from_millis(1500));
    assert_eq!(task.budgets.time_budget, Some(Duration::from_millis(250)));
    assert_eq!(task.route, Route::Model("gpt-5-mini".into()));
    assert_eq!(task.prompt, "Decide.\n\nParameters: {\"pr\":7}");
    assert_eq!(task.output, Output::Schema(decision()));

    req.source = "anthropic-payg".into();
    let named = req.task().unwrap().route;
    assert_eq!(
        named,
        Route::Adapter {
            name: "anthropic-payg".into(),
            model: Some("gpt-5-mini".into())
        }
    );
    req.adapter = "local".into();
    assert_eq!(req.task().unwrap().route.adapter(), Some("local"));
}

#[test]
fn a_request_that_cannot_run_is_a_typed_error() {
    let mut req = WorkerRequest::new("t", "x");
    req.timeout_s = f64::NAN;
    assert!(matches!(req.task(), Err(WorkerError::InvalidTimeout(_))));
    req.timeout_s = 10.0;
    req.response_schema = Some(decision());
    req.text_constraint = Some(TextConstraint::Regex("a+".into()));
    assert_eq!(req.task().unwrap_err(), WorkerError::SchemaAndConstraint);
    req.response_schema = None;
    req.text_constraint = Some(TextConstraint::Regex("(".into()));
    assert!(matches!(req.task(), Err(WorkerError::Constraint(_))));
}

#[tokio::test]
async fn the_ledger_names_the_reference_fields_the_worker_carried_without_acting_on_them() {
    let mut req: WorkerRequest = serde_json::from_value(json!({
        "task_id": "t",
        "description": "Say hi.",
        "isolation": "worktree",
        "toolkit": "default",
        "source": "payg",
        "resume": true,
        "brand_new_field": 1
    }))
    .unwrap();
    req.timeout_s = 10.0;
    let result = run_worker(&req, &env(vec![Ok(AdapterResponse::text("hi"))])).await;
    assert!(result.success, "{result:?}");
    assert_eq!(
        result.ledger.ignored_request_fields,
        ["source", "isolation", "toolkit", "resume"]
    );
    assert_eq!(result.ledger.unknown_request_fields, ["brand_new_field"]);
    let plain = run_worker(
        &WorkerRequest::new("t", "Say hi."),
        &env(vec![Ok(AdapterResponse::text("hi"))]),
    )
    .await;
    assert!(plain.ledger.ignored_request_fields.is_empty());
}
