//! One test per row of the module table, the limits, and the round trip through the strict plan.

use super::*;
use crate::schema::ResponseSchema;
use crate::schema::strict::check_strict;
use crate::schema::subset::openai_strict;
use crate::schema::validate::CompiledSchema;
use crate::vocab::StructuredOutputMode;
use serde_json::json;

fn rewritten(mut schema: Value) -> (Value, NullPlan, Vec<Transform>) {
    let mut transforms = Vec::new();
    let plan = require_optionals(&mut schema, &mut transforms);
    (schema, plan, transforms)
}

/// The OpenAI strict plan of `caller`, which must be strict.
fn strict_plan(caller: &ResponseSchema) -> crate::schema::subset::WirePlan {
    let plan = openai_strict(caller);
    let why = &plan.weaker_because;
    assert_eq!(plan.mode, StructuredOutputMode::Strict, "{why:?}");
    plan
}

/// A node dropping `keys`, with edges `properties` and `items`.
fn node(keys: &[&str], properties: &[(&str, usize)], items: Option<usize>) -> NullNode {
    NullNode {
        drop_if_null: keys.iter().map(|k| (*k).to_owned()).collect(),
        properties: properties
            .iter()
            .map(|(k, n)| ((*k).to_owned(), *n))
            .collect(),
        items,
    }
}

fn null_plan(nodes: Vec<NullNode>) -> NullPlan {
    NullPlan { nodes }
}

#[test]
fn row_an_optional_property_becomes_required_and_nullable() {
    let (wire, paths, transforms) = rewritten(json!({"type": "object",
        "properties": {
            "a": {"type": "string"},
            "b": {"type": "integer"},
            "c": {"type": "string", "enum": ["x", "y"]},
            "d": {"$ref": "#/$defs/D"},
            "e": {"const": 1},
            "f": {"type": ["number", "null"]}
        },
        "required": ["a"], "additionalProperties": false}));
    assert_eq!(wire["required"], json!(["a", "b", "c", "d", "e", "f"]));
    let props = &wire["properties"];
    assert_eq!(props["a"], json!({"type": "string"}), "required: unchanged");
    assert_eq!(props["b"], json!({"type": ["integer", "null"]}));
    assert_eq!(
        props["c"],
        json!({"type": ["string", "null"], "enum": ["x", "y", null]})
    );
    assert_eq!(
        props["d"],
        json!({"anyOf": [{"$ref": "#/$defs/D"}, {"type": "null"}]})
    );
    assert_eq!(
        props["e"],
        json!({"anyOf": [{"const": 1}, {"type": "null"}]})
    );
    assert_eq!(
        props["f"],
        json!({"type": ["number", "null"]}),
        "already nullable"
    );
    // `d`'s `$ref` does not resolve: made nullable, and no node under it.
    assert_eq!(
        paths,
        null_plan(vec![node(&["b", "c", "d", "e", "f"], &[], None)])
    );
    assert_eq!(transforms.len(), 5);
    assert_eq!(transforms[0].pointer, "/properties/b");
    assert!(
        transforms[0].action.contains("required and nullable"),
        "{transforms:?}"
    );
}

#[test]
fn row_an_open_object_is_closed_and_a_map_is_left_to_the_strict_check() {
    let (wire, paths, transforms) = rewritten(json!({"type": "object",
        "properties": {"a": {"type": "string"}}, "required": ["a"]}));
    assert_eq!(wire["additionalProperties"], json!(false));
    assert!(paths.is_empty());
    assert_eq!(transforms.len(), 1);
    assert_eq!(transforms[0].pointer, "");
    let map = json!({"type": "object", "properties": {"a": {"type": "string"}},
        "required": ["a"], "additionalProperties": {"type": "integer"}});
    let (wire, _, transforms) = rewritten(map.clone());
    assert_eq!(wire, map, "a map's value schema is not thrown away");
    assert!(transforms.is_empty());
    assert!(!check_strict(&wire).compatible);
}

#[test]
fn nested_objects_are_reached_through_properties_and_items_not_an_any_of_beside_them() {
    let (wire, paths, _) = rewritten(json!({"type": "object",
        "properties": {"list": {"type": "array", "items": {"type": "object",
            "properties": {"x": {"type": "integer"}, "y": {"type": "string"}},
            "required": ["x"]}}},
        "required": ["list"],
        "anyOf": [{"type": "object", "properties": {"z": {"type": "string"}}}]}));
    let want = null_plan(vec![
        node(&[], &[("list", 1)], None),
        node(&[], &[], Some(2)),
        node(&["y"], &[], None),
    ]);
    assert_eq!(paths, want);
    assert_eq!(
        wire["properties"]["list"]["items"]["required"],
        json!(["x", "y"])
    );
    // Under anyOf nothing changes: the strict check names it and the plan falls back to a hint.
    assert_eq!(wire["anyOf"][0].get("additionalProperties"), None);
    assert!(!check_strict(&wire).compatible);
}

#[test]
fn the_rewrite_stops_at_its_depth_limit() {
    let mut schema = json!({"type": "object", "properties": {"leaf": {"type": "string"}}});
    for _ in 0..MAX_DEPTH + 5 {
        schema = json!({"type": "object", "properties": {"n": schema}, "required": ["n"]});
    }
    let (wire, paths, _) = rewritten(schema);
    assert!(
        paths.is_empty(),
        "the optional leaf is deeper than the limit"
    );
    assert!(!check_strict(&wire).compatible);
}

#[test]
fn absent_nulls_removes_only_nulls_where_the_plan_says() {
    let paths = null_plan(vec![
        node(&["b"], &[("list", 1), ("missing", 3)], None),
        node(&[], &[], Some(2)),
        node(&["y"], &[], None),
        node(&["q"], &[], None),
    ]);
    let mut answer = json!({"a": null, "b": null,
        "list": [{"x": 1, "y": null}, {"x": 2, "y": "kept"}, 3, {"x": 4}],
        "missing": "not an object"});
    absent_nulls(&mut answer, &paths);
    assert_eq!(
        answer,
        json!({"a": null, "list": [{"x": 1}, {"x": 2, "y": "kept"}, 3, {"x": 4}],
               "missing": "not an object"})
    );
    let mut scalar = json!(5);
    absent_nulls(&mut scalar, &paths);
    assert_eq!(scalar, json!(5));
}

#[test]
fn a_schema_with_optional_properties_goes_strict_and_its_answer_validates_as_the_callers() {
    let caller = ResponseSchema::from_value(json!({"type": "object",
        "properties": {"title": {"type": "string"}, "pages": {"type": "integer", "minimum": 1},
                       "tags": {"type": "array", "items": {"type": "object",
                           "properties": {"name": {"type": "string"}, "weight": {"type": "number"}},
                           "required": ["name"]}}},
        "required": ["title"]}))
    .unwrap();
    let plan = strict_plan(&caller);
    let wire = plan.wire.clone().unwrap();
    assert!(check_strict(&wire).compatible);
    // What a strict model answers: every key, null for what it leaves out.
    let mut answer = json!({"title": "T", "pages": null,
        "tags": [{"name": "n", "weight": null}, {"name": "m", "weight": 0.5}]});
    let wire_schema = CompiledSchema::compile(&ResponseSchema::from_value(wire).unwrap()).unwrap();
    assert!(
        wire_schema.validate(&answer).is_empty(),
        "valid on the wire"
    );
    let callers = CompiledSchema::compile(&caller).unwrap();
    assert!(
        !callers.validate(&answer).is_empty(),
        "null is not an integer for the caller"
    );
    absent_nulls(&mut answer, &plan.absent_nulls);
    assert!(callers.validate(&answer).is_empty(), "{answer}");
    assert_eq!(
        answer,
        json!({"title": "T", "tags": [{"name": "n"}, {"name": "m", "weight": 0.5}]})
    );
}

#[test]
fn an_array_root_keeps_its_paths_relative_to_the_callers_root() {
    let caller = ResponseSchema::from_value(json!({"type": "array", "items": {"type": "object",
        "properties": {"id": {"type": "integer"}, "note": {"type": "string"}},
        "required": ["id"]}}))
    .unwrap();
    let plan = strict_plan(&caller);
    assert!(plan.wrapped);
    let want = null_plan(vec![node(&[], &[], Some(1)), node(&["note"], &[], None)]);
    assert_eq!(plan.absent_nulls, want);
}

mod refs;
