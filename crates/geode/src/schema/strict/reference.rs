//! GEODE's strict predicate, quirks included (part of [`super`], in its own file for
//! size): the conformance baseline that [`super::check_strict`] is compared with.

use super::doc::get;
use serde_json::{Map, Value};
use std::collections::HashSet;

/// GEODE's predicate (`_is_openai_strict_compatible`), exactly: no `$ref` following, no
/// `prefixItems`/`not`/`additionalProperties`-schema inspection, Python truthiness and set
/// semantics on `properties`/`required`.
///
/// Where the Python code would raise (a truthy non-dict `properties`, a `required` that is a number
/// or holds arrays/objects), this returns `false`: GEODE never sends `strict:true` then.
pub fn is_reference_strict(schema: &Value) -> bool {
    let mut stack: Vec<&Value> = vec![schema];
    while let Some(node) = stack.pop() {
        let Value::Object(m) = node else { continue };
        if get(m, "type").and_then(Value::as_str) == Some("object") {
            if get(m, "additionalProperties") != Some(&Value::Bool(false)) {
                return false;
            }
            let props = match get(m, "properties") {
                Some(v) if py_truthy(v) => match v {
                    Value::Object(p) => Some(p),
                    _ => return false,
                },
                _ => None,
            };
            let required = get(m, "required");
            if !same_names_in_order(props, required) {
                let Some(required) = py_required_set(required) else {
                    return false;
                };
                let keys: HashSet<&str> = props
                    .map(|p| p.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                if keys != required {
                    return false;
                }
            }
            if let Some(p) = props {
                stack.extend(p.values());
            }
        }
        if let Some(items) = get(m, "items") {
            stack.push(items);
        }
        for key in ["oneOf", "anyOf", "allOf"] {
            if let Some(Value::Array(branches)) = get(m, key) {
                stack.extend(branches);
            }
        }
    }
    true
}

/// True when `required` is an array naming exactly the properties, in order (the common case,
/// decided without hashing).
fn same_names_in_order(props: Option<&Map<String, Value>>, required: Option<&Value>) -> bool {
    match (props, required) {
        (Some(p), Some(Value::Array(r))) => {
            p.len() == r.len() && r.iter().zip(p.keys()).all(|(r, k)| r.as_str() == Some(k))
        }
        _ => false,
    }
}

/// Python truthiness of a JSON value.
fn py_truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// `set(s.get("required") or [])` in Python, restricted to what can equal a set of property
/// names. `None` when Python would raise or when the set holds a non-string (which can never equal
/// a set of names, so the caller's comparison fails either way).
fn py_required_set(v: Option<&Value>) -> Option<HashSet<&str>> {
    let Some(v) = v.filter(|v| py_truthy(v)) else {
        return Some(HashSet::new());
    };
    match v {
        Value::Array(items) => items.iter().map(Value::as_str).collect(),
        Value::Object(o) => Some(o.keys().map(String::as_str).collect()),
        Value::String(s) => Some(
            s.char_indices()
                .map(|(i, c)| &s[i..i + c.len_utf8()])
                .collect(),
        ),
        _ => None,
    }
}
