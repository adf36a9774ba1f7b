//! Runs the official JSON-Schema-Test-Suite through geode's validation entry points and prints
//! the pass rate per draft and the failing groups, as Markdown for docs/conformance.md.
//!
//! Two paths, each with its own column:
//! - the library: each test's data as a `serde_json::Value` ([`CompiledSchema::compile_in`], the
//!   worker's path) and as a [`Tape`] of its text (`CompiledSchema<TapeJson>`); a test passes
//!   when both reports are equal and the verdict is the suite's;
//! - the command line, as a user runs it: the group's schema in a file, the test's data
//!   pretty-printed and piped into `geode validate --schema FILE` (the binary given by `--cli`);
//!   a test passes when the exit code is the suite's verdict (0 valid, 1 invalid) and the answer
//!   it prints is the data.
//!
//! ```text
//! cargo run -p geode --example conformance -- /path/to/JSON-Schema-Test-Suite --cli target/debug/geode
//! ```
//!
//! The suite is not part of the repository (`scripts/conformance.sh` clones it). For each of
//! draft-04, draft-06, draft-07, 2019-09 and 2020-12: the required tests (`tests/DRAFT/*.json`)
//! with formats as annotations (the suite's expectation), then `optional/format/*.json` with
//! formats asserted (geode's default). A schema without `$schema` gets the directory's draft (the
//! suite's convention; geode's own default is 2020-12). The suite's `remotes/` are given as
//! [`SchemaResources`] under `http://localhost:1234/`, as the suite expects (to the command line
//! as `--resources DIR --resources-base http://localhost:1234/`); nothing is fetched.

use geode::schema::ResponseSchema;
use geode::schema::formats::FormatMode;
use geode::schema::resources::SchemaResources;
use geode::schema::tape::Tape;
use geode::schema::tape_json::TapeJson;
use geode::schema::validate::CompiledSchema;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where the suite's remotes are served from, as the suite expects.
const REMOTES_BASE: &str = "http://localhost:1234/";

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

/// The command-line path: the `geode` binary and a scratch folder for schema files and remotes.
struct Cli {
    exe: PathBuf,
    scratch: tempfile::TempDir,
}

/// One draft's results: the required tests and `optional/format`, by the library and the CLI.
struct Row {
    draft: &'static str,
    required: [Tally; 2],
    formats: [Tally; 2],
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (suite, exe) = match args.as_slice() {
        [suite, flag, exe] if flag == "--cli" => (PathBuf::from(suite), PathBuf::from(exe)),
        _ => {
            return Err(
                "usage: conformance PATH_TO_JSON_SCHEMA_TEST_SUITE --cli PATH_TO_GEODE".into(),
            );
        }
    };
    let cli = Cli {
        exe,
        scratch: tempfile::tempdir()?,
    };
    let docs = SchemaResources::read_dir(&suite.join("remotes"), REMOTES_BASE)?;
    let mut rows = Vec::new();
    for (draft, uri) in DRAFTS {
        // A remote without `$schema` is read as the draft under test, as the suite expects.
        let kept = usable_remotes(
            docs.iter()
                .map(|(u, d)| (u.clone(), with_draft(d.clone(), uri)))
                .collect(),
        );
        let remotes_dir = cli.scratch.path().join(draft);
        for (u, d) in &kept {
            let path = remotes_dir.join(u.strip_prefix(REMOTES_BASE).unwrap_or(u));
            std::fs::create_dir_all(path.parent().unwrap_or(&remotes_dir))?;
            std::fs::write(path, d.to_string())?;
        }
        let run = Run {
            draft_uri: uri,
            resources: SchemaResources::new(kept)?,
            remotes_dir,
            cli: &cli,
        };
        let dir = suite.join("tests").join(draft);
        let required = run.dir(&dir, FormatMode::Annotate)?;
        let formats = run.dir(&dir.join("optional/format"), FormatMode::Assert)?;
        rows.push(Row {
            draft,
            required,
            formats,
        });
    }
    println!(
        "| draft | required tests, library | required tests, `geode validate` | optional/format, library | optional/format, `geode validate` |"
    );
    println!("|---|---|---|---|---|");
    let cell = |t: &Tally| format!("{}/{} ({:.1}%)", t.passed, t.total, t.rate());
    for r in &rows {
        println!(
            "| {} | {} | {} | {} | {} |",
            r.draft,
            cell(&r.required[0]),
            cell(&r.required[1]),
            cell(&r.formats[0]),
            cell(&r.formats[1])
        );
    }
    println!();
    for r in &rows {
        for (kind, tallies) in [("required", &r.required), ("optional/format", &r.formats)] {
            for (path, t) in ["library", "geode validate"].iter().zip(tallies) {
                for (group, (failed, of, why)) in &t.failing {
                    println!(
                        "- {} {kind} ({path}) `{group}`: {failed} of {of} fail ({why})",
                        r.draft
                    );
                }
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

/// The remotes that index together: a document whose meta-schema is neither a known draft nor
/// another remote is left out (it is named on stderr). Two passes, so that a document may use a
/// custom meta-schema that sorts after it.
fn usable_remotes(docs: Vec<(String, Value)>) -> Vec<(String, Value)> {
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
    kept
}

/// One draft's setting: its meta-schema, its remotes (indexed, and as a folder for the CLI).
struct Run<'a> {
    draft_uri: &'a str,
    resources: SchemaResources,
    remotes_dir: PathBuf,
    cli: &'a Cli,
}

impl Run<'_> {
    /// Runs every test file directly in `dir` (not in subdirectories) by both paths.
    fn dir(&self, dir: &Path, mode: FormatMode) -> Result<[Tally; 2], Box<dyn std::error::Error>> {
        let mut tallies = [Tally::default(), Tally::default()];
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        let schema_file = self.cli.scratch.path().join("schema.json");
        for file in files {
            let name = file
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let groups: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&file)?)?;
            for group in groups {
                let schema = with_draft(group["schema"].clone(), self.draft_uri);
                std::fs::write(&schema_file, serde_json::to_string_pretty(&schema)?)?;
                let compiled = ResponseSchema::from_value(schema)
                    .and_then(|s| {
                        let by_value = CompiledSchema::compile_in(&s, mode, Some(&self.resources))?;
                        let by_tape =
                            CompiledSchema::<TapeJson>::build(&s, mode, Some(&self.resources))?;
                        Ok((by_value, by_tape))
                    })
                    .map_err(|e| e.to_string());
                let tests = group["tests"].as_array().cloned().unwrap_or_default();
                let key = format!("{name}: {}", group["description"].as_str().unwrap_or("?"));
                for test in &tests {
                    let expected = test["valid"].as_bool().unwrap_or(false);
                    let described = test["description"].as_str().unwrap_or("?");
                    let by_library = library(&compiled, &test["data"])
                        .and_then(|(valid, why)| verdict(valid, expected, described, &why));
                    let by_cli = self
                        .cli(&schema_file, mode, &test["data"])
                        .and_then(|(valid, why)| verdict(valid, expected, described, &why));
                    for (tally, outcome) in tallies.iter_mut().zip([by_library, by_cli]) {
                        tally.record(&key, tests.len(), outcome);
                    }
                }
                for tally in &mut tallies {
                    if tally.failing.get(&key).is_some_and(|e| e.0 == 0) {
                        tally.failing.remove(&key);
                    }
                }
            }
        }
        Ok(tallies)
    }

    /// `geode validate` on `data`, piped in pretty-printed: (valid, first error) from its exit
    /// code and stderr; an error when it exits otherwise or prints another answer than `data`.
    fn cli(&self, schema: &Path, mode: FormatMode, data: &Value) -> Result<(bool, String), String> {
        let formats = match mode {
            FormatMode::Assert => "assert",
            _ => "annotate",
        };
        let mut child = Command::new(&self.cli.exe)
            .arg("validate")
            .arg("--schema")
            .arg(schema)
            .args(["--formats", formats, "--resources-base", REMOTES_BASE])
            .arg("--resources")
            .arg(&self.remotes_dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.cli.exe.display()))?;
        let text = serde_json::to_string_pretty(data).unwrap_or_default() + "\n";
        if let Some(mut stdin) = child.stdin.take() {
            // A child that refuses the schema exits without reading: that is its verdict.
            let _ = stdin.write_all(text.as_bytes());
        }
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
        let valid = match out.status.code() {
            Some(0) => true,
            Some(1) => false,
            code => return Err(format!("geode validate exited {code:?}: {stderr}")),
        };
        let printed: Option<Value> = serde_json::from_slice(&out.stdout).ok();
        if printed.as_ref() != Some(data) {
            return Err(format!("the answer read is not the data: {stderr}"));
        }
        Ok((valid, stderr))
    }
}

/// The library's verdict on `data` and its first error; an error when its entry points disagree.
fn library(
    compiled: &Result<(CompiledSchema, CompiledSchema<TapeJson>), String>,
    data: &Value,
) -> Result<(bool, String), String> {
    let (c, by_tape) = compiled.as_ref().map_err(|e| format!("refused: {e}"))?;
    let report = c.validate(data);
    let valid = report.is_empty();
    let text = data.to_string();
    let tape_report = Tape::parse(&text).map(|t| by_tape.validate(&t));
    if valid != c.is_valid(data) {
        return Err("validate and is_valid disagree".to_owned());
    }
    if tape_report.as_ref() != Ok(&report) {
        return Err(format!("the tape's report differs: {tape_report:?}"));
    }
    let why = report
        .issues
        .first()
        .map(|i| i.message.clone())
        .unwrap_or_default();
    Ok((valid, why))
}

/// A verdict against the suite's.
fn verdict(valid: bool, expected: bool, described: &str, why: &str) -> Result<(), String> {
    match (valid, expected) {
        (v, e) if v == e => Ok(()),
        (true, _) => Err(format!("accepted `{described}`")),
        (false, _) => Err(format!("rejected `{described}`: {why}")),
    }
}

impl Tally {
    /// One test's outcome in the group `key` of `of` tests.
    fn record(&mut self, key: &str, of: usize, outcome: Result<(), String>) {
        self.total += 1;
        let entry = self
            .failing
            .entry(key.to_owned())
            .or_insert((0, of, String::new()));
        match outcome {
            Ok(()) => self.passed += 1,
            Err(why) => {
                entry.0 += 1;
                if entry.2.is_empty() {
                    entry.2 = why.chars().take(160).collect();
                }
            }
        }
    }
}
