//! `geode schema check FILE`: the strict verdict with reasons.

use clap::Subcommand;
use geode::schema::ResponseSchema;
use geode::schema::strict::check_strict;
use geode::schema::validate::CompiledSchema;
use std::path::PathBuf;

#[derive(Subcommand)]
pub(crate) enum SchemaCommand {
    /// OpenAI strict verdict with reasons. Exit 0 strict-compatible, 1 not, 2 unusable schema.
    Check {
        /// The schema file (a JSON object).
        file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn run(cmd: SchemaCommand) -> anyhow::Result<u8> {
    match cmd {
        SchemaCommand::Check { file, json } => check(&file, json),
    }
}

fn check(file: &std::path::Path, json: bool) -> anyhow::Result<u8> {
    let schema = match ResponseSchema::from_file(file).and_then(|s| {
        CompiledSchema::compile(&s)?;
        Ok(s)
    }) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("geode: unusable schema: {e}");
            return Ok(crate::EXIT_USAGE);
        }
    };
    let verdict = check_strict(schema.as_value());
    if json {
        let out = serde_json::json!({
            "name": schema.name(),
            "openai_name": schema.openai_name(),
            "strict": verdict,
        });
        println!("{out}");
    } else {
        println!(
            "schema {} (openai name {}): {}",
            schema.name(),
            schema.openai_name(),
            if verdict.compatible {
                "strict-compatible"
            } else {
                "NOT strict-compatible (sent as a strict=false hint)"
            }
        );
        for r in &verdict.reasons {
            let at = if r.pointer.is_empty() {
                "/"
            } else {
                &r.pointer
            };
            println!("  {at}: {}", r.rule);
        }
    }
    Ok(if verdict.compatible { 0 } else { 1 })
}
