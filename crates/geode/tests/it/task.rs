//! The typed core: a `Task` runs to `Result<Answer, RunError>`, each failure a variant with its
//! typed source and a scrubbed `Display`; the process protocol converts `WorkerRequest` into a
//! `Task` at the edge and names the GEODE fields it does not act on.

use geode::agent::worker::{WorkerEnv, run_task};
use geode::llm::call::AdapterError;
use geode::llm::request::AdapterResponse;
use geode::llm::scripted::ScriptedAdapter;
use geode::protocol::{WorkerError, WorkerRequest, run_worker};
use geode::schema::{ResponseSchema, TextConstraint};
use geode::vocab::{ErrorKind, Require};
use geode::{Failure, Output, Refusal, Route, RunError, Task};
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
    let RunError::Refused { why, reason, last } = &err else {
        panic!("expected a refusal, got {err:?}");
    };
    assert_eq!(*why, Refusal::RequireUnmet);
    assert!(reason.starts_with("require=enforced"), "{reason}");
    assert!(last.ledger.attempts.is_empty());
    assert!(adapter.requests().is_empty());
}

/// A constraint that does not compile is the caller's mistake, not the route's: a refusal of its
/// own kind, a usage failure like the unmet `require`, and no call.
#[tokio::test]
async fn an_unusable_constraint_is_its_own_refusal() {
    let mut task = Task::new("Decide.");
    task.output = Output::Constraint(TextConstraint::Regex("(".into()));
    let adapter = Arc::new(ScriptedAdapter::new(vec![]));
    let err = run_task(&task, &WorkerEnv::new(adapter.clone()))
        .await
        .unwrap_err();
    let RunError::Refused { why, reason, .. } = &err else {
        panic!("expected a refusal, got {err:?}");
    };
    assert_eq!(*why, Refusal::UnusableConstraint, "{reason}");
    assert_eq!(err.failure(), Failure::Usage);
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

mod caller_tools {
    //! Tools the caller runs (a gateway's client): offered with the schema, calls handed back
    //! with valid arguments, invalid ones sent back to the model, the conversation continued
    //! from the results, and a route that takes no tools refusing them rather than dropping.
    use super::*;
    use geode::agent::tools::ToolRegistryError;
    use geode::ledger::{RetryDecision, WorkerCheck};
    use geode::llm::request::{ContentBlock, Message, Role, ToolSpec, ToolUse};
    use geode::vocab::StopReason;
    use geode::vocab::TerminationReason;

    fn weather() -> ToolSpec {
        ToolSpec {
            name: "get_weather".into(),
            description: "the weather in a city".into(),
            input_schema: json!({
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "additionalProperties": false
            }),
        }
    }

    fn call(id: &str, input: serde_json::Value) -> AdapterResponse {
        AdapterResponse {
            tool_uses: vec![ToolUse {
                id: id.into(),
                name: "get_weather".into(),
                input,
            }],
            stop_reason: StopReason::ToolUse,
            ..AdapterResponse::default()
        }
    }

    fn task_with_tools() -> Task {
        let mut task = schema_task();
        task.tools = vec![weather()];
        task
    }

    #[tokio::test]
    async fn a_valid_call_ends_the_turn_for_the_caller_with_nothing_checked_yet() {
        let adapter = Arc::new(ScriptedAdapter::new(vec![Ok(call(
            "c1",
            json!({"city": "Oslo"}),
        ))]));
        let answer = run_task(&task_with_tools(), &WorkerEnv::new(adapter.clone()))
            .await
            .unwrap();
        assert_eq!(answer.termination, TerminationReason::CallerToolCalls);
        assert_eq!(answer.tool_calls.len(), 1);
        assert_eq!(answer.tool_calls[0].input, json!({"city": "Oslo"}));
        assert_eq!(answer.value, None);
        assert_eq!(answer.ledger.caller_tool_calls, 1);
        assert_eq!(answer.ledger.worker_check, WorkerCheck::NotChecked);
        assert_eq!(answer.ledger.retry, RetryDecision::NotNeeded);
        assert!(answer.ledger.summary().contains("caller_tool_calls=1"));
        let req = &adapter.requests()[0];
        assert_eq!(req.tools, vec![weather()]);
        assert!(
            req.response_schema.is_some(),
            "the schema travels with the tools"
        );
    }

    #[tokio::test]
    async fn an_invalid_call_goes_back_to_the_model_and_only_a_valid_one_reaches_the_caller() {
        let adapter = Arc::new(ScriptedAdapter::new(vec![
            Ok(call("c1", json!({"city": 5}))),
            Ok(call("c2", json!({"city": "Oslo"}))),
        ]));
        let answer = run_task(&task_with_tools(), &WorkerEnv::new(adapter.clone()))
            .await
            .unwrap();
        assert_eq!(answer.tool_calls.len(), 1);
        assert_eq!(answer.tool_calls[0].id, "c2");
        let second = &adapter.requests()[1];
        let fed_back = second
            .messages
            .iter()
            .flat_map(|m| &m.content)
            .find_map(|b| match b {
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error: true,
                } if tool_use_id == "c1" => Some(content.clone()),
                _ => None,
            })
            .expect("the invalid call's error went back to the model");
        assert!(fed_back.contains("/city"), "{fed_back}");
    }

    #[tokio::test]
    async fn the_conversation_continues_from_the_callers_tool_results() {
        let adapter = Arc::new(ScriptedAdapter::new(vec![Ok(AdapterResponse::text(
            r#"{"decision": "accept"}"#,
        ))]));
        let mut task = task_with_tools();
        task.prompt = String::new();
        task.history = vec![
            Message::user("Decide, after checking the weather."),
            Message::tool_call("c1", "get_weather", json!({"city": "Oslo"})),
            Message::tool_result("c1", r#"{"sky": "clear"}"#, false),
        ];
        let answer = run_task(&task, &WorkerEnv::new(adapter.clone()))
            .await
            .unwrap();
        assert_eq!(answer.value, Some(json!({"decision": "accept"})));
        assert!(answer.tool_calls.is_empty());
        let sent = &adapter.requests()[0].messages;
        assert_eq!(sent, &task.history, "no empty user turn is added");
        assert_eq!(sent.last().unwrap().role, Role::User);
    }

    #[tokio::test]
    async fn a_route_that_takes_no_tools_refuses_them_before_any_call() {
        let adapter = Arc::new(ScriptedAdapter::new(vec![]).named("claude-cli"));
        let err = run_task(&task_with_tools(), &WorkerEnv::new(adapter.clone()))
            .await
            .unwrap_err();
        let RunError::Tools { source, .. } = &err else {
            panic!("{err:?}");
        };
        assert!(matches!(
            source,
            ToolRegistryError::NotTaken { count: 1, .. }
        ));
        assert!(
            err.to_string().contains("claude-cli takes no tools"),
            "{err}"
        );
        assert!(adapter.requests().is_empty());
    }

    #[tokio::test]
    async fn a_tool_whose_schema_does_not_compile_is_a_typed_error() {
        let mut task = task_with_tools();
        task.tools[0].input_schema = json!({"type": 12});
        let err = run_task(&task, &env(vec![])).await.unwrap_err();
        assert!(
            matches!(
                &err,
                RunError::Tools {
                    source: ToolRegistryError::BadInputSchema { .. },
                    ..
                }
            ),
            "{err:?}"
        );
    }
}
