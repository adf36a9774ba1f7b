use super::*;
use crate::batch::input::read_line;
use crate::llm::adapter::Adapter;
use crate::llm::request::AdapterResponse;
use crate::llm::scripted::ScriptedAdapter;
use crate::schema::ResponseSchema;
use std::path::Path;
use std::time::Duration;

fn schema() -> ResponseSchema {
    ResponseSchema::from_value(serde_json::json!({
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"]
    }))
    .unwrap()
}

fn template() -> WorkerRequest {
    let mut t = WorkerRequest::new("", "");
    t.response_schema = Some(schema());
    t.timeout_s = 30.0;
    t
}

fn lines(n: usize) -> Vec<InputLine> {
    (0..n)
        .filter_map(|i| {
            read_line(
                &format!(r#"{{"task_id":"t{i}","prompt":"p{i}"}}"#),
                i + 1,
                &template(),
            )
        })
        .collect()
}

fn prepare_with(adapter: Arc<dyn Adapter>) -> Arc<Prepare> {
    Arc::new(move |req: WorkerRequest| Ok((req, WorkerEnv::new(adapter.clone()))))
}

fn written(path: &Path) -> Vec<WorkerResult> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Runs `lines` on `adapter` with the default options, results in `path`.
async fn run_on(lines: Vec<InputLine>, path: &Path, adapter: Arc<dyn Adapter>) -> Summary {
    run(lines, path, prepare_with(adapter), BatchOptions::default()).await
}

async fn run(
    lines: Vec<InputLine>,
    path: &Path,
    prepare: Arc<Prepare>,
    options: BatchOptions,
) -> Summary {
    let log = ResultLog::open(path).unwrap();
    run_batch(lines, log, prepare, options, Arc::default())
        .await
        .unwrap()
}

/// An adapter answering `{"ok": true}` to every call after `delay`.
fn ok_after(delay: Duration) -> Arc<ScriptedAdapter> {
    Arc::new(ScriptedAdapter::repeating(
        AdapterResponse::text(r#"{"ok": true}"#),
        delay,
    ))
}

#[tokio::test]
async fn every_task_gets_one_result_line_and_the_summary_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.jsonl");
    let adapter = ok_after(Duration::from_millis(5));
    let s = run_on(lines(20), &path, adapter.clone()).await;
    assert_eq!((s.valid, s.queued, s.skipped), (20, 20, 0));
    assert_eq!(s.exit_code(), 0);
    let results = written(&path);
    let mut ids: Vec<String> = results.iter().map(|r| r.task_id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 20);
    assert!(results.iter().all(|r| r.success));
    assert_eq!(adapter.requests().len(), 20);
}

#[tokio::test]
async fn a_rerun_skips_what_is_done_and_runs_only_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.jsonl");
    let first = ok_after(Duration::ZERO);
    run_on(lines(5), &path, first).await;
    let second = ok_after(Duration::ZERO);
    let s = run_on(lines(8), &path, second.clone()).await;
    assert_eq!((s.skipped, s.valid), (5, 3));
    assert_eq!(second.requests().len(), 3);
    assert_eq!(written(&path).len(), 8);
}

#[tokio::test]
async fn bad_lines_and_refusals_are_reported_and_the_others_still_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.jsonl");
    let mut input = lines(3);
    input.insert(1, read_line("{oops", 2, &template()).unwrap());
    let adapter: Arc<dyn Adapter> = ok_after(Duration::ZERO);
    let prepare: Arc<Prepare> = Arc::new(move |req: WorkerRequest| {
        if req.task_id == "t2" {
            Err(crate::agent::task::ResolveError::Routing(
                crate::llm::routing::RoutingError::UnknownAdapter("t2".into()),
            )
            .into())
        } else {
            Ok((req, WorkerEnv::new(adapter.clone())))
        }
    });
    let s = run(input, &path, prepare, BatchOptions::default()).await;
    assert_eq!(s.bad_lines.len(), 1);
    assert_eq!(s.bad_lines[0].line, 2);
    assert_eq!((s.valid, s.refused), (2, 1));
    assert_eq!(s.exit_code(), crate::protocol::exit::USAGE);
    let refused = written(&path)
        .into_iter()
        .find(|r| r.task_id == "t2")
        .unwrap();
    assert!(refused.error.unwrap().contains("unknown adapter \"t2\""));
}

#[tokio::test]
async fn invalid_answers_and_provider_failures_set_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.jsonl");
    let invalid = Arc::new(ScriptedAdapter::repeating(
        AdapterResponse::text("no json here"),
        Duration::ZERO,
    ));
    let s = run_on(lines(2), &path, invalid).await;
    assert_eq!((s.invalid, s.retried), (2, 2));
    assert_eq!(s.exit_code(), crate::protocol::exit::INVALID);
    let failing = Arc::new(ScriptedAdapter::new(vec![Err(
        crate::llm::call::AdapterError::Auth {
            adapter: "scripted".into(),
            status: 401,
            message: "no".into(),
        },
    )]));
    let path2 = dir.path().join("out2.jsonl");
    let s = run(
        lines(1),
        &path2,
        prepare_with(failing),
        BatchOptions::default(),
    )
    .await;
    assert_eq!(s.failed, 1);
    assert_eq!(s.exit_code(), crate::protocol::exit::PROVIDER);
}

#[tokio::test]
async fn a_stopped_batch_writes_no_result_for_the_tasks_it_cut_short() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.jsonl");
    let slow = ok_after(Duration::from_secs(30));
    let options = BatchOptions {
        concurrency: 2,
        ..BatchOptions::default()
    };
    let cancel = options.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let s = tokio::time::timeout(
        Duration::from_secs(20),
        run(lines(6), &path, prepare_with(slow), options),
    )
    .await
    .expect("the stop ends the batch promptly");
    assert_eq!(s.done(), 0);
    assert_eq!(s.interrupted, 2);
    assert!(written(&path).is_empty());
}

#[tokio::test]
async fn concurrency_bounds_the_tasks_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.jsonl");
    let adapter = ok_after(Duration::from_millis(50));
    let summary: Arc<Mutex<Summary>> = Arc::default();
    let watch = summary.clone();
    let peak = Arc::new(Mutex::new(0u64));
    let peak_w = peak.clone();
    let watcher = tokio::spawn(async move {
        loop {
            {
                let r = watch.lock().unwrap().running;
                let mut p = peak_w.lock().unwrap();
                *p = (*p).max(r);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    let log = ResultLog::open(&path).unwrap();
    let options = BatchOptions {
        concurrency: 3,
        ..BatchOptions::default()
    };
    let s = run_batch(lines(12), log, prepare_with(adapter), options, summary)
        .await
        .unwrap();
    watcher.abort();
    assert_eq!(s.valid, 12);
    let peak = *peak.lock().unwrap();
    assert!((1..=3).contains(&peak), "peak {peak}");
}
