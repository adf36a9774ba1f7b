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

/// Any JSON value, for the parsers' property tests: integers across `i64` and `u64`, floats far
/// from zero, strings with quotes, backslashes, control characters and non-ASCII text, and
/// objects whose keys need escapes.
pub(crate) fn arb_json() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        (-1e300f64..1e300).prop_map(|f| json!(f)),
        "[a-z\\\\\"\u{0}-\u{1f}é€😀 ]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map("[a-d\"\\\\é]{0,4}", inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
