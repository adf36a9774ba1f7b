//! `geode run`: one task through the worker, the JSON answer on stdout and the ledger on stderr.

use crate::resolve::resolve;
use crate::task_args::TaskArgs;
use clap::Args;
use geode::agent::worker::run_worker;
use geode::config::Config;
use geode::llm::registry::ProcessEnv;

#[derive(Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    task: TaskArgs,
    /// Print the whole WorkerResult as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// The prompt.
    prompt: String,
}

pub(crate) fn run(args: RunArgs) -> anyhow::Result<u8> {
    let cfg = match Config::load(&std::env::current_dir()?, &ProcessEnv) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("geode: {e}");
            return Ok(crate::EXIT_USAGE);
        }
    };
    let mut req = match args.task.request(&cfg, "run", &args.prompt) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("geode: {e}");
            return Ok(crate::EXIT_USAGE);
        }
    };
    let env = match resolve(&mut req, &cfg) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("geode: {e}");
            return Ok(crate::EXIT_USAGE);
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let result = rt.block_on(run_worker(&req, &env));
    if args.json {
        println!("{}", serde_json::to_string(&result)?);
    } else if result.ledger.attempts.is_empty() && !result.success {
        // Refused before any call: there is no run to summarise.
        eprintln!("geode: {}", result.error.as_deref().unwrap_or("refused"));
    } else {
        match (&result.answer, result.success) {
            (Some(answer), true) => println!("{answer}"),
            _ if result.success => println!("{}", result.output),
            _ => {}
        }
        eprintln!("{}", result.ledger.summary());
        if let Some(e) = &result.error {
            eprintln!("error: {e}");
        }
    }
    Ok(crate::exit_code(&result))
}
