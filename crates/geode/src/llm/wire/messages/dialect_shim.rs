//! LOCAL STAND-IN for `crate::schema::dialect::{project, anthropic_native_fits}` (Anthropic only).
//!
//! The schema module owns the real projection; until it lands on main this file gives the Messages
//! family the same two entry points so the placement logic can be written and tested. The
//! signatures match the schema module's (`project(&ResponseSchema, Dialect) -> Projection`,
//! `anthropic_native_fits(&ResponseSchema)`, which projects first), so the integrator replaces
//! the `use` in `messages/placement.rs` with `crate::schema::dialect::{...}` and deletes this
//! file (and its `mod` line in `messages.rs`).
//!
//! * [`project`] copies the schema and removes what Anthropic's structured outputs reject
//!   (numeric bounds, string lengths, array bounds beyond `minItems` 0/1, object size bounds),
//!   renames `oneOf` to `anyOf`, and forces `additionalProperties: false`; each change is a
//!   [`Transform`] and, where it loosens the wire copy, a residual checked locally.
//! * [`anthropic_native_fits`] says whether the projected copy fits the subset: no external or
//!   recursive `$ref`, primitive `enum` members only, an object root.

use crate::ledger::Transform;
use crate::schema::ResponseSchema;
use serde_json::{Map, Value};

/// The schema dialect (only the one this family needs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Anthropic Messages native structured output.
    Anthropic,
}

/// The projected wire copy, what was checked locally instead, and every rewrite.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    /// The schema as it goes on the wire.
    pub wire: Value,
    /// Constraints the wire copy lost, to be checked locally.
    pub residuals: Vec<String>,
    /// Every rewrite, with a JSON Pointer into the caller's schema.
    pub transforms: Vec<Transform>,
}

/// Keywords Anthropic's structured outputs do not take; removed and checked locally.
const REMOVED: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "maxItems",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "minProperties",
    "maxProperties",
    "propertyNames",
    "patternProperties",
    "dependentRequired",
    "dependentSchemas",
    "not",
    "if",
    "then",
    "else",
];

/// Keywords whose value is a map of sub-schemas.
const SCHEMA_MAPS: &[&str] = &["properties", "$defs", "definitions"];
/// Keywords whose value is a list of sub-schemas.
const SCHEMA_LISTS: &[&str] = &["anyOf", "allOf", "prefixItems"];

/// Projects `schema` to the Anthropic structured-outputs dialect (the only one here).
pub fn project(schema: &ResponseSchema, dialect: Dialect) -> Projection {
    let Dialect::Anthropic = dialect;
    let mut out = Projection {
        wire: schema.as_value().clone(),
        residuals: Vec::new(),
        transforms: Vec::new(),
    };
    walk(&mut out.wire, "", &mut out.residuals, &mut out.transforms);
    out
}

fn note(transforms: &mut Vec<Transform>, ptr: &str, action: String) {
    transforms.push(Transform {
        pointer: ptr.to_owned(),
        action,
    });
}

fn walk(node: &mut Value, ptr: &str, residuals: &mut Vec<String>, tf: &mut Vec<Transform>) {
    let Value::Object(m) = node else { return };
    for key in REMOVED {
        if let Some(v) = m.remove(*key) {
            residuals.push(format!("{ptr}: {key} {v}"));
            note(tf, ptr, format!("removed keyword {key} (checked locally)"));
        }
    }
    if m.get("minItems")
        .and_then(Value::as_u64)
        .is_some_and(|n| n > 1)
        && let Some(v) = m.remove("minItems")
    {
        residuals.push(format!("{ptr}: minItems {v}"));
        note(tf, ptr, "removed keyword minItems (checked locally)".into());
    }
    if let Some(v) = m.remove("oneOf") {
        m.insert("anyOf".into(), v);
        residuals.push(format!("{ptr}: oneOf exclusivity"));
        note(
            tf,
            ptr,
            "renamed oneOf to anyOf (exclusivity checked locally)".into(),
        );
    }
    let is_object =
        m.get("type").and_then(Value::as_str) == Some("object") || m.contains_key("properties");
    if is_object && m.get("additionalProperties") != Some(&Value::Bool(false)) {
        if m.contains_key("additionalProperties") {
            residuals.push(format!("{ptr}: additionalProperties"));
        }
        m.insert("additionalProperties".into(), Value::Bool(false));
        note(tf, ptr, "set additionalProperties to false".into());
    }
    walk_children(m, ptr, residuals, tf);
}

fn walk_children(
    m: &mut Map<String, Value>,
    ptr: &str,
    residuals: &mut Vec<String>,
    tf: &mut Vec<Transform>,
) {
    for key in SCHEMA_MAPS {
        if let Some(Value::Object(children)) = m.get_mut(*key) {
            for (name, child) in children.iter_mut() {
                walk(
                    child,
                    &format!("{ptr}/{key}/{}", escape(name)),
                    residuals,
                    tf,
                );
            }
        }
    }
    for key in SCHEMA_LISTS {
        if let Some(Value::Array(children)) = m.get_mut(*key) {
            for (i, child) in children.iter_mut().enumerate() {
                walk(child, &format!("{ptr}/{key}/{i}"), residuals, tf);
            }
        }
    }
    if let Some(items) = m.get_mut("items") {
        walk(items, &format!("{ptr}/items"), residuals, tf);
    }
}

fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Whether the schema, after [`project`], fits Anthropic's structured-outputs subset; the
/// reasons when not.
pub fn anthropic_native_fits(schema: &ResponseSchema) -> Result<(), Vec<String>> {
    let projected = project(schema, Dialect::Anthropic).wire;
    let schema = &projected;
    let mut reasons = Vec::new();
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        reasons.push("root must be an object schema".to_owned());
    }
    check(schema, schema, "", &mut Vec::new(), &mut reasons);
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(reasons)
    }
}

fn check(root: &Value, node: &Value, ptr: &str, stack: &mut Vec<String>, out: &mut Vec<String>) {
    let Value::Object(m) = node else { return };
    if let Some(r) = m.get("$ref").and_then(Value::as_str) {
        if !r.starts_with('#') {
            out.push(format!("{ptr}: external $ref {r}"));
        } else if stack.iter().any(|s| s == r) {
            out.push(format!("{ptr}: recursive $ref {r}"));
            return;
        } else if let Some(target) = root.pointer(r.trim_start_matches('#')) {
            stack.push(r.to_owned());
            check(root, target, r.trim_start_matches('#'), stack, out);
            stack.pop();
        }
    }
    if let Some(Value::Array(members)) = m.get("enum")
        && members.iter().any(|v| v.is_object() || v.is_array())
    {
        out.push(format!("{ptr}: enum with non-primitive members"));
    }
    for key in ["properties"] {
        if let Some(Value::Object(children)) = m.get(key) {
            for (name, child) in children {
                check(
                    root,
                    child,
                    &format!("{ptr}/{key}/{}", escape(name)),
                    stack,
                    out,
                );
            }
        }
    }
    for key in SCHEMA_LISTS {
        if let Some(Value::Array(children)) = m.get(*key) {
            for (i, child) in children.iter().enumerate() {
                check(root, child, &format!("{ptr}/{key}/{i}"), stack, out);
            }
        }
    }
    if let Some(items) = m.get("items") {
        check(root, items, &format!("{ptr}/items"), stack, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(v: Value) -> ResponseSchema {
        ResponseSchema::from_value(v).unwrap()
    }

    #[test]
    fn projection_removes_bounds_and_records_each() {
        let p = project(
            &schema(json!({
                "type": "object",
                "properties": {"n": {"type": "integer", "minimum": 1}, "s": {"type": "string"}},
                "required": ["n"]
            })),
            Dialect::Anthropic,
        );
        assert_eq!(p.wire["properties"]["n"], json!({"type": "integer"}));
        assert_eq!(p.wire["additionalProperties"], json!(false));
        assert!(p.transforms.iter().any(|t| t.pointer == "/properties/n"));
        assert_eq!(p.residuals.len(), 1);
    }

    #[test]
    fn recursion_and_external_refs_do_not_fit() {
        let rec = json!({"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}});
        assert!(anthropic_native_fits(&schema(rec)).is_err());
        let ext = json!({"type": "object", "properties": {"a": {"$ref": "https://x/y.json"}}});
        assert!(anthropic_native_fits(&schema(ext)).is_err());
        let ok = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"type": "string"}}});
        assert_eq!(anthropic_native_fits(&schema(ok)), Ok(()));
    }
}
