//! `geode serve --queue redis://HOST:PORT/NAME`: a worker taking tasks from a Redis stream (see
//! [`geode::batch::queue`]). Each task is resolved as `geode run` resolves one, with each
//! adapter's calls paced as in `geode batch`. SIGTERM or Ctrl-C: no new task is read, the ones
//! held are finished, then it exits 0.

use crate::cmd_batch::paced_prepare;
use clap::Args;
use geode::batch::pace::Limits;
use geode::batch::queue::{QueueOptions, serve};
use std::time::Duration;

#[derive(Args)]
pub(crate) struct ServeArgs {
    /// The queue: redis://HOST:PORT/NAME.
    #[arg(long)]
    queue: String,
    /// Tasks this worker runs at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=1024))]
    concurrency: u16,
    /// Seconds a task may go without this worker's renewal before another worker takes it.
    #[arg(long, default_value_t = 30.0)]
    lease: f64,
    /// Deliveries after which a task goes to the dead-letter stream.
    #[arg(long, default_value_t = 3)]
    max_deliveries: u64,
    /// Requests per minute, per adapter, for this worker.
    #[arg(long)]
    rpm: Option<u32>,
    /// Tokens per minute, per adapter, for this worker.
    #[arg(long)]
    tpm: Option<u64>,
    #[command(flatten)]
    cache: crate::cache_args::CacheArgs,
}

pub(crate) fn run(args: ServeArgs) -> anyhow::Result<u8> {
    crate::logs::init();
    let url = match crate::queue_url(&args.queue) {
        Ok(u) => u,
        Err(e) => {
            eprintln!("geode: {e}");
            return Ok(crate::EXIT_USAGE);
        }
    };
    if !(args.lease.is_finite() && args.lease >= 0.1) {
        eprintln!("geode: --lease must be at least 0.1 seconds");
        return Ok(crate::EXIT_USAGE);
    }
    let cfg = match crate::config() {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let options = QueueOptions {
        concurrency: usize::from(args.concurrency),
        lease: Duration::from_secs_f64(args.lease),
        max_deliveries: args.max_deliveries.max(1),
        ..QueueOptions::default()
    };
    let stop = options.stop.clone();
    let cache = match args.cache.open(&cfg) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("geode: {e}");
            return Ok(crate::EXIT_USAGE);
        }
    };
    let prepare = paced_prepare(
        cfg,
        Limits {
            rpm: args.rpm,
            tpm: args.tpm,
        },
        cache.clone(),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let written = rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::spawn(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            eprintln!("geode serve: stopping: finishing the tasks held");
            stop.cancel();
        });
        let served = serve(&url, options, prepare)
            .await
            .map_err(anyhow::Error::from);
        crate::cache_args::flush(cache.as_ref()).await;
        served
    })?;
    eprintln!("geode serve: {written} results written");
    Ok(0)
}
