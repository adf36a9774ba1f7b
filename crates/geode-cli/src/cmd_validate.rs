//! `geode validate --schema FILE`: extract the answer from stdin and validate it.
//!
//! The answer is found by the schema root's rule (`geode::schema::extract`), the worker's: an
//! input that is one JSON value is that value, whatever its type; otherwise the last balanced
//! object for an object root, else a fenced `json` block or a balanced span of an allowed type.
//! It is printed on stdout whatever its type; the errors go to stderr as JSON. With `--repair`,
//! an answer that is not valid as written is read by the declared repair tier
//! (`geode::schema::repair`, the input taken as a complete answer): a repaired value is printed
//! instead, its repairs on stderr, exit 0; else the errors, with `not_repairable` saying why.
//!
//! The answer is read as a [`Tape`](geode::schema::tape::Tape) over the input, not built into a
//! `serde_json::Value`: the same answer and the same report, several times faster on big answers
//! (`cargo bench -p geode-cli --bench big_inputs`).

use clap::Args;
use geode::schema::extract::{NoObject, explain_no_object, extract_answer_tape};
use geode::schema::formats::FormatMode;
use geode::schema::repair::{Ending, Repair, RepairInput, Repaired, repair};
use geode::schema::resources::SchemaResources;
use geode::schema::root::AnswerRoot;
use geode::schema::tape_json::TapeJson;
use geode::schema::validate::{CompiledSchema, ShallowCheck, shallow_check};
use geode::schema::{ResponseSchema, SchemaError};
use std::io::Read;
use std::path::PathBuf;

/// `--formats`: how `format` is checked.
#[derive(Clone, Copy, Default, clap::ValueEnum)]
pub(crate) enum FormatsArg {
    /// Every format the validator knows is checked (the default).
    #[default]
    Assert,
    /// Formats are annotations only (the JSON Schema 2020-12 default).
    Annotate,
}

impl From<FormatsArg> for FormatMode {
    fn from(a: FormatsArg) -> Self {
        match a {
            FormatsArg::Assert => FormatMode::Assert,
            FormatsArg::Annotate => FormatMode::Annotate,
        }
    }
}

#[derive(Args)]
pub(crate) struct ValidateArgs {
    /// The schema file.
    #[arg(long)]
    schema: PathBuf,
    /// Only GEODE's shallow check: an answer of the root's type and, for an object, every
    /// top-level required key.
    #[arg(long)]
    required_keys_only: bool,
    /// How `format` is checked: asserted (default) or annotation-only.
    #[arg(long, value_enum, default_value = "assert")]
    formats: FormatsArg,
    /// A folder of schemas that `$ref`s may name (every `*.json` under it); nothing is fetched.
    #[arg(long, value_name = "DIR")]
    resources: Option<PathBuf>,
    /// The URI the `--resources` folder stands for (`http://example.com/schemas/`); each file's
    /// URI is this joined with its relative path. Default: the folder's `file://` URI.
    #[arg(long, value_name = "URI", requires = "resources")]
    resources_base: Option<String>,
    /// When the answer is not valid as written, let the declared repair tier read it: a
    /// repaired value is printed with its repairs on stderr (exit 0); else the errors, with
    /// why it is not repairable.
    #[arg(long, conflicts_with = "required_keys_only")]
    repair: bool,
}

/// The documents of `--resources`, under `--resources-base` or the folder's own file URI.
fn resources(args: &ValidateArgs) -> Result<Option<SchemaResources>, SchemaError> {
    let Some(dir) = &args.resources else {
        return Ok(None);
    };
    let base = match &args.resources_base {
        Some(b) if b.ends_with('/') => b.clone(),
        Some(b) => format!("{b}/"),
        None => {
            let abs = dir.canonicalize().map_err(|e| SchemaError::Io {
                path: dir.display().to_string(),
                message: e.to_string(),
            })?;
            format!("file://{}/", abs.display())
        }
    };
    let docs = SchemaResources::from_dir(dir, &base)?;
    for s in docs.skipped() {
        eprintln!(
            "geode: --resources: left out {}: its $schema {} is a meta-schema geode does not know",
            s.uri, s.meta_schema
        );
    }
    Ok(Some(docs))
}

pub(crate) fn run(args: ValidateArgs) -> anyhow::Result<u8> {
    let schema = match ResponseSchema::from_file(&args.schema).and_then(|s| {
        let docs = resources(&args)?;
        let c = CompiledSchema::<TapeJson>::build(&s, args.formats.into(), docs.as_ref())?;
        Ok((s, c))
    }) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("geode: unusable schema: {e}");
            return Ok(crate::EXIT_USAGE);
        }
    };
    let mut input = Vec::new();
    std::io::stdin().read_to_end(&mut input)?;
    let text = String::from_utf8_lossy(&input);
    let (schema, compiled) = schema;
    if args.required_keys_only {
        return Ok(shallow(&schema, &text));
    }
    let found = extract_answer_tape(&text, AnswerRoot::of(&schema));
    let report = found.as_ref().map(|(_, tape)| compiled.validate(tape));
    let mut not_repairable = None;
    if args.repair && !report.as_ref().is_some_and(|r| r.is_empty()) {
        match repaired(&args, &schema, &text) {
            Ok(Some((value, repairs))) => {
                println!("{value}");
                eprintln!(
                    "{}",
                    serde_json::json!({"valid": true, "answer_mode": "repaired", "repairs": repairs})
                );
                return Ok(0);
            }
            Ok(None) => {}
            Err(why) => not_repairable = Some(why),
        }
    }
    let (Some((raw, _)), Some(report)) = (found, report) else {
        return Ok(no_answer(&schema, &text, not_repairable));
    };
    println!("{raw}");
    let errors: Vec<serde_json::Value> = report
        .issues
        .iter()
        .map(|i| serde_json::to_value(i).unwrap_or_default())
        .collect();
    Ok(verdict(errors, report.more_errors, not_repairable))
}

/// The repair tier's reading of `text` (taken as a complete answer): the value and its
/// repairs, `None` when it needs none, or why it is not repairable (a usable message).
fn repaired(
    args: &ValidateArgs,
    schema: &ResponseSchema,
    text: &str,
) -> Result<Option<(serde_json::Value, Vec<Repair>)>, String> {
    let docs = resources(args).map_err(|e| e.to_string())?;
    let compiled = CompiledSchema::compile_in(schema, args.formats.into(), docs.as_ref())
        .map_err(|e| e.to_string())?;
    match repair(&RepairInput::new(text, schema, &compiled, Ending::Complete)) {
        Ok(Repaired::Value { value, repairs }) => Ok(Some((value, repairs))),
        Ok(Repaired::NotNeeded) => Ok(None),
        Err(why) => Err(why.to_string()),
    }
}

/// `--required-keys-only`: the worker's shallow check on the text ([`shallow_check`]: syntax
/// checked, no value built, numbers such as `1e400` accepted as Python's `json.loads` does).
fn shallow(schema: &ResponseSchema, text: &str) -> u8 {
    let (answer, missing) = match shallow_check(schema, text) {
        ShallowCheck::Pass { object } => (object, Vec::new()),
        ShallowCheck::MissingKeys { object, keys } => (object, keys),
        ShallowCheck::NoObject => return no_answer(schema, text, None),
    };
    println!("{answer}");
    let errors = missing
        .iter()
        .map(|k| serde_json::json!({"instance_path": "", "keyword": "required", "message": format!("missing required key {k:?}")}))
        .collect();
    verdict(errors, 0, None)
}

/// Exit 0 without errors; else the errors as JSON on stderr (with why `--repair` could not
/// help, when it was asked) and exit 1.
fn verdict(errors: Vec<serde_json::Value>, more_errors: u64, not_repairable: Option<String>) -> u8 {
    if errors.is_empty() {
        return 0;
    }
    let mut out = serde_json::json!({"valid": false, "errors": errors});
    if more_errors > 0 {
        out["more_errors"] = more_errors.into();
    }
    if let Some(why) = not_repairable {
        out["not_repairable"] = why.into();
    }
    eprintln!("{out}");
    1
}

/// No answer of the root's type in `text`: why, on stderr, and exit 1.
fn no_answer(schema: &ResponseSchema, text: &str, not_repairable: Option<String>) -> u8 {
    let root = AnswerRoot::of(schema);
    let message = match (root, explain_no_object(text)) {
        (AnswerRoot::Values(_) | AnswerRoot::Any, _) => {
            format!("no {} parses in the input", root.describe())
        }
        (_, NoObject::NoBalancedSpan) => "no balanced JSON object parses in the input".to_owned(),
        (_, why) => format!("no JSON object parses in the input: {why}"),
    };
    let mut out = serde_json::json!({"valid": false, "errors": [{"instance_path": "", "keyword": "extract", "message": message}]});
    if let Some(why) = not_repairable {
        out["not_repairable"] = why.into();
    }
    eprintln!("{out}");
    1
}
