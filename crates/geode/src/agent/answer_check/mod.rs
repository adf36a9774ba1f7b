//! Checking a loop's answer, deciding on the one retry, and writing the feedback turn.
//!
//! [`check_answer`] applies, in GEODE's order: a failed run, empty text, no balanced JSON
//! object (for a schema whose root is not an object: no value of the root's type, see
//! [`crate::schema::extract`]; when the wire wrapped the root under `value`, the wrapper's
//! `value`), missing top-level `required` keys (object answers only); then, with [`Validation::Full`] (geode's default),
//! full JSON Schema validation against the caller's original schema; then a choice/regex
//! constraint when one is set; [`check_with_repair`] adds the declared repair tier when a task
//! asks for it. [`build_schema_retry_prompt`] renders GEODE's feedback turn
//! plus the concrete validation errors (on a wrapped wire, for the wrapper the model was asked for).

mod repair;
pub use repair::{RepairPolicy, check_with_repair};

use crate::agent::agent_loop::AgenticResult;
use crate::ledger::{CheckFailure, ValidationVerdict, WorkerCheck};
use crate::llm::request::WireReport;
use crate::schema::extract::{NoObject, explain_no_object, extract_answer, extract_typed_answer};
use crate::schema::nullable::absent_nulls;
use crate::schema::root::{AnswerRoot, unwrap_root};
use crate::schema::validate::{
    CompiledSchema, Validation, ValidationIssue, missing_required_keys, render_issues,
};
use crate::schema::{ResponseSchema, TextConstraint};
use crate::vocab::TerminationReason;
use serde_json::Value;
use std::borrow::Cow;

/// What the check of one answer found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AnswerCheck {
    /// The verdict.
    pub verdict: WorkerCheck,
    /// The extracted JSON answer (an object, or any value of a non-object root), when one parsed.
    pub object: Option<Value>,
    /// Full validation of that object, when a schema and an object were there.
    pub full: Option<ValidationVerdict>,
    /// The fixes the repair tier made to read `object` ([`check_with_repair`]); empty when the
    /// answer was read as written.
    pub repairs: Vec<crate::schema::repair::Repair>,
}

impl AnswerCheck {
    /// True when the verdict is a pass (or nothing had to be checked).
    pub fn passed(&self) -> bool {
        !matches!(self.verdict, WorkerCheck::Fail { .. })
    }

    /// The validation issues to show the model in the feedback turn.
    pub fn issues(&self) -> &[ValidationIssue] {
        self.full
            .as_ref()
            .map(|f| f.errors.as_slice())
            .unwrap_or(&[])
    }

    /// Validation errors found beyond [`Self::issues`] and not listed.
    pub fn more_errors(&self) -> u64 {
        self.full.as_ref().map_or(0, |f| f.more_errors)
    }

    /// A short trigger description for the ledger.
    pub fn trigger(&self) -> String {
        match &self.verdict {
            WorkerCheck::Fail { reason } => reason.to_string(),
            _ => "none".to_owned(),
        }
    }
}

fn fail(reason: CheckFailure) -> AnswerCheck {
    AnswerCheck {
        verdict: WorkerCheck::Fail { reason },
        ..AnswerCheck::default()
    }
}

/// Checks a loop result against the schema (and text constraint), as the worker does.
pub fn check_answer(
    result: &AgenticResult,
    schema: Option<(&ResponseSchema, &CompiledSchema)>,
    constraint: Option<&TextConstraint>,
    validation: Validation,
) -> AnswerCheck {
    // A turn that ended in calls to the caller's tools has no answer yet.
    let pending = result.termination_reason == TerminationReason::CallerToolCalls;
    if pending || (schema.is_none() && constraint.is_none()) {
        return AnswerCheck::default();
    }
    if result.error.is_some() || result.termination_reason.is_failure() {
        return fail(CheckFailure::FailedRun {
            termination: result.termination_reason,
        });
    }
    let text = result.text.trim();
    if text.is_empty() {
        return fail(CheckFailure::Empty);
    }
    let mut check = AnswerCheck {
        verdict: WorkerCheck::Pass,
        ..AnswerCheck::default()
    };
    if let Some((schema, compiled)) = schema {
        let root = AnswerRoot::of(schema);
        let Some(object) = answer_value(text, root, validation, &result.wire) else {
            if !root.is_object() {
                return fail(CheckFailure::NoValue {
                    expected: root.describe(),
                });
            }
            let detail = match explain_no_object(text) {
                NoObject::Unparsable { message } => Some(message),
                _ => None,
            };
            return fail(CheckFailure::NoObject { detail });
        };
        let report = compiled.validate(&object);
        check.full = Some(ValidationVerdict {
            valid: report.is_empty(),
            more_errors: report.more_errors,
            errors: report.issues,
        });
        let missing = missing_required_keys(schema, &object);
        check.object = Some(object);
        if !missing.is_empty() {
            check.verdict = WorkerCheck::Fail {
                reason: CheckFailure::MissingKeys { keys: missing },
            };
            return check;
        }
        if validation == Validation::Full {
            let more = usize::try_from(check.more_errors()).unwrap_or(usize::MAX);
            let count = check.issues().len().saturating_add(more);
            if count > 0 {
                check.verdict = WorkerCheck::Fail {
                    reason: CheckFailure::Invalid { count },
                };
                return check;
            }
        }
    }
    if let Some(c) = constraint
        && !constraint_met(c, text)
    {
        check.verdict = WorkerCheck::Fail {
            reason: CheckFailure::ConstraintUnmet {
                constraint: c.kind().to_owned(),
            },
        };
    }
    check
}

/// The answer value in `text` for a schema whose root is `root`, as the caller's schema reads
/// it. When the wire wrapped the root under `value` ([`crate::schema::subset`]), the wrapper
/// object's `value` is the answer; an answer that came back unwrapped anyway is still found by
/// the root's own rule (the caller's schema decides either way). A `null` the wire allowed for
/// an optional property ([`crate::schema::nullable`]) is read as the property left out.
fn answer_value(
    text: &str,
    root: AnswerRoot,
    validation: Validation,
    wire: &WireReport,
) -> Option<Value> {
    let unwrapped =
        || extract_answer(text, AnswerRoot::Object).and_then(|(_, wrapper)| unwrap_root(wrapper));
    // The shallow check judges no type, so it takes only an answer of the root's type.
    let own = || match validation {
        Validation::Full => extract_answer(text, root),
        Validation::RequiredKeys => extract_typed_answer(text, root),
    };
    let mut value = wire
        .wrapped_root
        .then(unwrapped)
        .flatten()
        .or_else(|| own().map(|(_, v)| v))?;
    absent_nulls(&mut value, &wire.absent_nulls);
    Some(value)
}

/// Whether `text` satisfies a choice or regex constraint. A grammar cannot be checked here and
/// counts as met (the local engine enforces it; the ledger records it as a residual elsewhere).
pub fn constraint_met(constraint: &TextConstraint, text: &str) -> bool {
    match constraint {
        TextConstraint::Choice(options) => {
            let t = text.trim();
            let unquoted = t.trim_matches('"');
            options.iter().any(|o| o == t || o == unquoted)
        }
        TextConstraint::Regex(pattern) => crate::schema::whole_match_regex(pattern)
            .map(|re| re.is_match(text.trim()))
            .unwrap_or(false),
        TextConstraint::Grammar(_) => true,
    }
}

/// GEODE's `_needs_schema_retry`, twin for conformance tests: the shallow check only.
pub fn needs_schema_retry(result: Option<&AgenticResult>, schema: &ResponseSchema) -> bool {
    let Some(result) = result else { return true };
    if result.termination_reason.is_no_retry() {
        return false;
    }
    let Ok(compiled) = CompiledSchema::compile(schema) else {
        return true;
    };
    !check_answer(
        result,
        Some((schema, &compiled)),
        None,
        Validation::RequiredKeys,
    )
    .passed()
}

use crate::agent::excerpt::{excerpt, py_repr};

const SCHEMA_CUT: usize = 4096;
const EXCERPT_CUT: usize = 800;

/// The feedback user turn for the one retry (GEODE's `_build_schema_retry_prompt`), plus the
/// concrete validation errors when there are any.
///
/// `wrapped_root` says the wire asked for the answer under `value` of an object
/// ([`crate::schema::subset`], the ledger's `wrapped_root`): the turn then asks for that shape,
/// which the wire's schema and the system prompt ask for too, and each error's path starts at
/// `/value`, where the model wrote the value. `issues` are about the unwrapped answer, as
/// [`check_answer`] reports them.
///
/// ```
/// use geode::agent::answer_check::build_schema_retry_prompt;
/// use geode::schema::ResponseSchema;
/// let ints = ResponseSchema::from_value(serde_json::json!({"type": "array"})).unwrap();
/// let plain = build_schema_retry_prompt(&ints, Some("nope"), &[], 0, false);
/// assert!(plain.contains("emit ONLY the JSON array"), "{plain}");
/// let wrapped = build_schema_retry_prompt(&ints, Some("nope"), &[], 0, true);
/// assert!(wrapped.contains(r#"key "value" holds the JSON array"#), "{wrapped}");
/// ```
pub fn build_schema_retry_prompt(
    schema: &ResponseSchema,
    first_text: Option<&str>,
    issues: &[ValidationIssue],
    more_errors: u64,
    wrapped_root: bool,
) -> String {
    let stripped = first_text.map(str::trim).unwrap_or_default();
    let root = AnswerRoot::asked(schema);
    let asked = if wrapped_root {
        format!(
            "JSON object whose key \"value\" holds the {}",
            root.describe()
        )
    } else {
        root.describe()
    };
    let mut out = String::new();
    if stripped.is_empty() {
        out.push_str("Your previous response was empty.");
    } else {
        let diagnosis = if issues.is_empty() {
            format!("did not parse as the required {asked}")
        } else {
            "did not satisfy the required JSON schema".to_owned()
        };
        out.push_str(&format!(
            "Your previous response {diagnosis}. Excerpt: {}",
            py_repr(&excerpt(stripped, EXCERPT_CUT))
        ));
    }
    if !issues.is_empty() {
        out.push_str("\n\nValidation errors:\n");
        let shown: Cow<'_, [ValidationIssue]> = if wrapped_root {
            let under_value = issues.iter().map(|i| ValidationIssue {
                instance_path: format!("/value{}", i.instance_path),
                ..i.clone()
            });
            Cow::Owned(under_value.collect())
        } else {
            Cow::Borrowed(issues)
        };
        out.push_str(&render_issues(&shown, more_errors));
    }
    if wrapped_root || root.is_object() {
        let (article, required) = if wrapped_root {
            ("a", py_repr("value"))
        } else {
            let keys: Vec<String> = schema.required_keys().iter().map(|k| py_repr(k)).collect();
            ("the", keys.join(", "))
        };
        out.push_str(&format!(
            "\n\nYou MUST emit ONLY {article} {asked} matching this schema as your final message. No prose, no explanation, no markdown fences — start with `{{` and end with `}}`. Required keys: [{required}]."
        ));
    } else {
        out.push_str(&format!(
            "\n\nYou MUST emit ONLY the {asked} matching this schema as your final message, as JSON text. No prose, no explanation, no markdown fences."
        ));
    }
    let pretty = schema.to_pretty_json();
    out.push_str("\n\nSchema:\n");
    match pretty.char_indices().nth(SCHEMA_CUT) {
        Some((i, _)) => {
            out.push_str(&pretty[..i]);
            out.push_str("\n…(schema truncated; full version pinned upstream)");
        }
        None => out.push_str(&pretty),
    }
    out
}

/// The feedback turn for a choice/regex constraint without a schema.
pub fn build_constraint_retry_prompt(constraint: &TextConstraint, first_text: &str) -> String {
    let what = match constraint {
        TextConstraint::Choice(options) => format!(
            "exactly one of: {}",
            options
                .iter()
                .map(|o| py_repr(o))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        TextConstraint::Regex(r) => format!("text matching the regular expression {}", py_repr(r)),
        TextConstraint::Grammar(_) => "text derivable from the given grammar".to_owned(),
    };
    format!(
        "Your previous response did not meet the required format. Excerpt: {}\n\nReply with {what}, and nothing else.",
        py_repr(&excerpt(first_text.trim(), EXCERPT_CUT))
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
