//! SubTask → WorkerRequest mapping and many subtasks at once.

use geode_testkit as support;

use geode::ResolveError;
use geode::agent::worker::WorkerEnv;
use geode::llm::request::AdapterResponse;
use geode::llm::routing::RoutingError;
use geode::llm::scripted::ScriptedAdapter;
use geode::protocol::subtask::{EnvResolver, SubTask, SubTaskDefaults, run_subtasks};
use geode::schema::ResponseSchema;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn schema() -> ResponseSchema {
    ResponseSchema::from_value(
        json!({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}),
    )
    .unwrap()
}

#[test]
fn subtask_maps_to_worker_request_with_schema_and_overrides() {
    let task = SubTask {
        task_id: "t1".into(),
        description: "count".into(),
        task_type: "analyze".into(),
        args: json!({"k": "v"}).as_object().unwrap().clone(),
        source: "claude-cli".into(),
        response_schema: Some(schema()),
        ..SubTask::default()
    };
    let d = SubTaskDefaults {
        default_model: "gpt-5.5".into(),
        ..SubTaskDefaults::default()
    };
    let req = task.to_worker_request(&d);
    assert_eq!(req.response_schema, Some(schema()));
    assert_eq!(req.model, "gpt-5.5");
    assert_eq!(req.source, "claude-cli");
    assert_eq!(req.timeout_s, 600.0);
    assert_eq!(req.effort, "high");
    assert_eq!(req.prompt(), "count\n\nParameters: {\"k\":\"v\"}");
    let overridden = SubTask {
        model: "claude-opus-4-8".into(),
        effort: "low".into(),
        ..task
    }
    .to_worker_request(&d);
    assert_eq!(
        (overridden.model.as_str(), overridden.effort.as_str()),
        ("claude-opus-4-8", "low")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_failing_and_one_panicking_task_do_not_take_the_others_down() {
    let tasks = support::subtasks(20, "go", schema());
    let resolve: EnvResolver = Arc::new(|req| match req.task_id.as_str() {
        "t3" => Err(ResolveError::Routing(RoutingError::UnknownAdapter("for-t3".into())).into()),
        "t7" => panic!("resolver exploded"),
        _ => Ok(WorkerEnv::new(Arc::new(ScriptedAdapter::repeating(
            AdapterResponse::text(r#"{"n": 1}"#),
            Duration::from_millis(5),
        )))),
    });
    let results = run_subtasks(tasks, &SubTaskDefaults::default(), resolve, 4).await;
    assert_eq!(results.len(), 20);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.task_id, format!("t{i}"));
        match i {
            3 => assert!(
                r.error
                    .as_deref()
                    .is_some_and(|e| e.starts_with("unknown adapter \"for-t3\"")),
                "{r:?}"
            ),
            7 => assert!(r.error.as_deref().unwrap().contains("panicked")),
            _ => assert!(r.success, "{r:?}"),
        }
    }
}
