//! The worker: Rust twins of GEODE's `TestNeedsSchemaRetry`, `TestBuildSchemaRetryPrompt`
//! and `TestSchemaAwareRetryWiring` (its worker tests,
//! docs/reference.md#validation-and-the-one-retry), plus geode's additions.

use geode::agent::agent_loop::AgenticResult;
use geode::agent::answer_check::{build_schema_retry_prompt, needs_schema_retry};
use geode::agent::worker::WorkerEnv;
use geode::ledger::{CheckFailure, RetryDecision, WorkerCheck};
use geode::llm::call::AdapterError;
use geode::llm::request::{AdapterResponse, ContentBlock, Role};
use geode::llm::scripted::{ScriptedAdapter, Step};
use geode::protocol::{WorkerError, WorkerRequest, WorkerResult, parse_request_line, run_worker};
use geode::schema::ResponseSchema;
use geode::schema::validate::Validation;
use geode::vocab::StopReason;
use geode::vocab::TerminationReason as T;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn schema() -> ResponseSchema {
    ResponseSchema::from_value(json!({
        "type": "object",
        "properties": {"candidate_id": {"type": "string"}, "score": {"type": "number"}},
        "required": ["candidate_id", "score"]
    }))
    .unwrap()
}

fn result(text: &str, reason: T) -> AgenticResult {
    AgenticResult {
        text: text.into(),
        termination_reason: reason,
        ..AgenticResult::default()
    }
}

const GOOD: &str = r#"{"candidate_id": "c1", "score": 0.7}"#;

// ---- TestNeedsSchemaRetry ----

#[test]
fn needs_retry_on_none_empty_whitespace_prose_truncated_missing_key_and_error() {
    let s = schema();
    assert!(needs_schema_retry(None, &s));
    for text in [
        "",
        "   \n ",
        "I think c1 is best.",
        r#"{"candidate_id": "c1", "score""#,
        r#"{"candidate_id": "c1"}"#,
    ] {
        assert!(
            needs_schema_retry(Some(&result(text, T::Natural)), &s),
            "{text:?}"
        );
    }
    let mut errored = result(GOOD, T::Natural);
    errored.error = Some("boom".into());
    assert!(needs_schema_retry(Some(&errored), &s));
}

#[test]
fn failure_terminations_retry_even_with_valid_json() {
    for reason in [
        T::ModelActionRequired,
        T::ContextExhausted,
        T::LlmError,
        T::BillingError,
        T::CostBudgetExceeded,
        T::ConvergenceDetected,
    ] {
        assert!(
            needs_schema_retry(Some(&result(GOOD, reason)), &schema()),
            "{reason}"
        );
    }
}

#[test]
fn happy_path_and_json_in_prose_need_no_retry() {
    assert!(!needs_schema_retry(
        Some(&result(GOOD, T::Natural)),
        &schema()
    ));
    let prose = format!("Here is my answer:\n```json\n{GOOD}\n```\nThanks.");
    assert!(!needs_schema_retry(
        Some(&result(&prose, T::Natural)),
        &schema()
    ));
}

#[test]
fn a_schema_without_required_accepts_an_empty_object() {
    let s = ResponseSchema::from_value(json!({"type": "object"})).unwrap();
    assert!(!needs_schema_retry(Some(&result("{}", T::Natural)), &s));
}

#[test]
fn a_top_level_array_retries() {
    assert!(needs_schema_retry(
        Some(&result(r#"["c1", 0.7]"#, T::Natural)),
        &schema()
    ));
}

#[test]
fn the_four_no_retry_reasons_do_not_retry() {
    for reason in [
        T::InputBlocked,
        T::UserCancelled,
        T::UserClarificationNeeded,
        T::ExternalVerificationRequired,
    ] {
        assert!(
            !needs_schema_retry(Some(&result("prose", reason)), &schema()),
            "{reason}"
        );
    }
}

// ---- TestBuildSchemaRetryPrompt ----

#[test]
fn empty_feedback_says_empty_and_shows_schema_and_braces() {
    let p = build_schema_retry_prompt(&schema(), Some("  "), &[], 0, false);
    assert!(p.starts_with("Your previous response was empty."));
    assert!(p.contains("start with `{`") && p.contains("end with `}`"));
    assert!(p.contains("\"candidate_id\""));
    assert!(p.contains("Required keys: ['candidate_id', 'score']."));
    assert!(build_schema_retry_prompt(&schema(), None, &[], 0, false).contains("was empty"));
}

#[test]
fn prose_feedback_says_did_not_parse_with_the_excerpt() {
    let p = build_schema_retry_prompt(&schema(), Some("I pick c1."), &[], 0, false);
    assert!(p.contains("did not parse"));
    assert!(p.contains("'I pick c1.'"));
}

#[test]
fn long_answers_are_cut_at_800_characters() {
    let long = "x".repeat(900);
    let p = build_schema_retry_prompt(&schema(), Some(&long), &[], 0, false);
    assert!(p.contains("…(truncated)"));
    assert!(!p.contains(&"x".repeat(801)));
}

#[test]
fn schemas_over_4096_characters_are_cut() {
    let props: serde_json::Map<_, _> = (0..300)
        .map(|i| (format!("property_{i}"), json!({"type": "string"})))
        .collect();
    let big = ResponseSchema::from_value(json!({"type": "object", "properties": props})).unwrap();
    let p = build_schema_retry_prompt(&big, Some(""), &[], 0, false);
    assert!(p.contains("schema truncated"));
}

// ---- TestSchemaAwareRetryWiring ----

fn request(schema: Option<ResponseSchema>) -> WorkerRequest {
    WorkerRequest {
        response_schema: schema,
        timeout_s: 100.0,
        ..WorkerRequest::new("t1", "Pick the best candidate.")
    }
}

/// Plain-text answers, in order.
fn texts(answers: &[&str]) -> Vec<Result<AdapterResponse, AdapterError>> {
    answers
        .iter()
        .map(|a| Ok(AdapterResponse::text(*a)))
        .collect()
}

async fn run(
    req: &WorkerRequest,
    outcomes: Vec<Result<AdapterResponse, AdapterError>>,
) -> (WorkerResult, Arc<ScriptedAdapter>) {
    let adapter = Arc::new(ScriptedAdapter::new(outcomes));
    let r = run_worker(req, &WorkerEnv::new(adapter.clone())).await;
    (r, adapter)
}

#[tokio::test]
async fn retries_once_when_the_first_answer_is_empty_and_succeeds() {
    let (r, a) = run(&request(Some(schema())), texts(&["", GOOD])).await;
    assert!(r.success, "{r:?}");
    assert_eq!(a.requests().len(), 2);
    assert!(matches!(r.ledger.retry, RetryDecision::Ran { .. }));
    assert_eq!(r.ledger.attempts.len(), 2);
    assert_eq!(r.answer, Some(json!({"candidate_id": "c1", "score": 0.7})));
}

#[tokio::test]
async fn no_retry_when_the_first_answer_passes() {
    let (r, a) = run(
        &request(Some(schema())),
        vec![Ok(AdapterResponse::text(GOOD))],
    )
    .await;
    assert!(r.success);
    assert_eq!(a.requests().len(), 1);
    assert_eq!(r.ledger.retry, RetryDecision::FirstPassed);
    assert_eq!(r.ledger.worker_check, WorkerCheck::Pass);
    assert!(r.ledger.full_validation.as_ref().unwrap().valid);
}

#[tokio::test]
async fn no_retry_without_a_schema() {
    let (r, a) = run(&request(None), vec![Ok(AdapterResponse::text("prose"))]).await;
    assert!(r.success);
    assert_eq!(a.requests().len(), 1);
    assert_eq!(r.ledger.retry, RetryDecision::NotNeeded);
}

#[tokio::test]
async fn retry_is_capped_at_one_and_two_empty_answers_fail() {
    let (r, a) = run(&request(Some(schema())), texts(&["", "", GOOD])).await;
    assert!(!r.success);
    assert_eq!(a.requests().len(), 2);
    assert_eq!(a.remaining(), 1);
}

#[tokio::test]
async fn no_retry_for_intended_endings_blocked_and_cancelled() {
    // input_blocked through the loop's input guard
    let adapter = Arc::new(ScriptedAdapter::new(vec![Ok(AdapterResponse::text(GOOD))]));
    let mut env = WorkerEnv::new(adapter.clone());
    env.input_guard = Some(Arc::new(|_| Some("blocked".into())));
    let r = run_worker(&request(Some(schema())), &env).await;
    assert_eq!(r.termination_reason, T::InputBlocked);
    assert!(adapter.requests().is_empty());
    assert!(matches!(r.ledger.retry, RetryDecision::Skipped { .. }));
    assert!(r.success, "intended endings succeed as in the reference");

    // user_cancelled through the cancellation token
    let adapter = Arc::new(ScriptedAdapter::new(vec![Ok(AdapterResponse::text("x"))]));
    let env = WorkerEnv::new(adapter.clone());
    env.cancel.cancel();
    let r = run_worker(&request(Some(schema())), &env).await;
    assert_eq!(r.termination_reason, T::UserCancelled);
    assert!(matches!(r.ledger.retry, RetryDecision::Skipped { .. }));
    assert!(adapter.requests().is_empty());
}

/// An adapter answering prose after `delay`, then [`GOOD`] at once.
fn prose_after(delay: Duration) -> Arc<ScriptedAdapter> {
    Arc::new(ScriptedAdapter::with_steps(vec![
        Step {
            outcome: Ok(AdapterResponse::text("prose")),
            delay,
        },
        Step {
            outcome: Ok(AdapterResponse::text(GOOD)),
            delay: Duration::ZERO,
        },
    ]))
}

#[tokio::test(start_paused = true)]
async fn retry_is_skipped_when_the_first_run_took_80_percent_of_the_timeout() {
    let adapter = prose_after(Duration::from_secs(80));
    let r = run_worker(&request(Some(schema())), &WorkerEnv::new(adapter.clone())).await;
    assert_eq!(adapter.requests().len(), 1);
    assert!(!r.success, "geode reports the unchecked prose as a failure");
    match &r.ledger.retry {
        RetryDecision::Skipped { why } => assert!(why.contains("50%"), "{why}"),
        other => panic!("expected skipped, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn retry_runs_when_the_first_run_took_under_half_the_timeout() {
    let adapter = prose_after(Duration::from_secs(49));
    let r = run_worker(&request(Some(schema())), &WorkerEnv::new(adapter.clone())).await;
    assert_eq!(adapter.requests().len(), 2);
    assert!(r.success);
}

#[tokio::test]
async fn the_retry_prompt_carries_the_feedback_and_the_first_prompt_the_task() {
    let (_, a) = run(&request(Some(schema())), texts(&["", GOOD])).await;
    let reqs = a.requests();
    let first_user = reqs[0].messages[0].text();
    assert!(first_user.contains("Pick the best candidate."));
    let last = reqs[1].messages.last().unwrap();
    assert_eq!(last.role, Role::User);
    let feedback = last.text();
    assert!(feedback.contains("start with `{`"));
    assert!(feedback.contains("candidate_id") && feedback.contains("score"));
    // the first attempt stays in the history
    assert!(
        reqs[1]
            .messages
            .iter()
            .any(|m| m.content.iter().any(|b| matches!(
                b, ContentBlock::Text { text } if text.contains("Pick the best candidate.")
            )))
    );
}

// ---- geode beyond GEODE ----

#[tokio::test]
async fn full_validation_retries_with_the_concrete_errors_and_validates_the_retry() {
    let decision = ResponseSchema::from_value(json!({
        "type": "object",
        "properties": {"decision": {"enum": ["accept", "reject"]}, "reason": {"type": "string"}},
        "required": ["decision", "reason"]
    }))
    .unwrap();
    let (r, a) = run(
        &request(Some(decision.clone())),
        texts(&[
            r#"{"decision":"Accept","reason":"fine"}"#,
            r#"{"decision":"maybe","reason":"fine"}"#,
        ]),
    )
    .await;
    assert!(!r.success, "the retried answer is validated too");
    let feedback = a.requests()[1].messages.last().unwrap().text();
    assert!(feedback.contains("/decision"), "{feedback}");
    assert!(
        feedback.contains("(allowed: \"accept\", \"reject\")"),
        "allowed values are listed: {feedback}"
    );
    assert!(matches!(
        r.ledger.worker_check,
        WorkerCheck::Fail {
            reason: CheckFailure::Invalid { .. }
        }
    ));
    assert!(!r.ledger.full_validation.as_ref().unwrap().valid);

    // required-keys mode accepts the wrong enum value, as GEODE does
    let mut req = request(Some(decision));
    req.validation = Validation::RequiredKeys;
    let (r, a) = run(
        &req,
        vec![Ok(AdapterResponse::text(
            r#"{"decision":"Accept","reason":"x"}"#,
        ))],
    )
    .await;
    assert!(r.success);
    assert_eq!(a.requests().len(), 1);
    assert!(
        !r.ledger.full_validation.as_ref().unwrap().valid,
        "the ledger still tells"
    );
}

#[tokio::test]
async fn no_retry_for_refusal_truncation_and_schema_rejection() {
    let cases = vec![
        Ok(AdapterResponse {
            text: "no".into(),
            stop_reason: StopReason::Refusal,
            ..AdapterResponse::default()
        }),
        Ok(AdapterResponse {
            text: "{\"candidate_id\":".into(),
            stop_reason: StopReason::MaxTokens,
            ..AdapterResponse::default()
        }),
        Err(AdapterError::SchemaRejected {
            adapter: "scripted".into(),
            status: 400,
            code: "invalid_json_schema".into(),
            message: "bad schema".into(),
        }),
    ];
    for outcome in cases {
        let (r, a) = run(
            &request(Some(schema())),
            vec![outcome, Ok(AdapterResponse::text(GOOD))],
        )
        .await;
        assert!(!r.success);
        assert_eq!(a.requests().len(), 1, "{:?}", r.ledger.retry);
        assert!(matches!(r.ledger.retry, RetryDecision::Skipped { .. }));
    }
}

#[tokio::test]
async fn usage_of_both_attempts_is_kept() {
    let with_usage = |text: &str, n: u64| {
        Ok(AdapterResponse {
            text: text.into(),
            usage: geode::vocab::Usage {
                input_tokens: n,
                output_tokens: n,
                ..Default::default()
            },
            ..AdapterResponse::default()
        })
    };
    let (r, _) = run(
        &request(Some(schema())),
        vec![with_usage("", 10), with_usage(GOOD, 5)],
    )
    .await;
    assert_eq!(r.prompt_tokens, 15);
    assert_eq!(r.ledger.attempts[0].usage.input_tokens, 10);
    assert_eq!(r.ledger.attempts[1].usage.input_tokens, 5);
}

#[tokio::test]
async fn an_unusable_schema_is_a_failed_result_not_a_panic() {
    let bad = ResponseSchema::from_value(json!({"type": 5})).unwrap();
    let (r, a) = run(&request(Some(bad)), vec![]).await;
    assert!(!r.success);
    assert!(r.error.unwrap().contains("unusable response_schema"));
    assert!(a.requests().is_empty());
}

// ---- the request/result lines ----

#[test]
fn worker_request_round_trips_with_reference_names_and_defaults() {
    let line =
        r#"{"task_id":"t","description":"d","response_schema":{"type":"object"},"future_field":1}"#;
    let req = parse_request_line(line).unwrap();
    assert_eq!(req.timeout_s, 600.0);
    assert_eq!(req.subagent_max_tokens, 32768);
    assert_eq!(req.effort, "high");
    assert_eq!(req.unknown.keys().collect::<Vec<_>>(), vec!["future_field"]);
    let v = serde_json::to_value(&req).unwrap();
    for key in [
        "task_id",
        "task_type",
        "args",
        "denied_tools",
        "model",
        "provider",
        "timeout_s",
        "time_budget_s",
        "thinking_budget",
        "agent_allowed_tools",
        "response_schema",
        "emit_activity",
        "resume",
    ] {
        assert!(v.get(key).is_some(), "{key} is emitted");
    }
    assert!(v.get("future_field").is_none());
    let back: WorkerRequest = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(serde_json::to_value(&back).unwrap(), v);
    let none = parse_request_line(r#"{"task_id":"t"}"#).unwrap();
    assert!(none.response_schema.is_none());
    assert_eq!(
        serde_json::to_value(&none).unwrap()["response_schema"],
        serde_json::Value::Null
    );
}

#[test]
fn bad_request_lines_are_typed_errors() {
    assert_eq!(parse_request_line(""), Err(WorkerError::EmptyInput));
    assert!(matches!(
        parse_request_line("{nope"),
        Err(WorkerError::InvalidJson(_))
    ));
    assert_eq!(parse_request_line("[1]"), Err(WorkerError::NotAnObject));
    assert_eq!(
        parse_request_line(r#"{"description":"x"}"#),
        Err(WorkerError::MissingTaskId)
    );
    assert!(matches!(
        parse_request_line(r#"{"task_id":"t","response_schema":[1]}"#),
        Err(WorkerError::BadField(_))
    ));
}

#[test]
fn worker_result_omits_a_missing_error_and_round_trips() {
    let r = WorkerResult {
        task_id: "t".into(),
        success: true,
        ..WorkerResult::default()
    };
    let v = serde_json::to_value(&r).unwrap();
    assert!(v.get("error").is_none());
    for key in [
        "task_id",
        "success",
        "output",
        "summary",
        "duration_ms",
        "prompt_tokens",
        "completion_tokens",
        "usd_spent",
        "ledger",
    ] {
        assert!(v.get(key).is_some(), "{key}");
    }
    assert_eq!(serde_json::from_value::<WorkerResult>(v).unwrap(), r);
    let f = WorkerResult::failed("t", "x".repeat(1000));
    assert!(f.summary.chars().count() <= 500);
}

#[tokio::test]
async fn a_choice_on_a_hosted_adapter_is_checked_locally_retried_and_named_as_a_residual() {
    let req = WorkerRequest {
        text_constraint: Some(geode::schema::TextConstraint::Choice(vec![
            "accept".into(),
            "reject".into(),
        ])),
        timeout_s: 100.0,
        ..WorkerRequest::new("t1", "Decide.")
    };
    let (r, a) = run(&req, texts(&["I would accept it.", "accept"])).await;
    assert!(r.success, "{r:?}");
    assert_eq!(a.requests().len(), 2);
    assert!(
        a.requests()[1]
            .messages
            .last()
            .unwrap()
            .text()
            .contains("'accept', 'reject'")
    );
    assert!(
        r.ledger
            .residuals
            .iter()
            .any(|x| x.contains("choice") && x.contains("checked locally"))
    );
}

// ---- property: every request and result survives a JSON round trip ----

mod round_trip {
    use geode::protocol::{WorkerRequest, WorkerResult, parse_request_line};
    use geode::schema::validate::Validation;
    use geode::schema::{ResponseSchema, TextConstraint};
    use geode::vocab::Require;
    use proptest::prelude::*;
    use serde_json::{Map, Value};

    /// Any finite float, biased towards the awkward ones (subnormals, huge, many digits).
    fn float() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<f64>().prop_filter("finite", |f| f.is_finite()),
            Just(2.2250738585072014e-308),
            Just(5e-324),
            Just(1.7976931348623157e308),
            Just(0.1 + 0.2),
            Just(-0.0),
        ]
    }

    /// Any JSON value, floats and integers of every range included.
    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            float().prop_map(Value::from),
            ".{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((".{0,8}", inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    fn object() -> impl Strategy<Value = Map<String, Value>> {
        prop::collection::vec((".{0,8}", json()), 0..5).prop_map(|kv| kv.into_iter().collect())
    }

    fn constraint() -> impl Strategy<Value = Option<TextConstraint>> {
        prop_oneof![
            Just(None),
            prop::collection::vec(".{0,6}", 0..4).prop_map(|c| Some(TextConstraint::Choice(c))),
            ".{0,12}".prop_map(|r| Some(TextConstraint::Regex(r))),
            ".{0,12}".prop_map(|g| Some(TextConstraint::Grammar(g))),
            "[a-z]{1,8}".prop_map(|w| Some(TextConstraint::Grammar(format!("start: \"{w}\"")))),
        ]
    }

    prop_compose! {
        fn request()(
            ids in (".{0,12}", ".{0,12}", ".{0,40}", ".{0,12}", ".{0,12}"),
            names in (".{0,12}", ".{0,12}", ".{0,12}", ".{0,12}", ".{0,12}", ".{0,12}"),
            tools in (prop::collection::vec(".{0,8}", 0..3), prop::collection::vec(".{0,8}", 0..3)),
            numbers in (any::<u32>(), float(), float(), any::<u32>(), any::<u32>()),
            flags in (any::<bool>(), any::<bool>(), any::<bool>(), 0..3u8),
            args in object(),
            schema in prop::option::of(object()),
            text_constraint in constraint(),
        ) -> WorkerRequest {
            let (task_id, task_type, description, model, provider) = ids;
            let (effort, isolation, agent_name, agent_system_prompt, source, adapter) = names;
            let (subagent_max_tokens, timeout_s, time_budget_s, thinking_budget, max_rounds) =
                numbers;
            let (emit_activity, resume, shallow, require) = flags;
            WorkerRequest {
                task_id,
                task_type,
                description,
                args,
                denied_tools: tools.0,
                model,
                provider,
                subagent_max_tokens,
                timeout_s,
                time_budget_s,
                thinking_budget,
                effort,
                isolation,
                agent_name,
                agent_system_prompt,
                source,
                agent_allowed_tools: tools.1,
                response_schema: schema
                    .map(|m| ResponseSchema::from_value(Value::Object(m)).unwrap()),
                emit_activity,
                resume,
                validation: if shallow { Validation::RequiredKeys } else { Validation::Full },
                require: [Require::BestEffort, Require::Wired, Require::Enforced]
                    [usize::from(require)],
                adapter,
                text_constraint,
                max_rounds,
                ..WorkerRequest::default()
            }
        }
    }

    prop_compose! {
        fn result()(
            texts in (".{0,12}", ".{0,40}", ".{0,20}", prop::option::of(".{0,20}"), prop::sample::select(geode::vocab::TerminationReason::ALL.to_vec())),
            numbers in (any::<u64>(), any::<u64>(), any::<u64>(), float()),
            success in any::<bool>(),
            // The worker's answer is always an extracted object (`null` would read back as absent).
            answer in prop::option::of(object().prop_map(Value::Object)),
            ledger in (".{0,8}", ".{0,8}", prop::collection::vec(".{0,12}", 0..3)),
        ) -> WorkerResult {
            let (task_id, output, summary, error, termination) = texts;
            let (duration_ms, prompt_tokens, completion_tokens, usd_spent) = numbers;
            let mut r = WorkerResult {
                task_id,
                success,
                output,
                summary,
                error,
                duration_ms,
                prompt_tokens,
                completion_tokens,
                usd_spent,
                answer,
                termination_reason: termination,
                ..WorkerResult::default()
            };
            (r.ledger.adapter, r.ledger.model, r.ledger.residuals) = ledger;
            r
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn a_worker_request_survives_a_json_round_trip(req in request()) {
            let line = serde_json::to_string(&req).unwrap();
            prop_assert!(!line.contains('\n'), "one line: {}", line);
            // A request that passes its own check reads back equal; one that does not (a
            // random grammar, a non-positive timeout) is refused with that same error.
            match req.check() {
                Ok(()) => prop_assert_eq!(parse_request_line(&line).unwrap(), req),
                Err(e) => prop_assert_eq!(
                    parse_request_line(&line).unwrap_err().to_string(),
                    e.to_string()
                ),
            }
        }

        #[test]
        fn a_worker_result_survives_a_json_round_trip(result in result()) {
            let line = serde_json::to_string(&result).unwrap();
            prop_assert!(!line.contains('\n'), "one line: {}", line);
            prop_assert_eq!(serde_json::from_str::<WorkerResult>(&line).unwrap(), result);
        }
    }
}
