//! GEODE's shallow check on answer text (part of [`super`], in its own file for size).

use crate::schema::root::AnswerRoot;
use crate::schema::{ResponseSchema, extract, json_scan};

/// The outcome of [`shallow_check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShallowCheck<'a> {
    /// The answer (the last balanced object, for an object root) parsed and, when it is an
    /// object, has every required key.
    Pass {
        /// The answer's exact text (an object's, an array's, ...).
        object: &'a str,
    },
    /// No answer of the root's type parsed (no balanced JSON object, for an object root).
    NoObject,
    /// The last balanced object lacks these required keys (in `required` order).
    MissingKeys {
        /// The object's exact text.
        object: &'a str,
        /// The missing keys.
        keys: Vec<String>,
    },
}

/// GEODE's worker check on answer text (the last steps of `_needs_schema_retry`): the last
/// top-level object that parses must have every top-level `required` key. For a schema whose
/// root is not an object ([`AnswerRoot::Values`]) the answer is found by
/// [`extract::find_answer`]'s rule and must parse as a value of the root's type; for an untyped
/// root ([`AnswerRoot::Any`]) any whole value, fenced block or object. `required` applies only
/// when that value is an object.
/// Values are not built, only syntax-checked ([`extract::last_valid_object`],
/// [`json_scan::scan_keys`]; several times faster than parsing into a `Value`). Like
/// [`extract::find_last_object`], it accepts numbers that do not fit an `f64` (`1e400`), as
/// Python's `json.loads` does; [`extract::extract_last_object`] does not.
///
/// ```
/// use geode::schema::{ResponseSchema, validate::{shallow_check, ShallowCheck}};
/// let s = ResponseSchema::from_json_str(r#"{"required":["a","b"]}"#).unwrap();
/// assert_eq!(shallow_check(&s, r#"ok {"a":1}"#),
///            ShallowCheck::MissingKeys { object: r#"{"a":1}"#, keys: vec!["b".into()] });
/// ```
pub fn shallow_check<'a>(schema: &ResponseSchema, text: &'a str) -> ShallowCheck<'a> {
    let required = schema.required_keys();
    let found = match AnswerRoot::of(schema) {
        AnswerRoot::Object => extract::last_valid_object(text, &required),
        AnswerRoot::Any => extract::whole_or_fenced(text, |s| json_scan::scan_keys(s, &required))
            .or_else(|| extract::last_valid_object(text, &required)),
        AnswerRoot::Values(types) => {
            extract::last_value_with(text, types, |s| json_scan::scan_keys(s, &required))
        }
    };
    match found {
        None => ShallowCheck::NoObject,
        Some((object, seen)) => {
            let keys: Vec<String> = required
                .iter()
                .zip(seen)
                .filter(|(_, present)| !present)
                .map(|(k, _)| (*k).to_owned())
                .collect();
            if keys.is_empty() {
                ShallowCheck::Pass { object }
            } else {
                ShallowCheck::MissingKeys { object, keys }
            }
        }
    }
}
