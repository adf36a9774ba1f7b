//! Tests for the limit preflight.

use super::*;
use crate::schema::fixtures::{decision, schema};
use crate::schema::projection::{anthropic_native_fits, project_anthropic};
use serde_json::{Map, Value, json};

/// `levels` nested strict objects: `{"type":"object","properties":{"a": …}}`, a string at the bottom.
fn nested_objects(levels: usize) -> Value {
    let mut v = json!({"type": "string"});
    for _ in 0..levels {
        v = json!({"type":"object","properties":{"a": v},"required":["a"],"additionalProperties":false});
    }
    v
}

fn only(v: Result<(), Vec<LimitViolation>>) -> LimitViolation {
    let mut v = v.unwrap_err();
    assert_eq!(v.len(), 1, "{v:?}");
    v.remove(0)
}
// ---- preflight ----

#[test]
fn decision_schema_passes_preflight_and_projects_unchanged_everywhere() {
    assert_eq!(openai_strict_limits(&decision()), Ok(()));
    let p = project_anthropic(&decision());
    assert_eq!(&p.wire, decision().as_value());
    assert!(p.residuals.is_empty() && p.transforms.is_empty(), "{p:?}");
    assert_eq!(anthropic_native_fits(&decision()), Ok(()));
}

#[test]
fn eleven_nesting_levels_are_refused_for_openai_strict() {
    assert_eq!(openai_strict_limits(&schema(nested_objects(10))), Ok(()));
    let v = only(openai_strict_limits(&schema(nested_objects(11))));
    assert_eq!((v.found, v.max), (11, 10));
    assert_eq!(v.pointer, "/properties/a".repeat(10));
    assert!(v.to_string().contains("levels of object nesting"), "{v}");
    assert!(v.to_string().contains("11 found, at most 10"), "{v}");
}

#[test]
fn definitions_start_their_own_nesting_count() {
    let s = schema(json!({
        "type":"object","properties":{"x":{"$ref":"#/$defs/d"}},"required":["x"],"additionalProperties":false,
        "$defs":{"d": nested_objects(10)}
    }));
    assert_eq!(openai_strict_limits(&s), Ok(()));
    let s = schema(json!({"type":"object","$defs":{"d": nested_objects(11)}}));
    let v = only(openai_strict_limits(&s));
    assert!(v.pointer.starts_with("/$defs/d/properties/a"), "{v}");
}

#[test]
fn arrays_and_unions_do_not_add_nesting_levels() {
    let s = schema(
        json!({"type":"object","properties":{"a":{"type":"array","items":{"anyOf":[nested_objects(9), {"type":"null"}]}}},"required":["a"],"additionalProperties":false}),
    );
    assert_eq!(openai_strict_limits(&s), Ok(()));
    // An array root goes wrapped in one object (strict mode wants an object root): the wrapper
    // is a level too.
    let s = schema(json!({"type":"array","items":{"anyOf":[nested_objects(9), {"type":"null"}]}}));
    assert_eq!(openai_strict_limits(&s), Ok(()));
    let s = schema(json!({"type":"array","items":{"anyOf":[nested_objects(10), {"type":"null"}]}}));
    assert_eq!(only(openai_strict_limits(&s)).found, 11);
}

#[test]
fn one_thousand_and_one_enum_values_are_refused_for_openai_strict() {
    let values = |n: usize| -> Vec<Value> { (0..n).map(|i| json!(i)).collect() };
    assert_eq!(
        openai_strict_limits(&schema(json!({"enum": values(1000)}))),
        Ok(())
    );
    // Counted across the schema.
    let s = schema(json!({"anyOf":[{"enum": values(600)}, {"enum": values(401)}]}));
    let v = only(openai_strict_limits(&s));
    assert_eq!((v.found, v.max), (1001, 1000));
    assert_eq!(v.pointer, "/anyOf/1");
    assert!(
        v.to_string()
            .starts_with("OpenAI strict: enum values in total"),
        "{v}"
    );
}

#[test]
fn five_thousand_and_one_properties_are_refused() {
    let props = |n: usize| -> Map<String, Value> {
        (0..n)
            .map(|i| (format!("p{i}"), json!({"type":"integer"})))
            .collect()
    };
    let ok = schema(json!({"type":"object","properties": props(5000)}));
    assert_eq!(openai_strict_limits(&ok), Ok(()));
    let s = schema(json!({"type":"object","properties": props(4000),
        "$defs": {"more": {"type":"object","properties": props(1001)}}}));
    let v = only(openai_strict_limits(&s));
    assert_eq!((v.found, v.max), (5001, 5000));
    assert!(v.limit.contains("object properties in total"), "{v}");
}

#[test]
fn more_than_120000_characters_of_names_are_refused() {
    let props: Map<String, Value> = (0..1000)
        .map(|i| (format!("{i:0>121}"), json!({"type":"integer"})))
        .collect();
    let v = only(openai_strict_limits(&schema(
        json!({"type":"object","properties": props}),
    )));
    assert_eq!((v.found, v.max), (121_000, 120_000));
    assert!(v.limit.contains("characters"), "{v}");
}

#[test]
fn a_large_string_enum_is_held_to_15000_characters() {
    let values = |n: usize, len: usize| -> Vec<Value> {
        (0..n).map(|i| json!(format!("{i:0>len$}"))).collect()
    };
    // 250 values: not "more than 250", so no per-enum limit.
    assert_eq!(
        openai_strict_limits(&schema(json!({"enum": values(250, 100)}))),
        Ok(())
    );
    let v = only(openai_strict_limits(&schema(
        json!({"enum": values(251, 60)}),
    )));
    assert_eq!((v.found, v.max), (251 * 60, 15_000));
    assert_eq!(v.pointer, "/enum");
    assert!(v.limit.contains("more than 250 values"), "{v}");
}

#[test]
fn limit_violations_serialise() {
    let v = LimitViolation {
        limit: "x".into(),
        found: 2,
        max: 1,
        pointer: "/a".into(),
    };
    let back: LimitViolation = serde_json::from_value(serde_json::to_value(&v).unwrap()).unwrap();
    assert_eq!(back, v);
    assert_eq!(v.to_string(), "x: 2 found, at most 1 allowed (at /a)");
}
