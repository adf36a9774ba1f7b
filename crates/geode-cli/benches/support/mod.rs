//! What the batch and cache benches share: the `geode` binary run in a folder against a fake
//! Chat provider answering after [`LATENCY_MS`], the input file, and a throwaway `redis-server`.

// Each bench uses its own part of this module.
#![allow(dead_code)]

use geode_fakes::{FakeServer, Kind, Reply, Script};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const LATENCY_MS: u64 = 200;
pub const CONCURRENCY: &str = "100";

pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

pub fn schema() -> String {
    format!(
        "{}/../../examples/decision.schema.json",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The runtime the fake serves on, and the fake: a Decision after [`LATENCY_MS`].
pub fn slow_fake() -> (tokio::runtime::Runtime, FakeServer) {
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
    (rt, fake)
}

/// `in.jsonl` with `n` tasks, task `i` asking `prompt(i)`.
pub fn write_input(dir: &Path, n: usize, prompt: impl Fn(usize) -> String) {
    let text: String = (0..n)
        .map(|i| {
            format!(
                "{}\n",
                serde_json::json!({"task_id": format!("t{i}"), "prompt": prompt(i)})
            )
        })
        .collect();
    std::fs::write(dir.join("in.jsonl"), text).unwrap();
}

/// `geode ARGS` in `dir` (its HOME too) with `glm-payg` pointed at `base`, output discarded.
pub fn geode(dir: &Path, base: &str, args: &[&str]) -> Command {
    let mut command = Command::new(PathBuf::from(env!("CARGO_BIN_EXE_geode")));
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("GEODE_GLM_BASE_URL", base)
        .env("ZAI_API_KEY", "bench-key-not-secret")
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// `geode batch` of `in.jsonl` into `out` on `glm-payg`, with `extra` arguments.
pub fn batch_args<'a>(schema: &'a str, out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "batch",
        "--adapter",
        "glm-payg",
        "--schema",
        schema,
        "--input",
        "in.jsonl",
        "--output",
        out,
        "--concurrency",
        CONCURRENCY,
    ];
    args.extend_from_slice(extra);
    args
}

/// A `redis-server` on a free loopback port, killed when dropped.
pub struct Redis {
    pub port: u16,
    child: Child,
}

impl Redis {
    /// `None` when redis-server is missing or does not answer within 20 s.
    pub fn start() -> Option<Redis> {
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
        while r.cli(&["PING"]).trim() != "PONG" {
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(r)
    }

    pub fn cli(&self, args: &[&str]) -> String {
        Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
            .unwrap_or_default()
    }

    /// (commands processed, bytes in + out) so far.
    pub fn stats(&self) -> (u64, u64) {
        let info = self.cli(&["INFO", "stats"]);
        let get = |k: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(&format!("{k}:")))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        (
            get("total_commands_processed"),
            get("total_net_input_bytes") + get("total_net_output_bytes"),
        )
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
