//! `geode worker`: one WorkerRequest JSON line on stdin, one WorkerResult JSON line on stdout.

use clap::Args;
use geode::agent::worker::{WorkerResult, parse_request_line};
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
    let req = match parse_request_line(&line) {
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
    let result = WorkerResult::failed(&req.task_id, "no adapter available yet");
    emit(&result)?;
    Ok(crate::EXIT_USAGE)
}
