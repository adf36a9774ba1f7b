//! Optional properties on OpenAI's strict wire: required and nullable there, a `null` in the
//! answer read as the property left out.
//!
//! OpenAI's strict mode takes no optional property (every key of `properties` must be in
//! `required`) and no open object; its guide says to emulate an optional property with a union
//! with `null` ("Structured Outputs", Supported schemas, platform.openai.com, read 2026-12-01).
//! So [`super::subset::openai_strict`] rewrites the wire copy of the schema, and the worker undoes
//! it on the answer before validating against the caller's schema ([`absent_nulls`]):
//!
//! | in the caller's schema | on the wire | in the answer |
//! |---|---|---|
//! | a property not in `required` | in `required`; `type: T` → `type: [T, "null"]` (and `null` added to an `enum`), any other schema → `anyOf: [S, {"type": "null"}]` | the key removed when its value is `null` |
//! | an object with `properties` and no `additionalProperties` (or `true`) | `additionalProperties: false` (a narrowing: no answer it admits is outside the caller's schema) | – |
//!
//! Only objects reached from the root through `properties` and `items` are rewritten, to a depth
//! of [`MAX_DEPTH`]; an optional property elsewhere (under `anyOf`, a `$ref`, deeper) stays as it
//! is, so the strict check fails and the schema goes as a hint, as without this rewrite. A `null`
//! the model gives for a property whose own schema allows `null` is read as left out too (both are
//! valid for the caller). Each rewrite is named in the ledger's `transforms`.

use crate::vocab::Transform;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::HashSet;

/// How deep the rewrite goes (nesting of `properties`/`items`); deeper optional properties are
/// left to the strict check's verdict.
pub const MAX_DEPTH: usize = 32;

/// One step from the answer's root to a rewritten property.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerStep {
    /// The member of an object with this key.
    Key(String),
    /// Every item of an array.
    Items,
}

/// Where in an answer a property made required and nullable for the wire sits: the steps to its
/// object, then its key.
pub type AnswerPath = Vec<AnswerStep>;

/// Rewrites `wire` (the caller's schema, keywords already stripped) as the module table says;
/// returns the answer paths of the properties made required and nullable. Pointers in the
/// transforms are the caller's.
///
/// ```
/// use geode::schema::nullable::{absent_nulls, require_optionals};
/// let mut wire = serde_json::json!({"type": "object",
///     "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a"]});
/// let mut transforms = Vec::new();
/// let paths = require_optionals(&mut wire, &mut transforms);
/// assert_eq!(wire["required"], serde_json::json!(["a", "b"]));
/// assert_eq!(wire["properties"]["b"]["type"], serde_json::json!(["integer", "null"]));
/// let mut answer = serde_json::json!({"a": "x", "b": null});
/// absent_nulls(&mut answer, &paths);
/// assert_eq!(answer, serde_json::json!({"a": "x"}));
/// ```
pub fn require_optionals(wire: &mut Value, transforms: &mut Vec<Transform>) -> Vec<AnswerPath> {
    let mut paths = Vec::new();
    let mut at = Vec::new();
    rewrite(wire, "", &mut at, transforms, &mut paths);
    paths
}

fn rewrite(
    node: &mut Value,
    pointer: &str,
    at: &mut AnswerPath,
    transforms: &mut Vec<Transform>,
    paths: &mut Vec<AnswerPath>,
) {
    if at.len() >= MAX_DEPTH {
        return;
    }
    let Value::Object(m) = node else { return };
    if m.get("type").and_then(Value::as_str) == Some("object")
        && let Some(Value::Object(_)) = m.get("properties")
    {
        rewrite_object(m, pointer, at, transforms, paths);
    }
    if let Some(items @ Value::Object(_)) = m.get_mut("items") {
        at.push(AnswerStep::Items);
        rewrite(items, &format!("{pointer}/items"), at, transforms, paths);
        at.pop();
    }
}

fn rewrite_object(
    m: &mut Map<String, Value>,
    pointer: &str,
    at: &mut AnswerPath,
    transforms: &mut Vec<Transform>,
    paths: &mut Vec<AnswerPath>,
) {
    if matches!(
        m.get("additionalProperties"),
        None | Some(Value::Bool(true))
    ) {
        m.insert("additionalProperties".into(), Value::Bool(false));
        transforms.push(Transform {
            pointer: pointer.to_owned(),
            action: "additionalProperties: false for OpenAI strict (closed to undeclared \
                     properties)"
                .into(),
        });
    }
    let required: Vec<String> = match m.get("required") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(r)) if r.iter().all(Value::is_string) => r
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        // Not an array of names: left for the strict check to name.
        Some(_) => return,
    };
    let Some(Value::Object(props)) = m.get_mut("properties") else {
        return;
    };
    // A set: a schema may list thousands of properties.
    let is_required: HashSet<&str> = required.iter().map(String::as_str).collect();
    let mut all = required.clone();
    for (key, sub) in props.iter_mut() {
        let sub_pointer = format!("{pointer}/properties/{}", escape(key));
        at.push(AnswerStep::Key(key.clone()));
        rewrite(sub, &sub_pointer, at, transforms, paths);
        if !is_required.contains(key.as_str()) {
            make_nullable(sub);
            all.push(key.clone());
            paths.push(at.clone());
            transforms.push(Transform {
                pointer: sub_pointer,
                action: "required and nullable for OpenAI strict (a null answer is read as \
                         the property left out)"
                    .into(),
            });
        }
        at.pop();
    }
    if all.len() != required.len() {
        m.insert("required".into(), json!(all));
    }
}

/// `schema` admitting `null` as well.
fn make_nullable(schema: &mut Value) {
    if let Value::Object(m) = schema
        && !m.contains_key("const")
    {
        let typed = match m.get_mut("type") {
            Some(Value::String(t)) if t != "null" => {
                let t = std::mem::take(t);
                m.insert("type".into(), json!([t, "null"]));
                true
            }
            Some(Value::Array(types)) => {
                if !types.iter().any(|t| t == "null") {
                    types.push(json!("null"));
                }
                true
            }
            _ => false,
        };
        if typed {
            if let Some(Value::Array(options)) = m.get_mut("enum")
                && !options.contains(&Value::Null)
            {
                options.push(Value::Null);
            }
            return;
        }
    }
    let inner = std::mem::take(schema);
    *schema = json!({"anyOf": [inner, {"type": "null"}]});
}

/// JSON Pointer escaping of one key.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Removes, at each of `paths` in `answer`, a property whose value is `null` (undoes
/// [`require_optionals`] on an answer).
pub fn absent_nulls(answer: &mut Value, paths: &[AnswerPath]) {
    for path in paths {
        remove_null_at(answer, path);
    }
}

fn remove_null_at(value: &mut Value, path: &[AnswerStep]) {
    match path {
        [] => {}
        [AnswerStep::Key(k)] => {
            if let Value::Object(m) = value
                && m.get(k) == Some(&Value::Null)
            {
                m.shift_remove(k);
            }
        }
        [AnswerStep::Key(k), rest @ ..] => {
            if let Some(v) = value.get_mut(k) {
                remove_null_at(v, rest);
            }
        }
        [AnswerStep::Items, rest @ ..] => {
            if let Value::Array(items) = value {
                items.iter_mut().for_each(|v| remove_null_at(v, rest));
            }
        }
    }
}

#[cfg(test)]
#[path = "nullable_tests.rs"]
mod tests;
