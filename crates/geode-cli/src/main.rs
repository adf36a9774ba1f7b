//! `geode`: structured output from any LLM provider, with an honest guarantee ledger.
//!
//! Exit codes: 0 success / valid, 1 invalid answer or non-strict schema, 2 usage or
//! configuration error, 3 provider or transport failure.

mod cmd_schema;
mod cmd_validate;
mod cmd_worker;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Exit code for a usage or configuration error.
pub(crate) const EXIT_USAGE: u8 = 2;

#[derive(Parser)]
#[command(name = "geode", version, about = "One structured-output contract across LLM providers, with a guarantee ledger.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Inspect a response schema.
    Schema {
        #[command(subcommand)]
        command: cmd_schema::SchemaCommand,
    },
    /// Validate model output (stdin) against a schema; prints the extracted JSON object.
    Validate(cmd_validate::ValidateArgs),
    /// Run one WorkerRequest JSON line from stdin; print one WorkerResult JSON line.
    Worker(cmd_worker::WorkerArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Schema { command } => cmd_schema::run(command),
        Command::Validate(args) => cmd_validate::run(args),
        Command::Worker(args) => cmd_worker::run(args),
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("geode: {e:#}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}
