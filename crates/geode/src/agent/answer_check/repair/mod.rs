//! The check with the declared repair tier: when a task asks for repair and its answer fails
//! the check for a reason of the answer's own (no value read, keys missing, invalid), the
//! repair tier ([`crate::schema::repair`]) reads it again.
//!
//! | repair outcome | the check becomes |
//! |---|---|
//! | a valid repaired value, `require` best effort | a pass, the value the repaired one, its repairs kept for the ledger |
//! | a valid repaired value, `require` `wired` or `enforced` | a failure, [`CheckFailure::RepairNotAccepted`]: retried (with the first failure's feedback) or failed as an invalid answer is |
//! | not repairable | the first failure, unchanged |
//!
//! A failed run (truncated, refused, an adapter error), an empty answer and an unmet text
//! constraint keep their own outcome: the tier is not even asked.

use super::{AnswerCheck, check_answer};
use crate::agent::agent_loop::AgenticResult;
use crate::ledger::{CheckFailure, ValidationVerdict, WorkerCheck};
use crate::schema::repair::{Ending, RepairInput, Repaired, repair};
use crate::schema::validate::{CompiledSchema, Validation};
use crate::schema::{ResponseSchema, TextConstraint};
use crate::vocab::TerminationReason;
use crate::vocab::{Require, StopReason};

/// What a task says about repair: whether it asked for it, and the guarantee it requires.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RepairPolicy {
    /// The task asked for the repair tier.
    pub enabled: bool,
    /// The task's `require`: above best effort, a repaired answer is refused.
    pub require: Require,
}

/// [`check_answer`], then the repair tier when `policy` allows it and the answer's own
/// failure is one it may fix.
pub fn check_with_repair(
    result: &AgenticResult,
    schema: Option<(&ResponseSchema, &CompiledSchema)>,
    constraint: Option<&TextConstraint>,
    validation: Validation,
    policy: RepairPolicy,
) -> AnswerCheck {
    let check = check_answer(result, schema, constraint, validation);
    let Some((schema, compiled)) = schema.filter(|_| policy.enabled) else {
        return check;
    };
    let WorkerCheck::Fail { reason } = &check.verdict else {
        return check;
    };
    if !matches!(
        reason,
        CheckFailure::NoObject { .. }
            | CheckFailure::NoValue { .. }
            | CheckFailure::MissingKeys { .. }
            | CheckFailure::Invalid { .. }
    ) {
        return check;
    }
    let input = RepairInput {
        wrapped_root: result.wire.wrapped_root,
        absent_nulls: Some(&result.wire.absent_nulls),
        ..RepairInput::new(&result.text, schema, compiled, ending(result))
    };
    let Ok(Repaired::Value { value, repairs }) = repair(&input) else {
        return check;
    };
    if policy.require > Require::BestEffort {
        return AnswerCheck {
            verdict: WorkerCheck::Fail {
                reason: CheckFailure::RepairNotAccepted {
                    require: policy.require,
                    repairs,
                },
            },
            ..check
        };
    }
    // Validated like any other answer: the repair tier's verdict is not taken on trust.
    let report = compiled.validate(&value);
    if !report.is_empty() {
        return check;
    }
    AnswerCheck {
        verdict: WorkerCheck::Pass,
        object: Some(value),
        full: Some(ValidationVerdict {
            valid: true,
            errors: Vec::new(),
            more_errors: 0,
        }),
        repairs,
    }
}

/// How the answer ended, from the loop's termination and the adapter's stop reason.
fn ending(result: &AgenticResult) -> Ending {
    match (result.termination_reason, &result.stop_reason) {
        (TerminationReason::Truncated, _) | (_, Some(StopReason::MaxTokens)) => Ending::Truncated,
        (TerminationReason::ModelRefusal, _)
        | (_, Some(StopReason::Refusal | StopReason::ContentFilter)) => Ending::Refused,
        (_, None) => Ending::Unknown,
        _ => Ending::Complete,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
