//! Runs the official JSON-Schema-Test-Suite through geode's validation entry points and prints
//! the pass rate per draft and the failing groups, as Markdown for docs/conformance.md. Each test is
//! validated twice: as a `serde_json::Value` ([`CompiledSchema::compile_in`], the worker's path)
//! and as a [`Tape`] of its text (`CompiledSchema<TapeJson>`, the one `geode validate` uses); a
//! test passes when both reports are equal and the verdict is the suite's.
//!
//! ```text
//! cargo run -p geode --example conformance -- /path/to/JSON-Schema-Test-Suite
//! ```
//!
//! The suite is not part of the repository (`scripts/conformance.sh` clones it). For each of
//! draft-04, draft-06, draft-07, 2019-09 and 2020-12: the required tests (`tests/DRAFT/*.json`)
//! with formats as annotations (the suite's expectation), then `optional/format/*.json` with
//! formats asserted (geode's default). A schema without `$schema` gets the directory's draft (the
//! suite's convention; geode's own default is 2020-12). The suite's `remotes/` are given as
//! [`SchemaResources`] under `http://localhost:1234/`, as the suite expects; nothing is fetched.

use geode::schema::ResponseSchema;
use geode::schema::formats::FormatMode;
use geode::schema::resources::SchemaResources;
use geode::schema::tape::Tape;
use geode::schema::tape_json::TapeJson;
use geode::schema::validate::CompiledSchema;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const DRAFTS: [(&str, &str); 5] = [
    ("draft4", "http://json-schema.org/draft-04/schema#"),
    ("draft6", "http://json-schema.org/draft-06/schema#"),
    ("draft7", "http://json-schema.org/draft-07/schema#"),
    (
        "draft2019-09",
        "https://json-schema.org/draft/2019-09/schema",
    ),
    (
        "draft2020-12",
        "https://json-schema.org/draft/2020-12/schema",
    ),
];

/// Pass counts and the failing groups of one run.
#[derive(Default)]
struct Tally {
    passed: usize,
    total: usize,
    /// `file: group` → (failed, total in group, first reason).
    failing: BTreeMap<String, (usize, usize, String)>,
}

impl Tally {
    fn rate(&self) -> f64 {
        if self.total == 0 {
            100.0
        } else {
            100.0 * self.passed as f64 / self.total as f64
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let suite = PathBuf::from(
        std::env::args()
            .nth(1)
            .ok_or("usage: conformance PATH_TO_JSON_SCHEMA_TEST_SUITE")?,
    );
    let docs = remotes(&suite.join("remotes"))?;
    let mut rows = Vec::new();
    for (draft, uri) in DRAFTS {
        // A remote without `$schema` is read as the draft under test, as the suite expects.
        let resources = usable_remotes(
            docs.iter()
                .map(|(u, d)| (u.clone(), with_draft(d.clone(), uri)))
                .collect(),
        )?;
        let dir = suite.join("tests").join(draft);
        let required = run_dir(&dir, uri, FormatMode::Annotate, &resources)?;
        let formats = run_dir(
            &dir.join("optional/format"),
            uri,
            FormatMode::Assert,
            &resources,
        )?;
        rows.push((draft, required, formats));
    }
    println!("| draft | required tests (formats annotated) | optional/format (formats asserted) |");
    println!("|---|---|---|");
    for (draft, r, f) in &rows {
        println!(
            "| {draft} | {}/{} ({:.1}%) | {}/{} ({:.1}%) |",
            r.passed,
            r.total,
            r.rate(),
            f.passed,
            f.total,
            f.rate()
        );
    }
    println!();
    for (draft, r, f) in &rows {
        for (kind, t) in [("required", r), ("optional/format", f)] {
            for (group, (failed, of, why)) in &t.failing {
                println!("- {draft} {kind} `{group}`: {failed} of {of} fail ({why})");
            }
        }
    }
    Ok(())
}

/// `doc` with `$schema` set to `draft_uri` when it has none (a boolean schema stays as it is).
fn with_draft(mut doc: Value, draft_uri: &str) -> Value {
    if let Value::Object(m) = &mut doc
        && !m.contains_key("$schema")
    {
        m.insert("$schema".to_owned(), Value::String(draft_uri.to_owned()));
    }
    doc
}

/// Every `*.json` under `dir`, as (`http://localhost:1234/` + relative path, document).
fn remotes(dir: &Path) -> Result<Vec<(String, Value)>, Box<dyn std::error::Error>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                let rel = path.strip_prefix(dir)?.to_string_lossy().replace('\\', "/");
                let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
                out.push((format!("http://localhost:1234/{rel}"), doc));
            }
        }
    }
    Ok(out)
}

/// The remotes that index together: a document whose meta-schema is neither a known draft nor
/// another remote is left out (it is named on stderr). Two passes, so that a document may use a
/// custom meta-schema that sorts after it.
fn usable_remotes(
    docs: Vec<(String, Value)>,
) -> Result<SchemaResources, Box<dyn std::error::Error>> {
    let mut kept: Vec<(String, Value)> = Vec::new();
    let mut pending = docs;
    for _ in 0..2 {
        let mut left = Vec::new();
        for doc in pending {
            let mut trial = kept.clone();
            trial.push(doc.clone());
            if SchemaResources::new(trial).is_ok() {
                kept.push(doc);
            } else {
                left.push(doc);
            }
        }
        pending = left;
    }
    for (uri, _) in &pending {
        eprintln!("remote left out (its meta-schema is unknown): {uri}");
    }
    Ok(SchemaResources::new(kept)?)
}

/// Runs every test file directly in `dir` (not in subdirectories).
fn run_dir(
    dir: &Path,
    draft_uri: &str,
    mode: FormatMode,
    resources: &SchemaResources,
) -> Result<Tally, Box<dyn std::error::Error>> {
    let mut tally = Tally::default();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    for file in files {
        let name = file
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let groups: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&file)?)?;
        for group in groups {
            let schema = with_draft(group["schema"].clone(), draft_uri);
            let compiled = ResponseSchema::from_value(schema)
                .and_then(|s| {
                    let by_value = CompiledSchema::compile_in(&s, mode, Some(resources))?;
                    let by_tape = CompiledSchema::<TapeJson>::build(&s, mode, Some(resources))?;
                    Ok((by_value, by_tape))
                })
                .map_err(|e| e.to_string());
            let tests = group["tests"].as_array().cloned().unwrap_or_default();
            let key = format!("{name}: {}", group["description"].as_str().unwrap_or("?"));
            for test in &tests {
                let expected = test["valid"].as_bool().unwrap_or(false);
                let outcome = match &compiled {
                    Err(e) => Err(format!("refused: {e}")),
                    Ok((c, by_tape)) => {
                        let report = c.validate(&test["data"]);
                        let valid = report.is_empty();
                        let text = test["data"].to_string();
                        let tape_report = Tape::parse(&text).map(|t| by_tape.validate(&t));
                        if valid != c.is_valid(&test["data"]) {
                            Err("validate and is_valid disagree".to_owned())
                        } else if tape_report.as_ref() != Ok(&report) {
                            Err(format!("the tape's report differs: {tape_report:?}"))
                        } else if valid == expected {
                            Ok(())
                        } else if valid {
                            Err(format!(
                                "accepted `{}`",
                                test["description"].as_str().unwrap_or("?")
                            ))
                        } else {
                            let why = report
                                .issues
                                .first()
                                .map(|i| i.message.clone())
                                .unwrap_or_default();
                            Err(format!(
                                "rejected `{}`: {why}",
                                test["description"].as_str().unwrap_or("?")
                            ))
                        }
                    }
                };
                tally.total += 1;
                let entry =
                    tally
                        .failing
                        .entry(key.clone())
                        .or_insert((0, tests.len(), String::new()));
                match outcome {
                    Ok(()) => tally.passed += 1,
                    Err(why) => {
                        entry.0 += 1;
                        if entry.2.is_empty() {
                            entry.2 = why.chars().take(160).collect();
                        }
                    }
                }
            }
            if tally.failing.get(&key).is_some_and(|e| e.0 == 0) {
                tally.failing.remove(&key);
            }
        }
    }
    Ok(tally)
}
