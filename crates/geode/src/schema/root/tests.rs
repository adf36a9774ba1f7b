//! Tests for the answer root and the wrap/unwrap rewrite.

use super::*;
use serde_json::json;

fn root(v: Value) -> AnswerRoot {
    AnswerRoot::of(&ResponseSchema::from_value(v).unwrap())
}

#[test]
fn object_roots_are_objects_and_untyped_roots_admit_any_value() {
    assert_eq!(root(json!({"type": "object"})), AnswerRoot::Object);
    assert_eq!(
        root(json!({"anyOf": [{"type": "object"}, {"required": ["a"], "type": "object"}]})),
        AnswerRoot::Object
    );
    for open in [
        json!({}),
        json!(true),
        json!({"required": ["a"], "properties": {}}),
        json!({"uniqueItems": true}),
        json!({"items": {"type": "integer"}}),
        json!({"format": "email"}),
    ] {
        assert_eq!(root(open.clone()), AnswerRoot::Any, "{open}");
    }
}

#[test]
fn an_open_root_is_asked_for_as_an_object_only_when_object_keywords_describe_it() {
    let asked = |v: Value| AnswerRoot::asked(&ResponseSchema::from_value(v).unwrap());
    assert_eq!(asked(json!({"required": ["a"]})), AnswerRoot::Object);
    assert_eq!(asked(json!({"properties": {"a": {}}})), AnswerRoot::Object);
    assert_eq!(
        asked(json!({"additionalProperties": false})),
        AnswerRoot::Object
    );
    assert_eq!(asked(json!({})), AnswerRoot::Any);
    assert_eq!(
        asked(json!({"items": {"type": "integer"}})),
        AnswerRoot::Any
    );
    assert_eq!(
        asked(json!({"type": "array"})),
        AnswerRoot::Values(TypeSet::ARRAY)
    );
    assert_eq!(AnswerRoot::Any.describe(), "JSON value");
    assert_eq!(AnswerRoot::Any.types(), TypeSet::ALL);
}

#[test]
fn every_kind_of_non_object_root_is_found() {
    let num = TypeSet::from_name("number").unwrap();
    let cases = [
        (
            json!({"type": "array", "items": {"type": "integer"}}),
            TypeSet::ARRAY,
        ),
        (json!({"type": "string"}), TypeSet::STRING),
        (json!({"type": "number"}), num),
        (json!({"type": "integer"}), TypeSet::INTEGER),
        (json!({"type": "boolean"}), TypeSet::BOOLEAN),
        (json!({"type": "null"}), TypeSet::NULL),
        (
            json!({"enum": ["a", 1, null]}),
            TypeSet::STRING.union(TypeSet::INTEGER).union(TypeSet::NULL),
        ),
        (json!({"const": 2.5}), TypeSet::FRACTION),
        (
            json!({"type": ["string", "null"]}),
            TypeSet::STRING.union(TypeSet::NULL),
        ),
        (
            json!({"type": ["object", "null"]}),
            TypeSet::OBJECT.union(TypeSet::NULL),
        ),
        (
            json!({"anyOf": [{"type": "array"}, {"type": "integer"}]}),
            TypeSet::ARRAY.union(TypeSet::INTEGER),
        ),
        (
            json!({"oneOf": [{"type": "string"}, {"const": true}]}),
            TypeSet::STRING.union(TypeSet::BOOLEAN),
        ),
        (
            json!({"allOf": [{"type": ["string", "array"]}, {"type": "array"}]}),
            TypeSet::ARRAY,
        ),
        (json!({"type": "number", "enum": [1, 2.5, "x"]}), num),
        (
            json!({"$ref": "#/$defs/a", "$defs": {"a": {"type": "array"}}}),
            TypeSet::ARRAY,
        ),
        (json!({"type": "string", "enum": [1]}), TypeSet::EMPTY),
    ];
    for (schema, want) in cases {
        assert_eq!(root(schema.clone()), AnswerRoot::Values(want), "{schema}");
    }
    // A `$ref` cycle stops after a few hops instead of looping.
    assert_eq!(root(json!({"$ref": "#"})), AnswerRoot::Any);
}

#[test]
fn integers_and_numbers_are_told_apart() {
    assert!(TypeSet::INTEGER.admits(&json!(3)));
    assert!(TypeSet::INTEGER.admits(&json!(3.0)));
    assert!(!TypeSet::INTEGER.admits(&json!(3.5)));
    assert!(TypeSet::from_name("number").unwrap().admits(&json!(3.5)));
    assert!(!TypeSet::STRING.admits(&json!(null)));
    assert_eq!(AnswerRoot::Values(TypeSet::ARRAY).describe(), "JSON array");
    assert_eq!(
        AnswerRoot::Values(TypeSet::STRING.union(TypeSet::NULL)).describe(),
        "JSON value (null or string)"
    );
    assert_eq!(AnswerRoot::Object.describe(), "JSON object");
}

#[test]
fn wrapping_keeps_refs_resolving_and_unwrapping_undoes_it() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "array",
        "items": {"anyOf": [{"$ref": "#/$defs/leaf"}, {"$ref": "#"}]},
        "$defs": {"leaf": {"type": "integer"}, "again": {"$ref": "#/items"}}
    });
    let wrapped = wrap_root(&schema);
    assert_eq!(wrapped["type"], "object");
    assert_eq!(wrapped["required"], json!(["value"]));
    assert_eq!(wrapped["additionalProperties"], false);
    assert_eq!(wrapped["$schema"], schema["$schema"]);
    assert_eq!(wrapped["$defs"]["leaf"], json!({"type": "integer"}));
    assert_eq!(
        wrapped["$defs"]["again"]["$ref"],
        "#/properties/value/items"
    );
    let inner = &wrapped["properties"]["value"];
    assert!(inner.get("$defs").is_none() && inner.get("$schema").is_none());
    assert_eq!(inner["items"]["anyOf"][0]["$ref"], "#/$defs/leaf");
    assert_eq!(inner["items"]["anyOf"][1]["$ref"], "#/properties/value");
    // The wrapped schema accepts exactly the wrapped answers of the original.
    let original = jsonschema::validator_for(&schema).unwrap();
    let wire = jsonschema::validator_for(&wrapped).unwrap();
    for answer in [json!([1, [2, [3]]]), json!([1, "x"]), json!("x"), json!([])] {
        let wrapped_answer = json!({"value": answer.clone()});
        assert_eq!(
            original.is_valid(&answer),
            wire.is_valid(&wrapped_answer),
            "{answer}"
        );
        assert_eq!(unwrap_root(wrapped_answer), Some(answer));
    }
    assert_eq!(unwrap_root(json!({"value": 1, "other": 2})), None);
    assert_eq!(unwrap_root(json!([1])), None);
    assert_eq!(unwrap_root(json!({"valeur": 1})), None);
}
