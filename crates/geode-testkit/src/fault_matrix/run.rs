//! One worker run and its verdict, shared by every cell (the `local` cells too, which run in
//! geode-local's `fault_matrix_local` test): the adapter wrapped in a recorder that keeps each
//! typed error as it leaves the adapter, `run_worker` bounded by the deadline, then the judgement
//! against the expected outcome (kind, exit code, time, secrets).

use super::table::{Expect, Outcome};
use geode::agent::worker::WorkerEnv;
use geode::llm::adapter::{Adapter, Wraps};
use geode::llm::call::CallCx;
use geode::llm::request::{AdapterCallRequest, AdapterResponse};
use geode::protocol::exit;
use geode::protocol::{WorkerRequest, WorkerResult, run_worker};
use geode::schema::ResponseSchema;
use geode::vocab::ErrorKind;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// How long after its deadline a run counts as hung (and is abandoned).
const HANG_SLACK: Duration = Duration::from_secs(20);
/// A generous bound on how late after its deadline a run may end (a killed CLI's pipes are
/// drained for up to 2 s and its leader reaped for up to 5 s).
const LATE: Duration = Duration::from_secs(10);
/// Length of the secret windows searched for in every output.
const SECRET_WINDOW: usize = 12;

/// The result of one cell.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// What the run ended in (`ok`, `invalid`, `hung`, or an adapter error kind).
    pub got: String,
    /// The exit code, when the run ended.
    pub exit: Option<u8>,
    /// Everything wrong with the cell; empty means it passed.
    pub problems: Vec<String>,
}

impl Verdict {
    pub fn setup_failed(what: String) -> Verdict {
        Verdict {
            got: "setup failed".into(),
            exit: None,
            problems: vec![what],
        }
    }
}

/// Records every call's outcome as it leaves the adapter (errors by kind, `Display`, `Debug`).
struct Recorder {
    inner: Arc<dyn Adapter>,
    /// Per call: `None` for an answer, else the error's kind, `Display` and `Debug`.
    calls: Mutex<Vec<Option<(ErrorKind, String, String)>>>,
}

#[async_trait::async_trait]
impl Wraps for Recorder {
    fn inner(&self) -> &dyn Adapter {
        &*self.inner
    }
    async fn call_through(
        &self,
        req: AdapterCallRequest,
        cx: &CallCx,
    ) -> Result<AdapterResponse, geode::llm::call::AdapterError> {
        let result = self.inner.call(req, cx).await;
        let mut calls = self.calls.lock().unwrap();
        calls.push(
            result
                .as_ref()
                .err()
                .map(|e| (e.kind(), e.to_string(), format!("{e:?}"))),
        );
        drop(calls);
        result
    }
}

/// One worker run and what it left.
pub struct Run {
    result: Option<WorkerResult>,
    calls: Vec<Option<(ErrorKind, String, String)>>,
    elapsed: Duration,
}

pub fn request(schema: Option<ResponseSchema>, deadline: Duration) -> WorkerRequest {
    let mut req = WorkerRequest::new("fault-matrix", "Decide whether to accept the change.");
    req.response_schema = schema;
    req.timeout_s = deadline.as_secs_f64();
    req.subagent_max_tokens = 512;
    req
}

pub async fn run(
    adapter: Arc<dyn Adapter>,
    req: WorkerRequest,
    deadline: Duration,
    cancel_after: Option<Duration>,
) -> Run {
    let recorder = Arc::new(Recorder {
        inner: adapter,
        calls: Mutex::new(Vec::new()),
    });
    let env = WorkerEnv::new(recorder.clone());
    if let Some(after) = cancel_after {
        let token = env.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            token.cancel();
        });
    }
    let started = Instant::now();
    let result = tokio::time::timeout(deadline + HANG_SLACK, run_worker(&req, &env))
        .await
        .ok();
    let elapsed = started.elapsed();
    let calls = std::mem::take(&mut *recorder.calls.lock().unwrap());
    Run {
        result,
        calls,
        elapsed,
    }
}

/// The secret windows found in `texts`, named by where they were found.
pub fn secret_leaks(secrets: &[String], texts: &[(&str, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for secret in secrets {
        let chars: Vec<char> = secret.chars().collect();
        let windows: Vec<String> = if chars.len() <= SECRET_WINDOW {
            vec![secret.clone()]
        } else {
            chars
                .windows(SECRET_WINDOW)
                .map(|w| w.iter().collect())
                .collect()
        };
        for (place, text) in texts {
            if windows.iter().any(|w| text.contains(w.as_str())) {
                found.push(format!("secret in {place}"));
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// Judges a run against `expect`.
pub fn judge(expect: Expect, run: &Run, deadline: Duration, secrets: &[String]) -> Verdict {
    let mut problems = Vec::new();
    let Some(result) = &run.result else {
        return Verdict {
            got: "hung".into(),
            exit: None,
            problems: vec![format!("no result {:?} after its deadline", HANG_SLACK)],
        };
    };
    // The outcome is the typed error of the last adapter call when it failed (a run the worker
    // still counts as a success, e.g. a cancel, shows it), else the answer's fate.
    let last_error = run.calls.last().and_then(Option::as_ref);
    let got = match last_error {
        Some((kind, _, _)) => Outcome::Failed(*kind),
        None if result.success => Outcome::Ok,
        None => Outcome::Invalid,
    };
    let ledger_kind = result.ledger.attempts.last().and_then(|a| a.error_kind);
    if let Some((kind, _, _)) = last_error
        && ledger_kind != Some(*kind)
    {
        problems.push(format!(
            "ledger says {ledger_kind:?}, the adapter returned {got}"
        ));
    }
    let code = exit::for_result(result);
    if got != expect.outcome {
        let detail = last_error.map(|e| e.1.clone()).unwrap_or_default();
        problems.push(format!("expected {}, got {got}: {detail}", expect.outcome));
    }
    if code != expect.exit {
        problems.push(format!("exit {code}, expected {}", expect.exit));
    }
    if run.elapsed > deadline + LATE {
        problems.push(format!(
            "ended {:?} after a {deadline:?} deadline",
            run.elapsed
        ));
    }
    let mut texts = vec![
        (
            "the result JSON",
            serde_json::to_string(result).unwrap_or_default(),
        ),
        ("the result's Debug", format!("{result:?}")),
    ];
    for (_, display, debug) in run.calls.iter().flatten() {
        texts.push(("an error's Display", display.clone()));
        texts.push(("an error's Debug", debug.clone()));
    }
    problems.extend(secret_leaks(secrets, &texts));
    Verdict {
        got: got.to_string(),
        exit: Some(code),
        problems,
    }
}

impl Verdict {
    /// One tab-separated line: row id, adapter, outcome, exit code, problems.
    pub fn to_line(&self, row: &str, adapter: &str) -> String {
        let exit = self.exit.map_or("-".to_owned(), |c| c.to_string());
        let problems = self.problems.join("; ").replace(['\t', '\n'], " ");
        format!("{row}\t{adapter}\t{}\t{exit}\t{problems}", self.got)
    }

    /// Reads a line written by [`Verdict::to_line`]: `(row id, adapter, verdict)`.
    pub fn from_line(line: &str) -> Option<(String, String, Verdict)> {
        let f: Vec<&str> = line.split('\t').collect();
        let [row, adapter, got, exit, problems] = f.as_slice() else {
            return None;
        };
        let problems = if problems.is_empty() {
            Vec::new()
        } else {
            problems.split("; ").map(str::to_owned).collect()
        };
        Some((
            (*row).to_owned(),
            (*adapter).to_owned(),
            Verdict {
                got: (*got).to_owned(),
                exit: exit.parse().ok(),
                problems,
            },
        ))
    }
}

/// The cargo target directory of the running test binary (`target/<profile>/deps/<binary>`).
pub fn target_dir() -> std::path::PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(std::path::Path::to_path_buf))
        .unwrap_or_else(std::env::temp_dir)
}
