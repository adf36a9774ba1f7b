//! `geode worker`: one WorkerRequest JSON line on stdin, one WorkerResult JSON line on stdout.
//!
//! The adapter is chosen as for `geode run`: the request's `adapter` (or an adapter name in
//! `source`), else routing from `model`, the config, or `local`.

use crate::resolve::resolve;
use clap::Args;
use geode::agent::worker::{WorkerResult, parse_request_line, run_worker};
use geode::config::Config;
use geode::llm::registry::ProcessEnv;
use std::io::BufRead;

#[derive(Args)]
pub(crate) struct WorkerArgs {}

fn emit(result: &WorkerResult) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string(result)?);
    Ok(())
}

pub(crate) fn run(_args: WorkerArgs) -> anyhow::Result<u8> {
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let mut req = match parse_request_line(&line) {
        Ok(r) => r,
        Err(e) => {
            let task_id = serde_json::from_str::<serde_json::Value>(&line)
                .ok()
                .and_then(|v| v.get("task_id").and_then(|t| t.as_str()).map(str::to_owned))
                .unwrap_or_default();
            emit(&WorkerResult::failed(&task_id, e.to_string()))?;
            return Ok(crate::EXIT_USAGE);
        }
    };
    let cfg = match Config::load(&std::env::current_dir()?, &ProcessEnv) {
        Ok(c) => c,
        Err(e) => {
            emit(&WorkerResult::failed(&req.task_id, e.to_string()))?;
            return Ok(crate::EXIT_USAGE);
        }
    };
    let env = match resolve(&mut req, &cfg) {
        Ok(e) => e,
        Err(e) => {
            emit(&WorkerResult::failed(&req.task_id, e.to_string()))?;
            return Ok(crate::EXIT_USAGE);
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = rt.block_on(run_worker(&req, &env));
    emit(&result)?;
    Ok(crate::exit_code(&result))
}
