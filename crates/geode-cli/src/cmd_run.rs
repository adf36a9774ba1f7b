//! `geode run`: one task from the flags through [`Client`], as the gateway runs one; the JSON
//! answer on stdout and the ledger on stderr (`--json`: the whole WorkerResult, converted only
//! when it is printed).

use crate::progress::Progress;
use crate::task_args::TaskArgs;
use clap::Args;
use geode::protocol::{WorkerResult, exit};
use geode::{Client, ItemSource};
use geode::{RunError, Task};

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
    /// Run the named contract of geode.toml (`[contracts.NAME]`): its prompt, schema, route and
    /// policy. Flags given beside it (--adapter, --model, --timeout, --max-tokens, --image, ...)
    /// win; --require may raise the contract's requirement, never lower it.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["constraint", "prompt"])]
    contract: Option<String>,
    /// A value for one of the contract's inputs (`{NAME}` in its prompt), read by its type.
    /// Repeatable.
    #[arg(long = "input", value_name = "NAME=VALUE", requires = "contract")]
    inputs: Vec<String>,
    /// The prompt.
    #[arg(required_unless_present = "contract")]
    prompt: Option<String>,
}

pub(crate) fn run(args: RunArgs) -> anyhow::Result<u8> {
    let usage = |e: &dyn std::fmt::Display| {
        eprintln!("geode: {e}");
        Ok(crate::EXIT_USAGE)
    };
    let settings = match crate::config() {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let task = match &args.contract {
        Some(name) => crate::contract_args::task(&args.task, &settings, name, &args.inputs),
        None => args
            .task
            .task(&settings, args.prompt.as_deref().unwrap_or_default()),
    };
    let task = match task {
        Ok(t) => t,
        Err(e) => return usage(&e),
    };
    let cache = match args.cache.open(&settings) {
        Ok(c) => c,
        Err(e) => return usage(&e),
    };
    let client = match crate::client::client(settings, cache.clone()) {
        Ok(c) => c,
        Err(e) => return usage(&e),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    if args.stream {
        let code = rt.block_on(stream_events(&client, task));
        rt.block_on(crate::cache_args::flush(cache.as_ref()));
        return Ok(code);
    }
    let mut progress = None;
    let run = rt.block_on(client.run_task(task, |task, env| {
        let model = match task.route.model() {
            "" => env.adapter.spec().map_or("", |s| s.default_model),
            m => m,
        };
        progress = Progress::on_terminal(env.adapter.name(), model);
        env.on_text = progress.as_ref().map(Progress::sink);
    }));
    rt.block_on(crate::cache_args::flush(cache.as_ref()));
    // Cleared before the answer and the ledger are printed.
    drop(progress);
    let code = exit::for_run(&run);
    if args.json {
        println!(
            "{}",
            serde_json::to_string(&WorkerResult::from_run("run", run))?
        );
        return Ok(code);
    }
    match run {
        Ok(answer) => {
            match &answer.value {
                Some(value) => println!("{value}"),
                None => println!("{}", answer.text),
            }
            eprintln!("{}", answer.ledger.summary());
        }
        // Refused before any call: there is no run to summarise.
        Err(
            e @ (RunError::Route(_)
            | RunError::Refused { .. }
            | RunError::Schema { .. }
            | RunError::Tools { .. }),
        ) => eprintln!("geode: {}", geode::secret::scrub(&e.to_string())),
        Err(e) => {
            if let Some(last) = e.last() {
                eprintln!("{}", last.ledger.summary());
            }
            eprintln!("error: {e}");
        }
    }
    Ok(code)
}

/// Prints the stream's events as JSON lines; the exit code of how it ended.
async fn stream_events(client: &Client, task: Task) -> u8 {
    use futures::StreamExt;
    let mut events = client.stream_task(task, ItemSource::Auto);
    let mut code = exit::VALID;
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
