//! `geode batch` end to end through the real binary against a loopback fake provider:
//! every task one result line, resume after a `kill -9` with a torn last line, duplicate ids
//! refused before any call, bad lines reported by number, exit codes per outcome, a rate limit
//! outlasted, and progress lines when stderr is piped.

use crate::support;

use geode_fakes::{Kind, Reply, Script};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use support::batch::{batch_args, sandbox, shorthand};
use support::{SECRET, Sandbox, bad_enum_answer, glm_answering, good_answer, model_calls};

async fn batch(sb: &Sandbox, extra: &[&str]) -> support::Outcome {
    let mut args = vec!["--summary-json", "summary.json"];
    args.extend_from_slice(extra);
    let args = batch_args(&args);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    sb.geode(&args, "").await
}

/// task id → how many result lines it has.
fn results(dir: &Path) -> BTreeMap<String, usize> {
    let text = std::fs::read_to_string(dir.join("out.jsonl")).unwrap_or_default();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "a torn line: {text}"
    );
    let mut ids = BTreeMap::new();
    for line in text.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        *ids.entry(r["task_id"].as_str().unwrap().to_owned())
            .or_insert(0) += 1;
    }
    ids
}

fn summary(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_task_gets_exactly_one_result_and_the_summary_adds_up() {
    let server = glm_answering(Reply::Json(good_answer())).await;
    let sb = sandbox(&server, &shorthand(0..30));
    let out = batch(&sb, &["--concurrency", "4"]).await;
    out.assert_exit(0);
    let ids = results(sb.cwd.path());
    assert_eq!(ids.len(), 30);
    assert!(ids.values().all(|n| *n == 1));
    let s = summary(sb.cwd.path());
    assert_eq!(
        (s["valid"].as_u64(), s["failed"].as_u64()),
        (Some(30), Some(0))
    );
    assert_eq!(s["adapters"]["glm-payg"]["tasks"], 30);
    assert_eq!(model_calls(&server).len(), 30);
    assert!(out.stderr.contains("valid 30"), "{}", out.dump());
    assert!(!out.stderr.contains(SECRET) && !out.stdout.contains(SECRET));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_resumes_and_runs_only_what_is_missing() {
    let server = glm_answering(Reply::Json(good_answer())).await;
    let sb = sandbox(&server, &shorthand(0..10));
    assert_eq!(batch(&sb, &[]).await.code, Some(0));
    std::fs::write(sb.cwd.path().join("in.jsonl"), shorthand(0..15)).unwrap();
    let out = batch(&sb, &[]).await;
    out.assert_exit(0);
    assert_eq!(model_calls(&server).len(), 15);
    let s = summary(sb.cwd.path());
    assert_eq!(
        (s["skipped"].as_u64(), s["valid"].as_u64()),
        (Some(10), Some(5))
    );
    assert_eq!(results(sb.cwd.path()).len(), 15);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_mid_run_and_a_torn_line_lose_nothing_and_write_nothing_twice() {
    let slow = Reply::slow(150, Reply::Json(good_answer()));
    let server = glm_answering(slow).await;
    let sb = sandbox(&server, &shorthand(0..40));
    let args = batch_args(&["--concurrency", "2"]);
    let mut child = sb.spawn(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let out_path = sb.cwd.path().join("out.jsonl");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::fs::read_to_string(&out_path).map_or(0, |t| t.lines().count()) < 5 {
        assert!(std::time::Instant::now() < deadline, "no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = results(sb.cwd.path()).len();
    assert!((5..40).contains(&before), "{before}");
    // What a kill in the middle of a write leaves: the start of a line.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&out_path)
        .unwrap();
    std::io::Write::write_all(&mut f, br#"{"task_id":"t039","success":tr"#).unwrap();
    drop(f);
    let out = batch(&sb, &["--concurrency", "4"]).await;
    out.assert_exit(0);
    assert!(out.stderr.contains("torn last line"), "{}", out.dump());
    let ids = results(sb.cwd.path());
    assert_eq!(ids.len(), 40, "every task once: {ids:?}");
    assert!(ids.values().all(|n| *n == 1), "{ids:?}");
    // Only the tasks in flight at the kill (at most the concurrency) were asked twice.
    let calls = model_calls(&server).len();
    assert!((40..=42).contains(&calls), "{calls} calls");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_ids_are_refused_before_any_call() {
    let server = glm_answering(Reply::Json(good_answer())).await;
    let input = shorthand(0..3) + &shorthand(1..2);
    let sb = sandbox(&server, &input);
    let out = batch(&sb, &[]).await;
    out.assert_exit(2);
    assert!(
        out.stderr.contains(r#""t001" on lines 2, 4"#),
        "{}",
        out.dump()
    );
    assert!(model_calls(&server).is_empty());
    assert!(results(sb.cwd.path()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_line_is_named_by_number_and_the_others_run() {
    let server = glm_answering(Reply::Json(good_answer())).await;
    let input = shorthand(0..2) + "{not json\n" + &shorthand(2..4);
    let sb = sandbox(&server, &input);
    let out = batch(&sb, &[]).await;
    out.assert_exit(2);
    assert!(
        out.stderr.contains("bad input line 3: not JSON"),
        "{}",
        out.dump()
    );
    assert_eq!(results(sb.cwd.path()).len(), 4);
    assert_eq!(summary(sb.cwd.path())["bad_lines"][0]["line"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_answers_exit_1_and_provider_failures_exit_3() {
    let server = glm_answering(Reply::Json(bad_enum_answer())).await;
    let sb = sandbox(&server, &shorthand(0..2));
    let out = batch(&sb, &[]).await;
    out.assert_exit(1);
    let s = summary(sb.cwd.path());
    assert_eq!(
        (s["invalid"].as_u64(), s["retried"].as_u64()),
        (Some(2), Some(2))
    );

    // The provider's 401 quotes the key: neither the output, the results nor the summary may.
    let quoting = Reply::Status {
        status: 401,
        body: json!({"error": {"message": format!("Incorrect API key provided: {SECRET}"),
            "code": "401"}}),
        retry_after: None,
    };
    let server = glm_answering(quoting).await;
    let sb = sandbox(&server, &shorthand(0..2));
    let out = batch(&sb, &[]).await;
    out.assert_exit(3);
    assert_eq!(summary(sb.cwd.path())["failed"], 2);
    out.assert_hides(SECRET);
    for file in ["out.jsonl", "summary.json"] {
        let text = std::fs::read_to_string(sb.cwd.path().join(file)).unwrap();
        assert!(
            text.contains("401") || file == "summary.json",
            "{file}: {text}"
        );
        assert!(!text.contains(SECRET), "{file} shows the key: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_past_the_transports_retries_is_waited_out() {
    // The transport retries a 429 three times; the fourth makes it give up, and the batch's
    // pacer then holds every task on the adapter for retry-after and tries again.
    let script = Script::new((0..4).map(|_| Reply::rate_limited(1)))
        .then_default(Reply::Json(good_answer()));
    let server = support::fake_of(Kind::Chat, script).await;
    let sb = sandbox(&server, &shorthand(0..3));
    let out = batch(&sb, &["--concurrency", "1"]).await;
    out.assert_exit(0);
    assert_eq!(summary(sb.cwd.path())["valid"], 3);
    assert_eq!(model_calls(&server).len(), 4 + 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn piped_stderr_gets_a_plain_progress_line_every_few_seconds() {
    let slow = Reply::slow(100, Reply::Json(good_answer()));
    let server = glm_answering(slow).await;
    let sb = sandbox(&server, &shorthand(0..12));
    let out = batch(&sb, &["--concurrency", "1", "--progress-every", "0.2"]).await;
    out.assert_exit(0);
    let progress = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("geode batch: done") && l.contains("tasks/s"))
        .count();
    assert!(progress >= 2, "{}", out.dump());
}
