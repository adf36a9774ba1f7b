//! `geode validate --schema FILE`: extract the answer from stdin and validate it.
//!
//! The answer is found by the schema root's rule (`geode::schema::extract`): the last balanced
//! object for an object root, else the whole input, a fenced `json` block or a balanced span of
//! an allowed type. It is printed on stdout whatever its type; the errors go to stderr as JSON.

use clap::Args;
use geode::schema::ResponseSchema;
use geode::schema::extract::{NoObject, explain_no_object, extract_answer};
use geode::schema::formats::FormatMode;
use geode::schema::root::AnswerRoot;
use geode::schema::validate::{CompiledSchema, missing_required_keys};
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
    /// Only the reference's shallow check: an answer of the root's type and, for an object, every
    /// top-level required key.
    #[arg(long)]
    required_keys_only: bool,
    /// How `format` is checked: asserted (default) or annotation-only.
    #[arg(long, value_enum, default_value = "assert")]
    formats: FormatsArg,
}

pub(crate) fn run(args: ValidateArgs) -> anyhow::Result<u8> {
    let schema = match ResponseSchema::from_file(&args.schema).and_then(|s| {
        let c = CompiledSchema::compile_with(&s, args.formats.into())?;
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
    let root = AnswerRoot::of(&schema);
    let Some((raw, value)) = extract_answer(&text, root) else {
        let message = match (root, explain_no_object(&text)) {
            (AnswerRoot::Values(_), _) => {
                format!("no {} parses in the input", root.describe())
            }
            (_, NoObject::NoBalancedSpan) => {
                "no balanced JSON object parses in the input".to_owned()
            }
            (_, why) => format!("no JSON object parses in the input: {why}"),
        };
        eprintln!(
            "{}",
            serde_json::json!({"valid": false, "errors": [{"instance_path": "", "keyword": "extract", "message": message}]})
        );
        return Ok(1);
    };
    println!("{raw}");
    let missing = missing_required_keys(&schema, &value);
    let (errors, more_errors): (Vec<serde_json::Value>, u64) = if args.required_keys_only {
        let errors = missing
            .iter()
            .map(|k| serde_json::json!({"instance_path": "", "keyword": "required", "message": format!("missing required key {k:?}")}))
            .collect();
        (errors, 0)
    } else {
        let report = compiled.validate(&value);
        let errors = report
            .issues
            .iter()
            .map(|i| serde_json::to_value(i).unwrap_or_default())
            .collect();
        (errors, report.more_errors)
    };
    if errors.is_empty() {
        Ok(0)
    } else {
        let mut out = serde_json::json!({"valid": false, "errors": errors});
        if more_errors > 0 {
            out["more_errors"] = more_errors.into();
        }
        eprintln!("{out}");
        Ok(1)
    }
}
