//! What a batch did: counts per outcome, retries, tokens per adapter, wall time.

use crate::batch::input::BadLine;
use crate::ledger::RetryDecision;
use crate::protocol::WorkerResult;
use crate::protocol::exit;
use serde::Serialize;
use std::collections::BTreeMap;

/// How one task ended, as the exit codes of `geode run` say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A valid answer (exit 0).
    Valid,
    /// An answer that failed its check after the retry (exit 1).
    Invalid,
    /// Refused before any call: routing, preflight, configuration (exit 2).
    Refused,
    /// A provider or transport failure (exit 3).
    Failed,
}

impl Outcome {
    /// The outcome of a finished result.
    pub fn of(result: &WorkerResult) -> Self {
        match exit::for_result(result) {
            exit::VALID => Self::Valid,
            exit::INVALID => Self::Invalid,
            exit::USAGE => Self::Refused,
            _ => Self::Failed,
        }
    }
}

/// Token and task totals of one adapter.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AdapterTotals {
    /// Tasks it answered (or failed).
    pub tasks: u64,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

/// The live and final account of a batch.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Tasks written this run with a valid answer.
    pub valid: u64,
    /// Tasks written with an invalid answer.
    pub invalid: u64,
    /// Tasks refused before any call.
    pub refused: u64,
    /// Tasks that failed at the provider.
    pub failed: u64,
    /// Tasks whose one schema retry ran.
    pub retried: u64,
    /// Tasks answered from the response cache, with no request (omitted when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub replayed: u64,
    /// Tasks skipped because the results file already held them.
    pub skipped: u64,
    /// Tasks handed to a worker this run.
    pub queued: u64,
    /// Tasks running now.
    pub running: u64,
    /// Tasks cut short by a stop (no result written; they run again next time).
    pub interrupted: u64,
    /// Input lines that are not tasks.
    pub bad_lines: Vec<BadLine>,
    /// Totals per adapter.
    pub adapters: BTreeMap<String, AdapterTotals>,
    /// Bytes of a torn last line cut from the results file on start.
    pub torn_bytes: u64,
    /// Complete lines of the results file that are not results (garbage), left in place;
    /// any task they held runs again.
    pub unreadable_lines: u64,
    /// Wall time in milliseconds.
    pub wall_ms: u64,
}

impl Summary {
    /// Notes what opening the results file found: a torn last line cut, garbage lines kept.
    pub fn note_log(&mut self, log: &crate::batch::output::ResultLog) {
        self.torn_bytes = log.torn_bytes();
        self.unreadable_lines = log.unreadable_lines().len() as u64;
    }

    /// Counts one written result.
    pub fn record(&mut self, result: &WorkerResult) {
        match Outcome::of(result) {
            Outcome::Valid => self.valid += 1,
            Outcome::Invalid => self.invalid += 1,
            Outcome::Refused => self.refused += 1,
            Outcome::Failed => self.failed += 1,
        }
        if matches!(result.ledger.retry, RetryDecision::Ran { .. }) {
            self.retried += 1;
        }
        if result.ledger.replayed {
            self.replayed += 1;
        }
        let adapter = if result.ledger.adapter.is_empty() {
            "-".to_owned()
        } else {
            result.ledger.adapter.clone()
        };
        let totals = self.adapters.entry(adapter).or_default();
        totals.tasks += 1;
        totals.input_tokens += result.prompt_tokens;
        totals.output_tokens += result.completion_tokens;
    }

    /// Results written this run.
    pub fn done(&self) -> u64 {
        self.valid + self.invalid + self.refused + self.failed
    }

    /// The batch's exit code: 3 when some task failed at the provider, else 2 when a line or
    /// task was refused, else 1 when some answer is invalid, else 0.
    pub fn exit_code(&self) -> u8 {
        if self.failed > 0 {
            exit::PROVIDER
        } else if self.refused > 0 || !self.bad_lines.is_empty() {
            exit::USAGE
        } else if self.invalid > 0 {
            exit::INVALID
        } else {
            exit::VALID
        }
    }

    /// One line for a log or a progress bar.
    pub fn line(&self) -> String {
        let tokens: (u64, u64) = self.adapters.values().fold((0, 0), |(i, o), t| {
            (i + t.input_tokens, o + t.output_tokens)
        });
        let replayed = if self.replayed > 0 {
            format!(" · replayed {}", self.replayed)
        } else {
            String::new()
        };
        format!(
            "done {}/{} · valid {} · invalid {} · failed {} · refused {} · retried {} · skipped {} · bad lines {} · tokens {}/{}{replayed}",
            self.done(),
            self.queued,
            self.valid,
            self.invalid,
            self.failed,
            self.refused,
            self.retried,
            self.skipped,
            self.bad_lines.len(),
            tokens.0,
            tokens.1
        )
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
