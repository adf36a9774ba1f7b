//! The guarantee ledger: which layer guaranteed what, for one worker result.
//!
//! Every [`crate::protocol::WorkerResult`] carries a [`GuaranteeLedger`]. It answers, without
//! reading logs: which adapter served the call and how it put the schema on the wire
//! ([`StructuredOutputMode`]), what it had to rewrite ([`Transform`]), what the worker's check and
//! full validation concluded, every attempt with its usage and time, and why a retry ran or not.
//!
//! | layer | field |
//! |---|---|
//! | provider / engine | `adapter`, `wire_mode`, `transforms`, `residuals` |
//! | worker check | `worker_check` |
//! | full validation against the caller's original schema | `full_validation` |
//! | attempts and the retry | `attempts`, `retry` |
//! | the repair tier, when asked for | `answer_mode` (`repaired`), `repairs` |
//! | the response cache, on a hit | `replayed`, `cached_at`, `original_usage` |

use crate::schema::repair::Repair;
use crate::schema::validate::ValidationIssue;
use crate::vocab::{
    AdapterTry, ErrorKind, StopReason, StructuredOutputMode, TerminationReason, Transform, Usage,
};
use serde::{Deserialize, Serialize};

/// The worker's shallow check, as GEODE does it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum WorkerCheck {
    /// A top-level object with every required key was found.
    Pass,
    /// The check failed, with the reason.
    Fail {
        /// Why.
        reason: CheckFailure,
    },
    /// No schema: nothing was checked.
    #[default]
    NotChecked,
}

/// Why the worker's check failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CheckFailure {
    /// The loop ended with an error or a failure termination.
    FailedRun {
        /// The termination reason.
        termination: TerminationReason,
    },
    /// The answer was empty.
    Empty,
    /// No balanced JSON object parsed.
    NoObject {
        /// Why, when a balanced `{…}` was there but did not parse (e.g. a number out of range).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// The schema's root is not an object and no value of its type parsed.
    NoValue {
        /// What was expected, e.g. `JSON array`.
        expected: String,
    },
    /// These required keys were missing.
    MissingKeys {
        /// The keys.
        keys: Vec<String>,
    },
    /// Full validation found errors.
    Invalid {
        /// How many.
        count: usize,
    },
    /// The answer did not satisfy a choice/regex/grammar constraint.
    ConstraintUnmet {
        /// Which constraint kind.
        constraint: String,
    },
    /// The answer was valid only once repaired, and `require` accepts no repaired answer.
    RepairNotAccepted {
        /// The task's requirement (`wired` or `enforced`).
        require: crate::vocab::Require,
        /// The repairs it would have needed.
        repairs: Vec<Repair>,
    },
}

/// How the final answer was read: as the model wrote it, or repaired.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerMode {
    /// Read as written (the worker's extraction only).
    #[default]
    AsWritten,
    /// Read by the repair tier ([`crate::schema::repair`]): its fixes are in `repairs`. A
    /// repaired answer is best effort whatever the wire mode, so `require` `wired` or
    /// `enforced` never accepts one.
    Repaired,
}

impl AnswerMode {
    fn is_as_written(&self) -> bool {
        *self == Self::AsWritten
    }
}

/// The verdict of full JSON Schema validation against the caller's original schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValidationVerdict {
    /// True when the answer matched.
    pub valid: bool,
    /// The errors, empty when valid: at most the first 100
    /// ([`crate::schema::validate::MAX_REPORTED_ERRORS`]).
    #[serde(default)]
    pub errors: Vec<ValidationIssue>,
    /// Errors found beyond `errors` and not listed (absent when 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_errors: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One run of the loop (the first attempt or the retry).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptRecord {
    /// 1 for the first run, 2 for the retry.
    pub attempt: u32,
    /// How the loop ended.
    pub termination_reason: TerminationReason,
    /// The last stop reason the adapter gave.
    pub stop_reason: Option<StopReason>,
    /// LLM rounds in this attempt.
    pub rounds: u32,
    /// Usage summed over the attempt's calls.
    pub usage: Usage,
    /// Wall time of the attempt in milliseconds.
    pub elapsed_ms: u64,
    /// The worker check of this attempt's answer.
    pub check: WorkerCheck,
    /// The error, if the attempt failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The adapter error's kind (`auth`, `server`, `config`, ...), if an adapter call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
}

/// Whether the one retry ran, and why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum RetryDecision {
    /// No retry was considered (no schema, or no attempt finished).
    #[default]
    NotNeeded,
    /// The first answer passed; no retry.
    FirstPassed,
    /// The retry ran because the first answer failed the check.
    Ran {
        /// Why the first answer failed.
        trigger: String,
    },
    /// The first answer failed but the retry was skipped.
    Skipped {
        /// Why it was skipped.
        why: String,
    },
}

/// The whole account of one worker result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GuaranteeLedger {
    /// The adapter that produced the final answer.
    pub adapter: String,
    /// The model asked for.
    pub model: String,
    /// Every image and document the call sent (kind, type, size, SHA-256; never the content).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<crate::media::PartRecord>,
    /// How the schema (or constraint) went on the wire on the last call.
    pub wire_mode: StructuredOutputMode,
    /// Every rewrite of the schema for the wire.
    #[serde(default)]
    pub transforms: Vec<Transform>,
    /// Constraints the wire could not carry and that were checked locally instead.
    #[serde(default)]
    pub residuals: Vec<String>,
    /// Every adapter tried, in order, when routing or a fallback chain was involved.
    #[serde(default)]
    pub adapters_tried: Vec<AdapterTry>,
    /// The final answer's worker check (GEODE's shallow check, or full).
    pub worker_check: WorkerCheck,
    /// Full validation of the final answer against the original schema.
    #[serde(default)]
    pub full_validation: Option<ValidationVerdict>,
    /// How the final answer was read (omitted when as written).
    #[serde(default, skip_serializing_if = "AnswerMode::is_as_written")]
    pub answer_mode: AnswerMode,
    /// Every fix the repair tier made to read the final answer, in order (omitted when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<Repair>,
    /// How full validation treated `format` (`assert` or `annotate`), when a schema was checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub formats: Option<crate::schema::formats::FormatMode>,
    /// `format` names of the schema that full validation did not check: names the validator
    /// does not know, and every name under `annotate`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unchecked_formats: Vec<String>,
    /// Each attempt.
    #[serde(default)]
    pub attempts: Vec<AttemptRecord>,
    /// The retry decision.
    pub retry: RetryDecision,
    /// Calls to the caller's tools the turn ended in, each with arguments validated against its
    /// tool's schema. The response schema applies to the final answer, which is still to come.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub caller_tool_calls: u64,
    /// True when this answer was replayed from the response cache ([`crate::cache`]): no
    /// request was made, and the rest of this ledger is the original run's (omitted when false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replayed: bool,
    /// When a replayed answer was made, RFC 3339 in UTC (omitted unless replayed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_at: Option<String>,
    /// What the original run of a replayed answer used; its attempts' usage reads zero, since
    /// the replay spent no token (omitted unless replayed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_usage: Option<Usage>,
    /// Input fields of the WorkerRequest that geode does not know (ignored).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown_request_fields: Vec<String>,
    /// Fields of the WorkerRequest that GEODE defines and geode carries without acting
    /// on them (`isolation`, `toolkit`, `provider`, ...), named when the request set them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_request_fields: Vec<String>,
}

impl GuaranteeLedger {
    /// A short multi-line human summary, as `geode run` prints on stderr.
    pub fn summary(&self) -> String {
        let mut out = format!(
            "adapter={} model={} wire_mode={} ({})",
            self.adapter,
            if self.model.is_empty() {
                "-"
            } else {
                &self.model
            },
            self.wire_mode,
            self.wire_mode.level().as_str()
        );
        if !self.transforms.is_empty() {
            out.push_str(&format!(" transforms={}", self.transforms.len()));
        }
        let check = match &self.worker_check {
            WorkerCheck::Pass => "pass".to_owned(),
            WorkerCheck::NotChecked => "not-checked".to_owned(),
            WorkerCheck::Fail { reason } => format!("fail({reason})"),
        };
        out.push_str(&format!("\nworker_check={check}"));
        if !self.repairs.is_empty() {
            out.push_str(&format!(" repaired={}", self.repairs.len()));
        }
        if let Some(v) = &self.full_validation {
            out.push_str(&format!(
                " full_validation={}",
                if v.valid {
                    "valid".to_owned()
                } else {
                    format!("invalid({} errors)", v.errors.len() as u64 + v.more_errors)
                }
            ));
        }
        let retry = match &self.retry {
            RetryDecision::NotNeeded => "not-needed".to_owned(),
            RetryDecision::FirstPassed => "not-needed(first passed)".to_owned(),
            RetryDecision::Ran { trigger } => format!("ran({trigger})"),
            RetryDecision::Skipped { why } => format!("skipped({why})"),
        };
        out.push_str(&format!(" attempts={} retry={retry}", self.attempts.len()));
        if self.caller_tool_calls > 0 {
            out.push_str(&format!(
                "\ncaller_tool_calls={} (arguments valid; the answer comes after their results)",
                self.caller_tool_calls
            ));
        }
        if !self.residuals.is_empty() {
            out.push_str(&format!("\nresiduals: {}", self.residuals.join(" | ")));
        }
        if self.replayed {
            let original = self.original_usage.unwrap_or_default();
            out.push_str(&format!(
                "\nreplayed from the cache (made {}): 0 new tokens; the original run used {} in, {} out",
                self.cached_at.as_deref().unwrap_or("at an unknown time"),
                original.input_tokens,
                original.output_tokens
            ));
        }
        if !self.repairs.is_empty() {
            out.push_str(&format!("\nrepairs: {}", repairs_text(&self.repairs)));
        }
        if let Some(mode) = self.formats {
            out.push_str(&format!("\nformats={mode}"));
            if !self.unchecked_formats.is_empty() {
                out.push_str(&format!(
                    " unchecked: {}",
                    self.unchecked_formats.join(", ")
                ));
            }
        }
        out
    }
}

/// How a failure reads to people: the ledger summary's `worker_check=fail(...)` and the retry's
/// trigger (sent to the model in the feedback turn, kept in the ledger).
impl std::fmt::Display for CheckFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::FailedRun { termination } => write!(f, "failed run ({termination})"),
            Self::Empty => f.write_str("empty answer"),
            Self::NoObject { detail: None } => f.write_str("no parseable JSON object"),
            Self::NoObject {
                detail: Some(detail),
            } => write!(f, "no parseable JSON object ({detail})"),
            Self::NoValue { expected } => write!(f, "no parseable {expected}"),
            Self::MissingKeys { keys } => {
                write!(f, "missing required keys: {}", keys.join(", "))
            }
            Self::Invalid { count } => write!(f, "{count} schema validation errors"),
            Self::ConstraintUnmet { constraint } => write!(f, "{constraint} not met"),
            Self::RepairNotAccepted { require, repairs } => write!(
                f,
                "the answer is valid only once repaired ({}), and require={} accepts no repaired answer",
                repairs_text(repairs),
                require.as_str()
            ),
        }
    }
}

/// Repairs as people read them: `trailing_commas at /items, enum_case at /decision`.
fn repairs_text(repairs: &[Repair]) -> String {
    let shown: Vec<String> = repairs
        .iter()
        .map(|r| {
            let at = if r.instance_path.is_empty() {
                "the root"
            } else {
                &r.instance_path
            };
            format!("{} at {at}", r.kind)
        })
        .collect();
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::Require;

    #[test]
    fn modes_round_trip_with_design_names() {
        for m in StructuredOutputMode::ALL {
            let v = serde_json::to_value(m).unwrap();
            assert_eq!(v, serde_json::Value::String(m.as_str().to_owned()));
            assert_eq!(
                serde_json::from_value::<StructuredOutputMode>(v).unwrap(),
                m
            );
        }
    }

    #[test]
    fn levels_order_best_effort_below_enforced() {
        assert!(Require::BestEffort < Require::Wired && Require::Wired < Require::Enforced);
        assert_eq!(StructuredOutputMode::JsonMode.level(), Require::BestEffort);
        assert_eq!(StructuredOutputMode::CliFlag.level(), Require::Wired);
        assert_eq!(StructuredOutputMode::Strict.level(), Require::Enforced);
    }

    #[test]
    fn ledger_serialises_to_json_with_its_verdicts() {
        let ledger = GuaranteeLedger {
            adapter: "scripted".into(),
            wire_mode: StructuredOutputMode::Hint,
            worker_check: WorkerCheck::Fail {
                reason: CheckFailure::MissingKeys {
                    keys: vec!["reason".into()],
                },
            },
            retry: RetryDecision::Ran {
                trigger: "missing required keys".into(),
            },
            ..GuaranteeLedger::default()
        };
        let v = serde_json::to_value(&ledger).unwrap();
        assert_eq!(v["wire_mode"], "hint");
        assert_eq!(v["worker_check"]["verdict"], "fail");
        assert_eq!(v["retry"]["decision"], "ran");
        let back: GuaranteeLedger = serde_json::from_value(v).unwrap();
        assert_eq!(back, ledger);
        assert!(ledger.summary().contains("wire_mode=hint (wired)"));
        assert!(!ledger.summary().contains("residuals"));
    }

    #[test]
    fn summary_names_what_went_unenforced_and_why_no_object_parsed() {
        let ledger = GuaranteeLedger {
            residuals: vec![
                "grammar: unchecked (not enforced by glm-payg, and no local check exists)".into(),
            ],
            worker_check: WorkerCheck::Fail {
                reason: CheckFailure::NoObject {
                    detail: Some("number out of range at line 1 column 9".into()),
                },
            },
            ..GuaranteeLedger::default()
        };
        let summary = ledger.summary();
        assert!(
            summary.contains("\nresiduals: grammar: unchecked (not enforced by glm-payg"),
            "{summary}"
        );
        assert!(
            summary.contains("fail(no parseable JSON object (number out of range"),
            "{summary}"
        );
        // The unit form of `no_object` still reads and writes as before.
        let plain = CheckFailure::NoObject { detail: None };
        assert_eq!(
            serde_json::to_value(&plain).unwrap(),
            serde_json::json!({"kind": "no_object"})
        );
        assert_eq!(
            serde_json::from_value::<CheckFailure>(serde_json::json!({"kind": "no_object"}))
                .unwrap(),
            plain
        );
    }

    #[test]
    fn repairs_are_declared_and_absent_when_none() {
        use crate::schema::repair::{Repair, RepairKind};
        let plain = serde_json::to_value(GuaranteeLedger::default()).unwrap();
        assert!(plain.get("repairs").is_none() && plain.get("answer_mode").is_none());
        let ledger = GuaranteeLedger {
            worker_check: WorkerCheck::Pass,
            answer_mode: AnswerMode::Repaired,
            repairs: vec![
                Repair::new(RepairKind::TrailingCommas, ""),
                Repair::new(RepairKind::EnumCase, "/decision"),
            ],
            ..GuaranteeLedger::default()
        };
        let v = serde_json::to_value(&ledger).unwrap();
        assert_eq!(v["answer_mode"], "repaired");
        assert_eq!(
            v["repairs"],
            serde_json::json!([
                {"kind": "trailing_commas", "instance_path": ""},
                {"kind": "enum_case", "instance_path": "/decision"}
            ])
        );
        assert_eq!(
            serde_json::from_value::<GuaranteeLedger>(v).unwrap(),
            ledger
        );
        let summary = ledger.summary();
        assert!(
            summary.contains("worker_check=pass repaired=2"),
            "{summary}"
        );
        assert!(
            summary.contains("\nrepairs: trailing_commas at the root, enum_case at /decision"),
            "{summary}"
        );
        assert!(!GuaranteeLedger::default().summary().contains("repaired"));
        let refused = CheckFailure::RepairNotAccepted {
            require: Require::Enforced,
            repairs: ledger.repairs.clone(),
        };
        assert!(
            refused
                .to_string()
                .contains("require=enforced accepts no repaired answer"),
            "{refused}"
        );
    }
}
