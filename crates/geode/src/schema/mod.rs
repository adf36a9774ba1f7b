//! The `response_schema` contract.
//!
//! A [`ResponseSchema`] is one JSON Schema held as a JSON object (a boolean schema is taken in
//! its object form: `true` is `{}`, `false` is `{"not":{}}`). It is the single
//! structured-output surface of geode: it travels
//! `SubTask → WorkerRequest → AgenticLoop → AdapterCallRequest → adapter` unchanged, and every
//! provider-specific rewrite happens on a *copy* (see [`projection`]) with the transforms recorded.
//!
//! | submodule | job |
//! |---|---|
//! | [`strict`] | the OpenAI strict-compatibility check, with reasons |
//! | [`extract`] | finding the answer in model text: the balanced-object rule, and the any-root rule |
//! | [`root`] | which JSON types the schema admits at the answer's root; the wrap/unwrap rewrite |
//! | [`formats`] | `format` asserted or annotation-only, and the names left unchecked |
//! | `json_scan` | a JSON syntax check with the top-level keys, building nothing (the shallow check's parser) |
//! | `tape` | a parsed JSON document over its borrowed text, one flat array (what the fast paths read instead of a `Value`) |
//! | `tape_json` | the tape as a `jsonschema` value representation: full validation without a `Value` |
//! | [`pattern`] | ECMA-262 `pattern`s rewritten into the syntax Rust's regex engines read |
//! | [`resources`] | documents `$ref`s may name by URI, given up front (nothing is fetched) |
//! | [`validate`] | the worker's shallow check and full JSON Schema validation |
//! | [`cost`] | the static estimate that refuses schemas too expensive to validate |
//! | [`projection`] | the Anthropic projection and residual constraints |
//! | [`preflight`] | the offline check of provider limits (nesting, properties, enum sizes), on the copy the wire gets |
//! | [`subset`] | each provider's schema subset as data, and the one rewrite per wire (wrap, strip, or a weaker mode) |
//! | [`repair`] | the declared repair tier: an almost-valid answer read with named, reported fixes, never a guess |
//!
//! ```
//! use geode::schema::ResponseSchema;
//! let schema = ResponseSchema::from_json_str(r#"{"title":"Decision Result","type":"object"}"#).unwrap();
//! assert_eq!(schema.name(), "Decision Result");
//! assert_eq!(schema.openai_name(), "Decision_Result");
//! assert!(ResponseSchema::from_json_str("[1,2]").is_err());
//! ```

pub mod cost;
pub mod extract;
pub mod formats;
mod json_read;
// Internal: public only for the fuzz targets and benches.
#[doc(hidden)]
pub mod json_scan;
pub mod nullable;
pub mod pattern;
pub mod preflight;
pub mod projection;
pub mod repair;
pub mod resources;
pub mod root;
pub mod strict;
pub mod subset;
// Internal: public only for the fuzz targets and benches.
#[doc(hidden)]
pub mod tape;
// Internal: public only for the fuzz targets and benches.
#[doc(hidden)]
pub mod tape_json;
pub mod validate;

mod constraint;
#[cfg(test)]
pub(crate) mod fixtures;

pub use constraint::{ConstraintError, TextConstraint, whole_match_regex};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::Path;
use std::sync::Arc;

/// Why a value could not become a [`ResponseSchema`], or why a schema could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The schema is valid JSON but not a JSON object (an array, a string, `true`, ...).
    #[error("response_schema must be a JSON object, got {found}")]
    NotAnObject {
        /// The JSON type that was found instead (`array`, `string`, `boolean`, ...).
        found: &'static str,
    },
    /// The schema text is not JSON at all.
    #[error("response_schema is not valid JSON: {message} (line {line}, column {column})")]
    InvalidJson {
        /// The parser's message.
        message: String,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
    },
    /// The schema file could not be read.
    #[error("cannot read schema file {path}: {message}")]
    Io {
        /// The path that was read.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// The schema nests deeper than geode accepts (a guard against hostile schemas).
    #[error("response_schema nests {depth} levels deep; the limit is {limit}")]
    TooDeep {
        /// The depth found (at least `limit + 1`).
        depth: usize,
        /// The configured limit.
        limit: usize,
    },
    /// The schema is too large to be handled safely.
    #[error("response_schema has {nodes} nodes; the limit is {limit}")]
    TooLarge {
        /// Number of JSON nodes found (at least `limit + 1`).
        nodes: usize,
        /// The configured limit.
        limit: usize,
    },
    /// Validating against the schema could take too much time and memory: some answer location
    /// could be checked against `estimate` subschemas (see [`cost`]).
    #[error(
        "response_schema is too expensive to validate: up to {estimate} subschema checks per answer value; the limit is {budget} (are applicators like anyOf/allOf chained through $ref?)"
    )]
    TooExpensive {
        /// The estimated subschema evaluations per answer location.
        estimate: u64,
        /// The limit.
        budget: u64,
    },
    /// The JSON Schema validator refused to compile the schema.
    #[error("response_schema cannot be compiled: {message} (at {pointer})")]
    Uncompilable {
        /// The validator's message.
        message: String,
        /// A JSON Pointer into the schema, when known.
        pointer: String,
    },
}

/// One JSON Schema, guaranteed to be a JSON object (boolean schemas are held in object form).
///
/// Cheap to clone (the value is shared). Serialises as the plain schema object.
#[derive(Clone, PartialEq)]
pub struct ResponseSchema {
    value: Arc<Value>,
}

impl std::fmt::Debug for ResponseSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseSchema")
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}

/// The deepest nesting of `{`/`[` in JSON text, outside strings (one linear scan, no parse).
/// A scalar at the top level is depth 0, `{}` is 1, `{"a":[1]}` is 2.
fn text_nesting_depth(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut strings = extract::Strings::default();
    for &c in text.as_bytes() {
        if !strings.structural(c) {
            continue;
        }
        match c {
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// A JSON Pointer as messages show it: the root (`""`) as `/`.
pub(crate) fn shown_pointer(pointer: &str) -> &str {
    if pointer.is_empty() { "/" } else { pointer }
}

/// Returns the JSON type name of a value, as used in error messages.
pub(crate) fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

impl ResponseSchema {
    /// Wraps a JSON value. A boolean schema becomes its object form (`true` → `{}`, every value
    /// matches; `false` → `{"not":{}}`, none does), as JSON Schema defines them; anything else
    /// but an object is a [`SchemaError::NotAnObject`].
    ///
    /// ```
    /// use geode::schema::ResponseSchema;
    /// assert_eq!(ResponseSchema::from_json_str("true").unwrap().to_compact_json(), "{}");
    /// assert_eq!(ResponseSchema::from_json_str("false").unwrap().to_compact_json(), r#"{"not":{}}"#);
    /// ```
    pub fn from_value(value: Value) -> Result<Self, SchemaError> {
        match value {
            Value::Bool(true) => Ok(Self::default()),
            Value::Bool(false) => {
                let mut m = Map::new();
                m.insert("not".to_owned(), Value::Object(Map::new()));
                Ok(Self {
                    value: Arc::new(Value::Object(m)),
                })
            }
            Value::Object(_) => Ok(Self {
                value: Arc::new(value),
            }),
            other => Err(SchemaError::NotAnObject {
                found: json_type_name(&other),
            }),
        }
    }

    /// Parses schema text. Invalid JSON and non-objects are typed errors; text that nests deeper
    /// than [`validate::MAX_SCHEMA_DEPTH`] is [`SchemaError::TooDeep`] (not "invalid JSON").
    pub fn from_json_str(text: &str) -> Result<Self, SchemaError> {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            let depth = text_nesting_depth(text);
            if depth > validate::MAX_SCHEMA_DEPTH {
                SchemaError::TooDeep {
                    depth,
                    limit: validate::MAX_SCHEMA_DEPTH,
                }
            } else {
                SchemaError::InvalidJson {
                    message: e.to_string(),
                    line: e.line(),
                    column: e.column(),
                }
            }
        })?;
        Self::from_value(value)
    }

    /// Reads and parses a schema file.
    pub fn from_file(path: &Path) -> Result<Self, SchemaError> {
        let text = std::fs::read_to_string(path).map_err(|e| SchemaError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::from_json_str(&text)
    }

    /// The schema as a JSON value (always an object).
    pub fn as_value(&self) -> &Value {
        &self.value
    }

    /// The schema's top-level members.
    pub fn as_object(&self) -> &Map<String, Value> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        match self.value.as_ref() {
            Value::Object(map) => map,
            _ => EMPTY.get_or_init(Map::new),
        }
    }

    /// The schema name: a non-empty `title` (a non-string title is rendered as JSON),
    /// else `response`.
    pub fn name(&self) -> String {
        match self.as_object().get("title") {
            None | Some(Value::Null) => "response".to_owned(),
            Some(Value::String(s)) if s.is_empty() => "response".to_owned(),
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(false)) => "response".to_owned(),
            Some(other) => other.to_string(),
        }
    }

    /// The name made safe for OpenAI: `^[A-Za-z0-9_-]{1,64}$`. Other characters become `_`,
    /// the result is cut at 64 characters, and an empty result is `response`.
    pub fn openai_name(&self) -> String {
        let cleaned: String = self
            .name()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        if cleaned.is_empty() {
            "response".to_owned()
        } else {
            cleaned
        }
    }

    /// The top-level `required` keys (strings only, in order, duplicates kept).
    pub fn required_keys(&self) -> Vec<&str> {
        match self.as_object().get("required") {
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        }
    }

    /// Compact JSON text of the schema (`{"a":1}`), as the CLI flags take it.
    pub fn to_compact_json(&self) -> String {
        self.value.to_string()
    }

    /// Pretty JSON text of the schema (2-space indent), as the retry feedback shows it.
    pub fn to_pretty_json(&self) -> String {
        serde_json::to_string_pretty(self.value.as_ref()).unwrap_or_else(|_| self.to_compact_json())
    }
}

impl Default for ResponseSchema {
    /// `{}`: the schema every JSON value matches.
    fn default() -> Self {
        Self {
            value: Arc::new(Value::Object(Map::new())),
        }
    }
}

impl TryFrom<Value> for ResponseSchema {
    type Error = SchemaError;
    fn try_from(value: Value) -> Result<Self, Self::Error> {
        Self::from_value(value)
    }
}

impl Serialize for ResponseSchema {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ResponseSchema {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_value(value).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_objects_are_schemas() {
        for (v, found) in [
            (json!([1]), "array"),
            (json!("s"), "string"),
            (json!(null), "null"),
            (json!(3), "number"),
        ] {
            match ResponseSchema::from_value(v) {
                Err(SchemaError::NotAnObject { found: f }) => assert_eq!(f, found),
                other => panic!("expected NotAnObject, got {other:?}"),
            }
        }
        assert!(ResponseSchema::from_value(json!({})).is_ok());
    }

    #[test]
    fn boolean_schemas_become_their_object_forms() {
        let t = ResponseSchema::from_value(json!(true)).unwrap();
        assert_eq!(t.as_value(), &json!({}));
        let f = ResponseSchema::from_value(json!(false)).unwrap();
        assert_eq!(f.as_value(), &json!({"not": {}}));
        let compiled = validate::CompiledSchema::compile(&f).unwrap();
        assert!(!compiled.is_valid(&json!(1)) && !compiled.is_valid(&json!({})));
        let compiled = validate::CompiledSchema::compile(&t).unwrap();
        assert!(compiled.is_valid(&json!([1])) && compiled.is_valid(&json!(null)));
    }

    #[test]
    fn invalid_json_names_line_and_column() {
        let err = ResponseSchema::from_json_str("{\n  \"a\": }").err();
        match err {
            Some(SchemaError::InvalidJson { line, .. }) => assert_eq!(line, 2),
            other => panic!("expected InvalidJson, got {other:?}"),
        }
    }

    #[test]
    fn ten_thousand_levels_are_too_deep_not_invalid_json() {
        let deep = format!("{}{}", "{\"a\":".repeat(10_000), "}".repeat(10_000));
        match ResponseSchema::from_json_str(&deep) {
            Err(e @ SchemaError::TooDeep { depth, limit }) => {
                assert_eq!((depth, limit), (10_000, validate::MAX_SCHEMA_DEPTH));
                assert!(e.to_string().contains("10000 levels deep"), "{e}");
            }
            other => panic!("expected TooDeep, got {other:?}"),
        }
        // Truncated deep text is still "too deep": that is the first thing wrong with it.
        let cut = "[".repeat(500);
        assert!(matches!(
            ResponseSchema::from_json_str(&cut),
            Err(SchemaError::TooDeep { depth: 500, .. })
        ));
        // Shallow broken text stays "invalid JSON"; brackets inside strings do not count.
        let strings = format!("{{\"a\": \"{}\", ", "[{".repeat(300));
        assert!(matches!(
            ResponseSchema::from_json_str(&strings),
            Err(SchemaError::InvalidJson { .. })
        ));
        assert_eq!(text_nesting_depth(r#"{"a":[1,{"b":"]}\"{"}]}"#), 3);
    }

    #[test]
    fn missing_file_is_an_io_error_naming_the_path() {
        let err = ResponseSchema::from_file(Path::new("/nonexistent/schema.json")).err();
        let text = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(text.contains("/nonexistent/schema.json"), "{text}");
    }

    #[test]
    fn name_is_title_or_response() {
        let s = |v: Value| ResponseSchema::from_value(v).map(|s| s.name()).ok();
        assert_eq!(s(json!({"title": "Decision"})).as_deref(), Some("Decision"));
        assert_eq!(s(json!({})).as_deref(), Some("response"));
        assert_eq!(s(json!({"title": ""})).as_deref(), Some("response"));
        assert_eq!(s(json!({"title": 7})).as_deref(), Some("7"));
    }

    #[test]
    fn openai_name_matches_the_name_pattern() {
        let long = "x".repeat(100);
        for title in ["Decision Result", "über/name", "", "a.b", long.as_str()] {
            let schema = ResponseSchema::from_value(json!({ "title": title }))
                .map(|s| s.openai_name())
                .unwrap_or_default();
            assert!(!schema.is_empty() && schema.len() <= 64, "{schema}");
            assert!(
                schema
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                "{schema}"
            );
        }
    }

    #[test]
    fn serde_round_trip_keeps_the_object_and_refuses_arrays() {
        let v = json!({"type": "object", "required": ["a"]});
        let s: ResponseSchema = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&s).unwrap(), v);
        assert!(serde_json::from_value::<ResponseSchema>(json!([1])).is_err());
    }
}
