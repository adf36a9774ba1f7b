//! The local engine on real-world schemas: a deterministic sample of JSONSchemaBench, each schema
//! run as `geode run --adapter local --require enforced --max-tokens 512` would run it (the same
//! resolver and worker, in one process so the model loads once), with a per-schema record and a
//! summary table in Markdown.
//!
//! ```text
//! cargo run --release -p geode-local --example sweep -- BENCH_DIR [PER_SUBSET] [SEED] [OUT.jsonl]
//! ```
//!
//! `BENCH_DIR` holds JSONSchemaBench's `data/<subset>/*.json` (`scripts/local-sweep.sh` fetches
//! it; it is never committed). From every subset, `PER_SUBSET` schemas (default 12) are drawn by
//! a seeded shuffle of the sorted file names (default seed 13), so the sample is the same on
//! every machine. Each schema gets one of five outcomes:
//!
//! | outcome | meaning |
//! |---|---|
//! | `refused` | refused before any token (the constraint does not compile, or the schema is unusable), with the reason |
//! | `valid` | answered, and the answer passed full validation |
//! | `invalid` | answered to the end, and the answer failed validation (constraint and validator disagree) |
//! | `budget` | an attempt ended at the token budget |
//! | `error` | anything else (timeout, engine error) |
//!
//! Each record also has the schema's CPU seconds beside its wall seconds: on a shared machine a
//! timeout with little CPU time is a starved run, not a slow decode. `SWEEP_ONLY=a.json,b.json`
//! keeps only those files of the sample; `SWEEP_TIMEOUT_S` changes the limit per schema.

use geode::agent::resolve::Resolver;
use geode::agent::resolve::RoutingSettings;
use geode::llm::adapter::Adapter;
use geode::llm::registry::ProcessEnv;
use geode::protocol::{WorkerRequest, WorkerResult, run_worker};
use geode::schema::ResponseSchema;
use geode::vocab::{Require, StopReason};
use serde_json::json;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// The task every schema is run with.
const PROMPT: &str = "Give one realistic example value for this schema.";
/// `--max-tokens` of the sweep.
const MAX_TOKENS: u32 = 512;
/// The worker's hard limit per schema, in seconds (a hang guard, not a measurement);
/// `SWEEP_TIMEOUT_S` overrides it.
const TIMEOUT_S: f64 = 90.0;

/// The outcome of one schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Refused,
    Valid,
    Invalid,
    Budget,
    Error,
}

impl Outcome {
    const ALL: [Outcome; 5] = [
        Self::Refused,
        Self::Valid,
        Self::Invalid,
        Self::Budget,
        Self::Error,
    ];

    fn name(self) -> &'static str {
        match self {
            Self::Refused => "refused",
            Self::Valid => "valid",
            Self::Invalid => "invalid",
            Self::Budget => "budget",
            Self::Error => "error",
        }
    }
}

/// Classifies a worker result.
fn classify(result: &WorkerResult) -> (Outcome, String) {
    let ledger = &result.ledger;
    let reason = result.error.clone().unwrap_or_default();
    if ledger.attempts.is_empty() {
        return (Outcome::Refused, reason);
    }
    if ledger.attempts.iter().any(|a| {
        a.error_kind == Some(geode::vocab::ErrorKind::Unsupported) && a.usage.output_tokens == 0
    }) {
        return (Outcome::Refused, reason);
    }
    if ledger
        .attempts
        .iter()
        .any(|a| a.stop_reason == Some(StopReason::MaxTokens))
    {
        return (Outcome::Budget, reason);
    }
    if result.success {
        return (Outcome::Valid, reason);
    }
    let answered = ledger.attempts.iter().any(|a| a.error.is_none());
    if answered {
        let detail = match &ledger.full_validation {
            Some(v) if !v.valid => v
                .errors
                .first()
                .map(|e| serde_json::to_string(e).unwrap_or_default())
                .unwrap_or_default(),
            _ => serde_json::to_string(&ledger.worker_check).unwrap_or_default(),
        };
        return (Outcome::Invalid, detail);
    }
    (Outcome::Error, reason)
}

/// A small deterministic generator (SplitMix64) for the seeded shuffle.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// `per_subset` file paths from every subset under `data/`, by a seeded shuffle of sorted names.
fn sample(bench: &Path, per_subset: usize, seed: u64) -> std::io::Result<Vec<(String, PathBuf)>> {
    let mut subsets: Vec<PathBuf> = std::fs::read_dir(bench.join("data"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    subsets.sort();
    let mut picked = Vec::new();
    for dir in subsets {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        let mut rng = SplitMix(seed ^ fnv(&name));
        for i in (1..files.len()).rev() {
            let j = usize::try_from(rng.next() % (i as u64 + 1)).unwrap_or(0);
            files.swap(i, j);
        }
        picked.extend(
            files
                .into_iter()
                .take(per_subset)
                .map(|f| (name.clone(), f)),
        );
    }
    Ok(picked)
}

/// FNV-1a of a name: each subset gets its own stream from the one seed.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// CPU seconds this process has used (user + system, from `/proc/self/stat`; 0 elsewhere). On a
/// shared machine a schema's CPU time tells a slow decode from a starved one.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which is in parentheses): utime and stime are 14 and 15.
    let rest: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        rest.get(i)
            .and_then(|t| t.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// Runs one schema file as `geode run --adapter local --require enforced --max-tokens 512`;
/// returns the result, its wall seconds and the CPU seconds it used.
async fn run_one(path: &Path, adapter: &Arc<dyn Adapter>) -> (WorkerResult, f64, f64) {
    let cpu = cpu_seconds();
    let started = Instant::now();
    let mut req = WorkerRequest::new("sweep", PROMPT);
    req.adapter = "local".to_owned();
    req.require = Require::Enforced;
    req.subagent_max_tokens = MAX_TOKENS;
    req.timeout_s = std::env::var("SWEEP_TIMEOUT_S")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(TIMEOUT_S);
    let schema = std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|t| ResponseSchema::from_json_str(&t).map_err(|e| e.to_string()));
    let result = match schema {
        Err(e) => WorkerResult::failed("sweep", format!("schema: {e}")),
        Ok(schema) => {
            req.response_schema = Some(schema);
            let settings = RoutingSettings::default();
            let build = |_: &str| Ok(Arc::clone(adapter));
            let resolver = Resolver {
                settings: &settings,
                env: &ProcessEnv,
                build: &build,
                fallback: None,
            };
            let env = req
                .task()
                .map_err(|e| e.to_string())
                .and_then(|mut task| resolver.resolve(&mut task).map_err(|e| e.to_string()));
            match env {
                Ok(env) => run_worker(&req, &env).await,
                Err(e) => WorkerResult::failed("sweep", e),
            }
        }
    };
    (result, started.elapsed().as_secs_f64(), cpu_seconds() - cpu)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let bench = PathBuf::from(
        args.next()
            .ok_or("usage: sweep BENCH_DIR [PER_SUBSET] [SEED] [OUT.jsonl]")?,
    );
    let per_subset: usize = args.next().map_or(Ok(12), |s| s.parse())?;
    let seed: u64 = args.next().map_or(Ok(13), |s| s.parse())?;
    let out_path = args.next().map(PathBuf::from);
    let mut out = match &out_path {
        Some(p) => Some(std::fs::File::create(p)?),
        None => None,
    };
    let mut picked = sample(&bench, per_subset, seed)?;
    // `SWEEP_ONLY=a.json,b.json`: only these files of the sample (re-running a few one by one).
    if let Ok(only) = std::env::var("SWEEP_ONLY") {
        let names: Vec<&str> = only.split(',').map(str::trim).collect();
        picked.retain(|(_, p)| {
            p.file_name()
                .is_some_and(|n| names.iter().any(|x| n.to_string_lossy() == *x))
        });
    }
    eprintln!("sweep: {} schemas, seed {seed}", picked.len());
    let adapter: Arc<dyn Adapter> = Arc::new(geode_local::LocalAdapter::shared());
    // subset -> outcome -> count; and totals of time and tokens per outcome.
    let mut table: BTreeMap<String, BTreeMap<Outcome, usize>> = BTreeMap::new();
    let mut totals: BTreeMap<Outcome, (usize, f64, u64)> = BTreeMap::new();
    for (i, (subset, path)) in picked.iter().enumerate() {
        let (result, secs, cpu) = run_one(path, &adapter).await;
        let (outcome, reason) = classify(&result);
        *table
            .entry(subset.clone())
            .or_default()
            .entry(outcome)
            .or_default() += 1;
        let t = totals.entry(outcome).or_default();
        t.0 += 1;
        t.1 += secs;
        t.2 += result.completion_tokens;
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let record = json!({
            "subset": subset,
            "file": file,
            "outcome": outcome.name(),
            "reason": geode::secret::clip(&reason, 300),
            "seconds": (secs * 1000.0).round() / 1000.0,
            "cpu_seconds": (cpu * 100.0).round() / 100.0,
            "attempts": result.ledger.attempts.len(),
            "completion_tokens": result.completion_tokens,
            "transforms": result.ledger.transforms.len(),
            "output": geode::secret::clip(&result.output, 400),
        });
        eprintln!(
            "[{}/{}] {subset}/{file}: {} {:.2}s (cpu {:.2}s) {} tok {}",
            i + 1,
            picked.len(),
            outcome.name(),
            secs,
            cpu,
            result.completion_tokens,
            geode::secret::clip(&reason, 160)
        );
        if let Some(f) = out.as_mut() {
            writeln!(f, "{record}")?;
        }
    }
    print_table(&table, &totals, picked.len());
    Ok(())
}

/// The Markdown summary: one row per subset, then the totals with shares and mean time.
fn print_table(
    table: &BTreeMap<String, BTreeMap<Outcome, usize>>,
    totals: &BTreeMap<Outcome, (usize, f64, u64)>,
    n: usize,
) {
    let names: Vec<&str> = Outcome::ALL.iter().map(|o| o.name()).collect();
    println!("| subset | n | {} |", names.join(" | "));
    println!("|---|---:|{}", "---:|".repeat(names.len()));
    for (subset, counts) in table {
        let row: Vec<String> = Outcome::ALL
            .iter()
            .map(|o| counts.get(o).copied().unwrap_or(0).to_string())
            .collect();
        let total: usize = counts.values().sum();
        println!("| {subset} | {total} | {} |", row.join(" | "));
    }
    let share = |o: Outcome| {
        let c = totals.get(&o).map_or(0, |t| t.0);
        format!("{c} ({:.1}%)", 100.0 * c as f64 / n.max(1) as f64)
    };
    let row: Vec<String> = Outcome::ALL.iter().map(|&o| share(o)).collect();
    println!("| **all** | {n} | {} |", row.join(" | "));
    let (count, secs, tokens) = totals
        .values()
        .fold((0, 0.0, 0), |a, t| (a.0 + t.0, a.1 + t.1, a.2 + t.2));
    println!(
        "\nmean time {:.2} s per schema, mean {:.0} completion tokens",
        secs / count.max(1) as f64,
        tokens as f64 / count.max(1) as f64
    );
    for o in Outcome::ALL {
        if let Some((c, s, t)) = totals.get(&o) {
            println!(
                "- {}: mean {:.2} s, {:.0} tokens",
                o.name(),
                s / *c as f64,
                *t as f64 / *c as f64
            );
        }
    }
}
