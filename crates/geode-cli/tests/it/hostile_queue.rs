//! A hostile pass over `geode serve` and `geode batch --queue`: real `geode` processes, a real
//! `redis-server` on loopback, a fake provider.
//!
//! What it proves (each process bounded in time, no "panicked" on any stderr):
//! - Redis down when the workers and the collector start, then up, then down again (losing its
//!   data) mid-run: each process says so in a log line, and every task ends with one result;
//!   a SIGTERM while Redis is unreachable ends `geode serve` at once, exit 0;
//! - garbage and huge entries written straight into the task stream (no task id, not JSON,
//!   the wrong shape, bytes that are not UTF-8, 20 MB of garbage, a 20 MB wrongly typed field)
//!   are answered as failed results or dead-lettered, once each, with one log line each,
//!   and the real tasks around them finish; garbage in the results stream is skipped with a
//!   log line; a 20 MB prompt runs;
//! - a queue key of the wrong type, and a wrong or missing Redis password, end the run with a
//!   clear error and exit 2 instead of a silent retry loop;
//! - a password in the queue URL (`redis://:PASSWORD@HOST:PORT/NAME`) works and never shows in
//!   any output, error, log line, result or summary, including when the connection fails;
//! - odd queue names (empty, spaces, `*`, `:`, a newline, unicode, `?`, `/`) are refused with
//!   exit 2 before anything reaches Redis, and a 100,000-character name works.

use crate::support;

use geode_fakes::{FakeServer, Reply};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::batch::batch_args;
use support::redis::Redis;
use support::{SECRET, Sandbox, glm_answering, good_answer};

const BOUND: Duration = Duration::from_secs(180);

/// The password of the password cases.
const PASSWORD: &str = "hunter2secret";

/// A running `geode` whose stderr is read as it comes (so a chatty log never blocks it).
struct Watched {
    child: Child,
    stderr: Arc<Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Watched {
    fn spawn(sb: &Sandbox, args: &[String]) -> Watched {
        let mut child = sb.spawn(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let mut pipe = child.stderr.take().unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Watched {
            child,
            stderr,
            reader: Some(reader),
        }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits (bounded) until stderr holds `needle`.
    fn wait_for_log(&self, needle: &str) {
        wait_for(&format!("{needle:?} on stderr"), || {
            self.stderr().contains(needle)
        });
        let _ = self.stderr();
    }

    fn signal(&self, signal: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.child.id() as i32), signal).unwrap();
    }

    /// Waits (bounded) for the exit; returns the code and the whole stderr.
    fn finish(mut self) -> (Option<i32>, String) {
        let deadline = Instant::now() + BOUND;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("a geode process exceeded {BOUND:?}: {}", self.stderr());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        self.reader.take().unwrap().join().unwrap();
        let stderr = self.stderr();
        assert!(!stderr.contains("panicked"), "{stderr}");
        (status.code(), stderr)
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + BOUND;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn sandbox(server: &FakeServer, tasks: usize) -> Sandbox {
    support::batch::sandbox(server, &support::batch::shorthand(0..tasks))
}

fn collector(sb: &Sandbox, queue: &str) -> Watched {
    let args = batch_args(&[
        "--queue",
        queue,
        "--progress-every",
        "1",
        "--summary-json",
        "summary.json",
    ]);
    Watched::spawn(sb, &args)
}

/// `geode serve` with a 2 s lease, so a lost worker's tasks move on quickly.
fn worker(sb: &Sandbox, queue: &str) -> Watched {
    worker_with_lease(sb, queue, "2")
}

fn worker_with_lease(sb: &Sandbox, queue: &str, lease: &str) -> Watched {
    let args = [
        "serve",
        "--queue",
        queue,
        "--concurrency",
        "4",
        "--lease",
        lease,
    ];
    Watched::spawn(sb, &args.map(str::to_owned))
}

/// task id → how many result lines it has.
fn results(dir: &Path) -> BTreeMap<String, usize> {
    let text = std::fs::read_to_string(dir.join("out.jsonl")).unwrap_or_default();
    let mut ids = BTreeMap::new();
    for line in text.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        *ids.entry(r["task_id"].as_str().unwrap().to_owned())
            .or_insert(0) += 1;
    }
    ids
}

/// A free loopback port nothing listens on.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `redis-cli -p PORT ARGS` with `stdin` as the last argument's bytes (`-x`): raw bytes, and
/// values too large for a command line.
fn cli_with_stdin(redis: &Redis, args: &[&str], stdin: &[u8]) -> String {
    let mut child = Command::new("redis-cli")
        .args(["-p", &redis.port.to_string(), "-x"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("redis-cli is installed by scripts/setup.sh (make test)");
    let mut input = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut input, stdin).unwrap();
    drop(input);
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `redis-cli` with the password.
fn cli_auth(redis: &Redis, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args([
            "-p",
            &redis.port.to_string(),
            "-a",
            PASSWORD,
            "--no-auth-warning",
        ])
        .args(args)
        .output()
        .expect("redis-cli is installed by scripts/setup.sh (make test)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A Redis that wants [`PASSWORD`].
fn redis_with_password() -> Redis {
    let redis = Redis::start();
    assert_eq!(
        redis
            .cli(&["CONFIG", "SET", "requirepass", PASSWORD])
            .trim(),
        "OK"
    );
    redis
}

fn password_url(port: u16, name: &str) -> String {
    format!("redis://:{PASSWORD}@127.0.0.1:{port}/{name}")
}

#[test]
fn redis_down_at_start_and_again_mid_run_loses_nothing_and_each_process_says_so() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(glm_answering(Reply::slow(200, Reply::Json(good_answer()))));
    let mut redis = Redis::start();
    redis.cli(&["SHUTDOWN", "NOSAVE"]);
    let queue = redis.queue("down");
    let sb = sandbox(&server, 200);
    let collect = collector(&sb, &queue);
    let workers: Vec<Watched> = (0..2).map(|_| worker(&sb, &queue)).collect();
    // Nothing answers: each process logs that it cannot reach Redis and keeps trying.
    for w in &workers {
        w.wait_for_log("cannot reach redis at redis://127.0.0.1:");
    }
    collect.wait_for_log("cannot reach redis at redis://127.0.0.1:");
    redis.restart();
    let dir = sb.cwd.path().to_owned();
    wait_for("30 results", || results(&dir).len() >= 30);
    // Down again, and back without its data: the collector enqueues again what is not done.
    let logged: Vec<usize> = workers.iter().map(|w| w.stderr().len()).collect();
    redis.cli(&["SHUTDOWN", "NOSAVE"]);
    wait_for("a worker to log the outage", || {
        workers
            .iter()
            .zip(&logged)
            .any(|(w, from)| w.stderr()[*from..].contains(" WARN "))
    });
    redis.restart();
    let (code, stderr) = collect.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("the queue lost its data (a Redis restart?): enqueueing again"),
        "{stderr}"
    );
    let ids = results(sb.cwd.path());
    assert_eq!(ids.len(), 200, "every task has a result");
    assert!(ids.values().all(|n| *n == 1), "one line per task id");
    for w in workers {
        w.signal(nix::sys::signal::Signal::SIGTERM);
        let (code, err) = w.finish();
        assert_eq!(code, Some(0), "{err}");
    }
}

#[test]
fn a_sigterm_while_redis_is_unreachable_ends_serve_at_once_and_hides_the_password() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(glm_answering(Reply::Json(good_answer())));
    let sb = sandbox(&server, 2);
    let port = free_port();
    let url = password_url(port, "nowhere");
    let w = worker(&sb, &url);
    w.wait_for_log(&format!(
        "cannot reach redis at redis://***@127.0.0.1:{port}"
    ));
    // Before the fix the first connection alone retried for minutes and ignored the stop.
    w.signal(nix::sys::signal::Signal::SIGTERM);
    let (code, err) = w.finish();
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains(PASSWORD), "{err}");
    // The collector: Ctrl-C while it waits for Redis is exit 130 (stopped), password hidden.
    let c = collector(&sb, &url);
    c.wait_for_log("cannot reach redis at redis://***@");
    c.signal(nix::sys::signal::Signal::SIGINT);
    let (code, err) = c.finish();
    assert_eq!(code, Some(130), "{err}");
    assert!(!err.contains(PASSWORD), "{err}");
    assert!(results(sb.cwd.path()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_url_with_a_password_is_refused_without_showing_it() {
    let server = glm_answering(Reply::Json(good_answer())).await;
    let sb = sandbox(&server, 1);
    for url in [
        format!("redis://:{PASSWORD}@127.0.0.1:1/bad name"),
        format!("redis://user:{PASSWORD}@127.0.0.1:1"),
        format!("rediss://:{PASSWORD}@127.0.0.1:1/q"),
    ] {
        let out = sb.geode(&["serve", "--queue", &url], "").await;
        out.assert_exit(2);
        out.assert_hides(PASSWORD);
        assert!(
            out.stderr.contains("bad queue URL") && out.stderr.contains("***@127.0.0.1:1"),
            "{}",
            out.dump()
        );
    }
}

#[test]
fn a_password_in_the_url_works_and_shows_nowhere() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(glm_answering(Reply::Json(good_answer())));
    let redis = redis_with_password();
    let url = password_url(redis.port, "pw");
    let mut sb = sandbox(&server, 5);
    // The most talkative log there is, to give a leak every chance.
    sb.var("GEODE_LOG", "trace");
    let collect = collector(&sb, &url);
    let w = worker(&sb, &url);
    let (code, collected) = collect.finish();
    assert_eq!(code, Some(0), "{collected}");
    assert_eq!(results(sb.cwd.path()).len(), 5);
    w.signal(nix::sys::signal::Signal::SIGTERM);
    let (code, served) = w.finish();
    assert_eq!(code, Some(0), "{served}");
    assert!(
        served.contains("TRACE") || served.contains("DEBUG"),
        "the log was on"
    );
    for (what, text) in [
        ("collector stderr", collected),
        ("worker stderr", served),
        (
            "out.jsonl",
            std::fs::read_to_string(sb.cwd.path().join("out.jsonl")).unwrap(),
        ),
        (
            "summary.json",
            std::fs::read_to_string(sb.cwd.path().join("summary.json")).unwrap(),
        ),
    ] {
        assert!(!text.contains(PASSWORD), "{what} shows the password");
        assert!(!text.contains(SECRET), "{what} shows the API key");
    }
    assert_eq!(cli_auth(&redis, &["XLEN", "geode:pw:results"]).trim(), "5");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_or_missing_password_is_a_clear_error_not_a_retry_loop() {
    let server = glm_answering(Reply::Json(good_answer())).await;
    let redis = redis_with_password();
    let sb = sandbox(&server, 1);
    let wrong = format!("redis://:wrong-{PASSWORD}@127.0.0.1:{}/pw", redis.port);
    let missing = redis.queue("pw");
    for url in [&wrong, &missing] {
        for args in [
            vec!["serve".to_owned(), "--queue".to_owned(), url.clone()],
            batch_args(&["--queue", url]),
        ] {
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = sb.geode(&argv, "").await;
            assert!(!out.stderr.contains("panicked"), "{}", out.dump());
            out.assert_exit(2);
            out.assert_hides(PASSWORD);
            assert!(
                out.stderr.contains(&format!(
                    "redis at redis://{}127.0.0.1:{} refused the credentials",
                    if url == &wrong { "***@" } else { "" },
                    redis.port
                )),
                "{}",
                out.dump()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_key_of_the_wrong_type_is_a_clear_error_not_a_retry_loop() {
    let server = glm_answering(Reply::Json(good_answer())).await;
    let redis = Redis::start();
    redis.cli(&["SET", "geode:wt:tasks", "not a stream"]);
    let sb = sandbox(&server, 1);
    let url = redis.queue("wt");
    for args in [
        vec!["serve".to_owned(), "--queue".to_owned(), url.clone()],
        batch_args(&["--queue", &url]),
    ] {
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = sb.geode(&argv, "").await;
        assert!(!out.stderr.contains("panicked"), "{}", out.dump());
        out.assert_exit(2);
        assert!(
            out.stderr
                .contains(r#"a key of queue "wt" is not a stream (WRONGTYPE"#),
            "{}",
            out.dump()
        );
    }
    assert_eq!(redis.cli(&["GET", "geode:wt:tasks"]).trim(), "not a stream");
}

#[test]
fn garbage_and_huge_entries_in_the_streams_are_answered_or_dead_lettered_once() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(glm_answering(Reply::Json(good_answer())));
    let redis = Redis::start();
    let tasks = "geode:g:tasks";
    redis.cli(&["XADD", tasks, "*", "foo", "bar"]); // no task id: dead letter
    redis.cli(&["XADD", tasks, "*", "task_id", "", "request", "{}"]); // empty id: dead letter
    redis.cli(&[
        "XADD",
        tasks,
        "*",
        "task_id",
        "g-notjson",
        "request",
        "{not json",
    ]);
    redis.cli(&["XADD", tasks, "*", "task_id", "g-shape", "request", "[1,2]"]);
    let add = |id: &str, request: &[u8]| {
        let out = cli_with_stdin(
            &redis,
            &["XADD", tasks, "*", "task_id", id, "request"],
            request,
        );
        assert!(out.contains('-'), "XADD {id}: {out}");
    };
    add("g-binary", b"\xff\xfe\x00\x01");
    let big = "x".repeat(20 << 20);
    add("g-huge", big.as_bytes());
    let typed = serde_json::json!({"task_id": "g-typed", "description": "d", "max_rounds": big});
    add("g-typed", typed.to_string().as_bytes());
    let prompt = serde_json::json!({"task_id": "g-bigprompt",
        "description": format!("Decide. {big}"), "adapter": "glm-payg",
        "response_schema": support::decision_schema()});
    add("g-bigprompt", prompt.to_string().as_bytes());
    drop(big);
    // Garbage in the results stream, under the id of a real task.
    redis.cli(&[
        "XADD",
        "geode:g:results",
        "*",
        "task_id",
        "t000",
        "result",
        "garbage",
    ]);
    let sb = sandbox(&server, 5);
    let queue = redis.queue("g");
    // A long lease: parsing three 20 MB entries in a debug build can hold both runtime threads
    // past a 2 s lease, and a task taken over is answered twice (at least once, by design),
    // which would blur the "logged once" count below.
    let w = worker_with_lease(&sb, &queue, "30");
    let collect = collector(&sb, &queue);
    let (code, collected) = collect.finish();
    assert_eq!(code, Some(0), "{collected}");
    let ids = results(sb.cwd.path());
    assert_eq!(ids.len(), 5, "{ids:?}");
    assert!(ids.values().all(|n| *n == 1));
    // Every entry was acknowledged: none is left to be read again.
    wait_for("no entry pending", || {
        redis
            .cli(&["XPENDING", tasks, "workers"])
            .lines()
            .next()
            .is_some_and(|l| l.trim() == "0")
    });
    // One failed result per garbage entry with an id, each short; the big prompt ran.
    let raw = redis.cli(&["--raw", "XRANGE", "geode:g:results", "-", "+"]);
    let by_id: BTreeMap<String, Value> = raw
        .lines()
        .filter(|l| l.starts_with("{\"task_id\""))
        .map(|l| {
            assert!(l.len() < 64 << 10, "a result of {} bytes", l.len());
            let v: Value = serde_json::from_str(l).unwrap();
            (v["task_id"].as_str().unwrap().to_owned(), v)
        })
        .collect();
    for id in ["g-notjson", "g-shape", "g-binary", "g-huge", "g-typed"] {
        let r = &by_id[id];
        assert_eq!(r["success"], false, "{id}: {r}");
        assert!(
            r["error"]
                .as_str()
                .unwrap()
                .starts_with("bad task in the queue"),
            "{id}: {r}"
        );
    }
    assert_eq!(by_id["g-bigprompt"]["success"], true);
    assert!(
        by_id["g-binary"]["error"]
            .as_str()
            .unwrap()
            .contains("not UTF-8"),
        "{}",
        by_id["g-binary"]
    );
    // The two entries without a task id were dead-lettered, not answered under an empty id.
    assert!(!by_id.contains_key(""), "{:?}", by_id.keys());
    assert_eq!(redis.cli(&["XLEN", "geode:g:dead"]).trim(), "2");
    assert_eq!(
        collected
            .matches("skipped an entry that is not a geode result")
            .count(),
        1,
        "{collected}"
    );
    // The worker lived through it all, logged each bad entry once, and still stops cleanly.
    w.signal(nix::sys::signal::Signal::SIGTERM);
    let (code, served) = w.finish();
    assert_eq!(code, Some(0), "{served}");
    assert_eq!(
        served.matches("not a geode task").count(),
        2,
        "{served:.2000}"
    );
    assert_eq!(
        served.matches("bad task in the queue").count(),
        5,
        "{served:.2000}"
    );
    assert!(
        served.len() < 64 << 10,
        "worker stderr: {} bytes",
        served.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_queue_names_are_refused_before_anything_reaches_redis() {
    let server = glm_answering(Reply::Json(good_answer())).await;
    let redis = Redis::start();
    let sb = sandbox(&server, 1);
    for name in [
        "", " ", "a b", "*", "a:b", "a\nb", "ü", "名前", "q?x=1", "a/b", "tab\t", "{x}",
    ] {
        let url = redis.queue(name);
        for args in [
            vec!["serve".to_owned(), "--queue".to_owned(), url.clone()],
            batch_args(&["--queue", &url]),
        ] {
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = sb.geode(&argv, "").await;
            assert!(!out.stderr.contains("panicked"), "{}", out.dump());
            out.assert_exit(2);
            assert!(
                out.stderr.contains(&format!("bad queue URL {url:?}"))
                    && out
                        .stderr
                        .contains("the name must be ASCII letters, digits, '-', '_' or '.'"),
                "{name:?}: {}",
                out.dump()
            );
        }
    }
    assert_eq!(redis.cli(&["DBSIZE"]).trim(), "0");
}

#[test]
fn a_100000_character_queue_name_works() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(glm_answering(Reply::Json(good_answer())));
    let redis = Redis::start();
    let name = "n".repeat(100_000);
    let queue = redis.queue(&name);
    let sb = sandbox(&server, 3);
    let w = worker(&sb, &queue);
    let (code, stderr) = collector(&sb, &queue).finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(results(sb.cwd.path()).len(), 3);
    assert_eq!(
        redis
            .cli(&["XLEN", &format!("geode:{name}:results")])
            .trim(),
        "3"
    );
    w.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(w.finish().0, Some(0));
}

/// A Redis that freezes (`SIGSTOP`: connections stay open, nothing answers) while `serve` and
/// the collector wait on it: each command times out instead of waiting forever, so a stop still
/// ends both (serve exit 0, the collector's Ctrl-C 130), and after a thaw the queue works again.
#[test]
fn a_frozen_redis_does_not_hold_a_stop_and_the_queue_works_after_a_thaw() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(glm_answering(Reply::Json(good_answer())));
    let redis = Redis::start();
    let url = redis.queue("frozen");
    let sb = sandbox(&server, 3);
    let w = worker(&sb, &url);
    let (code, err) = collector(&sb, &url).finish();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(results(sb.cwd.path()).len(), 3);
    // Serve is connected and idle in its blocking read when Redis freezes; a new collector
    // then connects to the frozen server.
    redis.freeze(true);
    std::thread::sleep(Duration::from_secs(2));
    std::fs::remove_file(sb.cwd.path().join("out.jsonl")).unwrap();
    let c = collector(&sb, &url);
    std::thread::sleep(Duration::from_secs(2));
    c.signal(nix::sys::signal::Signal::SIGINT);
    w.signal(nix::sys::signal::Signal::SIGTERM);
    let (collected, collect_err) = c.finish();
    let (served, serve_err) = w.finish();
    redis.freeze(false);
    assert_eq!(collected, Some(130), "{collect_err}");
    assert_eq!(served, Some(0), "{serve_err}");
    // Thawed, the same queue takes a new run from a new worker.
    let w = worker(&sb, &url);
    let (code, err) = collector(&sb, &url).finish();
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(results(sb.cwd.path()).len(), 3);
    w.signal(nix::sys::signal::Signal::SIGTERM);
    assert_eq!(w.finish().0, Some(0));
}

/// `GEODE_QUEUE_PASSWORD` gives the password without putting it on the command line (where
/// `ps` and shell history show it): the queue works, and it shows in no output.
#[test]
fn the_password_can_come_from_the_environment_instead_of_the_command_line() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(glm_answering(Reply::Json(good_answer())));
    let redis = redis_with_password();
    let url = redis.queue("envpw");
    assert!(!url.contains(PASSWORD));
    let mut sb = sandbox(&server, 3);
    sb.var("GEODE_QUEUE_PASSWORD", PASSWORD);
    let w = worker(&sb, &url);
    let (code, collected) = collector(&sb, &url).finish();
    assert_eq!(code, Some(0), "{collected}");
    assert_eq!(results(sb.cwd.path()).len(), 3);
    w.signal(nix::sys::signal::Signal::SIGTERM);
    let (code, served) = w.finish();
    assert_eq!(code, Some(0), "{served}");
    for text in [collected, served] {
        assert!(!text.contains(PASSWORD), "{text}");
    }
    // Without it, the same URL is refused by Redis with a clear error.
    std::fs::remove_file(sb.cwd.path().join("out.jsonl")).unwrap();
    sb.var("GEODE_QUEUE_PASSWORD", "");
    let (code, err) = collector(&sb, &url).finish();
    assert_eq!(code, Some(2), "{err}");
}

#[test]
fn a_rerun_on_the_same_queue_gets_its_own_answers_not_the_last_runs() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let accept = rt.block_on(glm_answering(Reply::Json(good_answer())));
    let reject = serde_json::json!({"decision": "reject", "reason": "the second run"});
    let rejecting = rt.block_on(glm_answering(Reply::Json(reject.clone())));
    let redis = Redis::start();
    let queue = redis.queue("rerun");
    let answers = |dir: &Path| -> Vec<Value> {
        std::fs::read_to_string(dir.join("out.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["answer"].clone())
            .collect()
    };
    for (server, expected) in [(&accept, good_answer()), (&rejecting, reject)] {
        // A fresh directory, the same queue and the same task ids.
        let sb = sandbox(server, 3);
        let worker = worker(&sb, &queue);
        let (code, stderr) = collector(&sb, &queue).finish();
        assert_eq!(code, Some(0), "{stderr}");
        worker.signal(nix::sys::signal::Signal::SIGTERM);
        let (code, stderr) = worker.finish();
        assert_eq!(code, Some(0), "{stderr}");
        let got = answers(sb.cwd.path());
        assert_eq!(got.len(), 3);
        assert!(
            got.iter().all(|a| a == &expected),
            "an earlier run's answers came back: {got:?}"
        );
    }
}

#[test]
fn a_sigterm_while_a_task_is_held_and_redis_is_frozen_still_ends_serve() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(glm_answering(Reply::slow(3000, Reply::Json(good_answer()))));
    let redis = Redis::start();
    let url = redis.queue("held");
    let sb = sandbox(&server, 1);
    let w = worker(&sb, &url);
    let c = collector(&sb, &url);
    // The worker holds the task: its upstream call has arrived and takes a while.
    wait_for("the task's upstream call", || !server.requests().is_empty());
    redis.freeze(true);
    w.signal(nix::sys::signal::Signal::SIGTERM);
    let (served, serve_err) = w.finish();
    redis.freeze(false);
    assert_eq!(served, Some(0), "{serve_err}");
    assert!(
        serve_err.contains("stays pending"),
        "it said what became of the result: {serve_err}"
    );
    c.signal(nix::sys::signal::Signal::SIGINT);
    let _ = c.finish();
}

#[test]
fn busy_tasks_cannot_starve_their_lease_renewal_into_a_second_run() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(glm_answering(Reply::Json(good_answer())));
    let redis = Redis::start();
    let url = redis.queue("busy");
    // Six tasks whose 20 MB prompts keep both runtime threads of a debug build parsing, for
    // longer than the 1 s lease, while a second worker waits to take what runs out.
    let filler = "x".repeat(20 << 20);
    let input: String = (0..6)
        .map(|i| {
            serde_json::json!({"task_id": format!("b{i}"), "prompt": format!("Decide b{i}. {filler}")})
                .to_string()
                + "\n"
        })
        .collect();
    drop(filler);
    let sb = support::batch::sandbox(&server, &input);
    let busy = worker_with_lease(&sb, &url, "1");
    let c = collector(&sb, &url);
    wait_for("the first task's upstream call", || {
        !server.requests().is_empty()
    });
    let other = worker_with_lease(&sb, &url, "1");
    let (code, err) = c.finish();
    assert_eq!(code, Some(0), "{err}");
    for w in [busy, other] {
        w.signal(nix::sys::signal::Signal::SIGTERM);
        assert_eq!(w.finish().0, Some(0));
    }
    let mut runs: BTreeMap<String, usize> = BTreeMap::new();
    for r in support::model_calls(&server) {
        let body = r.body.to_string();
        let id = (0..6)
            .map(|i| format!("b{i}"))
            .find(|id| body.contains(&format!("Decide {id}.")));
        *runs.entry(id.unwrap_or_default()).or_insert(0) += 1;
    }
    assert_eq!(runs.len(), 6, "{:?}", runs.keys());
    assert!(runs.values().all(|n| *n == 1), "a task ran twice: {runs:?}");
}
