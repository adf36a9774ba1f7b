//! `geode schema check FILE`: the strict verdict with reasons.

use crate::resolve::limit_violations;
use clap::Subcommand;
use geode::llm::registry::ADAPTERS;
use geode::schema::ResponseSchema;
use geode::schema::dialect::LimitViolation;
use geode::schema::strict::check_strict;
use geode::schema::validate::CompiledSchema;
use std::path::PathBuf;

#[derive(Subcommand)]
pub(crate) enum SchemaCommand {
    /// OpenAI strict verdict with reasons, and the provider-limit preflight `run` applies.
    /// Exit 0 strict-compatible and within every adapter's limits, 1 not, 2 unusable schema.
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
    // The preflight `run` applies, per adapter; adapters breaking the same limits are grouped.
    let mut refusals: Vec<(Vec<&str>, Vec<LimitViolation>)> = Vec::new();
    for spec in ADAPTERS {
        let violations = limit_violations(&schema, spec);
        if violations.is_empty() {
            continue;
        }
        match refusals.iter_mut().find(|(_, v)| *v == violations) {
            Some((names, _)) => names.push(spec.name),
            None => refusals.push((vec![spec.name], violations)),
        }
    }
    if json {
        let preflight: Vec<_> = refusals
            .iter()
            .map(|(adapters, violations)| {
                serde_json::json!({"adapters": adapters, "violations": violations})
            })
            .collect();
        let out = serde_json::json!({
            "name": schema.name(),
            "openai_name": schema.openai_name(),
            "strict": verdict,
            "preflight": {"refused": !refusals.is_empty(), "refusals": preflight},
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
        if refusals.is_empty() {
            println!("provider limits: within the limits of every adapter");
        }
        for (adapters, violations) in &refusals {
            println!(
                "provider limits: refused before the call by {}:",
                adapters.join(", ")
            );
            for v in violations {
                println!("  {v}");
            }
        }
    }
    Ok(if verdict.compatible && refusals.is_empty() {
        0
    } else {
        1
    })
}
