//! Answer validation: the reference's shallow check and full JSON Schema validation.
//!
//! In: the caller's original [`ResponseSchema`] and an answer (text or parsed value). Out: typed
//! verdicts, never a panic.
//!
//! | function | checks | cost |
//! |---|---|---|
//! | [`shallow_check`] | the reference's worker check on text: last balanced object + top-level `required` keys | one scan + one syntax-only parse |
//! | [`missing_required_keys`] | the same key check on an already parsed value | O(required) |
//! | [`CompiledSchema::validate`] | full JSON Schema (2020-12 unless `$schema` says otherwise), formats included | one evaluation |
//!
//! Hostile schemas are refused before compilation with a typed [`SchemaError`]:
//!
//! | schema | result |
//! |---|---|
//! | nests more than [`MAX_SCHEMA_DEPTH`] (128) JSON levels | [`SchemaError::TooDeep`] (checked iteratively, so 10,000 levels are fine to refuse) |
//! | more than [`MAX_SCHEMA_NODES`] (1,000,000) JSON nodes | [`SchemaError::TooLarge`] (200,000 properties compile) |
//! | a remote or file `$ref` | [`SchemaError::Uncompilable`]: nothing is ever fetched or read, whatever crate features are on |
//! | a `$ref` cycle (`{"$ref":"#"}`, a→b→a) | compiles; the validator detects the cycle |
//! | an invalid keyword value (`{"type": 5}`) | [`SchemaError::Uncompilable`] with the pointer of the bad value |
//!
//! `format` is validated (the 2020-12 default treats it as an annotation): providers enforce
//! formats, and the Anthropic projection leaves some to this local check. Answers nested deeper
//! than [`MAX_INSTANCE_DEPTH`] get one `depth` issue instead of being walked.

use super::{ResponseSchema, SchemaError, extract};
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;

/// Deepest JSON nesting of a schema that [`CompiledSchema::compile`] accepts.
pub const MAX_SCHEMA_DEPTH: usize = 128;
/// Most JSON nodes (objects, arrays, scalars) a schema may have.
pub const MAX_SCHEMA_NODES: usize = 1_000_000;
/// Deepest answer [`CompiledSchema::validate`] walks (serde_json's own parse limit).
pub const MAX_INSTANCE_DEPTH: usize = 128;
/// Longest message kept in a [`ValidationIssue`], in characters.
const MAX_MESSAGE_CHARS: usize = 300;
/// Most issues [`render_issues`] lists before summarising the rest.
const MAX_RENDERED_ISSUES: usize = 20;

/// Which check the worker applies to an answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Validation {
    /// Full JSON Schema validation against the original schema (geode's default).
    #[default]
    Full,
    /// The reference's shallow check: a top-level object with every `required` key.
    RequiredKeys,
}

/// One validation error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationIssue {
    /// JSON Pointer into the answer (`""` is the root).
    pub instance_path: String,
    /// JSON Pointer into the schema, to the failing keyword.
    pub schema_path: String,
    /// The keyword that failed (`enum`, `required`, `type`, ...).
    pub keyword: String,
    /// The validator's message (shortened when the offending value is large).
    pub message: String,
    /// For `enum`/`const`, the allowed values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Vec<Value>>,
}

/// Refuses every external resource: remote and file `$ref`s become compile errors, never IO.
struct NoRetrieve;

impl jsonschema::Retrieve for NoRetrieve {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("geode never fetches external schemas ({uri})").into())
    }
}

/// A schema compiled for full validation.
pub struct CompiledSchema {
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledSchema").finish_non_exhaustive()
    }
}

impl CompiledSchema {
    /// Compiles a schema: [`check_depth_and_size`] first, then the `jsonschema` crate with
    /// external resolution refused and format validation on.
    ///
    /// ```
    /// use geode::schema::{ResponseSchema, validate::CompiledSchema};
    /// let s = ResponseSchema::from_json_str(r#"{"type":"object","required":["a"]}"#).unwrap();
    /// let c = CompiledSchema::compile(&s).unwrap();
    /// assert!(c.validate(&serde_json::json!({"a": 1})).is_empty());
    /// assert_eq!(c.validate(&serde_json::json!({}))[0].keyword, "required");
    /// ```
    pub fn compile(schema: &ResponseSchema) -> Result<Self, SchemaError> {
        check_depth_and_size(schema.as_value())?;
        jsonschema::options()
            .with_retriever(NoRetrieve)
            .should_validate_formats(true)
            .build(schema.as_value())
            .map(|validator| Self { validator })
            .map_err(|e| SchemaError::Uncompilable {
                message: shorten(e.to_string()),
                pointer: e.instance_path().to_string(),
            })
    }

    /// True when the instance is valid (faster than [`Self::validate`] when it is).
    pub fn is_valid(&self, instance: &Value) -> bool {
        depth_exceeds(instance, MAX_INSTANCE_DEPTH).is_none() && self.validator.is_valid(instance)
    }

    /// Validates an instance; empty when valid. Every error is listed, in the validator's order.
    pub fn validate(&self, instance: &Value) -> Vec<ValidationIssue> {
        if let Some(depth) = depth_exceeds(instance, MAX_INSTANCE_DEPTH) {
            return vec![ValidationIssue {
                instance_path: String::new(),
                schema_path: String::new(),
                keyword: "depth".to_owned(),
                message: format!(
                    "the answer nests {depth} levels deep; the limit is {MAX_INSTANCE_DEPTH}"
                ),
                allowed: None,
            }];
        }
        self.validator.iter_errors(instance).map(issue).collect()
    }
}

/// Turns one `jsonschema` error into a [`ValidationIssue`].
fn issue(e: jsonschema::ValidationError<'_>) -> ValidationIssue {
    use jsonschema::error::ValidationErrorKind as K;
    let allowed = match e.kind() {
        K::Enum { options } => Some(match options.as_ref() {
            Value::Array(values) => values.clone(),
            other => vec![other.clone()],
        }),
        K::Constant { expected_value } => Some(vec![expected_value.as_ref().clone()]),
        _ => None,
    };
    let full = e.to_string();
    let message = if full.chars().count() > MAX_MESSAGE_CHARS {
        shorten(e.masked().to_string())
    } else {
        full
    };
    ValidationIssue {
        instance_path: e.instance_path().to_string(),
        schema_path: e.schema_path().to_string(),
        keyword: e.kind().keyword().to_owned(),
        message,
        allowed,
    }
}

/// Cuts a message to [`MAX_MESSAGE_CHARS`] characters, marking the cut.
fn shorten(message: String) -> String {
    match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &message[..cut]),
        None => message,
    }
}

/// Refuses schemas deeper than [`MAX_SCHEMA_DEPTH`] or larger than [`MAX_SCHEMA_NODES`], without
/// recursion (it stops at the first limit crossed).
pub fn check_depth_and_size(schema: &Value) -> Result<(), SchemaError> {
    let mut nodes = 0usize;
    let mut stack: Vec<(&Value, usize)> = vec![(schema, 1)];
    while let Some((v, depth)) = stack.pop() {
        nodes += 1;
        if nodes > MAX_SCHEMA_NODES {
            return Err(SchemaError::TooLarge {
                nodes,
                limit: MAX_SCHEMA_NODES,
            });
        }
        if depth > MAX_SCHEMA_DEPTH {
            return Err(SchemaError::TooDeep {
                depth,
                limit: MAX_SCHEMA_DEPTH,
            });
        }
        match v {
            Value::Object(m) => stack.extend(m.values().map(|c| (c, depth + 1))),
            Value::Array(a) => stack.extend(a.iter().map(|c| (c, depth + 1))),
            _ => {}
        }
    }
    Ok(())
}

/// `Some(depth)` when `v` nests deeper than `limit` (the first depth found past it).
fn depth_exceeds(v: &Value, limit: usize) -> Option<usize> {
    let mut stack: Vec<(&Value, usize)> = vec![(v, 1)];
    while let Some((v, depth)) = stack.pop() {
        if depth > limit {
            return Some(depth);
        }
        match v {
            Value::Object(m) => stack.extend(m.values().map(|c| (c, depth + 1))),
            Value::Array(a) => stack.extend(a.iter().map(|c| (c, depth + 1))),
            _ => {}
        }
    }
    None
}

/// The required keys of `schema` absent from the top-level object `answer` (all of them when
/// `answer` is not an object). Only presence counts; `null` values are present.
pub fn missing_required_keys(schema: &ResponseSchema, answer: &Value) -> Vec<String> {
    let obj = answer.as_object();
    schema
        .required_keys()
        .into_iter()
        .filter(|k| obj.is_none_or(|o| !o.contains_key(*k)))
        .map(str::to_owned)
        .collect()
}

/// The outcome of [`shallow_check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShallowCheck<'a> {
    /// The last balanced object parsed and has every required key.
    Pass {
        /// The object's exact text.
        object: &'a str,
    },
    /// No balanced JSON object parsed.
    NoObject,
    /// The last balanced object lacks these required keys (in `required` order).
    MissingKeys {
        /// The object's exact text.
        object: &'a str,
        /// The missing keys.
        keys: Vec<String>,
    },
}

/// The reference's worker check on answer text (§4.2 steps 6–8): the last top-level object that
/// parses must have every top-level `required` key. Values are not built, only syntax-checked
/// (several times faster than parsing into a `Value`). Like
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
    let found = extract::last_object_with(text, |s| {
        let mut de = serde_json::Deserializer::from_str(s);
        let seen = KeysSeed {
            required: &required,
        }
        .deserialize(&mut de)
        .ok()?;
        de.end().ok()?;
        Some(seen)
    });
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

/// Deserialises a JSON object, ignoring values, into "which of `required` appear as keys".
struct KeysSeed<'r> {
    required: &'r [&'r str],
}

impl<'de> DeserializeSeed<'de> for KeysSeed<'_> {
    type Value = Vec<bool>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Vec<bool>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for KeysSeed<'_> {
    type Value = Vec<bool>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<bool>, A::Error> {
        let mut seen = vec![false; self.required.len()];
        while let Some(key) = map.next_key_seed(KeyStr)? {
            for (i, r) in self.required.iter().enumerate() {
                if *r == key {
                    seen[i] = true;
                }
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(seen)
    }
}

/// A map key, borrowed from the input when it has no escapes.
struct KeyStr;

impl<'de> DeserializeSeed<'de> for KeyStr {
    type Value = Cow<'de, str>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyStr {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string key")
    }
    fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// A short human list of issues, one line each: `/path: message (allowed: "a", "b")`. The root
/// is shown as `/`. At most 20 lines, then `… and N more`. Used in retry feedback.
pub fn render_issues(issues: &[ValidationIssue]) -> String {
    let mut lines: Vec<String> = issues
        .iter()
        .take(MAX_RENDERED_ISSUES)
        .map(|i| {
            let path = if i.instance_path.is_empty() {
                "/"
            } else {
                &i.instance_path
            };
            let mut line = format!("{path}: {}", i.message);
            if let Some(allowed) = &i.allowed {
                let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
                line.push_str(&format!(" (allowed: {})", list.join(", ")));
            }
            line
        })
        .collect();
    if issues.len() > MAX_RENDERED_ISSUES {
        lines.push(format!("… and {} more", issues.len() - MAX_RENDERED_ISSUES));
    }
    lines.join("\n")
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
