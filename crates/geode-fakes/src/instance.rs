//! A small JSON value that satisfies a JSON Schema, for [`crate::Reply::Auto`].
//!
//! A port of the Python fakes' `schema_instance.py`: handles the strict subset that OpenAI strict
//! mode and Anthropic structured outputs accept (`type` as a string or list, `properties` /
//! `required`, `items`, `enum`, `const`, `anyOf` / `oneOf` / `allOf` (first non-null branch),
//! local `$ref` to `#/...`, `minItems`, `minimum`). Depth is capped, so recursive schemas end in
//! `null`. It is not a validator: schemas outside that subset may get a non-matching value.

use serde_json::{Map, Value, json};

const MAX_DEPTH: usize = 20;

/// Builds a value for `schema`.
pub(crate) fn instance(schema: &Value) -> Value {
    build(schema, schema, 0)
}

fn build(schema: &Value, root: &Value, depth: usize) -> Value {
    let Some(obj) = schema.as_object() else {
        return Value::Null;
    };
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
        let target = reference
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer))
            .unwrap_or(&Value::Null);
        return build(target, root, depth + 1);
    }
    if let Some(value) = obj.get("const") {
        return value.clone();
    }
    if let Some(first) = obj
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(branches) = obj
            .get(key)
            .and_then(Value::as_array)
            .filter(|b| !b.is_empty())
        {
            let chosen = branches
                .iter()
                .find(|b| b.get("type").and_then(Value::as_str) != Some("null"))
                .unwrap_or(&branches[0]);
            return build(chosen, root, depth + 1);
        }
    }
    match type_of(obj) {
        "object" => {
            let empty = Map::new();
            let props = obj
                .get("properties")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            let keys: Vec<&str> = match obj.get("required").and_then(Value::as_array) {
                Some(required) => required.iter().filter_map(Value::as_str).collect(),
                None => props.keys().map(String::as_str).collect(),
            };
            let mut out = Map::new();
            for key in keys {
                let sub = props.get(key).unwrap_or(&Value::Null);
                let sub = if sub.is_null() { &json!({}) } else { sub };
                out.insert(key.to_owned(), build(sub, root, depth + 1));
            }
            Value::Object(out)
        }
        "array" => {
            let n = obj
                .get("minItems")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .clamp(1, 64);
            let items = obj.get("items").cloned().unwrap_or_else(|| json!({}));
            (0..n).map(|_| build(&items, root, depth + 1)).collect()
        }
        "string" => json!("fake"),
        "integer" => json!(
            obj.get("minimum")
                .and_then(Value::as_i64)
                .filter(|m| *m != 0)
                .unwrap_or(1)
        ),
        "number" => json!(
            obj.get("minimum")
                .and_then(Value::as_f64)
                .filter(|m| *m != 0.0)
                .unwrap_or(1.5)
        ),
        "boolean" => json!(true),
        _ => Value::Null,
    }
}

/// The effective type name: the first non-null entry of `type`, or a guess from the keywords.
fn type_of(obj: &Map<String, Value>) -> &str {
    match obj.get("type") {
        Some(Value::String(t)) => t,
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if obj.contains_key("properties") => "object",
        _ if obj.contains_key("items") => "array",
        _ => "string",
    }
}

/// The automatic answer of the OpenAI-shaped fakes: an instance of the schema at `schema_at`
/// inside the request's `format` when that asks for `json_schema`, otherwise `auto_text`.
pub(crate) fn auto_answer(
    format: Option<&Value>,
    schema_at: &str,
    auto_text: &str,
) -> crate::plan::Content {
    match format {
        Some(f) if f.get("type").and_then(Value::as_str) == Some("json_schema") => {
            let schema = f.pointer(schema_at).unwrap_or(&Value::Null);
            crate::plan::Content::Text(instance(schema).to_string())
        }
        _ => crate::plan::Content::Text(auto_text.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_required_fields_of_a_strict_object() {
        let schema = json!({"type":"object","properties":{
            "answer":{"type":"string"},"confidence":{"type":"number"},
            "tags":{"type":"array","items":{"type":"string"}},
            "note":{"type":["string","null"]},"n":{"type":"integer"}},
            "required":["answer","confidence","tags","note","n"],"additionalProperties":false});
        assert_eq!(
            instance(&schema),
            json!({"answer":"fake","confidence":1.5,"tags":["fake"],"note":"fake","n":1})
        );
    }

    #[test]
    fn follows_refs_enums_and_any_of() {
        let schema = json!({"type":"object","properties":{
            "kind":{"$ref":"#/$defs/kind"},
            "v":{"anyOf":[{"type":"null"},{"type":"boolean"}]},
            "c":{"const":"x"}},
            "required":["kind","v","c"],
            "$defs":{"kind":{"enum":["a","b"]}}});
        assert_eq!(instance(&schema), json!({"kind":"a","v":true,"c":"x"}));
    }

    #[test]
    fn recursive_schema_terminates() {
        let schema =
            json!({"type":"object","properties":{"next":{"$ref":"#"}},"required":["next"]});
        assert!(instance(&schema).is_object());
    }
}
