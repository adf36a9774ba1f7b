//! `geode worker`: one WorkerRequest JSON line on stdin, one WorkerResult JSON line on stdout.
//!
//! Whatever stdin holds (nothing, binary, invalid UTF-8, an array, two requests), stdout gets
//! exactly one WorkerResult line; a request that could not be read is a failed result with its
//! `task_id`, or `"unknown"` when none could be read, and exit 2. A panic inside the run is a
//! failed result too.
//!
//! The adapter is chosen as for `geode run`: the request's `adapter` (or an adapter name in
//! `source`), else routing from `model`, the config, or `local`.

use crate::resolve::resolve;
use clap::Args;
use geode::protocol::{
    MAX_REQUEST_BYTES, UNKNOWN_TASK_ID, WorkerResult, parse_request, request_task_id, run_worker,
};
use std::io::Read;

#[derive(Args)]
pub(crate) struct WorkerArgs {
    /// Let the declared repair tier read the answer, whatever the request's `repair` says
    /// (also `repair = true` in geode.toml).
    #[arg(long)]
    repair: bool,
    #[command(flatten)]
    cache: crate::cache_args::CacheArgs,
}

pub(crate) fn run(args: WorkerArgs) -> anyhow::Result<u8> {
    let (result, code) = serve(args.repair, &args.cache);
    println!("{}", result.to_json_line()?);
    Ok(code)
}

/// Reads the request, runs it, and returns the one result with its exit code.
fn serve(repair: bool, cache: &crate::cache_args::CacheArgs) -> (WorkerResult, u8) {
    let refused = |task_id: &str, e: &dyn std::fmt::Display| {
        (
            WorkerResult::failed(task_id, e.to_string()),
            crate::EXIT_USAGE,
        )
    };
    let mut input = Vec::new();
    // One byte past the limit, so that a larger request is seen as such.
    let limit = u64::try_from(MAX_REQUEST_BYTES + 1).unwrap_or(u64::MAX);
    if let Err(e) = std::io::stdin().lock().take(limit).read_to_end(&mut input) {
        return refused(UNKNOWN_TASK_ID, &format!("cannot read stdin: {e}"));
    }
    let mut req = match parse_request(&input) {
        Ok(r) => r,
        Err(e) => return refused(&request_task_id(&input), &e),
    };
    let cfg = match crate::load_settings() {
        Ok(c) => c,
        Err(e) => return refused(&req.task_id, &e),
    };
    req.repair |= repair || cfg.repair;
    let mut env = match resolve(&mut req, &cfg) {
        Ok(e) => e,
        Err(e) => return refused(&req.task_id, &e),
    };
    let cache = match cache.open(&cfg) {
        Ok(c) => c,
        Err(e) => return refused(&req.task_id, &e),
    };
    env.store = cache.as_ref().map(geode::cache::Cache::as_store);
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return refused(&req.task_id, &format!("cannot start the runtime: {e}")),
    };
    let task_id = req.task_id.clone();
    // Run as a task so that a panic comes back as a JoinError, not an unwinding process.
    let ran =
        rt.block_on(async move { tokio::spawn(async move { run_worker(&req, &env).await }).await });
    rt.block_on(crate::cache_args::flush(cache.as_ref()));
    match ran {
        Ok(result) => {
            let code = crate::exit_code(&result);
            (result, code)
        }
        Err(e) => (
            WorkerResult::failed(&task_id, format!("the worker failed internally: {e}")),
            geode::protocol::exit::PROVIDER,
        ),
    }
}
