//! `geode`: structured output from any LLM provider, with an honest guarantee ledger.
//! `geode worker` speaks the process protocol of GEODE, the reference Python system
//! (docs/reference.md): one `WorkerRequest` line in, one `WorkerResult` line out.
//!
//! Exit codes: 0 success / valid, 1 invalid answer or non-strict schema, 2 usage or
//! configuration error, 3 provider or transport failure.

mod cache_args;
mod client;
mod cmd_adapters;
mod cmd_batch;
mod cmd_cache;
mod cmd_config;
mod cmd_gateway;
mod cmd_mcp;
mod cmd_run;
mod cmd_schema;
mod cmd_serve;
mod cmd_validate;
mod cmd_worker;
mod contract_args;
mod logs;
mod progress;
mod resolve;
mod sibling;
mod task_args;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Exit code for a usage or configuration error.
pub(crate) const EXIT_USAGE: u8 = geode::protocol::exit::USAGE;

/// The `--queue` URL, with `GEODE_QUEUE_PASSWORD` as the Redis password when the URL has none
/// (so that it need not be on the command line).
pub(crate) fn queue_url(
    arg: &str,
) -> Result<geode::redis::RedisUrl, geode::batch::queue::QueueError> {
    let url = geode::redis::RedisUrl::parse(arg)?;
    Ok(match std::env::var("GEODE_QUEUE_PASSWORD") {
        Ok(password) => url.with_password(&password),
        Err(_) => url,
    })
}

/// The settings of this process: the working directory's configuration (`geode.toml`, else
/// the user's), resolved once with the process environment.
pub(crate) fn load_settings() -> Result<geode::config::Settings, String> {
    let env = &geode::llm::registry::ProcessEnv;
    std::env::current_dir()
        .map_err(|e| format!("cannot read the working directory: {e}"))
        .and_then(|dir| {
            geode::config::Config::load(&dir, env)
                .and_then(|c| c.settings(env))
                .map_err(|e| e.to_string())
        })
}

/// [`load_settings`], with a configuration that cannot be used printed and ending the command
/// with [`EXIT_USAGE`].
pub(crate) fn config() -> Result<geode::config::Settings, u8> {
    load_settings().map_err(|e| {
        eprintln!("geode: {e}");
        EXIT_USAGE
    })
}

/// 0 valid answer, 1 invalid after the retry, 2 configuration, 3 provider or transport failure
/// (the rule lives in [`geode::protocol::exit`]).
pub(crate) fn exit_code(result: &geode::protocol::WorkerResult) -> u8 {
    geode::protocol::exit::for_result(result)
}

#[derive(Parser)]
#[command(
    name = "geode",
    version,
    about = "One structured-output contract across LLM providers, with a guarantee ledger."
)]
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
    /// Validate model output (stdin) against a schema; prints the extracted JSON value.
    Validate(cmd_validate::ValidateArgs),
    /// Run one WorkerRequest JSON line from stdin; print one WorkerResult JSON line.
    Worker(cmd_worker::WorkerArgs),
    /// Run one prompt through the worker: JSON answer on stdout, ledger on stderr.
    Run(cmd_run::RunArgs),
    /// Run many tasks from a JSONL file, one result line each; resumes where it stopped.
    Batch(cmd_batch::BatchArgs),
    /// Serve tasks from a Redis queue (for `geode batch --queue` on any machine).
    Serve(cmd_serve::ServeArgs),
    /// Serve the OpenAI API (chat completions, responses, models) in front of every route, with
    /// the ledger (the `geode-gateway` binary; `geode gateway --help` lists its flags).
    #[command(disable_help_flag = true)]
    Gateway(cmd_gateway::GatewayArgs),
    /// Serve every `[contracts.NAME]` of geode.toml as an MCP tool, over stdio or streamable
    /// HTTP, each answer validated against its outputSchema, with the ledger (the `geode-mcp`
    /// binary; `geode mcp --help` lists its flags).
    #[command(disable_help_flag = true)]
    Mcp(cmd_mcp::McpArgs),
    /// The adapters, their structured-output modes, and which are configured here.
    Adapters(cmd_adapters::AdaptersArgs),
    /// The response cache (`--cache`): what it holds and its hits, or empty it.
    Cache {
        #[command(subcommand)]
        command: cmd_cache::CacheCommand,
    },
    /// The configuration: trust a project's geode.toml to send credentials where it says.
    Config {
        #[command(subcommand)]
        command: cmd_config::ConfigCommand,
    },
}

/// A reader that stops reading (`geode adapters | head -1`) closes stdout: the next `println!`
/// fails with a broken pipe and panics. That is the reader's choice, not a failure: end quietly
/// with the shell's code for SIGPIPE (141), as a C tool killed by the signal would.
fn quiet_on_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    quiet_on_broken_pipe();
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Schema { command } => cmd_schema::run(command),
        Command::Validate(args) => cmd_validate::run(args),
        Command::Worker(args) => cmd_worker::run(args),
        Command::Adapters(args) => cmd_adapters::run(args),
        Command::Run(args) => cmd_run::run(args),
        Command::Batch(args) => cmd_batch::run(args),
        Command::Serve(args) => cmd_serve::run(args),
        Command::Gateway(args) => cmd_gateway::run(args),
        Command::Mcp(args) => cmd_mcp::run(args),
        Command::Cache { command } => cmd_cache::run(command),
        Command::Config { command } => Ok(cmd_config::run(command)),
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("geode: {}", geode::secret::scrub(&format!("{e:#}")));
            ExitCode::from(EXIT_USAGE)
        }
    }
}
