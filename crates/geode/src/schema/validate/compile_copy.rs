//! The copy of a schema the validator compiles, when it must differ from the caller's (part of
//! [`super::validate`], in its own file for size).
//!
//! The `jsonschema` crate checks, for every closed object (`additionalProperties: false`) whose
//! `required` lists two or more names, whether `required` names every declared property, with
//! a scan that is quadratic in the number of properties: 5,000 properties cost about 13 ms. An
//! empty `patternProperties` beside them takes the crate off that path without changing what
//! the schema means (no pattern, so no property is matched by one). [`compile_copy`] adds it to
//! every such object with more than [`WIDE_OBJECT`] required names.
//!
//! It also writes every `pattern` and `patternProperties` name that Rust's regex syntax would
//! read otherwise than ECMA-262 in the form Rust reads alike ([`crate::schema::pattern`]), so
//! that no valid ECMA pattern is refused. The schema is borrowed untouched when neither applies.

use crate::schema::pattern::to_rust_syntax;
use crate::schema::projection::{sub_pointer, subschemas};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// Required names past which a closed object is given an empty `patternProperties`.
pub const WIDE_OBJECT: usize = 256;

/// True for a closed object with more than [`WIDE_OBJECT`] required names and no patterns.
fn is_wide_closed_object(m: &Map<String, Value>) -> bool {
    matches!(m.get("additionalProperties"), Some(Value::Bool(false)))
        && m.contains_key("properties")
        && !m.contains_key("patternProperties")
        && m.get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| r.len() > WIDE_OBJECT)
}

/// True when a `pattern` or a `patternProperties` name of `m` reads otherwise in Rust.
fn has_foreign_pattern(m: &Map<String, Value>) -> bool {
    let foreign = |p: &str| matches!(to_rust_syntax(p), Cow::Owned(_));
    m.get("pattern")
        .and_then(Value::as_str)
        .is_some_and(foreign)
        || m.get("patternProperties")
            .and_then(Value::as_object)
            .is_some_and(|pp| pp.keys().any(|k| foreign(k)))
}

/// Rewrites `m`'s patterns into Rust's syntax (see [`has_foreign_pattern`]).
fn rewrite_patterns(m: &mut Map<String, Value>) {
    if let Some(Value::String(p)) = m.get_mut("pattern") {
        *p = to_rust_syntax(p).into_owned();
    }
    if let Some(Value::Object(pp)) = m.get_mut("patternProperties") {
        let old = std::mem::take(pp);
        *pp = old
            .into_iter()
            .map(|(k, v)| (to_rust_syntax(&k).into_owned(), v))
            .collect();
    }
}

/// The schema to compile: the caller's, or a copy with an empty `patternProperties` on every
/// wide closed object and patterns in Rust's syntax (see the module docs).
pub(crate) fn compile_copy(schema: &Value) -> Cow<'_, Value> {
    let mut wide = Vec::new();
    let mut foreign = Vec::new();
    let mut stack = vec![(schema, String::new())];
    while let Some((node, ptr)) = stack.pop() {
        let Value::Object(m) = node else { continue };
        if is_wide_closed_object(m) {
            wide.push(ptr.clone());
        }
        if has_foreign_pattern(m) {
            foreign.push(ptr.clone());
        }
        for (tokens, v, two) in subschemas(m) {
            stack.push((v, sub_pointer(&ptr, &tokens, two)));
        }
    }
    if wide.is_empty() && foreign.is_empty() {
        return Cow::Borrowed(schema);
    }
    let mut copy = schema.clone();
    for ptr in wide {
        if let Some(Value::Object(m)) = copy.pointer_mut(&ptr) {
            m.insert("patternProperties".to_owned(), Value::Object(Map::new()));
        }
    }
    // Deepest first: renaming a `patternProperties` name moves the pointers below it.
    foreign.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for ptr in foreign {
        if let Some(Value::Object(m)) = copy.pointer_mut(&ptr) {
            rewrite_patterns(m);
        }
    }
    Cow::Owned(copy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::ResponseSchema;
    use crate::schema::validate::CompiledSchema;
    use serde_json::json;

    fn wide(n: usize) -> Value {
        let props: Map<String, Value> = (0..n)
            .map(|i| (format!("f{i}"), json!({"type": "integer"})))
            .collect();
        let required: Vec<&String> = props.keys().collect();
        json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
    }

    #[test]
    fn only_wide_closed_objects_in_schema_positions_are_copied() {
        let narrow = wide(3);
        assert!(matches!(compile_copy(&narrow), Cow::Borrowed(_)));
        let nested = json!({"properties": {"inner": wide(300)}, "const": wide(300)});
        let copy = compile_copy(&nested);
        assert_eq!(copy["properties"]["inner"]["patternProperties"], json!({}));
        assert!(
            copy["const"].get("patternProperties").is_none(),
            "a const value is data"
        );
    }

    #[test]
    fn the_copy_validates_exactly_as_the_original() {
        let schema = ResponseSchema::from_value(wide(300)).unwrap();
        let compiled = CompiledSchema::compile(&schema).unwrap();
        let plain = jsonschema::validator_for(schema.as_value()).unwrap();
        let mut full: Map<String, Value> = (0..300).map(|i| (format!("f{i}"), json!(i))).collect();
        assert!(compiled.validate(&Value::Object(full.clone())).is_empty());
        full.insert("extra".into(), json!(1));
        full.remove("f7");
        full.insert("f8".into(), json!("x"));
        let answer = Value::Object(full);
        let ours = compiled.validate(&answer);
        let theirs: Vec<String> = plain.iter_errors(&answer).map(|e| e.to_string()).collect();
        let mut ours_text: Vec<String> = ours.issues.iter().map(|i| i.message.clone()).collect();
        let mut theirs = theirs;
        ours_text.sort();
        theirs.sort();
        assert_eq!(ours_text, theirs);
        assert_eq!(ours.issues.len(), 3, "{ours:?}");
    }
}
