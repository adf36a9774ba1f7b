//! The subtask runner: schemas whose root is not an object, and the caller's `repair` and
//! `cache` travelling to the worker.

use super::*;
use crate::llm::request::AdapterResponse;
use crate::llm::scripted::ScriptedAdapter;
use crate::schema::formats::FormatMode;
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn non_object_roots_run_through_the_subtask_runner() {
    let cases = [
        (
            json!({"type": "array", "items": {"type": "integer"}}),
            "[1,2,3]",
            json!([1, 2, 3]),
        ),
        (
            json!({"enum": ["red", "green"]}),
            "```json\n\"green\"\n```",
            json!("green"),
        ),
        (json!({"type": ["integer", "null"]}), "null", json!(null)),
    ];
    for (schema, text, want) in cases {
        let task = SubTask {
            task_id: "t".into(),
            description: "answer".into(),
            response_schema: Some(ResponseSchema::from_value(schema.clone()).unwrap()),
            formats: FormatMode::Annotate,
            ..SubTask::default()
        };
        assert_eq!(
            task.to_worker_request(&SubTaskDefaults::default()).formats,
            FormatMode::Annotate
        );
        let adapter = Arc::new(ScriptedAdapter::repeating(
            AdapterResponse::text(text),
            Duration::ZERO,
        ));
        let resolve: EnvResolver = Arc::new(move |_| Ok(WorkerEnv::new(adapter.clone())));
        let results = run_subtasks(vec![task], &SubTaskDefaults::default(), resolve, 1).await;
        let r = &results[0];
        assert!(r.success, "{schema}: {r:?}");
        assert_eq!(r.answer, Some(want), "{schema}");
        assert_eq!(r.ledger.formats, Some(FormatMode::Annotate));
        assert_eq!(r.ledger.attempts.len(), 1);
    }
}

/// An almost-valid answer (a trailing comma, a number as a string): refused and retried by
/// default; with `repair` the first answer comes back repaired, each fix in the ledger.
#[tokio::test]
async fn repair_and_cache_travel_from_the_subtask_to_the_worker() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}},
        "required": ["n"], "additionalProperties": false});
    let task = |repair: bool| SubTask {
        task_id: "t".into(),
        description: "count".into(),
        response_schema: Some(ResponseSchema::from_value(schema.clone()).unwrap()),
        repair,
        cache: Some(false),
        ..SubTask::default()
    };
    let request = task(true).to_worker_request(&SubTaskDefaults::default());
    assert_eq!((request.repair, request.cache), (true, Some(false)));
    for repair in [false, true] {
        let adapter = Arc::new(ScriptedAdapter::repeating(
            AdapterResponse::text(r#"{"n": "42",}"#),
            Duration::ZERO,
        ));
        let resolve: EnvResolver = Arc::new(move |_| Ok(WorkerEnv::new(adapter.clone())));
        let results =
            run_subtasks(vec![task(repair)], &SubTaskDefaults::default(), resolve, 1).await;
        let r = &results[0];
        assert_eq!(r.success, repair, "repair={repair}: {r:?}");
        if repair {
            assert_eq!(r.answer, Some(json!({"n": 42})));
            assert!(!r.ledger.repairs.is_empty(), "{:?}", r.ledger);
            assert_eq!(r.ledger.attempts.len(), 1);
        } else {
            assert_eq!(r.ledger.attempts.len(), 2, "refused, retried once");
        }
    }
}
