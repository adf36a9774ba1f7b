//! The response cache on a batch: `geode batch --cache` over 1,000 tasks (each its own prompt,
//! so each its own key) against a fake provider answering after 200 ms, run cold (empty cache),
//! then again warm (every answer stored), with a directory cache and with a Redis cache, beside
//! the same batch without a cache.
//! Prints upstream requests, wall time and tasks per second side by side, and checks that the
//! warm run made no request and replayed every task. Run with `make bench-cache` (release
//! build); `GEODE_BENCH_CACHE_TASKS` (default 1000) sizes it.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::path::Path;
use std::time::{Duration, Instant};
use support::{CONCURRENCY, LATENCY_MS, Redis, batch_args, env_usize, geode, schema, write_input};

/// One `geode batch [--cache CACHE] --output OUT`; returns its wall time and the results file.
fn batch(dir: &Path, base: &str, cache: Option<&str>, out: &str) -> (Duration, String) {
    let schema = schema();
    let cache_args = cache.map_or(Vec::new(), |c| vec!["--cache", c]);
    let started = Instant::now();
    let status = geode(dir, base, &batch_args(&schema, out, &cache_args))
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

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("benchmark: run with `make bench-cache` (cargo bench)");
        return;
    }
    let tasks = env_usize("GEODE_BENCH_CACHE_TASKS", 1000);
    let (_rt, fake) = support::slow_fake();
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
        write_input(dir.path(), tasks, distinct);
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
        write_input(dir.path(), tasks, distinct);
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

/// Each task its own prompt, so each its own cache key.
fn distinct(i: usize) -> String {
    format!("Decide on change {i}.")
}
