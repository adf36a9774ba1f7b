//! Compiles every schema of a folder of real-world schemas (JSONSchemaBench's `data/`, or any
//! tree of `*.json` files) the way `geode run` does, and prints how many compile, how many are
//! refused and why, as Markdown for docs/conformance.md.
//!
//! ```text
//! cargo run --release -p geode --example real_schemas -- DIR [--list]
//! ```
//!
//! Each file is read as a [`ResponseSchema`] and compiled with [`CompiledSchema::compile`]
//! (formats asserted, geode's default). Files that are not a schema object are counted apart,
//! not as refusals. `--list` names every refused file with its error, and prints the costliest
//! schemas ([`schema_cost`]) of every subfolder.

use geode::schema::cost::schema_cost;
use geode::schema::validate::CompiledSchema;
use geode::schema::{ResponseSchema, SchemaError};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Counts of one subfolder.
#[derive(Default)]
struct Tally {
    compiled: usize,
    refused: usize,
    not_a_schema: usize,
    /// The largest cost estimate seen, and its file.
    costliest: (u64, String),
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("usage: real_schemas DIR [--list]");
        std::process::exit(2);
    };
    let list = args.any(|a| a == "--list");
    let mut files = Vec::new();
    collect(&dir, &mut files);
    files.sort();
    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    let mut reasons: BTreeMap<&'static str, usize> = BTreeMap::new();
    let started = Instant::now();
    for file in &files {
        let group = file
            .parent()
            .and_then(|p| p.strip_prefix(&dir).ok())
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let tally = tallies.entry(group).or_default();
        let Ok(schema) = ResponseSchema::from_file(file) else {
            tally.not_a_schema += 1;
            continue;
        };
        let cost = schema_cost(schema.as_value());
        if cost > tally.costliest.0 {
            tally.costliest = (cost, file.display().to_string());
        }
        match CompiledSchema::compile(&schema) {
            Ok(_) => {
                tally.compiled += 1;
                if list && let Err(e) = raw_compile(schema.as_value()) {
                    println!("rescued {}: the validator alone says {e}", file.display());
                }
            }
            Err(e) => {
                tally.refused += 1;
                *reasons.entry(kind(&e)).or_default() += 1;
                if list {
                    println!("refused {}: {e}", file.display());
                }
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "| subset | schemas | compiled | refused | not a schema object | largest cost estimate |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let mut all = Tally::default();
    for (group, t) in &tallies {
        let n = t.compiled + t.refused + t.not_a_schema;
        println!(
            "| {group} | {n} | {} | {} | {} | {} |",
            t.compiled, t.refused, t.not_a_schema, t.costliest.0
        );
        if list {
            println!("|   costliest: {} | | | | | |", t.costliest.1);
        }
        all.compiled += t.compiled;
        all.refused += t.refused;
        all.not_a_schema += t.not_a_schema;
    }
    let n = all.compiled + all.refused + all.not_a_schema;
    println!(
        "| **all** | {n} | {} | {} | {} | |",
        all.compiled, all.refused, all.not_a_schema
    );
    println!();
    println!("refusals by kind: {reasons:?}; {secs:.1} s for {n} files");
}

/// The validator crate alone, without geode's rewrites (patterns as written; no retrieval).
fn raw_compile(schema: &serde_json::Value) -> Result<(), String> {
    jsonschema::options()
        .with_pattern_options(jsonschema::PatternOptions::fancy_regex())
        .with_retriever(NoRetrieve)
        .build(schema)
        .map(|_| ())
        .map_err(|e| e.to_string().chars().take(200).collect())
}

/// Refuses every external document, as geode does.
struct NoRetrieve;

impl jsonschema::Retrieve for NoRetrieve {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<serde_json::Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("not fetched: {uri}").into())
    }
}

/// The refusal's kind, for the summary.
fn kind(e: &SchemaError) -> &'static str {
    match e {
        SchemaError::TooDeep { .. } => "too deep",
        SchemaError::TooLarge { .. } => "too large",
        SchemaError::TooExpensive { .. } => "too expensive",
        SchemaError::Uncompilable { .. } => "uncompilable",
        _ => "other",
    }
}

/// Every `*.json` under `dir`.
fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}
