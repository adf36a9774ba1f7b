//! `geode batch`: many tasks from a JSONL file through the worker, one result line each.
//!
//! The library does the work ([`geode::batch`]): reading lines, resuming, whole-line results,
//! pacing. This file adds the flags, the adapters (resolved per task as `geode run` does, each
//! wrapped in its adapter's shared [`Pacer`]), Ctrl-C, and what people watch: a progress bar on
//! a terminal, a plain line every few seconds when stderr is piped, and the summary.
//!
//! With `--queue`, the tasks go to a Redis stream and `geode serve` workers run them; this
//! process enqueues and collects ([`geode::batch::queue`]).
//!
//! Exit: 0 every task valid, 1 some invalid, 2 bad input (duplicate ids, bad lines, refused
//! tasks), 3 some failed at the provider, 130 stopped by Ctrl-C (finished results are kept).

use crate::resolve::resolve;
use crate::task_args::TaskArgs;
use anyhow::Context;
use clap::Args;
use geode::batch::input::{BadLine, InputLine, open_input, read_line, scan_ids};
use geode::batch::output::ResultLog;
use geode::batch::pace::{Limits, PacedAdapter, Pacer};
use geode::batch::queue::{CollectOptions, collect};
use geode::batch::{BatchOptions, Prepare, Summary, run_batch};
use geode::config::Settings;
use geode::protocol::WorkerRequest;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, IsTerminal};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Args)]
pub(crate) struct BatchArgs {
    #[command(flatten)]
    task: TaskArgs,
    #[command(flatten)]
    cache: crate::cache_args::CacheArgs,
    /// The tasks: one WorkerRequest, or `{"task_id": ..., "prompt": ...}`, per line.
    #[arg(long)]
    input: PathBuf,
    /// The results: one WorkerResult per line, appended; task ids already there are skipped.
    #[arg(long)]
    output: PathBuf,
    /// Tasks running at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=1024))]
    concurrency: u16,
    /// Requests per minute, per adapter.
    #[arg(long)]
    rpm: Option<u32>,
    /// Tokens (prompt + completion) per minute, per adapter.
    #[arg(long)]
    tpm: Option<u64>,
    /// Also write the summary as JSON to this file.
    #[arg(long)]
    summary_json: Option<PathBuf>,
    /// Run the tasks on `geode serve` workers through this queue (redis://HOST:PORT/NAME)
    /// instead of here: enqueue them and collect their results.
    #[arg(long)]
    queue: Option<String>,
    /// Seconds between progress lines when stderr is not a terminal.
    #[arg(long, default_value_t = 5.0)]
    progress_every: f64,
}

pub(crate) fn run(args: BatchArgs) -> anyhow::Result<u8> {
    crate::logs::init();
    let usage = |e: &dyn std::fmt::Display| {
        eprintln!("geode: {e}");
        Ok(crate::EXIT_USAGE)
    };
    let cfg = match crate::load_settings() {
        Ok(c) => c,
        Err(e) => return usage(&e),
    };
    let queue = match args.queue.as_deref().map(crate::queue_url).transpose() {
        Ok(q) => q,
        Err(e) => return usage(&e),
    };
    let template = match args.task.request(&cfg, "", "") {
        Ok(r) => r,
        Err(e) => return usage(&e),
    };
    let open = || open_input(&args.input, &args.output).map(BufReader::new);
    match open().map(scan_ids) {
        Ok(Ok(_)) => {}
        Ok(Err(e)) | Err(e) => return usage(&e),
    }
    let log = match ResultLog::open(&args.output) {
        Ok(l) => l,
        Err(e) => return usage(&e),
    };
    if log.torn_bytes() > 0 {
        eprintln!(
            "geode: dropped a torn last line ({} bytes) from {}",
            log.torn_bytes(),
            args.output.display()
        );
    }
    report_unreadable(&args.output, log.unreadable_lines());
    let lines = open()?
        .lines()
        .enumerate()
        .filter_map(move |(i, line)| match line {
            Ok(text) => read_line(&text, i + 1, &template),
            Err(e) => Some(InputLine::Bad(BadLine {
                line: i + 1,
                message: format!("cannot read: {e}"),
            })),
        });
    let limits = Limits {
        rpm: args.rpm,
        tpm: args.tpm,
    };
    let cache = match args.cache.open(&cfg) {
        Ok(c) => c,
        Err(e) => return usage(&e),
    };
    let prepare = paced_prepare(cfg, limits, cache.clone());
    let options = BatchOptions {
        concurrency: usize::from(args.concurrency),
        ..BatchOptions::default()
    };
    let summary: Arc<Mutex<Summary>> = Arc::default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let cancel = options.cancel.clone();
    let every = Duration::from_secs_f64(args.progress_every.clamp(0.1, 3600.0));
    let final_summary = rt.block_on(async {
        tokio::spawn({
            let cancel = cancel.clone();
            async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    eprintln!("geode: stopping: no new tasks; finished results are kept");
                    cancel.cancel();
                }
            }
        });
        let watcher = tokio::spawn(watch(summary.clone(), every));
        let result = match &queue {
            Some(url) => {
                let options = CollectOptions {
                    stop: options.cancel.clone(),
                };
                collect(url, lines, log, summary, options)
                    .await
                    .map_err(anyhow::Error::from)
            }
            None => run_batch(lines, log, prepare, options, summary)
                .await
                .map_err(anyhow::Error::from),
        };
        watcher.abort();
        crate::cache_args::flush(cache.as_ref()).await;
        result
    });
    // Printed whole (`{e}`), not as an anyhow chain: these errors already name their cause,
    // and the chain printed it twice.
    let final_summary = match final_summary {
        Ok(s) => s,
        Err(e) => return usage(&geode::secret::scrub(&e.to_string())),
    };
    report(&final_summary);
    if let Some(path) = &args.summary_json {
        std::fs::write(path, serde_json::to_vec_pretty(&final_summary)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(if cancel.is_cancelled() {
        130
    } else {
        final_summary.exit_code()
    })
}

/// Resolves each task as `geode run` does, with every adapter's calls going through that
/// adapter's one shared pacer, and the response cache, when there is one.
pub(crate) fn paced_prepare(
    cfg: Settings,
    limits: Limits,
    cache: Option<geode::cache::Cache>,
) -> Arc<Prepare> {
    let pacers: Mutex<HashMap<String, Pacer>> = Mutex::default();
    Arc::new(move |mut req: WorkerRequest| {
        let mut env = resolve(&mut req, &cfg)?;
        env.store = cache.as_ref().map(geode::cache::Cache::as_store);
        let name = env.adapter.name().to_owned();
        let pacer = pacers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(name)
            .or_insert_with(|| Pacer::new(limits))
            .clone();
        env.adapter = Arc::new(PacedAdapter::new(env.adapter, pacer));
        Ok((req, env))
    })
}

/// Shows progress until aborted: a bar on a terminal, else a plain line every `every`.
async fn watch(summary: Arc<Mutex<Summary>>, every: Duration) {
    let started = tokio::time::Instant::now();
    let snapshot = || summary.lock().unwrap_or_else(|p| p.into_inner()).clone();
    if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.enable_steady_tick(Duration::from_millis(200));
        loop {
            let s = snapshot();
            bar.set_message(format!("{} · {}", s.line(), rate(&s, started.elapsed())));
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    } else {
        loop {
            tokio::time::sleep(every).await;
            let s = snapshot();
            eprintln!(
                "geode batch: {} · {}",
                s.line(),
                rate(&s, started.elapsed())
            );
        }
    }
}

/// Tasks per second so far and the time left at that rate.
fn rate(s: &Summary, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64().max(1e-3);
    let per_sec = s.done() as f64 / secs;
    let left = s.queued.saturating_sub(s.done());
    let eta = if per_sec > 0.0 {
        format!("{:.0}s", left as f64 / per_sec)
    } else {
        "-".to_owned()
    };
    format!("{per_sec:.2} tasks/s · eta {eta}")
}

/// Says what was done with complete lines of the results file that are not results: nothing
/// (they stay where they are), and the tasks they may have held run again.
fn report_unreadable(output: &std::path::Path, lines: &[usize]) {
    if lines.is_empty() {
        return;
    }
    let shown: Vec<String> = lines.iter().take(10).map(ToString::to_string).collect();
    let more = if lines.len() > shown.len() {
        format!(", and {} more", lines.len() - shown.len())
    } else {
        String::new()
    };
    eprintln!(
        "geode: {}: {} line(s) are not results (line {}{more}); they are left as they are and any task they held runs again",
        output.display(),
        lines.len(),
        shown.join(", "),
    );
}

/// The summary on stderr.
fn report(s: &Summary) {
    eprintln!("geode batch: {}", s.line());
    for bad in &s.bad_lines {
        eprintln!("  bad input {bad}");
    }
    for (adapter, t) in &s.adapters {
        eprintln!(
            "  {adapter}: {} tasks, {} tokens in, {} out",
            t.tasks, t.input_tokens, t.output_tokens
        );
    }
    eprintln!("  wall time {:.1}s", s.wall_ms as f64 / 1000.0);
}
