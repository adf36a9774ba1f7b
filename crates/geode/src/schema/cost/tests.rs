#![allow(clippy::unwrap_used)]

use super::*;
use serde_json::json;

/// `$defs` d0..d{levels-1} each applying `keyword: [{$ref: next}, {$ref: next}]`, then a leaf.
pub(crate) fn chained(keyword: &str, levels: usize, leaf: Value) -> Value {
    let mut defs = Map::new();
    for i in 0..levels {
        let next = json!({"$ref": format!("#/$defs/d{}", i + 1)});
        defs.insert(format!("d{i}"), json!({ keyword: [next.clone(), next] }));
    }
    defs.insert(format!("d{levels}"), leaf);
    json!({"$ref": "#/$defs/d0", "$defs": defs})
}

#[test]
fn a_flat_schema_costs_one_per_location() {
    assert_eq!(schema_cost(&json!({"type": "object"})), 1);
    assert_eq!(schema_cost(&json!(true)), 1);
    // Properties apply to different children: the costliest one counts, not their sum.
    let s = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"anyOf": [{}, {}]}}});
    assert_eq!(schema_cost(&s), 1 + 3);
}

#[test]
fn chained_applicators_through_refs_grow_exponentially() {
    for keyword in ["anyOf", "allOf", "oneOf"] {
        let small = schema_cost(&chained(keyword, 3, json!({"type": "string"})));
        let big = schema_cost(&chained(keyword, 20, json!({"type": "string"})));
        assert!(small < 40, "{keyword}: {small}");
        assert!(big > 2_000_000, "{keyword}: {big}");
    }
}

#[test]
fn definitions_count_only_where_they_are_used() {
    let unused = json!({"type": "object", "$defs": {"x": chained("anyOf", 20, json!({}))}});
    assert_eq!(schema_cost(&unused), 1);
}

#[test]
fn two_hundred_thousand_properties_cost_little() {
    let props: Map<String, Value> = (0..200_000)
        .map(|i| (format!("p{i}"), json!({"type": "integer"})))
        .collect();
    assert_eq!(schema_cost(&json!({"properties": props})), 2);
}

#[test]
fn pattern_properties_and_in_place_keywords_are_summed() {
    let s = json!({
        "patternProperties": {"^a": {"type": "string"}, "^ab": {"type": "string"}},
        "not": {"type": "null"},
        "if": {}, "then": {}, "else": {},
    });
    assert_eq!(schema_cost(&s), 1 + 2 + 4);
}

#[test]
fn cycles_terminate_and_count_the_back_edge_once() {
    assert_eq!(schema_cost(&json!({"$ref": "#"})), 2);
    let ab = json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"});
    assert!(schema_cost(&ab) <= 4, "{}", schema_cost(&ab));
    let tree = json!({"type": "object", "properties": {"child": {"$ref": "#"}, "v": {}}});
    assert_eq!(schema_cost(&tree), 1 + 2);
}

#[test]
fn a_ten_thousand_long_ref_chain_is_walked_without_recursion() {
    let mut defs = Map::new();
    for i in 0..10_000 {
        defs.insert(
            format!("d{i}"),
            json!({"$ref": format!("#/$defs/d{}", i + 1)}),
        );
    }
    defs.insert("d10000".into(), json!({}));
    let s = json!({"$ref": "#/$defs/d0", "$defs": defs});
    assert_eq!(schema_cost(&s), 10_002);
}

#[test]
fn anchors_ids_and_escaped_pointers_are_followed() {
    // The same exponential chain, reached through `$anchor` names.
    let mut defs = Map::new();
    for i in 0..20 {
        let next = json!({"$ref": format!("#n{}", i + 1)});
        defs.insert(
            format!("d{i}"),
            json!({"$anchor": format!("n{i}"), "anyOf": [next.clone(), next]}),
        );
    }
    defs.insert("d20".into(), json!({"$anchor": "n20"}));
    assert!(schema_cost(&json!({"$ref": "#n0", "$defs": defs})) > 1_000_000);

    // Through an embedded resource's `$id`.
    let by_id = json!({
        "$defs": {"leaf": {"$id": "https://example.com/leaf.json", "anyOf": [{}, {}, {}]}},
        "$ref": "leaf.json",
    });
    assert_eq!(schema_cost(&by_id), 1 + 4);

    // A percent-encoded pointer (`a b` → `a%20b`).
    let escaped = json!({"$defs": {"a b": {"anyOf": [{}, {}]}}, "$ref": "#/$defs/a%20b"});
    assert_eq!(schema_cost(&escaped), 1 + 3);
}

#[test]
fn refs_inside_data_keywords_are_not_followed() {
    let hostile = chained("anyOf", 20, json!({}));
    let s = json!({"const": hostile.clone(), "enum": [hostile.clone()], "default": hostile});
    assert_eq!(schema_cost(&s), 1);
}

#[test]
fn an_unresolvable_ref_counts_one() {
    assert_eq!(
        schema_cost(&json!({"$ref": "https://example.com/remote.json"})),
        1
    );
    assert_eq!(schema_cost(&json!({"$ref": "#/$defs/missing"})), 1);
}

#[test]
fn a_pointer_inside_an_embedded_resource_resolves_against_that_resource() {
    let s = json!({
        "$defs": {
            "inner": {
                "$id": "https://example.com/inner.json",
                "$defs": {"x": {"anyOf": [{}, {}, {}, {}]}},
                "$ref": "#/$defs/x",
            },
            "x": {},
        },
        "$ref": "#/$defs/inner",
    });
    // root → inner (1) → its own x (1 + 4); the document's x would cost 1.
    assert_eq!(schema_cost(&s), 1 + 1 + 5);
}

#[test]
fn an_anchor_defined_too_often_is_unbounded() {
    let defs: Map<String, Value> = (0..=MAX_REF_CANDIDATES)
        .map(|i| (format!("d{i}"), json!({"$anchor": "same"})))
        .collect();
    assert_eq!(
        schema_cost(&json!({"$ref": "#same", "$defs": defs})),
        u64::MAX
    );
}
