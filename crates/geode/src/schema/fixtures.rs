//! Schemas the schema layer's unit tests share.

use super::ResponseSchema;
use serde_json::{Map, Value, json};

/// `v` as a schema (the tests' schemas are valid).
pub(crate) fn schema(v: Value) -> ResponseSchema {
    ResponseSchema::from_value(v).unwrap()
}

/// The `Decision` schema: a closed object with an enum and a string, both required.
pub(crate) fn decision() -> ResponseSchema {
    schema(json!({
        "title": "Decision",
        "type": "object",
        "properties": {
            "decision": {"type": "string", "enum": ["accept", "reject"]},
            "reason": {"type": "string"}
        },
        "required": ["decision", "reason"],
        "additionalProperties": false
    }))
}

/// Wraps `leaf` in `{"type":"object","properties":{"a": …}}` `levels` times, without recursion
/// (`json!` with an interpolated value serialises it recursively, so the map is built by hand).
/// `closed` also makes each level require `a` and allow nothing else.
pub(crate) fn nested_properties(levels: usize, leaf: Value, closed: bool) -> Value {
    let mut v = leaf;
    for _ in 0..levels {
        let mut props = Map::new();
        props.insert("a".into(), v);
        let mut m = Map::new();
        m.insert("type".into(), json!("object"));
        m.insert("properties".into(), Value::Object(props));
        if closed {
            m.insert("required".into(), json!(["a"]));
            m.insert("additionalProperties".into(), json!(false));
        }
        v = Value::Object(m);
    }
    v
}
