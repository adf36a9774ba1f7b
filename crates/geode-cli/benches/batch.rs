//! `geode batch` and `geode serve` over a data set: tasks/s and peak RSS per
//! process against a fake provider answering after 200 ms, with 1, 2 and 4 `geode serve`
//! workers on one Redis, Redis commands and bytes per task, one `geode batch` without Redis for
//! comparison, what 100 machines would ask of one Redis, and `geode batch` on the local model
//! against one `geode run` per task. Prints tables. Run with `make bench` (release build);
//! `GEODE_BENCH_TASKS` (default 10000) and `GEODE_BENCH_LOCAL_TASKS` (default 10) size it.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::{CONCURRENCY, LATENCY_MS, Redis, batch_args, env_usize, geode, schema, write_input};

fn spawn(mut command: Command) -> Child {
    command.spawn().unwrap()
}

/// The peak RSS (VmHWM) of a live process in MiB.
fn peak_rss(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Waits for `child`, sampling its peak RSS; returns (wall, peak MiB).
fn wait_sampling(mut child: Child, started: Instant) -> (Duration, f64) {
    let mut peak = 0.0f64;
    loop {
        peak = peak.max(peak_rss(child.id()));
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.code().is_some(), "killed: {status}");
            return (started.elapsed(), peak);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("benchmark: run with `make bench` (cargo bench)");
        return;
    }
    if std::env::var_os("GEODE_BENCH_ONLY_LOCAL").is_some_and(|v| !v.is_empty()) {
        local();
        return;
    }
    let tasks = env_usize("GEODE_BENCH_TASKS", 10_000);
    let (_rt, fake) = support::slow_fake();
    let base = fake.base_url();
    let schema = schema();
    println!(
        "\n## geode batch / serve: {tasks} tasks, provider latency {LATENCY_MS} ms, concurrency {CONCURRENCY} per process\n"
    );
    println!(
        "| setup | wall | tasks/s | peak RSS per process | Redis commands / task | Redis bytes / task |"
    );
    println!("|---|---|---|---|---|---|");

    // One process, no Redis.
    let dir = tempfile::tempdir().unwrap();
    write_input(dir.path(), tasks, |_| "Decide.".to_owned());
    let started = Instant::now();
    let child = spawn(geode(
        dir.path(),
        &base,
        &batch_args(&schema, "out.jsonl", &[]),
    ));
    let (wall, rss) = wait_sampling(child, started);
    println!(
        "| geode batch (no Redis) | {:.1} s | {:.0} | {rss:.1} MiB | - | - |",
        wall.as_secs_f64(),
        tasks as f64 / wall.as_secs_f64()
    );

    let mut per_task = (0.0, 0.0, 0.0);
    for workers in [1usize, 2, 4] {
        let redis = Redis::start().expect("redis-server (scripts/setup.sh installs it)");
        let queue = format!("redis://127.0.0.1:{}/bench", redis.port);
        let dir = tempfile::tempdir().unwrap();
        write_input(dir.path(), tasks, |_| "Decide.".to_owned());
        let before = redis.stats();
        let started = Instant::now();
        let serving: Vec<Child> = (0..workers)
            .map(|_| {
                spawn(geode(
                    dir.path(),
                    &base,
                    &["serve", "--queue", &queue, "--concurrency", CONCURRENCY],
                ))
            })
            .collect();
        let collector = spawn(geode(
            dir.path(),
            &base,
            &batch_args(&schema, "out.jsonl", &["--queue", &queue]),
        ));
        let (wall, _) = wait_sampling(collector, started);
        let rss: f64 = serving.iter().map(|c| peak_rss(c.id())).fold(0.0, f64::max);
        let after = redis.stats();
        for mut c in serving {
            let _ = c.kill();
            let _ = c.wait();
        }
        let commands = (after.0 - before.0) as f64 / tasks as f64;
        let bytes = (after.1 - before.1) as f64 / tasks as f64;
        let rate = tasks as f64 / wall.as_secs_f64();
        per_task = (commands, bytes, rate / workers as f64);
        println!(
            "| {workers} × geode serve + collector | {:.1} s | {rate:.0} | {rss:.1} MiB (worst worker) | {commands:.1} | {bytes:.0} |",
            wall.as_secs_f64()
        );
    }
    let (commands, bytes, per_worker) = per_task;
    let machines = 100.0;
    println!(
        "\n100 machines at this per-worker rate ({per_worker:.0} tasks/s each) would ask one Redis for about {:.0} commands/s and {:.1} MB/s.\n",
        machines * per_worker * commands,
        machines * per_worker * bytes / 1e6
    );
    local();
}

/// `geode batch --adapter local --concurrency C` against one `geode run --adapter local` per
/// task (`GEODE_BENCH_LOCAL_TASKS`, default 10; `GEODE_BENCH_LOCAL_CONCURRENCY`, default 10: every
/// task at once, within the engine's 16 sequence slots). `GEODE_BENCH_ONLY_LOCAL=1` runs only this part.
fn local() {
    let n = env_usize("GEODE_BENCH_LOCAL_TASKS", 10);
    let concurrency = env_usize("GEODE_BENCH_LOCAL_CONCURRENCY", 10).to_string();
    let dir = tempfile::tempdir().unwrap();
    let schema = schema();
    let home = std::env::var("HOME").unwrap_or_default();
    // `geode CMD --adapter local --schema S --max-tokens 64 REST...`
    let run = |cmd: &str, rest: &[&str]| {
        let status = Command::new(env!("CARGO_BIN_EXE_geode"))
            .args([cmd, "--adapter", "local", "--schema", &schema])
            .args(["--max-tokens", "64"])
            .args(rest)
            .env("HOME", &home)
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        status.code()
    };
    let started = Instant::now();
    for _ in 0..n {
        run("run", &["Decide."]);
    }
    let runs = started.elapsed();
    write_input(dir.path(), n, |_| "Decide.".to_owned());
    let started = Instant::now();
    run(
        "batch",
        &[
            "--input",
            "in.jsonl",
            "--output",
            "out.jsonl",
            "--concurrency",
            &concurrency,
        ],
    );
    let batch = started.elapsed();
    println!("## local model: {n} tasks, geode batch --concurrency {concurrency}\n");
    println!("| how | wall | tasks/s |");
    println!("|---|---|---|");
    println!(
        "| {n} × geode run | {:.1} s | {:.2} |",
        runs.as_secs_f64(),
        n as f64 / runs.as_secs_f64()
    );
    println!(
        "| geode batch | {:.1} s | {:.2} |",
        batch.as_secs_f64(),
        n as f64 / batch.as_secs_f64()
    );
    println!(
        "\ngeode batch is {:.1}x the tasks/s of one geode run per task.",
        runs.as_secs_f64() / batch.as_secs_f64()
    );
}
