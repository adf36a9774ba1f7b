//! The response cache on a batch: `geode batch --cache` over 1,000 tasks (each its own prompt,
//! so each its own key) against a fake provider answering after 200 ms, run cold (empty cache),
//! then again warm (every answer stored), with a directory cache and with a Redis cache, beside
//! the same batch without a cache.
//! Prints upstream requests, wall time and tasks per second side by side, and checks that the
//! warm run made no request and replayed every task. Run with `make bench-cache` (release
//! build); `GEODE_BENCH_CACHE_TASKS` (default 1000) sizes it.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use geode_fakes::{FakeServer, Kind, Reply, Script};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LATENCY_MS: u64 = 200;
const CONCURRENCY: &str = "100";

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_geode"))
}

fn schema() -> String {
    format!(
        "{}/../../examples/decision.schema.json",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn write_input(dir: &Path, n: usize) {
    let text: String = (0..n)
        .map(|i| format!("{{\"task_id\":\"t{i}\",\"prompt\":\"Decide on change {i}.\"}}\n"))
        .collect();
    std::fs::write(dir.join("in.jsonl"), text).unwrap();
}

/// One `geode batch [--cache CACHE] --output OUT`; returns its wall time and the results file.
fn batch(dir: &Path, base: &str, cache: Option<&str>, out: &str) -> (Duration, String) {
    let schema = schema();
    let started = Instant::now();
    let mut args = vec![
        "batch",
        "--adapter",
        "glm-payg",
        "--schema",
        &schema,
        "--input",
        "in.jsonl",
        "--output",
        out,
        "--concurrency",
        CONCURRENCY,
    ];
    if let Some(c) = cache {
        args.extend(["--cache", c]);
    }
    let status = Command::new(bin())
        .args(&args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("GEODE_GLM_BASE_URL", base)
        .env("ZAI_API_KEY", "bench-key-not-secret")
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    let wall = started.elapsed();
    assert_eq!(status.code(), Some(0), "geode batch failed");
    (wall, std::fs::read_to_string(dir.join(out)).unwrap())
}

/// (results, of them replayed), every one a success.
fn count(results: &str) -> (usize, usize) {
    let mut replayed = 0;
    let mut n = 0;
    for line in results.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(r["success"], true, "{r}");
        n += 1;
        if r["ledger"]["replayed"] == true {
            replayed += 1;
        }
    }
    (n, replayed)
}

struct Redis {
    port: u16,
    child: std::process::Child,
}

impl Redis {
    fn start() -> Option<Redis> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .ok()?
            .local_addr()
            .ok()?
            .port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .ok()?;
        let r = Redis { port, child };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let out = Command::new("redis-cli")
                .args(["-p", &port.to_string(), "PING"])
                .output()
                .ok()?;
            if String::from_utf8_lossy(&out.stdout).trim() == "PONG" {
                return Some(r);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("benchmark: run with `make bench-cache` (cargo bench)");
        return;
    }
    let tasks: usize = std::env::var("GEODE_BENCH_CACHE_TASKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let reply = Reply::slow(
        LATENCY_MS,
        Reply::Json(serde_json::json!({"decision": "accept", "reason": "ok"})),
    );
    let fake = rt
        .block_on(FakeServer::start(Kind::Chat, Script::always(reply)))
        .unwrap();
    let base = fake.base_url();
    let redis = Redis::start();
    let mut stores = vec![("directory", None)];
    if let Some(r) = &redis {
        stores.push(("Redis", Some(format!("redis://127.0.0.1:{}/bench", r.port))));
    }
    println!(
        "\n## geode batch --cache: {tasks} tasks, provider latency {LATENCY_MS} ms, concurrency {CONCURRENCY}\n"
    );
    println!("| cache | run | upstream requests | wall | tasks/s | replayed |");
    println!("|---|---|---|---|---|---|");
    {
        let dir = tempfile::tempdir().unwrap();
        write_input(dir.path(), tasks);
        let before = fake.requests().len();
        let (wall, results) = batch(dir.path(), &base, None, "none.jsonl");
        let requests = fake.requests().len() - before;
        assert_eq!(count(&results), (tasks, 0));
        println!(
            "| none | - | {requests} | {:.2} s | {:.0} | 0 |",
            wall.as_secs_f64(),
            tasks as f64 / wall.as_secs_f64()
        );
    }
    for (store, url) in stores {
        let dir = tempfile::tempdir().unwrap();
        write_input(dir.path(), tasks);
        let cache = url.unwrap_or_else(|| dir.path().join("cache").display().to_string());
        let mut walls = Vec::new();
        for run in ["cold", "warm"] {
            let before = fake.requests().len();
            let (wall, results) = batch(dir.path(), &base, Some(&cache), &format!("{run}.jsonl"));
            let requests = fake.requests().len() - before;
            let (n, replayed) = count(&results);
            assert_eq!(n, tasks, "{store} {run}: every task has a result");
            if run == "warm" {
                assert_eq!(requests, 0, "{store}: the warm run made upstream requests");
                assert_eq!(replayed, tasks, "{store}: the warm run replayed every task");
            }
            println!(
                "| {store} | {run} | {requests} | {:.2} s | {:.0} | {replayed} |",
                wall.as_secs_f64(),
                tasks as f64 / wall.as_secs_f64()
            );
            walls.push(wall);
        }
        println!(
            "| {store} | warm / cold | | {:.3}× the time | {:.1}× the rate | |",
            walls[1].as_secs_f64() / walls[0].as_secs_f64(),
            walls[0].as_secs_f64() / walls[1].as_secs_f64()
        );
    }
    if redis.is_none() {
        println!(
            "\n(redis-server not found: the Redis rows were skipped; scripts/setup.sh installs it)"
        );
    }
}
