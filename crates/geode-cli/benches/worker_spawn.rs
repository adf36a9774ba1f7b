//! `geode worker` as a process: spawn → first model request on loopback, early exit on a bad
//! request line, and peak RSS for one Decision task. Prints a table next to GEODE's
//! figures (docs/benchmarks.md#a-lean-worker). Run with `make bench` (release build).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use geode_fakes::{FakeServer, Kind, Reply, Script};
use nix::sys::resource::{UsageWho, getrusage};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use geode_testkit::stdin::spawn_with_stdin;

const RUNS: usize = 20;

fn geode_bin() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_geode"))
}

/// `geode worker` with an empty environment.
fn worker(bin: &std::path::Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.arg("worker").env_clear();
    cmd
}

fn line() -> String {
    let schema = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/decision.schema.json"
    ))
    .unwrap();
    format!(
        "{{\"task_id\":\"bench\",\"description\":\"Decide.\",\"adapter\":\"openai-payg\",\"response_schema\":{}}}\n",
        schema.split_whitespace().collect::<String>()
    )
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("benchmark: run with `make bench` (cargo bench)");
        return;
    }
    let bin = geode_bin();
    assert!(
        bin.exists(),
        "build the binary first: cargo build --release -p geode-cli ({})",
        bin.display()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let fake = rt.block_on(async {
        FakeServer::builder(Kind::Responses)
            .script(Script::new([Reply::Json(
                serde_json::json!({"decision":"accept","reason":"ok"}),
            )]))
            .tap(tx)
            .start()
            .await
            .unwrap()
    });
    let req_line = line();
    let mut to_first_request = Vec::new();
    let mut whole = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        let mut cmd = worker(&bin);
        cmd.env("HOME", std::env::temp_dir())
            .env("OPENAI_API_KEY", "sk-bench")
            .env("GEODE_OPENAI_BASE_URL", fake.base_url())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let child = spawn_with_stdin(&mut cmd, req_line.as_bytes());
        rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(10), rx.recv())
                .await
                .unwrap()
        });
        to_first_request.push(start.elapsed());
        let out = child.wait_with_output().unwrap();
        whole.push(start.elapsed());
        assert!(String::from_utf8_lossy(&out.stdout).contains("\"success\":true"));
    }
    let rss_task_kib = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap().max_rss();

    let mut early = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        let mut cmd = worker(&bin);
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        let mut child = spawn_with_stdin(&mut cmd, b"{not json\n");
        let status = child.wait().unwrap();
        early.push(start.elapsed());
        assert_eq!(status.code(), Some(2));
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!();
    println!("| job | reference | target | geode (median of {RUNS}) |");
    println!("|---|---|---|---|");
    println!(
        "| worker process: spawn → first model request on loopback | 1.71 s | ≤ 3 ms | {:.2} ms |",
        ms(median(to_first_request))
    );
    println!(
        "| worker process: whole Decision task (spawn → result line) | – | – | {:.2} ms |",
        ms(median(whole))
    );
    println!(
        "| worker process: early exit on a bad request line | 316 ms | ≤ 2 ms | {:.2} ms |",
        ms(median(early))
    );
    println!(
        "| worker process: peak RSS for one Decision task (max over runs) | 158 MiB | ≤ 10 MiB | {:.1} MiB |",
        rss_task_kib as f64 / 1024.0
    );
}
