//! Replays every committed fuzz seed (`fuzz/seeds/<target>/*`) through the fuzz targets' own
//! entry functions, on the stable toolchain: the entry functions in `fuzz/src/` are included
//! here as a module, so `cargo test` runs exactly the code `cargo +nightly fuzz run` runs. Each
//! entry function asserts its target's invariants; a seed that breaks one fails here. Crashes
//! the fuzzers found are kept as seeds named `regress-*`.

#[path = "../../../../fuzz/src/lib.rs"]
mod entries;

use std::path::{Path, PathBuf};

/// A fuzz target's entry function.
type Entry = fn(&[u8]);

/// Every fuzz target and its entry function (the `[[bin]]` names of `fuzz/Cargo.toml`).
const TARGETS: &[(&str, Entry)] = &[
    ("extract", entries::extract::run),
    ("tape", entries::tape::run),
    ("schema", entries::schema::run),
    ("strict_placement", entries::strict_placement::run),
    ("sse", entries::sse::run),
    ("responses", entries::responses::run),
    ("messages", entries::messages::run),
    ("chat", entries::chat::run),
    ("worker_request", entries::worker_request::run),
    ("claude_cli", entries::claude_cli::run),
    ("codex_cli", entries::codex_cli::run),
];

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Runs every seed of `target`; fails when there is none.
fn replay(target: &str) {
    let Some((_, run)) = TARGETS.iter().find(|(name, _)| *name == target) else {
        panic!("no entry function for {target}");
    };
    let dir = fuzz_dir().join("seeds").join(target);
    let mut seeds: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(e) => panic!("cannot read {}: {e}", dir.display()),
    };
    seeds.sort();
    assert!(!seeds.is_empty(), "{} holds no seed", dir.display());
    for seed in seeds {
        let data = match std::fs::read(&seed) {
            Ok(data) => data,
            Err(e) => panic!("cannot read {}: {e}", seed.display()),
        };
        let outcome = std::panic::catch_unwind(|| run(&data));
        assert!(outcome.is_ok(), "{target} fails on {}", seed.display());
    }
}

#[test]
fn every_fuzz_target_has_an_entry_function_here() {
    let manifest = match std::fs::read_to_string(fuzz_dir().join("Cargo.toml")) {
        Ok(text) => text,
        Err(e) => panic!("cannot read fuzz/Cargo.toml: {e}"),
    };
    let bins: Vec<&str> = manifest
        .lines()
        .filter_map(|l| l.strip_prefix("name = \""))
        .filter_map(|l| l.strip_suffix('"'))
        .filter(|name| *name != "geode-fuzz")
        .collect();
    let mut listed: Vec<&str> = TARGETS.iter().map(|(name, _)| *name).collect();
    let mut bins_sorted = bins.clone();
    listed.sort_unstable();
    bins_sorted.sort_unstable();
    assert_eq!(listed, bins_sorted);
}

#[test]
fn extract_seeds() {
    replay("extract");
}

#[test]
fn tape_seeds() {
    replay("tape");
}

#[test]
fn schema_seeds() {
    replay("schema");
}

#[test]
fn strict_placement_seeds() {
    replay("strict_placement");
}

#[test]
fn sse_seeds() {
    replay("sse");
}

#[test]
fn responses_seeds() {
    replay("responses");
}

#[test]
fn messages_seeds() {
    replay("messages");
}

#[test]
fn chat_seeds() {
    replay("chat");
}

#[test]
fn worker_request_seeds() {
    replay("worker_request");
}

#[test]
fn claude_cli_seeds() {
    replay("claude_cli");
}

#[test]
fn codex_cli_seeds() {
    replay("codex_cli");
}
