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
            .script(Script::new(
                std::iter::repeat_n(answer(), RUNS).chain([Reply::slow(500, answer())]),
            ))
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
        let child = spawn_task(&rt, &bin, &fake, &mut rx, &req_line);
        to_first_request.push(start.elapsed());
        let out = child.wait_with_output().unwrap();
        whole.push(start.elapsed());
        assert!(String::from_utf8_lossy(&out.stdout).contains("\"success\":true"));
    }
    let rss_task_kib = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap().max_rss();
    let held = memory_while_waiting(&rt, &bin, &fake, &mut rx, &req_line);

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
    let mib = |k: &str| held.get(k).map_or(f64::NAN, |kib| *kib as f64 / 1024.0);
    println!(
        "| worker process waiting on its model call: RSS = anonymous + file pages (the binary's code, shared by every worker) | – | – | {:.1} = {:.1} + {:.1} MiB |",
        mib("VmRSS"),
        mib("RssAnon"),
        mib("RssFile")
    );
    let (present, listed) = hot_symbols_present(&bin);
    println!();
    println!(
        "hot-symbol list: {present} of {listed} names are in this binary (it holds the release and the bench profile's names){}",
        if present * 5 < listed * 2 {
            " (stale: run scripts/hot-symbols.sh)"
        } else {
            ""
        }
    );
}

/// How many names of the link's hot-symbol list (`link/hot-symbols.txt`) the binary defines:
/// the list goes stale when dependency versions or the toolchain change the symbol hashes, and a
/// stale list spreads a task's code over the whole `.text` again (the RSS above grows by MiBs;
/// under 40% of the names, as both profiles' names are listed, it is called stale).
fn hot_symbols_present(bin: &std::path::Path) -> (usize, usize) {
    let list =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/link/hot-symbols.txt"))
            .unwrap();
    let nm = Command::new("nm")
        .arg("--defined-only")
        .arg(bin)
        .output()
        .unwrap();
    let defined: std::collections::HashSet<&str> = std::str::from_utf8(&nm.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    let names: Vec<&str> = list.lines().filter(|l| !l.is_empty()).collect();
    let present = names.iter().filter(|n| defined.contains(*n)).count();
    (present, names.len())
}

/// A `geode worker` given the task line, returned once its model request reached the fake.
fn spawn_task(
    rt: &tokio::runtime::Runtime,
    bin: &std::path::Path,
    fake: &FakeServer,
    rx: &mut Tap,
    req_line: &str,
) -> std::process::Child {
    let mut cmd = worker(bin);
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
    child
}

/// The fake's request tap.
type Tap = tokio::sync::mpsc::UnboundedReceiver<geode_fakes::RecordedRequest>;

fn answer() -> Reply {
    Reply::Json(serde_json::json!({"decision":"accept","reason":"ok"}))
}

/// One more task, whose answer the fake holds back: `/proc/PID/status` (kB figures by name)
/// read while the worker waits, so the RSS can be split into the process's own memory and the
/// binary's mapped file pages.
fn memory_while_waiting(
    rt: &tokio::runtime::Runtime,
    bin: &std::path::Path,
    fake: &FakeServer,
    rx: &mut Tap,
    req_line: &str,
) -> std::collections::HashMap<String, u64> {
    let child = spawn_task(rt, bin, fake, rx, req_line);
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"success\":true"));
    status
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            let kib = v.trim().strip_suffix(" kB")?.parse().ok()?;
            Some((k.to_owned(), kib))
        })
        .collect()
}
