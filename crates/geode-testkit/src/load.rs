//! Load with faults: many concurrent subtasks against one fake provider that answers each call
//! at random (seeded) with a valid answer, 429, 500, a reset, a hang, garbage or a hang
//! mid-body. Shared by the load test (small scale, asserts) and the `faults_load` benchmark
//! (1,000 tasks, prints the figures).

use super::env::MapEnv;
use super::{decision_schema, leaks};
use geode::agent::worker::WorkerEnv;
use geode::llm::settings::{AdapterSetting, AdapterSettings};
use geode::protocol::WorkerResult;
use geode::protocol::subtask::{EnvResolver, SubTaskDefaults, run_subtasks};
use geode_fakes::{FakeServer, Kind, Reply, Script};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Each task's deadline (`timeout_s`).
pub const TASK_DEADLINE: Duration = Duration::from_secs(3);
/// How late after its deadline a task may end before it counts as late (generous).
pub const LATE: Duration = Duration::from_secs(5);

/// What a load run measured.
#[derive(Debug)]
pub struct LoadReport {
    /// Tasks started.
    pub tasks: usize,
    /// Tasks that ended (with any result).
    pub ended: usize,
    /// Outcome counts: `ok`, `invalid`, or the last adapter error kind.
    pub outcomes: BTreeMap<String, usize>,
    /// Tasks whose result carries no typed outcome (no attempt and no adapter error).
    pub untyped: usize,
    /// Tasks that ended more than [`LATE`] after their deadline.
    pub late: usize,
    /// The longest task, in milliseconds.
    pub slowest_ms: u64,
    /// Wall time of the whole batch.
    pub wall: Duration,
    /// Peak RSS of the process before and after, MiB.
    pub peak_rss_mib: (f64, f64),
    /// Model calls the fake received.
    pub calls: usize,
    /// Sockets to the fake still open after it stopped.
    pub sockets_left: usize,
    /// Descriptors open after the run beyond those before it.
    pub fds_left: usize,
}

/// Peak resident set size of this process (VmHWM), MiB.
pub fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

/// A seeded script of `len` random replies.
pub fn random_script(len: usize, seed: u64) -> Script {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let steps = (0..len).map(|_| match next() % 10 {
        0..=2 => Reply::Auto,
        3 => Reply::status(429),
        4 => Reply::status(500),
        5 => Reply::ConnectionReset,
        6 => Reply::Hang,
        7 => Reply::Garbage,
        8 => Reply::HangMidBody,
        _ => Reply::Html,
    });
    Script::new(steps).then_default(Reply::Auto)
}

fn outcome(r: &WorkerResult) -> Option<String> {
    if r.success {
        return Some("ok".into());
    }
    let last = r.ledger.attempts.last()?;
    Some(
        last.error_kind
            .map_or_else(|| "invalid".into(), |k| k.to_string()),
    )
}

/// Runs `tasks` subtasks at once against one fake `openai-payg` provider playing a seeded
/// random script, and measures everything.
pub async fn run(tasks: usize, seed: u64) -> LoadReport {
    let rss_before = peak_rss_mib();
    let fds_before = leaks::open_fds();
    let server = FakeServer::start(Kind::Responses, random_script(tasks * 4, seed))
        .await
        .unwrap();
    let port = server.addr().port();
    let cfg = AdapterSettings::default().with(
        "openai-payg",
        AdapterSetting {
            base_url: Some(server.base_url()),
            ..AdapterSetting::default()
        },
    );
    let env = MapEnv::new().set("OPENAI_API_KEY", "sk-load-test-key-0123456789");
    let adapter = geode::llm::build::build("openai-payg", &cfg, &env).unwrap();
    let resolve: EnvResolver = Arc::new(move |_| Ok(WorkerEnv::new(adapter.clone())));
    let list = super::subtasks(
        tasks,
        "Decide whether to accept the change.",
        decision_schema(),
    );
    let defaults = SubTaskDefaults {
        timeout_s: TASK_DEADLINE.as_secs_f64(),
        subagent_max_tokens: 256,
        ..SubTaskDefaults::default()
    };
    let started = Instant::now();
    let bound = TASK_DEADLINE * 2 + LATE * 4;
    let results = tokio::time::timeout(bound, run_subtasks(list, &defaults, resolve, tasks))
        .await
        .unwrap_or_default();
    let wall = started.elapsed();
    let mut outcomes = BTreeMap::new();
    let mut untyped = 0;
    for r in &results {
        match outcome(r) {
            Some(o) => *outcomes.entry(o).or_insert(0) += 1,
            None => untyped += 1,
        }
    }
    let limit = (TASK_DEADLINE + LATE).as_millis();
    let late = results
        .iter()
        .filter(|r| u128::from(r.duration_ms) > limit)
        .count();
    let slowest_ms = results.iter().map(|r| r.duration_ms).max().unwrap_or(0);
    let calls = server.requests().len();
    server.shutdown().await;
    let sockets_left = leaks::settle(|| leaks::sockets_on_port(port)).await;
    let fds_left = leaks::settle(|| leaks::open_fds().saturating_sub(fds_before)).await;
    LoadReport {
        tasks,
        ended: results.len(),
        outcomes,
        untyped,
        late,
        slowest_ms,
        wall,
        peak_rss_mib: (rss_before, peak_rss_mib()),
        calls,
        sockets_left,
        fds_left,
    }
}

impl LoadReport {
    /// The figures as markdown lines.
    pub fn render(&self) -> String {
        let outcomes: Vec<String> = self
            .outcomes
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        format!(
            "| tasks | ended | wall | slowest task | peak RSS | fake calls | outcomes | late | untyped | sockets / fds left |\n\
             |---|---|---|---|---|---|---|---|---|---|\n\
             | {} | {} | {:.0} ms | {} ms | {:.1} MiB (before {:.1}) | {} | {} | {} | {} | {} / {} |",
            self.tasks,
            self.ended,
            self.wall.as_secs_f64() * 1000.0,
            self.slowest_ms,
            self.peak_rss_mib.1,
            self.peak_rss_mib.0,
            self.calls,
            outcomes.join(", "),
            self.late,
            self.untyped,
            self.sockets_left,
            self.fds_left,
        )
    }
}
