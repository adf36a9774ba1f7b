//! `geode schema check` and `geode validate` on big inputs, as whole processes: a
//! 5,000-property schema and a 10 MB answer, each command run interleaved with the others
//! and with `geode --version` (process start), median of [`RUNS`]. Prints a table next to
//! GEODE's figures (docs/benchmarks.md). Run with `make bench` (release build).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use nix::sys::resource::{UsageWho, getrusage};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 15;

/// A closed object of `n` required string properties.
fn wide_schema(n: usize) -> Value {
    let props: Map<String, Value> = (0..n)
        .map(|i| (format!("field_{i}"), json!({"type": "string"})))
        .collect();
    let required: Vec<&String> = props.keys().collect();
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

/// A list of small records, and an answer of about `size` bytes that satisfies it.
fn records(size: usize) -> (Value, String) {
    let schema = json!({
        "type": "object",
        "properties": {"items": {"type": "array", "items": {
            "type": "object",
            "properties": {
                "id": {"type": "integer"},
                "name": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["id", "name"]
        }}},
        "required": ["items"]
    });
    let mut answer = String::from("{\"items\": [");
    let mut i = 0;
    while answer.len() < size {
        if i > 0 {
            answer.push_str(", ");
        }
        answer.push_str(&format!(
            "{{\"id\": {i}, \"name\": \"name number {i}\", \"tags\": [\"a\", \"bb\", \"ccc\"]}}"
        ));
        i += 1;
    }
    answer.push_str("]}");
    (schema, answer)
}

/// One job: its label, GEODE's figure, the arguments and the stdin file.
struct Job {
    label: &'static str,
    reference: &'static str,
    args: Vec<String>,
    stdin: Option<PathBuf>,
}

fn run(bin: &Path, job: &Job) -> Duration {
    let mut cmd = Command::new(bin);
    cmd.args(&job.args)
        .env_clear()
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    match &job.stdin {
        Some(path) => cmd.stdin(std::fs::File::open(path).unwrap()),
        None => cmd.stdin(Stdio::null()),
    };
    let start = Instant::now();
    let status = cmd.status().unwrap();
    let took = start.elapsed();
    assert_eq!(status.code(), Some(0), "{}: {status}", job.label);
    took
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1000.0
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("benchmark: run with `make bench` (cargo bench)");
        return;
    }
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_geode"));
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let wide = write("wide.json", &wide_schema(5000).to_string());
    let (schema, answer) = records(10 * 1000 * 1000);
    let schema = write("records.json", &schema.to_string());
    let answer = write("answer.json", &answer);
    let path = |p: &Path| p.display().to_string();
    let job = |label, reference, args: &[&str], stdin: Option<&PathBuf>| Job {
        label,
        reference,
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        stdin: stdin.cloned(),
    };
    let check = job(
        "`geode schema check`, 5,000 properties",
        "4 ms (its strict check, a whole process)",
        &["schema", "check", &path(&wide)],
        None,
    );
    // Peak RSS of `schema check` alone: the children's maximum before any bigger job ran.
    for _ in 0..3 {
        run(&bin, &check);
    }
    let check_rss_mib = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap().max_rss() as f64 / 1024.0;
    let full = job(
        "`geode validate` (full validation), 10 MB answer",
        "– (none)",
        &["validate", "--schema", &path(&schema)],
        Some(&answer),
    );
    // Then `validate` (full) alone: the children's maximum is now its peak when it is above
    // `schema check`'s (the answer is 10 MB, the schema small).
    for _ in 0..3 {
        run(&bin, &full);
    }
    let validate_rss_mib = getrusage(UsageWho::RUSAGE_CHILDREN).unwrap().max_rss() as f64 / 1024.0;
    let jobs = [
        job(
            "process start (`geode --version`)",
            "–",
            &["--version"],
            None,
        ),
        check,
        job(
            "`geode validate --required-keys-only`, 10 MB answer",
            "0.76 s (its shallow check)",
            &[
                "validate",
                "--required-keys-only",
                "--schema",
                &path(&schema),
            ],
            Some(&answer),
        ),
        full,
    ];
    let mut times: Vec<Vec<Duration>> = jobs.iter().map(|_| Vec::new()).collect();
    for _ in 0..RUNS {
        for (job, t) in jobs.iter().zip(&mut times) {
            t.push(run(&bin, job));
        }
    }
    println!();
    println!("| command | reference | geode (median of {RUNS}, interleaved) |");
    println!("|---|---|---|");
    for (job, t) in jobs.iter().zip(times) {
        println!(
            "| {} | {} | {:.2} ms |",
            job.label,
            job.reference,
            median(t)
        );
    }
    println!("| peak RSS of `geode schema check`, 5,000 properties | – | {check_rss_mib:.1} MiB |");
    if validate_rss_mib > check_rss_mib {
        println!(
            "| peak RSS of `geode validate` (full), 10 MB answer | – | {validate_rss_mib:.1} MiB |"
        );
    } else {
        println!(
            "| peak RSS of `geode validate` (full), 10 MB answer | – | at most {check_rss_mib:.1} MiB |"
        );
    }
}
