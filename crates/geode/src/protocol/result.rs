//! The worker's output as the process protocol has it: [`WorkerResult`], with GEODE's
//! field names (docs/reference.md#workerresult), made from a typed run
//! ([`WorkerResult::from_run`]).

use crate::agent::task::{Answer, Failure, NO_RESPONSE, RunError};
use crate::ledger::GuaranteeLedger;
use crate::vocab::TerminationReason;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The worker's answer. Field names are GEODE's; `error` is omitted when absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerResult {
    /// The task id.
    pub task_id: String,
    /// True when the run ended well and (with a schema) the answer passed the check.
    pub success: bool,
    /// The final answer text.
    #[serde(default)]
    pub output: String,
    /// A summary (≤ 500 characters).
    #[serde(default)]
    pub summary: String,
    /// The error, when failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time in milliseconds.
    #[serde(default)]
    pub duration_ms: u64,
    /// Prompt tokens over all attempts.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Completion tokens over all attempts.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Cost in USD over all attempts (0 when unknown).
    #[serde(default)]
    pub usd_spent: f64,
    /// geode: the parsed JSON answer, when one was extracted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Value>,
    /// geode: how the last attempt ended (`unknown` for a request that never ran).
    #[serde(default)]
    pub termination_reason: TerminationReason,
    /// geode: the guarantee ledger.
    #[serde(default)]
    pub ledger: GuaranteeLedger,
    /// geode: what kind of failure ended the run ([`RunError::failure`]); absent on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
}

fn clip(text: &str) -> String {
    text.chars().take(500).collect()
}

impl WorkerResult {
    /// The result as one JSONL line (without the newline), with U+0085, U+2028 and U+2029
    /// escaped: serde_json writes them raw (valid JSON), but readers that split on Unicode line
    /// breaks (Python's `str.splitlines`, JavaScript before ES2019) would cut the line there.
    ///
    /// ```
    /// use geode::protocol::WorkerResult;
    /// let r = WorkerResult::failed("a\u{2028}b\u{85}", "x");
    /// let line = r.to_json_line().unwrap();
    /// assert!(line.contains("a\\u2028b\\u0085") && !line.contains(['\u{2028}', '\u{85}']));
    /// assert_eq!(serde_json::from_str::<WorkerResult>(&line).unwrap().task_id, r.task_id);
    /// ```
    pub fn to_json_line(&self) -> serde_json::Result<String> {
        let line = serde_json::to_string(self)?;
        if !line.contains(['\u{85}', '\u{2028}', '\u{2029}']) {
            return Ok(line);
        }
        Ok(line
            .replace('\u{85}', "\\u0085")
            .replace('\u{2028}', "\\u2028")
            .replace('\u{2029}', "\\u2029"))
    }

    /// A failed result that carries only an error (bad input, routing failure, panic).
    pub fn failed(task_id: &str, error: impl Into<String>) -> Self {
        let error = crate::secret::scrub(&error.into());
        Self {
            task_id: task_id.to_owned(),
            success: false,
            summary: clip(&format!("Sub-agent failed: {error}")),
            error: Some(error),
            failure: Some(Failure::Usage),
            ..Self::default()
        }
    }

    /// The result of a typed run, in GEODE's shape.
    pub fn from_run(task_id: &str, run: Result<Answer, RunError>) -> Self {
        let error = match run {
            Ok(answer) => {
                let summary = clip(&answer.text);
                return Self::of(task_id, true, answer, summary, None);
            }
            Err(e) => e,
        };
        let message = error.to_string();
        let failure = error.failure();
        let last = match error {
            RunError::Route(_) => return Self::failed(task_id, message),
            RunError::Refused { last, .. }
            | RunError::Schema { last, .. }
            | RunError::Tools { last, .. } => {
                let mut failed = Self::failed(task_id, message);
                failed.ledger = last.ledger;
                return failed;
            }
            RunError::Adapter { last, .. }
            | RunError::Truncated { last, .. }
            | RunError::ModelRefused { last, .. }
            | RunError::Invalid { last, .. }
            | RunError::Ended { last, .. } => *last,
        };
        let summary = if message == NO_RESPONSE && last.text.is_empty() {
            NO_RESPONSE.to_owned()
        } else if last.termination == TerminationReason::Unknown {
            clip(&format!("Sub-agent failed: {message}"))
        } else {
            clip(&format!(
                "Sub-agent failed: {message}; termination_reason={}",
                last.termination
            ))
        };
        let mut result = Self::of(task_id, false, last, summary, Some(message));
        result.failure = Some(failure);
        result
    }

    fn of(
        task_id: &str,
        success: bool,
        answer: Answer,
        summary: String,
        error: Option<String>,
    ) -> Self {
        Self {
            task_id: task_id.to_owned(),
            success,
            output: answer.text,
            summary,
            error,
            duration_ms: answer.elapsed.as_millis().try_into().unwrap_or(u64::MAX),
            prompt_tokens: answer.usage.input_tokens,
            completion_tokens: answer.usage.output_tokens,
            usd_spent: answer.usage.cost_usd.unwrap_or(0.0),
            answer: answer.value,
            termination_reason: answer.termination,
            ledger: answer.ledger,
            failure: None,
        }
    }
}
