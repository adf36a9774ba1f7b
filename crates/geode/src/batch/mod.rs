//! Batches: one schema (or any requests) over a data set, with nothing lost and nothing twice.
//!
//! `geode batch` reads JSONL tasks ([`input`]), runs them with bounded concurrency through the
//! same worker as `geode run` ([`crate::protocol::run_worker`]), paces each adapter
//! ([`pace`]) and appends one result line per task as it ends ([`output`]). [`run_batch`] is
//! the loop; the CLI adds the flags, the adapters and the progress display.
//!
//! | promise | how |
//! |---|---|
//! | resume | a task whose id the results file holds is skipped ([`output::ResultLog`]) |
//! | no partial line, no lost result | whole lines, flushed as each task ends; a torn last line is cut on start |
//! | nothing twice | duplicate ids in the input are refused before anything runs ([`input::scan_ids`]); the log refuses a second result for an id |
//! | a bad line does not stop the others | it is reported with its line number in the [`Summary`] |
//! | interrupted runs lose nothing | after [`BatchOptions::cancel`], no new task starts, and a task cut short writes no result (it runs again next time) |
//! | rate limits | a 429 slows every task on that adapter ([`pace::Pacer`]) |

pub mod input;
pub mod output;
pub mod pace;
#[cfg(feature = "redis")]
pub mod queue;
mod summary;

pub use summary::{AdapterTotals, Outcome, Summary};

use crate::agent::worker::WorkerEnv;
use crate::protocol::{PrepareError, WorkerRequest, WorkerResult, run_worker};
use crate::vocab::TerminationReason;
use input::InputLine;
use output::{OutputError, ResultLog};
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Turns a task's request into what runs it: the request as routed (model filled in, say) and
/// its environment; an `Err` is a refusal (routing, preflight, configuration) recorded as the
/// task's failed result.
pub type Prepare =
    dyn Fn(WorkerRequest) -> Result<(WorkerRequest, WorkerEnv), PrepareError> + Send + Sync;

/// How a batch runs.
#[derive(Debug, Clone)]
pub struct BatchOptions {
    /// Tasks running at once (at least 1).
    pub concurrency: usize,
    /// Stops the batch: no new task starts and running ones are cancelled without a result.
    pub cancel: CancellationToken,
}

impl Default for BatchOptions {
    fn default() -> Self {
        Self {
            concurrency: 4,
            cancel: CancellationToken::new(),
        }
    }
}

/// Runs every task of `lines` not already in `log`, appending each result as it ends. The
/// live [`Summary`] is updated as tasks end (a progress display may read it) and returned.
pub async fn run_batch(
    lines: impl IntoIterator<Item = InputLine>,
    log: ResultLog,
    prepare: Arc<Prepare>,
    options: BatchOptions,
    summary: Arc<Mutex<Summary>>,
) -> Result<Summary, OutputError> {
    let started = tokio::time::Instant::now();
    lock(&summary).note_log(&log);
    let log = Arc::new(Mutex::new(log));
    let permits = Arc::new(Semaphore::new(options.concurrency.max(1)));
    let mut running = JoinSet::new();
    for line in lines {
        let (line_no, request) = match line {
            InputLine::Bad(bad) => {
                lock(&summary).bad_lines.push(bad);
                continue;
            }
            InputLine::Task { line, request } => (line, request),
        };
        if lock(&log).contains(&request.task_id) {
            lock(&summary).skipped += 1;
            continue;
        }
        lock(&summary).queued += 1;
        let permit = tokio::select! {
            biased;
            _ = options.cancel.cancelled() => break,
            p = permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let (log, summary, prepare, cancel) = (
            log.clone(),
            summary.clone(),
            prepare.clone(),
            options.cancel.clone(),
        );
        running.spawn(async move {
            let _permit = permit;
            let task_id = request.task_id.clone();
            let result = match prepare(*request) {
                Ok((req, mut env)) => {
                    env.cancel = cancel.child_token();
                    lock(&summary).running += 1;
                    let r = run_worker(&req, &env).await;
                    lock(&summary).running -= 1;
                    r
                }
                Err(why) => WorkerResult::failed(&task_id, why.to_string()),
            };
            if cancel.is_cancelled() && cut_short(&result) {
                lock(&summary).interrupted += 1;
                return Ok(());
            }
            let written = lock(&log).append(&result)?;
            if written {
                lock(&summary).record(&result);
            }
            tracing::debug!(task = %task_id, line = line_no, success = result.success, "task ended");
            Ok::<(), OutputError>(())
        });
        // Reap finished tasks as we go so errors surface early and memory stays flat.
        while let Some(done) = running.try_join_next() {
            flatten(done)?;
        }
    }
    while let Some(done) = running.join_next().await {
        flatten(done)?;
    }
    let mut s = lock(&summary);
    s.wall_ms = started.elapsed().as_millis().try_into().unwrap_or(u64::MAX);
    Ok(s.clone())
}

/// Whether a result ended because the batch was stopped (so it must not be recorded).
/// (A cancelled run ends `user_cancelled`, which the worker counts as an intended ending.)
fn cut_short(result: &WorkerResult) -> bool {
    result.termination_reason == TerminationReason::UserCancelled
        || result
            .ledger
            .attempts
            .last()
            .is_some_and(|a| a.error_kind == Some(crate::vocab::ErrorKind::Cancelled))
}

fn flatten(
    joined: Result<Result<(), OutputError>, tokio::task::JoinError>,
) -> Result<(), OutputError> {
    match joined {
        Ok(r) => r,
        // A panicking task loses only its own result; it runs again on the next start.
        Err(e) => {
            tracing::error!("a batch task failed internally: {e}");
            Ok(())
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests;
