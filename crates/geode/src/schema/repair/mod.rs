//! The declared repair tier: an answer that is almost the value the schema asks for, read with
//! named, reported fixes — or a typed reason why it is not repairable.
//!
//! Off unless asked (`--repair`, `repair` in a `WorkerRequest` or `geode.toml`,
//! `ClientBuilder::repair`). [`repair`] takes the answer text, the caller's schema (and its
//! compiled validator) and how the answer ended, and gives one of three outcomes:
//!
//! | outcome | when |
//! |---|---|
//! | [`Repaired::NotNeeded`] | the worker's own extraction reads the text as a value that validates |
//! | [`Repaired::Value`] | a value that validates against the schema, with every [`Repair`] made to get it |
//! | [`NotRepairable`] | the answer was cut off, refused or empty; or no value could be read without guessing; or the value read is still invalid (a required key missing, a wrong value: nothing is invented) |
//!
//! The fixes, each a [`RepairKind`]: syntax read by the lenient reader ([`lenient`]: Markdown
//! fences or prose around the value, single-quoted strings, unquoted keys, trailing commas,
//! comments, Python's `True`/`False`/`None`, smart quotes, one missing final bracket when the
//! model is known to have ended the answer itself), then,
//! only where the schema leaves one reading ([`coerce`]): a number or boolean written as a
//! string, a lone value where an array is wanted, an enum value differing only in case.
//!
//! Never repaired: an answer cut off by the token limit (a "missing bracket" there is a guess
//! at the rest), a refusal, an empty answer, two or more missing brackets (the look of a cut-off
//! answer whatever the stop reason), bare words other than the literals, doubled commas, a key
//! without a value, two different values in the text (a fenced example beside the real answer
//! in prose is two), a number the text writes that no JSON number holds exactly. Repair never
//! invents or chooses content. The repaired value is validated against
//! the caller's original schema here and again by the worker, like any other answer.
//!
//! Why a parser of our own: the Rust lenient readers on crates.io (`json5`, `serde_json5`,
//! `json-five`, `llm_json`, `json-repair`, `jsonrepair` 0.1) either accept only JSON5 (no Python
//! literals, smart quotes or missing brackets) or repair silently: none reports *which* fix was
//! applied where (`jsonrepair`'s log names only Python keywords), and the repairing ones also
//! close truncated strings and invent `null`s, which this tier must never do. The reader here
//! is one small recursive-descent pass whose every leniency is a named, tested repair.

mod coerce;
mod lenient;
mod locate;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

use crate::schema::ResponseSchema;
use crate::schema::extract::extract_answer;
use crate::schema::nullable::{NullPlan, absent_nulls};
use crate::schema::root::{AnswerRoot, WRAP_KEY};
use crate::schema::validate::CompiledSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The largest answer the repair tier reads (1 MiB): the lenient reader may try the text from
/// several starting points, so its work is bounded by the text's size.
pub const MAX_REPAIR_BYTES: usize = 1 << 20;

/// One kind of fix, by name. The names are the ledger's (`repairs[].kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RepairKind {
    /// A Markdown fence or prose around the value, beyond what the worker's extraction skips.
    FenceOrProse,
    /// A string in single quotes.
    SingleQuotes,
    /// An object key without quotes.
    UnquotedKeys,
    /// A comma before a closing bracket.
    TrailingCommas,
    /// A `//`, `/* */` or `#` comment.
    Comments,
    /// Python's `True`, `False` or `None`.
    PythonLiterals,
    /// The one closing bracket missing at the end of an answer that was not cut off.
    MissingClosingBracket,
    /// A string in typographic quotes (`“…”`, `‘…’`).
    SmartQuotes,
    /// A number written as a string where the schema admits numbers and no strings.
    StringToNumber,
    /// `"true"`/`"false"` where the schema admits booleans and no strings.
    StringToBoolean,
    /// A lone value where the schema wants an array: made a one-element array.
    WrapInArray,
    /// A string equal to exactly one enum value but for case.
    EnumCase,
}

impl RepairKind {
    /// Every kind, in declaration order.
    pub const ALL: [RepairKind; 12] = [
        Self::FenceOrProse,
        Self::SingleQuotes,
        Self::UnquotedKeys,
        Self::TrailingCommas,
        Self::Comments,
        Self::PythonLiterals,
        Self::MissingClosingBracket,
        Self::SmartQuotes,
        Self::StringToNumber,
        Self::StringToBoolean,
        Self::WrapInArray,
        Self::EnumCase,
    ];

    /// The snake_case name used in the ledger.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FenceOrProse => "fence_or_prose",
            Self::SingleQuotes => "single_quotes",
            Self::UnquotedKeys => "unquoted_keys",
            Self::TrailingCommas => "trailing_commas",
            Self::Comments => "comments",
            Self::PythonLiterals => "python_literals",
            Self::MissingClosingBracket => "missing_closing_bracket",
            Self::SmartQuotes => "smart_quotes",
            Self::StringToNumber => "string_to_number",
            Self::StringToBoolean => "string_to_boolean",
            Self::WrapInArray => "wrap_in_array",
            Self::EnumCase => "enum_case",
        }
    }
}

impl std::fmt::Display for RepairKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One fix made to an answer: its kind and where in the answer (a JSON Pointer, `""` the root).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Repair {
    /// What was fixed.
    pub kind: RepairKind,
    /// Where: the value, member or container it applies to.
    pub instance_path: String,
}

impl Repair {
    pub(crate) fn new(kind: RepairKind, instance_path: impl Into<String>) -> Self {
        Self {
            kind,
            instance_path: instance_path.into(),
        }
    }
}

/// How the answer ended, as the adapter reported it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Ending {
    /// The model ended the answer itself.
    #[default]
    Complete,
    /// Nobody said how it ended (no finish reason): a missing final bracket may be a cut, so
    /// none is closed; every other fix is made.
    Unknown,
    /// The token limit cut it (`max_tokens`, `length`, `incomplete`).
    Truncated,
    /// The model or a provider filter refused.
    Refused,
}

/// Why an answer is not repaired. Each keeps the answer's own failure in place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotRepairable {
    /// Cut off by the token limit: completing it would guess the rest.
    #[error("the answer was cut off by the token limit; completing it would be a guess")]
    Truncated,
    /// The model refused.
    #[error("the model refused")]
    Refused,
    /// Nothing was said.
    #[error("the answer is empty")]
    Empty,
    /// Larger than [`MAX_REPAIR_BYTES`].
    #[error("the answer is larger than {limit} bytes")]
    TooLarge {
        /// The limit.
        limit: usize,
    },
    /// No value of the root's type could be read, even with every named fix.
    #[error("no {expected} can be read without guessing ({detail})")]
    NoValue {
        /// What was looked for, e.g. `JSON object`.
        expected: String,
        /// Why the closest reading failed.
        detail: String,
    },
    /// Several different values could be the answer.
    #[error("{count} different values in the answer; which one is meant is a guess")]
    Ambiguous {
        /// How many.
        count: usize,
    },
    /// More than one closing bracket is missing at the end: the look of a cut-off answer.
    #[error("{missing} closing brackets are missing at the end: the answer looks cut off")]
    CutOff {
        /// How many.
        missing: usize,
    },
    /// The value read is still invalid after every fix the schema allows (a required key is
    /// missing, a value is wrong): making it valid would invent a value.
    #[error(
        "the value read is still invalid ({errors} validation errors); a repair would have to invent values"
    )]
    StillInvalid {
        /// How many validation errors remain.
        errors: u64,
    },
}

/// What [`repair`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum Repaired {
    /// The text already reads as a value that validates: nothing to repair.
    NotNeeded,
    /// A value valid against the schema, and every fix made to read it.
    Value {
        /// The repaired value.
        value: Value,
        /// The fixes, in the order they were made; never empty.
        repairs: Vec<Repair>,
    },
}

/// One answer to repair, and how to read it.
#[derive(Debug, Clone, Copy)]
pub struct RepairInput<'a> {
    /// The answer text.
    pub text: &'a str,
    /// The caller's schema.
    pub schema: &'a ResponseSchema,
    /// Its validator.
    pub compiled: &'a CompiledSchema,
    /// How the answer ended.
    pub ending: Ending,
    /// The wire asked for the answer under `value` of an object ([`crate::schema::root`]).
    pub wrapped_root: bool,
    /// Optional properties the wire made nullable: a `null` there is the property left out.
    pub absent_nulls: Option<&'a NullPlan>,
}

impl<'a> RepairInput<'a> {
    /// An answer read as the caller's schema asks (no wire rewrites).
    pub fn new(
        text: &'a str,
        schema: &'a ResponseSchema,
        compiled: &'a CompiledSchema,
        ending: Ending,
    ) -> Self {
        Self {
            text,
            schema,
            compiled,
            ending,
            wrapped_root: false,
            absent_nulls: None,
        }
    }
}

/// Repairs one answer, or says why not (see the module doc).
///
/// ```
/// use geode::schema::ResponseSchema;
/// use geode::schema::repair::{Ending, RepairInput, RepairKind, Repaired, repair};
/// use geode::schema::validate::CompiledSchema;
/// let schema = ResponseSchema::from_value(serde_json::json!({
///     "type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}
/// })).unwrap();
/// let compiled = CompiledSchema::compile(&schema).unwrap();
/// let input = RepairInput::new("{'n': '3',}", &schema, &compiled, Ending::Complete);
/// let Ok(Repaired::Value { value, repairs }) = repair(&input) else { panic!() };
/// assert_eq!(value, serde_json::json!({"n": 3}));
/// let kinds: Vec<RepairKind> = repairs.iter().map(|r| r.kind).collect();
/// assert_eq!(kinds, [RepairKind::SingleQuotes, RepairKind::TrailingCommas, RepairKind::StringToNumber]);
/// // A cut-off answer is never completed.
/// let cut = RepairInput::new("{'n': 3", &schema, &compiled, Ending::Truncated);
/// assert!(repair(&cut).is_err());
/// ```
pub fn repair(input: &RepairInput<'_>) -> Result<Repaired, NotRepairable> {
    match input.ending {
        Ending::Truncated => return Err(NotRepairable::Truncated),
        Ending::Refused => return Err(NotRepairable::Refused),
        Ending::Complete | Ending::Unknown => {}
    }
    let text = input.text.trim();
    if text.is_empty() {
        return Err(NotRepairable::Empty);
    }
    if text.len() > MAX_REPAIR_BYTES {
        return Err(NotRepairable::TooLarge {
            limit: MAX_REPAIR_BYTES,
        });
    }
    let root = if input.wrapped_root {
        AnswerRoot::Any
    } else {
        AnswerRoot::of(input.schema)
    };
    // The worker's extraction first; `picked` is its value when it came out of prose or a fence,
    // where another value the lenient reader sees would make any fix of it a guess.
    let (mut value, mut repairs, picked) = match extract_answer(text, root) {
        Some((raw, v)) => {
            let picked = (raw.len() != text.len()).then(|| v.clone());
            (v, Vec::new(), picked)
        }
        None => {
            let (v, r) = locate::read(text, root, input.ending)?;
            (v, r, None)
        }
    };
    if input.wrapped_root {
        value = unwrapped(value, &mut repairs);
    }
    if let Some(plan) = input.absent_nulls {
        absent_nulls(&mut value, plan);
    }
    // Checked before "not needed": a valid example in a fence beside a sloppy answer in the
    // prose would otherwise be taken as the answer.
    if let Some(picked) = picked {
        match locate::read(text, root, input.ending) {
            Ok((other, _)) if other != picked => {
                return Err(NotRepairable::Ambiguous { count: 2 });
            }
            Err(e @ NotRepairable::Ambiguous { .. }) => return Err(e),
            _ => {}
        }
    }
    if repairs.is_empty() && input.compiled.validate(&value).is_empty() {
        return Ok(Repaired::NotNeeded);
    }
    coerce::coerce(&mut value, input.schema.as_value(), &mut repairs);
    let report = input.compiled.validate(&value);
    if !report.is_empty() {
        let errors = (report.issues.len() as u64).saturating_add(report.more_errors);
        return Err(NotRepairable::StillInvalid { errors });
    }
    if repairs.is_empty() {
        return Ok(Repaired::NotNeeded);
    }
    Ok(Repaired::Value {
        value,
        repairs: dedup(repairs),
    })
}

/// The answer under `value` when the model wrote the wrapper the wire asked for (paths made
/// relative to the caller's answer); else the value as written.
fn unwrapped(value: Value, repairs: &mut [Repair]) -> Value {
    match value {
        Value::Object(mut m) if m.len() == 1 && m.contains_key(WRAP_KEY) => {
            let prefix = format!("/{WRAP_KEY}");
            for r in repairs.iter_mut() {
                if let Some(rest) = r.instance_path.strip_prefix(&prefix) {
                    r.instance_path = rest.to_owned();
                }
            }
            m.shift_remove(WRAP_KEY).unwrap_or(Value::Null)
        }
        other => other,
    }
}

/// The repairs with repeats of one kind at one place left out, first occurrence kept.
fn dedup(repairs: Vec<Repair>) -> Vec<Repair> {
    let mut seen = std::collections::HashSet::new();
    repairs
        .into_iter()
        .filter(|r| seen.insert((r.kind, r.instance_path.clone())))
        .collect()
}

/// `segment` escaped for a JSON Pointer (`~` → `~0`, `/` → `~1`).
pub(crate) fn pointer_segment(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}
