//! Tests for the strict check: every row of GEODE's edge-case table for its strict rule
//! (docs/reference.md#the-strict-compatibility-rule) against both predicates.

use super::*;
use serde_json::json;

/// Asserts GEODE's predicate and `check_strict` on one schema.
fn both(schema: Value, reference: bool, ours: bool) -> StrictVerdict {
    assert_eq!(
        is_reference_strict(&schema),
        reference,
        "reference predicate on {schema}"
    );
    let verdict = check_strict(&schema);
    assert_eq!(
        verdict.compatible, ours,
        "check_strict on {schema}: {:?}",
        verdict.reasons
    );
    assert_eq!(verdict.compatible, verdict.reasons.is_empty());
    // The first walk, which records nothing and stops at the first broken rule, decides alike.
    for server_rules in [false, true] {
        let quick = walk(&schema, server_rules, false);
        let full = walk(&schema, server_rules, true);
        assert_eq!(quick.compatible, full.compatible, "{schema} {server_rules}");
        assert!(quick.reasons.is_empty());
        // Read from the text as a tape, the walk gives the same verdict, reasons included.
        let text = schema.to_string();
        let tape = Tape::parse(&text).unwrap();
        assert_eq!(
            walk(tape.root(), server_rules, true),
            full,
            "tape: {schema}"
        );
    }
    for text in [
        schema.to_string(),
        serde_json::to_string_pretty(&schema).unwrap(),
    ] {
        assert_eq!(check_strict_text(&text).unwrap(), verdict, "text: {text}");
    }
    verdict
}

fn rules(v: &StrictVerdict) -> Vec<(&str, &StrictRule)> {
    v.reasons
        .iter()
        .map(|r| (r.pointer.as_str(), &r.rule))
        .collect()
}

// ---- §3 table, row by row ----

#[test]
fn table_empty_properties_with_additional_false_is_strict() {
    both(
        json!({"type":"object","properties":{},"additionalProperties":false}),
        true,
        true,
    );
}

#[test]
fn table_no_properties_no_required_is_strict() {
    both(
        json!({"type":"object","additionalProperties":false}),
        true,
        true,
    );
}

#[test]
fn table_bare_object_is_not_strict() {
    let v = both(json!({"type":"object"}), false, false);
    assert_eq!(
        rules(&v),
        vec![("", &StrictRule::AdditionalPropertiesNotFalse)]
    );
}

#[test]
fn table_additional_properties_true_zero_or_schema_is_not_strict() {
    for ap in [json!(true), json!(0), json!({"type":"number"})] {
        let v = both(
            json!({"type":"object","additionalProperties":ap}),
            false,
            false,
        );
        assert_eq!(v.reasons[0].rule, StrictRule::AdditionalPropertiesNotFalse);
    }
}

#[test]
fn table_required_with_an_extra_name_is_not_strict() {
    let v = both(
        json!({"type":"object","properties":{"a":{}},"required":["a","b"],"additionalProperties":false}),
        false,
        false,
    );
    assert_eq!(
        rules(&v),
        vec![(
            "",
            &StrictRule::RequiredNotInProperties {
                keys: vec!["b".into()]
            }
        )]
    );
}

#[test]
fn table_required_with_duplicates_of_the_same_set_is_strict() {
    both(
        json!({"type":"object","properties":{"a":{}},"required":["a","a"],"additionalProperties":false}),
        true,
        true,
    );
}

#[test]
fn table_type_list_with_object_is_not_checked() {
    both(
        json!({"type":["object","null"],"properties":{"a":{"type":"string"}}}),
        true,
        true,
    );
}

#[test]
fn table_nullable_property_by_type_list_is_strict() {
    both(
        json!({"type":"object","properties":{"a":{"type":["string","null"]}},"required":["a"],"additionalProperties":false}),
        true,
        true,
    );
}

/// Differs on purpose: GEODE does not follow `$ref`, so it sends `strict:true` and the
/// server rejects the request (a gap in GEODE's code). `check_strict` follows the reference and
/// reports the broken target at its own pointer.
#[test]
fn table_ref_to_non_strict_object_differs_on_purpose_ref_is_followed() {
    let v = both(
        json!({
            "type":"object",
            "properties":{"x":{"$ref":"#/$defs/X"}},
            "required":["x"],
            "additionalProperties":false,
            "$defs":{"X":{"type":"object"}}
        }),
        true,
        false,
    );
    assert_eq!(
        rules(&v),
        vec![("/$defs/X", &StrictRule::AdditionalPropertiesNotFalse)]
    );
}

#[test]
fn table_tuple_form_items_is_not_inspected() {
    both(
        json!({"type":"array","items":[{"type":"object"}]}),
        true,
        true,
    );
}

#[test]
fn table_items_false_is_strict() {
    both(json!({"type":"array","items":false}), true, true);
}

#[test]
fn table_untyped_properties_are_not_checked() {
    both(json!({"properties":{"a":{"type":"object"}}}), true, true);
}

#[test]
fn table_any_of_with_a_bare_object_branch_is_not_strict() {
    let v = both(
        json!({"anyOf":[{"type":"object"},{"type":"null"}]}),
        false,
        false,
    );
    assert_eq!(
        rules(&v),
        vec![("/anyOf/0", &StrictRule::AdditionalPropertiesNotFalse)]
    );
}

#[test]
fn table_one_of_as_a_dict_is_ignored() {
    both(json!({"oneOf":{"type":"object"}}), true, true);
}

/// Differs on purpose: `check_strict` looks inside `not`, so a non-strict object there is reported.
#[test]
fn table_not_with_object_differs_on_purpose_not_is_inspected() {
    let v = both(json!({"not":{"type":"object"}}), true, false);
    assert_eq!(
        rules(&v),
        vec![("/not", &StrictRule::AdditionalPropertiesNotFalse)]
    );
}

/// Differs on purpose: `check_strict` looks inside `prefixItems` (the 2020-12 tuple form).
#[test]
fn table_prefix_items_with_non_strict_members_differs_on_purpose() {
    let v = both(
        json!({"type":"array","prefixItems":[{"type":"string"},{"type":"object"}]}),
        true,
        false,
    );
    assert_eq!(
        rules(&v),
        vec![("/prefixItems/1", &StrictRule::AdditionalPropertiesNotFalse)]
    );
}

#[test]
fn table_null_properties_with_additional_false_is_strict() {
    both(
        json!({"type":"object","properties":null,"additionalProperties":false}),
        true,
        true,
    );
}

#[test]
fn table_items_is_checked_regardless_of_type() {
    let v = both(
        json!({"type":"string","items":{"type":"object"}}),
        false,
        false,
    );
    assert_eq!(
        rules(&v),
        vec![("/items", &StrictRule::AdditionalPropertiesNotFalse)]
    );
}

#[test]
fn table_top_level_true_is_strict() {
    both(json!(true), true, true);
}

// ---- further deliberate differences ----

/// Differs on purpose: a schema-valued `additionalProperties` is inspected. On an untyped schema
/// GEODE never looks at it; `check_strict` reports the non-strict object inside.
#[test]
fn typed_additional_properties_differs_on_purpose_schema_is_inspected() {
    let v = both(
        json!({"additionalProperties":{"type":"object"}}),
        true,
        false,
    );
    assert_eq!(
        rules(&v),
        vec![(
            "/additionalProperties",
            &StrictRule::AdditionalPropertiesNotFalse
        )]
    );
    // On an object both fail; ours names the object and the map's value schema.
    let v = both(
        json!({"type":"object","additionalProperties":{"type":"object"}}),
        false,
        false,
    );
    assert_eq!(v.reasons.len(), 2);
}

/// Differs on purpose: an unresolvable or remote `$ref` is a reason (the server cannot use it).
#[test]
fn unresolved_and_remote_refs_are_reasons() {
    let v = both(json!({"$ref":"#/$defs/Missing"}), true, false);
    assert_eq!(
        rules(&v),
        vec![(
            "/$ref",
            &StrictRule::UnresolvedRef {
                reference: "#/$defs/Missing".into()
            }
        )]
    );
    let v = both(json!({"$ref":"https://example.com/s.json"}), true, false);
    assert!(matches!(v.reasons[0].rule, StrictRule::NonLocalRef { .. }));
}

#[test]
fn ref_cycles_are_followed_once() {
    let strict_node = json!({
        "type":"object",
        "properties":{"next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},
        "required":["next"],
        "additionalProperties":false
    });
    both(
        json!({"$ref":"#/$defs/node","$defs":{"node":strict_node}}),
        true,
        true,
    );
    both(json!({"$ref":"#"}), true, true);
    // a -> b -> a, with a broken object behind b: reported once.
    let v = both(
        json!({
            "$ref":"#/$defs/a",
            "$defs":{
                "a":{"anyOf":[{"$ref":"#/$defs/b"}]},
                "b":{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}}}
            }
        }),
        true,
        false,
    );
    assert_eq!(v.reasons.len(), 2, "{:?}", v.reasons);
    assert!(v.reasons.iter().all(|r| r.pointer == "/$defs/b"));
}

#[test]
fn definitions_and_escaped_pointers_resolve() {
    let v = both(
        json!({"$ref":"#/definitions/a~1b%20c","definitions":{"a/b c":{"type":"object"}}}),
        true,
        false,
    );
    assert_eq!(
        rules(&v),
        vec![(
            "/definitions/a~1b c",
            &StrictRule::AdditionalPropertiesNotFalse
        )]
    );
}

#[test]
fn optional_property_is_named_in_the_reason() {
    let v = both(
        json!({
            "type":"object",
            "properties":{"a":{"type":"string"},"b/c":{"type":"object"}},
            "required":["a"],
            "additionalProperties":false
        }),
        false,
        false,
    );
    assert_eq!(
        rules(&v),
        vec![
            (
                "",
                &StrictRule::PropertiesNotRequired {
                    keys: vec!["b/c".into()]
                }
            ),
            (
                "/properties/b~1c",
                &StrictRule::AdditionalPropertiesNotFalse
            ),
        ]
    );
}

#[test]
fn decision_schema_is_strict() {
    both(
        json!({
            "title":"Decision","type":"object",
            "properties":{"decision":{"type":"string","enum":["accept","reject"]},"reason":{"type":"string"}},
            "required":["decision","reason"],"additionalProperties":false
        }),
        true,
        true,
    );
}

#[test]
fn python_quirks_of_the_reference_predicate_are_kept() {
    // `set("a") == {"a"}`: a string `required` is a set of characters in Python.
    both(
        json!({"type":"object","properties":{"a":{}},"required":"a","additionalProperties":false}),
        true,
        false,
    );
    // A truthy non-dict `properties` makes Python raise: never strict.
    both(
        json!({"type":"object","properties":[1],"additionalProperties":false}),
        false,
        false,
    );
    // A falsy non-dict `properties` is `{}` in Python; ours asks for an object.
    let v = both(
        json!({"type":"object","properties":[],"additionalProperties":false}),
        true,
        false,
    );
    assert_eq!(rules(&v), vec![("", &StrictRule::PropertiesNotAnObject)]);
    // A non-string in `required` never equals a property name.
    let v = both(
        json!({"type":"object","properties":{"a":{}},"required":["a",1],"additionalProperties":false}),
        false,
        false,
    );
    assert_eq!(rules(&v), vec![("", &StrictRule::RequiredNotStrings)]);
}

#[test]
fn reasons_serialise_readably_and_display_names_the_rule() {
    let v = check_strict(&json!({"type":"object"}));
    assert_eq!(
        serde_json::to_value(&v).unwrap(),
        json!({"compatible":false,"reasons":[{"pointer":"","rule":{"kind":"additional_properties_not_false"}}]})
    );
    assert_eq!(
        v.reasons[0].to_string(),
        "/: additionalProperties must be false on an object"
    );
    let back: StrictVerdict = serde_json::from_value(serde_json::to_value(&v).unwrap()).unwrap();
    assert_eq!(back, v);
}

/// `{"type":"object","properties":{"a": … },"required":["a"],"additionalProperties":false}`
/// nested `depth` times around a string.
fn deep_schema(depth: usize) -> Value {
    crate::schema::fixtures::nested_properties(depth, json!({"type":"string"}), true)
}

/// Takes a deep value apart iteratively so dropping it does not recurse.
fn drop_iteratively(v: Value) {
    let mut stack = vec![v];
    while let Some(mut v) = stack.pop() {
        match &mut v {
            Value::Object(m) => stack.extend(std::mem::take(m).into_iter().map(|(_, v)| v)),
            Value::Array(a) => stack.append(a),
            _ => {}
        }
    }
}

#[test]
fn ten_thousand_levels_do_not_overflow_the_stack() {
    let deep = deep_schema(10_000);
    assert!(is_reference_strict(&deep));
    assert!(check_strict(&deep).compatible);
    drop_iteratively(deep);
    let mut broken = deep_schema(10_000);
    // Break the innermost object: found without recursion.
    let mut cur = &mut broken;
    for _ in 0..9_999 {
        cur = &mut cur["properties"]["a"];
    }
    cur["additionalProperties"] = json!(true);
    let v = check_strict(&broken);
    assert_eq!(v.reasons.len(), 1);
    assert_eq!(v.reasons[0].pointer.matches("/properties/a").count(), 9_999);
    assert!(!is_reference_strict(&broken));
    drop_iteratively(broken);
}

#[test]
fn openai_refuses_a_non_object_or_any_of_root_in_strict_mode() {
    for root in [
        json!({"type": "array", "items": {"type": "integer"}}),
        json!({"type": "string"}),
        json!({"anyOf": [{"type": "object", "properties": {}, "required": [],
            "additionalProperties": false}], "type": "object", "properties": {}, "required": [],
            "additionalProperties": false}),
    ] {
        assert!(
            check_strict(&root).compatible || root.get("anyOf").is_some(),
            "{root}"
        );
        let v = check_openai_wire(&root);
        assert!(!v.compatible, "{root}");
        assert!(
            v.reasons
                .iter()
                .any(|r| r.pointer.is_empty() && r.rule == StrictRule::RootNotObject),
            "{root}: {:?}",
            v.reasons
        );
    }
    let object = json!({"type": "object", "properties": {}, "required": [],
        "additionalProperties": false});
    assert!(check_openai_wire(&object).compatible);
}

#[test]
fn a_default_anywhere_is_refused_in_strict_mode() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer", "default": 3}},
        "required": ["n"], "additionalProperties": false});
    assert!(
        check_strict(&schema).compatible,
        "the contract's predicate ignores default"
    );
    let v = check_openai_wire(&schema);
    assert_eq!(v.reasons.len(), 1, "{:?}", v.reasons);
    assert_eq!(v.reasons[0].pointer, "/properties/n");
    assert_eq!(
        v.reasons[0].rule.to_string(),
        "default is not permitted in strict mode"
    );
}

#[test]
fn the_text_check_reads_escaped_and_repeated_keys_as_serde_json_does() {
    // `\u0061` is the property "a"; the repeated "required" keeps its last value.
    let text = r#"{"type":"object","additionalProperties":false,"properties":{"\u0061":{"type":"string"}},"required":[],"required":["a"]}"#;
    let value: Value = serde_json::from_str(text).unwrap();
    assert!(check_strict(&value).compatible);
    assert_eq!(check_strict_text(text).unwrap(), check_strict(&value));
    let broken = r#"{"type":"object","properties":{"a/b~":{"type":"object"}},"required":["a/b~"],"additionalProperties":false}"#;
    let verdict = check_strict_text(broken).unwrap();
    assert_eq!(verdict.reasons[0].pointer, "/properties/a~1b~0");
    assert_eq!(
        verdict,
        check_strict(&serde_json::from_str(broken).unwrap())
    );
    assert!(matches!(
        check_strict_text(r#"{"type": "object""#),
        Err(TapeError::Syntax { .. })
    ));
}

/// Schema-shaped values: the keywords the walk reads, nested, with names that need escaping,
/// `$ref`s that resolve, miss or leave the document, and values of the wrong type.
pub(super) fn arb_schema() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let name = prop::sample::select(vec!["a", "b", "a/b", "t~1", "é", "type", "properties"]);
    let leaf = prop_oneof![
        Just(json!({"type": "string"})),
        Just(json!({"type": ["string", "null"]})),
        Just(json!({"$ref": "#/$defs/x"})),
        Just(json!({"$ref": "#/$defs/missing"})),
        Just(json!({"$ref": "https://example.com/s.json"})),
        Just(json!({"type": "object", "additionalProperties": false})),
        Just(json!({"default": 1, "type": "integer"})),
        Just(json!(true)),
    ];
    leaf.prop_recursive(4, 48, 5, move |inner| {
        let props = prop::collection::btree_map(name.clone(), inner.clone(), 0..4);
        let required = prop::collection::vec(name.clone(), 0..4);
        prop_oneof![
            (props, required, any::<bool>(), any::<bool>()).prop_map(|(p, r, closed, typed)| {
                let mut m = serde_json::Map::new();
                if typed {
                    m.insert("type".into(), json!("object"));
                }
                m.insert(
                    "properties".into(),
                    Value::Object(p.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()),
                );
                m.insert("required".into(), json!(r));
                if closed {
                    m.insert("additionalProperties".into(), json!(false));
                }
                Value::Object(m)
            }),
            inner
                .clone()
                .prop_map(|i| json!({"type": "array", "items": i})),
            prop::collection::vec(inner.clone(), 0..3).prop_map(|b| json!({"anyOf": b})),
            (inner.clone(), inner).prop_map(|(a, x)| json!({"allOf": [a], "$defs": {"x": x}})),
            Just(json!({"type": "object", "properties": 5, "required": "a"})),
        ]
    })
}

proptest::proptest! {
    /// On any schema, the walk over its text gives the verdict and reasons of the walk over its
    /// value, with and without the provider's rules.
    #[test]
    fn the_text_walk_equals_the_value_walk(schema in arb_schema()) {
        for text in [schema.to_string(), serde_json::to_string_pretty(&schema).unwrap()] {
            proptest::prop_assert_eq!(check_strict_text(&text).unwrap(), check_strict(&schema));
            let tape = Tape::parse(&text).unwrap();
            for server_rules in [false, true] {
                proptest::prop_assert_eq!(
                    verdict(tape.root(), server_rules),
                    verdict(&schema, server_rules)
                );
            }
        }
    }
}
