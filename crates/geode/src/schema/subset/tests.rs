//! One test per row of the subset tables in `subset.rs`.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::schema::root::unwrap_root;
use crate::schema::validate::CompiledSchema;
use serde_json::json;

fn schema(v: Value) -> ResponseSchema {
    ResponseSchema::from_value(v).unwrap()
}

fn strict_object(props: Value) -> Value {
    let keys: Vec<String> = props.as_object().unwrap().keys().cloned().collect();
    json!({"type": "object", "properties": props, "required": keys, "additionalProperties": false})
}

/// The OpenAI plan of `s`, which must be `strict`.
fn strict_plan(s: &ResponseSchema) -> WirePlan {
    let plan = openai_strict(s);
    assert_eq!(plan.mode, StructuredOutputMode::Strict, "{plan:?}");
    plan
}

fn actions(plan: &WirePlan) -> Vec<String> {
    plan.transforms.iter().map(|t| t.action.clone()).collect()
}

#[test]
fn openai_a_schema_inside_the_subset_goes_strict_and_unchanged() {
    let s = schema(strict_object(
        json!({"a": {"type": "string", "format": "uuid"}}),
    ));
    let plan = strict_plan(&s);
    assert_eq!(plan.wire.as_ref(), Some(s.as_value()));
    assert!(!plan.wrapped && plan.transforms.is_empty() && plan.weaker_because.is_empty());
}

#[test]
fn openai_root_not_an_object_is_wrapped_and_strict() {
    for root in [
        json!({"type": "array", "items": {"type": "integer"}}),
        json!({"type": "string"}),
        json!({"enum": ["a", "b"]}),
        json!({"type": ["integer", "null"]}),
        json!({"const": 3}),
    ] {
        let plan = strict_plan(&schema(root.clone()));
        assert!(plan.wrapped, "{root}");
        let wire = plan.wire.as_ref().unwrap();
        assert_eq!(wire["properties"]["value"], root);
        assert_eq!(wire["required"], json!(["value"]));
        assert_eq!(wire["additionalProperties"], false);
        assert!(
            actions(&plan)[0].starts_with("wrapped the root"),
            "{plan:?}"
        );
    }
}

#[test]
fn openai_an_anyof_root_is_wrapped_and_refs_still_resolve() {
    let root = json!({
        "anyOf": [{"$ref": "#/$defs/n"}, {"type": "array", "items": {"$ref": "#"}}],
        "$defs": {"n": {"type": "integer"}}
    });
    let plan = strict_plan(&schema(root));
    let wire = plan.wire.unwrap();
    assert_eq!(wire["$defs"]["n"]["type"], "integer");
    assert_eq!(
        wire["properties"]["value"]["anyOf"][1]["items"]["$ref"],
        "#/properties/value"
    );
    // The wire copy compiles, and accepts exactly the wrapped answers of the original.
    let compiled = CompiledSchema::compile(&schema(wire)).unwrap();
    assert!(compiled.is_valid(&json!({"value": [3, [4]]})));
    assert!(!compiled.is_valid(&json!({"value": "x"})));
}

#[test]
fn openai_a_typeless_object_root_gets_type_object() {
    let s = schema(
        json!({"properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": false}),
    );
    let plan = strict_plan(&s);
    assert!(!plan.wrapped);
    assert_eq!(plan.wire.as_ref().unwrap()["type"], "object");
    assert!(actions(&plan)[0].starts_with("added type object at the root"));
}

#[test]
fn openai_unsupported_composition_keywords_are_removed_and_checked_locally() {
    let s = schema(strict_object(json!({
        "n": {"type": "integer", "not": {"const": 3}, "allOf": [{"minimum": 0}]},
        "s": {"type": "string", "if": {"const": "a"}, "then": {}, "else": {}}
    })));
    let plan = strict_plan(&s);
    let wire = plan.wire.as_ref().unwrap();
    for (ptr, k) in [
        ("/properties/n", "not"),
        ("/properties/n", "allOf"),
        ("/properties/s", "if"),
        ("/properties/s", "then"),
        ("/properties/s", "else"),
    ] {
        assert!(wire.pointer(ptr).unwrap().get(k).is_none(), "{ptr} {k}");
        assert!(
            plan.residuals
                .iter()
                .any(|r| r.pointer == ptr && r.keyword == k),
            "{ptr} {k}: {:?}",
            plan.residuals
        );
    }
    assert_eq!(plan.transforms.len(), 5);
    // The caller's schema is untouched.
    assert!(s.as_value()["properties"]["n"].get("not").is_some());
}

#[test]
fn openai_a_format_outside_the_list_is_removed_and_checked_locally() {
    let s = schema(strict_object(json!({
        "u": {"type": "string", "format": "uri"},
        "d": {"type": "string", "format": "date"}
    })));
    let plan = openai_strict(&s);
    let wire = plan.wire.as_ref().unwrap();
    assert!(wire["properties"]["u"].get("format").is_none());
    assert_eq!(wire["properties"]["d"]["format"], "date");
    assert_eq!(plan.residuals.len(), 1);
    assert_eq!(plan.residuals[0].pointer, "/properties/u");
}

#[test]
fn openai_default_is_removed_as_an_annotation() {
    let s = schema(strict_object(
        json!({"a": {"type": "string", "default": "x"}}),
    ));
    let plan = strict_plan(&s);
    assert!(
        plan.wire.as_ref().unwrap()["properties"]["a"]
            .get("default")
            .is_none()
    );
    assert!(plan.residuals.is_empty());
    assert!(actions(&plan)[0].contains("an annotation, nothing to check"));
}

#[test]
fn openai_objects_outside_the_strict_rules_go_as_a_hint_with_the_reasons() {
    // A map (`additionalProperties` a schema) cannot be closed without losing its entries.
    let s = schema(
        json!({"type": "object", "properties": {"a": {"type": "string", "default": "x"}},
        "additionalProperties": {"type": "string"}}),
    );
    let plan = openai_strict(&s);
    assert_eq!(plan.mode, StructuredOutputMode::Hint);
    // The caller's schema, not the stripped copy: a hint claims nothing.
    assert_eq!(plan.wire.as_ref(), Some(s.as_value()));
    assert!(plan.transforms.is_empty() && plan.residuals.is_empty());
    assert!(
        plan.weaker_because
            .iter()
            .any(|w| w.contains("additionalProperties must be false")),
        "{plan:?}"
    );
    // A non-object root outside the rules is still wrapped: OpenAI takes no other root.
    let arr = schema(json!({"type": "array", "items": {"type": "object"}}));
    let plan = openai_strict(&arr);
    assert_eq!(plan.mode, StructuredOutputMode::Hint);
    assert!(plan.wrapped);
}

#[test]
fn anthropic_tool_root_rules() {
    let mode = StructuredOutputMode::Tool;
    let typed = schema(json!({"type": "object", "properties": {}}));
    let plan = object_root(&typed, &ANTHROPIC_TOOL, mode);
    assert!(!plan.wrapped && plan.transforms.is_empty());
    let typeless = schema(json!({"properties": {"a": {}}}));
    let plan = object_root(&typeless, &ANTHROPIC_TOOL, mode);
    assert!(!plan.wrapped);
    assert_eq!(plan.wire.as_ref().unwrap()["type"], "object");
    let array = schema(json!({"type": "array"}));
    let plan = object_root(&array, &ANTHROPIC_TOOL, mode);
    assert!(plan.wrapped);
    assert_eq!(plan.mode, mode);
}

#[test]
fn glm_json_object_wraps_only_roots_that_admit_no_object() {
    let mode = StructuredOutputMode::JsonMode;
    for (root, wrapped) in [
        (json!({"type": "array"}), true),
        (json!({"enum": ["a"]}), true),
        (json!({"type": "object"}), false),
        (json!({"required": ["a"]}), false),
        (
            json!({"anyOf": [{"type": "object"}, {"type": "object"}]}),
            false,
        ),
    ] {
        let plan = object_root(&schema(root.clone()), &JSON_OBJECT, mode);
        assert_eq!(plan.wrapped, wrapped, "{root}");
        assert_eq!(plan.transforms.len(), usize::from(wrapped), "{root}");
        if !wrapped {
            assert_eq!(plan.wire, Some(root));
        }
    }
}

#[test]
fn a_wrapped_answer_unwraps_to_a_valid_answer_of_the_callers_schema() {
    let caller = schema(json!({"type": "array", "items": {"type": "integer"}}));
    let plan = openai_strict(&caller);
    let wire = CompiledSchema::compile(&schema(plan.wire.unwrap())).unwrap();
    let answer = json!({"value": [1, 2, 3]});
    assert!(wire.is_valid(&answer));
    let inner = unwrap_root(answer).unwrap();
    assert!(CompiledSchema::compile(&caller).unwrap().is_valid(&inner));
}

#[test]
fn every_table_names_its_source_and_date() {
    for s in SUBSETS {
        assert!(s.source.starts_with("https://"), "{}", s.name);
        assert_eq!(s.read_on.len(), 10, "{}", s.name);
        // Some adapter's schema route fits schemas into it.
        assert!(
            crate::llm::registry::ADAPTERS
                .iter()
                .any(|a| a.schema_route.subsets().contains(&s)),
            "{}",
            s.name
        );
    }
}

#[test]
fn openai_limits_are_counted_on_the_wrapped_copy() {
    use crate::schema::preflight::openai_strict_limits;
    // Ten levels of objects under an array root: eleven once wrapped, past OpenAI's ten.
    let mut inner = json!({"type": "string"});
    for _ in 0..10 {
        inner = strict_object(json!({ "x": inner }));
    }
    let array = schema(json!({"type": "array", "items": inner.clone()}));
    let err = openai_strict_limits(&array).unwrap_err();
    assert_eq!((err[0].found, err[0].max), (11, 10), "{err:?}");
    assert!(openai_strict_limits(&schema(inner)).is_ok());
}

#[test]
fn openai_strict_sends_a_root_of_any_type_as_a_hint() {
    for open in [
        json!({}),
        json!({"uniqueItems": true}),
        json!({"format": "email"}),
    ] {
        let plan = openai_strict(&schema(open.clone()));
        assert_eq!(plan.mode, StructuredOutputMode::Hint, "{open}");
        assert!(
            plan.weaker_because[0].contains("constrains no type"),
            "{open}: {:?}",
            plan.weaker_because
        );
    }
    // An open root that object keywords describe is planned as an object.
    let described = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    assert_eq!(
        openai_strict(&schema(described)).mode,
        StructuredOutputMode::Strict
    );
    let plan = openai_strict(&schema(json!({"required": ["a"]})));
    assert!(
        plan.weaker_because
            .iter()
            .all(|r| !r.contains("constrains no type")),
        "{:?}",
        plan.weaker_because
    );
}
