//! The rewrite through local `$ref`s: `$defs`, `definitions`, `#`, recursion, and what is left
//! alone.

use super::*;

/// The caller's schema, its strict plan's wire copy (checked strict), and the plan.
fn strict_wire(caller: &Value) -> (ResponseSchema, Value, crate::schema::subset::WirePlan) {
    let caller = ResponseSchema::from_value(caller.clone()).unwrap();
    let plan = strict_plan(&caller);
    let wire = plan.wire.clone().unwrap();
    let verdict = check_strict(&wire);
    assert!(verdict.compatible, "{:?}", verdict.reasons);
    (caller, wire, plan)
}

/// `answer` is invalid for `caller` as the model gives it, and valid once its nulls are read as
/// left out; returns it read.
fn read_back(caller: &ResponseSchema, plan: &NullPlan, mut answer: Value) -> Value {
    let callers = CompiledSchema::compile(caller).unwrap();
    assert!(
        !callers.validate(&answer).is_empty(),
        "null is invalid as given"
    );
    absent_nulls(&mut answer, plan);
    assert!(callers.validate(&answer).is_empty(), "{answer}");
    answer
}

fn has_transform(transforms: &[Transform], pointer: &str, action: &str) -> usize {
    transforms
        .iter()
        .filter(|t| t.pointer == pointer && t.action.contains(action))
        .count()
}

/// What pydantic v2 emits for `Person(name: str, address: Address)` with
/// `Address(street: str, floor: int = 0, zip: str | None = None)`.
fn pydantic_person() -> Value {
    json!({
        "$defs": {"Address": {
            "properties": {
                "street": {"title": "Street", "type": "string"},
                "floor": {"default": 0, "title": "Floor", "type": "integer"},
                "zip": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null,
                        "title": "Zip"}},
            "required": ["street"], "title": "Address", "type": "object"}},
        "properties": {
            "name": {"title": "Name", "type": "string"},
            "address": {"$ref": "#/$defs/Address", "description": "Where they live"}},
        "required": ["name", "address"], "title": "Person", "type": "object"})
}

#[test]
fn a_pydantic_def_is_rewritten_in_place_and_its_nulls_are_read_as_left_out() {
    let (caller, wire, plan) = strict_wire(&pydantic_person());
    let address = &wire["$defs"]["Address"];
    assert_eq!(address["required"], json!(["street", "floor", "zip"]));
    assert_eq!(address["additionalProperties"], json!(false));
    assert_eq!(
        address["properties"]["floor"]["type"],
        json!(["integer", "null"])
    );
    assert_eq!(
        address["properties"]["zip"]["anyOf"],
        json!([{"type": "string"}, {"type": "null"}]),
        "already nullable: not wrapped again"
    );
    assert_eq!(wire["properties"]["address"]["$ref"], "#/$defs/Address");
    let t = &plan.transforms;
    assert_eq!(
        has_transform(
            t,
            "/$defs/Address/properties/floor",
            "required and nullable"
        ),
        1
    );
    assert_eq!(
        has_transform(t, "/$defs/Address", "additionalProperties: false"),
        1
    );
    let answer = json!({"name": "N", "address": {"street": "S", "floor": null, "zip": null}});
    let read = read_back(&caller, &plan.absent_nulls, answer);
    assert_eq!(read, json!({"name": "N", "address": {"street": "S"}}));
}

#[test]
fn a_recursive_model_is_one_node_and_nulls_at_every_level_are_removed() {
    let caller = json!({"type": "object", "properties": {"head": {"$ref": "#/$defs/Node"}},
        "required": ["head"],
        "$defs": {"Node": {"type": "object",
            "properties": {"next": {"$ref": "#/$defs/Node"}, "v": {"type": "integer"},
                           "label": {"type": "string"}},
            "required": ["v"]}}});
    let (caller, wire, plan) = strict_wire(&caller);
    assert_eq!(
        wire["$defs"]["Node"]["required"],
        json!(["v", "next", "label"])
    );
    let t = &plan.transforms;
    assert_eq!(
        has_transform(t, "/$defs/Node/properties/next", "required and nullable"),
        1
    );
    assert_eq!(
        t.len(),
        4,
        "the root and Node closed, Node's two optionals, once: {t:?}"
    );
    assert_eq!(
        plan.absent_nulls,
        null_plan(vec![
            node(&[], &[("head", 1)], None),
            node(&["next", "label"], &[("next", 1)], None),
        ])
    );
    let answer = json!({"head": {"v": 1, "label": null, "next": {"v": 2, "label": null,
        "next": {"v": 3, "label": null, "next": null}}}});
    let read = read_back(&caller, &plan.absent_nulls, answer);
    assert_eq!(
        read,
        json!({"head": {"v": 1, "next": {"v": 2, "next": {"v": 3}}}})
    );
}

#[test]
fn a_def_used_in_two_places_is_rewritten_once_and_read_back_in_both() {
    let caller = json!({"type": "object",
        "properties": {"main": {"$ref": "#/$defs/P"},
                       "others": {"type": "array", "items": {"$ref": "#/$defs/P"}},
                       "spare": {"anyOf": [{"$ref": "#/$defs/P"}, {"type": "null"}]}},
        "required": ["main", "others", "spare"],
        "$defs": {"P": {"type": "object", "properties": {"id": {"type": "integer"},
            "note": {"type": "string"}}, "required": ["id"]}}});
    let (caller, _, plan) = strict_wire(&caller);
    let t = &plan.transforms;
    assert_eq!(
        has_transform(t, "/$defs/P/properties/note", "required and nullable"),
        1
    );
    let nodes = &plan.absent_nulls.nodes;
    let p = nodes[0].properties["main"];
    assert_eq!(
        nodes[0].properties["spare"], p,
        "through the null-or-P anyOf"
    );
    assert_eq!(nodes[nodes[0].properties["others"]].items, Some(p));
    let answer = json!({"main": {"id": 1, "note": null}, "spare": null,
        "others": [{"id": 2, "note": null}, {"id": 3, "note": "kept"}]});
    let read = read_back(&caller, &plan.absent_nulls, answer);
    assert_eq!(
        read,
        json!({"main": {"id": 1}, "spare": null,
               "others": [{"id": 2}, {"id": 3, "note": "kept"}]})
    );
}

#[test]
fn draft_07_definitions_are_followed_too() {
    let caller = json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
        "properties": {"p": {"$ref": "#/definitions/P"}}, "required": ["p"],
        "definitions": {"P": {"type": "object", "properties": {"x": {"type": "string"}}}}});
    let (caller, wire, plan) = strict_wire(&caller);
    assert_eq!(wire["definitions"]["P"]["required"], json!(["x"]));
    let t = &plan.transforms;
    assert_eq!(
        has_transform(t, "/definitions/P/properties/x", "required and nullable"),
        1
    );
    let read = read_back(&caller, &plan.absent_nulls, json!({"p": {"x": null}}));
    assert_eq!(read, json!({"p": {}}));
}

#[test]
fn a_self_reference_to_the_root_is_a_cycle_through_node_0() {
    let caller = json!({"type": "object", "properties": {"name": {"type": "string"},
        "child": {"$ref": "#"}}, "required": ["name"]});
    let (caller, wire, plan) = strict_wire(&caller);
    assert_eq!(
        wire["properties"]["child"],
        json!({"anyOf": [{"$ref": "#"}, {"type": "null"}]})
    );
    assert_eq!(
        plan.absent_nulls,
        null_plan(vec![node(&["child"], &[("child", 0)], None)])
    );
    let answer =
        json!({"name": "a", "child": {"name": "b", "child": {"name": "c", "child": null}}});
    let read = read_back(&caller, &plan.absent_nulls, answer);
    assert_eq!(
        read,
        json!({"name": "a", "child": {"name": "b", "child": {"name": "c"}}})
    );
}

#[test]
fn a_ref_that_does_not_resolve_or_is_not_an_object_or_loops_is_left_alone() {
    let defs = json!({"S": {"type": "string"}, "T": true, "A": {"$ref": "#/$defs/B"},
        "B": {"$ref": "#/$defs/A"}, "L": [1, 2]});
    let props = json!({"missing": {"$ref": "#/$defs/Missing"}, "s": {"$ref": "#/$defs/S"},
        "t": {"$ref": "#/$defs/T"}, "loop": {"$ref": "#/$defs/A"},
        "list": {"$ref": "#/$defs/L"}, "remote": {"$ref": "https://example.com/s.json"},
        "anchor": {"$ref": "#name"}, "bad_escape": {"$ref": "#/%zz"}});
    let keys: Vec<&str> = props
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let schema = json!({"type": "object", "properties": props.clone(), "required": keys,
        "additionalProperties": false, "$defs": defs});
    let (wire, plan, transforms) = rewritten(schema.clone());
    assert_eq!(wire, schema);
    assert!(plan.is_empty());
    assert!(transforms.is_empty());
    assert!(
        !check_strict(&wire).compatible,
        "the strict check names them"
    );
}

#[test]
fn a_target_also_used_by_a_ref_that_is_not_followed_turns_ref_following_off() {
    // `other` is an anyOf of two objects: not followed, so `P` must keep its caller's meaning.
    let caller = json!({"type": "object",
        "properties": {"main": {"$ref": "#/$defs/P"},
                       "other": {"anyOf": [{"$ref": "#/$defs/P"}, {"type": "integer"}]}},
        "required": ["main", "other"],
        "$defs": {"P": {"type": "object", "properties": {"id": {"type": "integer"},
            "note": {"type": "string"}}, "required": ["id"]}}});
    let (wire, plan, _) = rewritten(caller.clone());
    assert_eq!(wire["$defs"], caller["$defs"], "P is not rewritten");
    assert!(plan.is_empty());
    let caller = ResponseSchema::from_value(caller).unwrap();
    assert_eq!(openai_strict(&caller).mode, StructuredOutputMode::Hint);
    // Without the second use, `P` is followed.
    let (wire, _, _) = rewritten(json!({"type": "object",
        "properties": {"main": {"$ref": "#/$defs/P"}}, "required": ["main"],
        "$defs": {"P": {"type": "object", "properties": {"note": {"type": "string"}}}}}));
    assert_eq!(wire["$defs"]["P"]["required"], json!(["note"]));
}

#[test]
fn a_ref_beside_constraints_is_not_followed() {
    let (wire, plan, _) = rewritten(json!({"type": "object",
        "properties": {"p": {"$ref": "#/$defs/P", "required": ["note"]}}, "required": ["p"],
        "$defs": {"P": {"type": "object", "properties": {"note": {"type": "string"}}}}}));
    assert_eq!(wire["$defs"]["P"].get("required"), None);
    assert!(plan.is_empty());
}

#[test]
fn a_hostile_schema_ends_without_touching_the_call_stack() {
    // 300 nested null-or-X anyOfs, and a def 300 `items` deep that refers to itself (far past
    // both limits; deeper would overflow the test's own recursive clone and drop of the value).
    let mut chain = json!({"type": "object", "properties": {"x": {"type": "string"}}});
    let mut deep = json!({"$ref": "#/$defs/Deep"});
    for _ in 0..300 {
        chain = json!({"anyOf": [chain, {"type": "null"}]});
        deep = json!({"type": "array", "items": deep});
    }
    let schema = json!({"type": "object", "additionalProperties": false,
        "properties": {"chain": chain, "deep": {"$ref": "#/$defs/Deep"}},
        "required": ["chain", "deep"], "$defs": {"Deep": deep}});
    let (wire, plan, transforms) = rewritten(schema.clone());
    assert_eq!(wire, schema, "nothing optional within reach");
    assert!(plan.is_empty());
    assert!(transforms.is_empty());
}

#[test]
fn a_ref_at_the_depth_limit_still_links_to_a_def_rewritten_nearer_the_root() {
    let mut chain = json!({"$ref": "#/$defs/P"});
    let mut answer = json!({"note": null});
    for _ in 1..MAX_DEPTH {
        chain = json!({"type": "object", "properties": {"n": chain}, "required": ["n"],
            "additionalProperties": false});
        answer = json!({"n": answer});
    }
    let schema = json!({"type": "object", "properties": {"p": {"$ref": "#/$defs/P"}, "n": chain},
        "required": ["p", "n"], "additionalProperties": false,
        "$defs": {"P": {"type": "object", "properties": {"note": {"type": "string"}}}}});
    let (wire, plan, _) = rewritten(schema);
    assert_eq!(wire["$defs"]["P"]["required"], json!(["note"]));
    let mut answer = json!({"p": {"note": null}, "n": answer});
    absent_nulls(&mut answer, &plan);
    let mut deepest = &answer["n"];
    for _ in 1..MAX_DEPTH {
        deepest = &deepest["n"];
    }
    assert_eq!(deepest, &json!({}), "{answer}");
    assert_eq!(answer["p"], json!({}));
}
