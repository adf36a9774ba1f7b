//! `geode run`: one task through the worker, the JSON answer on stdout and the ledger on stderr.

use crate::progress::Progress;
use crate::resolve::resolve;
use crate::task_args::TaskArgs;
use clap::Args;
use geode::agent::task::Task;
use geode::agent::worker::WorkerEnv;
use geode::protocol::run_worker;
use geode::{ItemSource, stream_task};

#[derive(Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    task: TaskArgs,
    #[command(flatten)]
    cache: crate::cache_args::CacheArgs,
    /// Print the whole WorkerResult as JSON on stdout.
    #[arg(long, conflicts_with = "stream")]
    json: bool,
    /// Print events as JSON lines on stdout as the answer arrives: partial values with the
    /// pointers of their closed parts, closed list items, the retry, then the final value and
    /// its ledger (or an error event).
    #[arg(long)]
    stream: bool,
    /// The prompt.
    prompt: String,
}

pub(crate) fn run(args: RunArgs) -> anyhow::Result<u8> {
    let cfg = match crate::config() {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let mut req = match args.task.request(&cfg, "run", &args.prompt) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("geode: {e}");
            return Ok(crate::EXIT_USAGE);
        }
    };
    let cache = match args.cache.open(&cfg) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("geode: {e}");
            return Ok(crate::EXIT_USAGE);
        }
    };
    let mut env = match resolve(&mut req, &cfg) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("geode: {e}");
            return Ok(crate::EXIT_USAGE);
        }
    };
    env.store = cache.as_ref().map(geode::cache::Cache::as_store);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    if args.stream {
        let code = rt.block_on(stream_events(req.task()?, env));
        rt.block_on(crate::cache_args::flush(cache.as_ref()));
        return Ok(code);
    }
    let progress = {
        let _runtime = rt.enter();
        let model = match req.model.as_str() {
            "" => env.adapter.spec().map_or("", |s| s.default_model),
            m => m,
        };
        Progress::on_terminal(env.adapter.name(), model)
    };
    env.on_text = progress.as_ref().map(Progress::sink);
    let result = rt.block_on(run_worker(&req, &env));
    rt.block_on(crate::cache_args::flush(cache.as_ref()));
    // Cleared before the answer and the ledger are printed.
    drop(progress);
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

/// Prints the stream's events as JSON lines; the exit code of how it ended.
async fn stream_events(task: Task, env: WorkerEnv) -> u8 {
    use futures::StreamExt;
    let mut events = stream_task(task, env, ItemSource::Auto);
    let mut code = geode::protocol::exit::VALID;
    while let Some(event) = events.next().await {
        let line = match event {
            Ok(e) => e.to_json(),
            Err(e) => {
                code = e.exit_code();
                e.to_json()
            }
        };
        println!("{line}");
    }
    code
}
