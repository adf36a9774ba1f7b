//! `geode validate --schema FILE`: extract the last JSON object from stdin and validate it.

use clap::Args;
use geode::schema::ResponseSchema;
use geode::schema::extract::{NoObject, explain_no_object, extract_last_object};
use geode::schema::validate::{CompiledSchema, missing_required_keys};
use std::io::Read;
use std::path::PathBuf;

#[derive(Args)]
pub(crate) struct ValidateArgs {
    /// The schema file.
    #[arg(long)]
    schema: PathBuf,
    /// Only the reference's shallow check: an object with every top-level required key.
    #[arg(long)]
    required_keys_only: bool,
}

pub(crate) fn run(args: ValidateArgs) -> anyhow::Result<u8> {
    let schema = match ResponseSchema::from_file(&args.schema).and_then(|s| {
        let c = CompiledSchema::compile(&s)?;
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
    let Some((raw, value)) = extract_last_object(&text) else {
        let message = match explain_no_object(&text) {
            NoObject::NoBalancedSpan => "no balanced JSON object parses in the input".to_owned(),
            why => format!("no JSON object parses in the input: {why}"),
        };
        eprintln!(
            "{}",
            serde_json::json!({"valid": false, "errors": [{"instance_path": "", "keyword": "extract", "message": message}]})
        );
        return Ok(1);
    };
    println!("{raw}");
    let (schema, compiled) = schema;
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
