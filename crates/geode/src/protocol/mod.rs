//! The process protocol: GEODE's JSON shapes ([`WorkerRequest`] on stdin or a
//! JSONL line, [`WorkerResult`] out), converted to and from the typed core
//! ([`crate::agent::task`]) here and nowhere else. `geode worker`, `geode batch`, `geode serve`
//! and subtasks speak it; [`crate::Client`] and `geode run` do not.
//!
//! | module | job |
//! |---|---|
//! | `request`, `result` | `WorkerRequest` / `WorkerResult` and their conversion to and from the core |
//! | [`subtask`] | GEODE's subtask delivery: `SubTask`, its `WorkerRequest`, running many at once |
//! | [`exit`] | the process exit code of a finished request |

pub mod exit;
mod request;
mod result;
pub mod subtask;

pub use request::{
    MAX_REQUEST_BYTES, PartRef, UNKNOWN_TASK_ID, WorkerError, WorkerRequest, parse_request,
    parse_request_line, request_task_id,
};
pub use result::WorkerResult;

use crate::agent::task::ResolveError;
use crate::agent::worker::{WorkerEnv, run_task};

/// Why a request got no environment to run in: it describes no task that can run, or no
/// adapter can serve it. A refusal before any call, recorded as the task's failed result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PrepareError {
    /// The request is refused as written.
    #[error(transparent)]
    Request(#[from] WorkerError),
    /// Routing, preflight or the adapter's construction failed.
    #[error(transparent)]
    Route(#[from] ResolveError),
}

/// Runs one request to completion, as `geode worker` does. Never panics on bad input: a request
/// that cannot run ([`WorkerRequest::task`]) is a failed result naming the problem, before any
/// call. Every string of the result has passed through [`crate::secret::scrub`].
pub async fn run_worker(req: &WorkerRequest, env: &WorkerEnv) -> WorkerResult {
    let mut result = match req.task() {
        Ok(task) => WorkerResult::from_run(&req.task_id, run_task(&task, env).await),
        Err(e) => {
            let mut failed = WorkerResult::failed(&req.task_id, e.to_string());
            failed.ledger.adapter = env.adapter.name().to_owned();
            failed.ledger.model = req.model.clone();
            failed
        }
    };
    result.ledger.unknown_request_fields = req.unknown.keys().cloned().collect();
    result.ledger.ignored_request_fields = req.ignored_fields();
    crate::secret::scrub_serde(result)
}
