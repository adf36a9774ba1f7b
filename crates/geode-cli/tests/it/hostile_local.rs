//! Hostile schemas on the local engine: `geode run --adapter local` with the real SmolLM2 model,
//! offline, under an address-space limit, with the peak memory of `geode` and its `geode-engine`
//! sampled while they run.
//!
//! What it proves: an enum of 100,000 values, a schema 500 levels deep, a `pattern` of a million
//! repetitions, `minItems` 1,000,000, `not: {}` (and a `false` root), and contradictory bounds
//! (`minimum > maximum`, `minLength > maxLength`, `minItems > maxItems`, a required key whose
//! schema is `false`) each end with exit 2 and a message naming the cause, before any token is
//! decoded (no output tokens in the ledger); `maxLength` 1e9 is narrowed for decoding and
//! answers validly. Every run ends within a generous hang bound, inside a 4 GiB address space,
//! with a peak resident set far below it. Nothing here touches the network.

use crate::support;

use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use support::{Outcome, Sandbox};

/// A generous bound on one run (a refusal takes about a second; one decode a few): past it the
/// run is a hang and the test fails.
const HANG_BOUND: Duration = Duration::from_secs(240);

/// The address space each run gets (`prlimit --as`): the engine maps the model and its context
/// in well under 1 GiB; an allocation without bound fails against it instead of swapping.
const ADDRESS_SPACE: u64 = 4 << 30;

/// The most resident memory a run may peak at (geode and geode-engine each, debug builds): a
/// normal call peaks near 250 MiB in the engine.
const PEAK_BOUND_KIB: u64 = 1 << 20;

/// A run of the binary with the peak resident set seen in its process tree.
struct Bounded {
    out: Outcome,
    /// The largest `VmHWM` of any process of the tree, in KiB.
    peak_kib: u64,
}

/// `VmHWM` of `pid` in KiB (0 once it is gone).
fn vm_hwm(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// `pid` and every descendant alive now.
fn tree(pid: u32) -> Vec<u32> {
    let mut all = vec![pid];
    let mut i = 0;
    while i < all.len() {
        let tasks = std::fs::read_dir(format!("/proc/{}/task", all[i]));
        for task in tasks.into_iter().flatten().flatten() {
            let children = std::fs::read_to_string(task.path().join("children"));
            all.extend(
                children
                    .unwrap_or_default()
                    .split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
        i += 1;
    }
    all
}

/// The local model's sandbox; fails loudly when the model or the engine is missing.
fn local() -> Sandbox {
    let engine = Path::new(env!("CARGO_BIN_EXE_geode")).with_file_name("geode-engine");
    assert!(
        engine.exists(),
        "{} is missing: build it with `cargo build -p geode-local` (make test does)",
        engine.display()
    );
    Sandbox::with_local_model()
}

/// Runs `geode run --adapter local --schema FILE --json EXTRA... PROMPT` with `schema` written
/// to FILE, under `prlimit --as`, bounded by [`HANG_BOUND`], sampling the tree's peak memory.
async fn run_local(sb: &Sandbox, schema: &str, extra: &[&str]) -> Bounded {
    let file = sb.cwd.path().join("hostile.schema.json");
    std::fs::write(&file, schema).unwrap();
    let file = file.display().to_string();
    let mut args = vec!["run", "--adapter", "local", "--schema", &file, "--json"];
    args.extend_from_slice(extra);
    args.push("Answer.");
    let limit = format!("--as={ADDRESS_SPACE}");
    let mut cmd = tokio::process::Command::from(sb.wrapped(&["prlimit", &limit, "--"], &args));
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = cmd.spawn().expect("prlimit (util-linux) must be installed");
    let pid = child.id().unwrap();
    // Sampled until the child is reaped: a zombie has no VmHWM left to read.
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = tokio::spawn({
        let peak = Arc::clone(&peak);
        async move {
            loop {
                for p in tree(pid) {
                    peak.fetch_max(vm_hwm(p), Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    });
    let waited = tokio::time::timeout(HANG_BOUND, child.wait_with_output()).await;
    sampler.abort();
    let out = waited
        .unwrap_or_else(|_| panic!("geode {args:?} did not end within {HANG_BOUND:?}"))
        .unwrap();
    let peak_kib = peak.load(Ordering::SeqCst);
    let out = Outcome {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(!out.stderr.contains("panicked"), "{}", out.dump());
    assert!(
        peak_kib < PEAK_BOUND_KIB,
        "peak RSS {peak_kib} KiB: {}",
        out.dump()
    );
    Bounded { out, peak_kib }
}

/// Asserts a refusal: exit 2, the error naming every one of `needles` (the WorkerResult's, or
/// stderr's when the schema was refused while the request was read), and no token decoded (no
/// attempt, or one that ended in an `unsupported` adapter error with no output tokens).
fn assert_refused(name: &str, b: &Bounded, needles: &[&str]) {
    let out = &b.out;
    assert_eq!(out.code, Some(2), "{name}: {}", out.dump());
    if out.stdout.trim().is_empty() {
        for needle in needles {
            assert!(
                out.stderr.contains(needle),
                "{name}: wanted {needle:?}: {}",
                out.dump()
            );
        }
        return;
    }
    let result = out.json();
    let error = result["error"].as_str().unwrap_or_default();
    for needle in needles {
        assert!(
            error.contains(needle),
            "{name}: wanted {needle:?} in {error:?}"
        );
    }
    let attempts = result["ledger"]["attempts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(attempts.len() <= 1, "{name}: no retry: {result}");
    // A run that reached the engine lasted long enough to be sampled (a refusal by geode
    // itself may end before the first sample).
    assert!(
        attempts.is_empty() || b.peak_kib > 0,
        "{name}: never sampled"
    );
    for a in &attempts {
        assert_eq!(a["error_kind"], "unsupported", "{name}: {a}");
        assert_eq!(
            a["usage"]["output_tokens"], 0,
            "{name}: nothing decoded: {a}"
        );
    }
}

/// The deep schema: 500 nested objects around a string.
fn deep(levels: usize) -> String {
    let mut s = String::from(r#"{"type":"string"}"#);
    for _ in 0..levels {
        s = format!(r#"{{"type":"object","properties":{{"a":{s}}},"required":["a"]}}"#);
    }
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_sizes_are_refused_before_decoding_with_the_cause_named() {
    let sb = local();
    let values: Vec<String> = (0..100_000).map(|i| format!("value-{i}")).collect();
    let enum_100k =
        json!({"type": "object", "properties": {"v": {"enum": values}}, "required": ["v"]});
    let cases: Vec<(&str, String, &[&str], &[&str])> = vec![
        (
            "an enum of 100,000 values",
            enum_100k.to_string(),
            &[],
            &["too big"],
        ),
        ("500 levels deep", deep(500), &[], &["deep", "128"]),
        (
            "a pattern of a million repetitions",
            json!({"type": "string", "pattern": "a{1000000}"}).to_string(),
            &[],
            &["a{1000000}", "/pattern", "too large for the regex engine"],
        ),
        (
            "minItems 1,000,000 (at the default max_tokens)",
            json!({"type": "array", "items": {"type": "integer"}, "minItems": 1_000_000})
                .to_string(),
            &[],
            &["minItems 1000000 at /", "max_tokens 32768"],
        ),
        (
            "minItems 1,000,000 (at 512 tokens)",
            json!({"type": "array", "items": {"type": "integer"}, "minItems": 1_000_000})
                .to_string(),
            &["--max-tokens", "512"],
            &["minItems 1000000 at /", "max_tokens 512"],
        ),
        (
            "minLength 1e9 in a required property",
            json!({"type": "object", "properties": {"t": {"type": "string", "minLength": 1_000_000_000_u64}}, "required": ["t"]})
                .to_string(),
            &["--max-tokens", "512"],
            &["minLength 1000000000 at /properties/t"],
        ),
    ];
    for (name, schema, extra, needles) in cases {
        let b = run_local(&sb, &schema, extra).await;
        assert_refused(name, &b, needles);
        eprintln!("{name}: exit 2, peak {} KiB", b.peak_kib);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsatisfiable_schemas_are_refused_before_decoding_with_the_cause_named() {
    let sb = local();
    let cases: Vec<(&str, Value, &[&str])> = vec![
        ("not: {}", json!({"not": {}}), &["Unsatisfiable", "false"]),
        ("a false root", json!(false), &["Unsatisfiable", "false"]),
        (
            "minimum > maximum",
            json!({"type": "integer", "minimum": 10, "maximum": 1}),
            &["minimum (10) is greater than maximum (1)"],
        ),
        (
            "minLength > maxLength",
            json!({"type": "string", "minLength": 10, "maxLength": 1}),
            &["minLength (10) is greater than maxLength (1)"],
        ),
        (
            "minItems > maxItems",
            json!({"type": "array", "minItems": 5, "maxItems": 1}),
            &["minItems (5) is greater than maxItems (1)"],
        ),
        (
            "a required key whose schema is false",
            json!({"type": "object", "properties": {"x": false}, "required": ["x"]}),
            &["required property 'x' is unsatisfiable"],
        ),
        (
            "a required key whose schema is not: {}",
            json!({"type": "object", "properties": {"x": {"type": "string", "not": {}}}, "required": ["x"]}),
            &["required property 'x' is unsatisfiable"],
        ),
    ];
    for (name, schema, needles) in cases {
        let b = run_local(&sb, &schema.to_string(), &["--max-tokens", "64"]).await;
        assert_refused(name, &b, needles);
        eprintln!("{name}: exit 2, peak {} KiB", b.peak_kib);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_max_length_of_a_billion_is_narrowed_for_decoding_and_answers_validly() {
    // The one decode of this file: the schema is satisfiable, so the right outcome is an answer.
    let sb = local();
    let schema = json!({"type": "string", "maxLength": 1_000_000_000_u64});
    let b = run_local(&sb, &schema.to_string(), &["--max-tokens", "64"]).await;
    let out = &b.out;
    assert_eq!(out.code, Some(0), "{}", out.dump());
    assert!(b.peak_kib > 0, "never sampled");
    let result = out.json();
    assert!(result["answer"].is_string(), "{result}");
    let ledger = &result["ledger"];
    assert_eq!(ledger["wire_mode"], "constrained", "{ledger}");
    assert!(
        ledger["transforms"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["action"]
                .as_str()
                .unwrap_or_default()
                .starts_with("maxLength")),
        "the narrowing is named: {ledger}"
    );
}
