//! The subtask runner with schemas whose root is not an object.

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
