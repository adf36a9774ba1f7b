//! `geode serve` + `geode batch --queue` end to end: real `geode` processes, a real
//! `redis-server` on loopback (no persistence), and a fake provider. Three workers share 500
//! tasks while one is killed with SIGKILL and Redis is restarted (losing its data); a task whose
//! workers keep dying ends in the dead-letter stream; SIGTERM lets a worker finish what it holds.

use crate::support;

use geode_fakes::{FakeServer, Reply};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};
use support::batch::batch_args;
use support::redis::Redis;
use support::{Sandbox, glm_answering, good_answer};

const BOUND: Duration = Duration::from_secs(180);

fn sandbox(server: &FakeServer, tasks: usize) -> Sandbox {
    support::batch::sandbox(server, &support::batch::shorthand(0..tasks))
}

fn collector(sb: &Sandbox, queue: &str) -> Child {
    let args = batch_args(&["--queue", queue, "--progress-every", "1"]);
    sb.spawn(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

fn worker(sb: &Sandbox, queue: &str, lease: &str) -> Child {
    sb.spawn(&[
        "serve",
        "--queue",
        queue,
        "--concurrency",
        "4",
        "--lease",
        lease,
    ])
}

/// task id → result lines, and the results themselves.
fn results(dir: &Path) -> (BTreeMap<String, usize>, Vec<Value>) {
    let text = std::fs::read_to_string(dir.join("out.jsonl")).unwrap_or_default();
    let mut ids = BTreeMap::new();
    let mut all = Vec::new();
    for line in text.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        *ids.entry(r["task_id"].as_str().unwrap().to_owned())
            .or_insert(0) += 1;
        all.push(r);
    }
    (ids, all)
}

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + BOUND;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits for a child's exit (bounded) and returns its code and stderr.
fn finish(mut child: Child) -> (Option<i32>, String) {
    let deadline = Instant::now() + BOUND;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            return (status.code(), err);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("a geode process exceeded {BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn sigterm(child: &Child) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
}

#[test]
fn three_workers_a_kill_and_a_redis_restart_lose_nothing_and_report_each_task_once() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(glm_answering(Reply::slow(30, Reply::Json(good_answer()))));
    let mut redis = Redis::start();
    let queue = redis.queue("e2e");
    let sb = sandbox(&server, 500);
    let collect = collector(&sb, &queue);
    let mut workers: Vec<Child> = (0..3).map(|_| worker(&sb, &queue, "2")).collect();
    let dir = sb.cwd.path().to_owned();
    let done = |n: usize| {
        let dir = dir.clone();
        move || results(&dir).0.len() >= n
    };
    wait_for("100 results", done(100));
    workers[0].kill().unwrap(); // SIGKILL: its held tasks are reclaimed after the lease
    workers[0].wait().unwrap();
    wait_for("250 results", done(250));
    redis.restart();
    let (code, stderr) = finish(collect);
    assert_eq!(code, Some(0), "{stderr}");
    let (ids, all) = results(sb.cwd.path());
    assert_eq!(ids.len(), 500, "every task has a result");
    assert!(ids.values().all(|n| *n == 1), "one line per task id");
    assert!(all.iter().all(|r| r["success"] == true));
    assert!(stderr.contains("geode batch: done"), "{stderr}");
    for w in workers.drain(1..) {
        sigterm(&w);
        let (code, err) = finish(w);
        assert_eq!(code, Some(0), "{err}");
        assert!(err.contains("results written"), "{err}");
    }
}

#[test]
fn a_task_whose_workers_keep_dying_goes_to_the_dead_letter_stream() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(glm_answering(Reply::Json(good_answer())));
    let redis = Redis::start();
    let queue = redis.queue("poison");
    let sb = sandbox(&server, 1);
    let collect = collector(&sb, &queue);
    wait_for("the task in the stream", || {
        redis.cli(&["XLEN", "geode:poison:tasks"]).trim() == "1"
    });
    // Three workers take the task and die without a result: three deliveries.
    let read = redis.cli(&[
        "XREADGROUP",
        "GROUP",
        "workers",
        "ghost-1",
        "COUNT",
        "1",
        "STREAMS",
        "geode:poison:tasks",
        ">",
    ]);
    let id = read
        .lines()
        .find(|l| l.contains('-') && l.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .unwrap_or_else(|| panic!("no entry id in {read:?}"))
        .trim()
        .to_owned();
    for ghost in ["ghost-2", "ghost-3"] {
        redis.cli(&["XCLAIM", "geode:poison:tasks", "workers", ghost, "0", &id]);
    }
    let live = worker(&sb, &queue, "0.3");
    let (code, stderr) = finish(collect);
    assert_eq!(code, Some(3), "{stderr}");
    let (_, all) = results(sb.cwd.path());
    assert_eq!(all.len(), 1);
    let error = all[0]["error"].as_str().unwrap();
    assert!(
        error.contains("dead-lettered") && error.contains("3 times"),
        "{error}"
    );
    assert_eq!(redis.cli(&["XLEN", "geode:poison:dead"]).trim(), "1");
    sigterm(&live);
    assert_eq!(finish(live).0, Some(0));
}

#[test]
fn sigterm_lets_a_worker_finish_the_task_it_holds() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(glm_answering(Reply::slow(1500, Reply::Json(good_answer()))));
    let redis = Redis::start();
    let queue = redis.queue("term");
    let sb = sandbox(&server, 1);
    let collect = collector(&sb, &queue);
    let w = worker(&sb, &queue, "30");
    wait_for("the worker to hold the task", || {
        redis
            .cli(&["XPENDING", "geode:term:tasks", "workers"])
            .lines()
            .next()
            .is_some_and(|l| l.trim() == "1")
    });
    sigterm(&w);
    let (code, err) = finish(w);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("1 results written"), "{err}");
    let (code, stderr) = finish(collect);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(results(sb.cwd.path()).0.len(), 1);
}
