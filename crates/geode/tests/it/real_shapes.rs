//! Schemas of the shapes real-world schemas have that geode once refused, each accepted now and
//! judging answers as JSON Schema says: ECMA-262 patterns Rust's regex syntax reads otherwise
//! (`tests/corpus/refused_shapes.json`, with valid and invalid answers), and wide unions of
//! `$ref`s like JSON Schema Store's service and Cloudify schemas, built here. The hostile fan-out
//! (`$ref` chains of two-way applicators) stays refused.

use geode::schema::cost::schema_cost;
use geode::schema::validate::{CompiledSchema, MAX_SCHEMA_COST};
use geode::schema::{ResponseSchema, SchemaError};
use serde_json::{Map, Value, json};

fn compile(schema: Value) -> Result<CompiledSchema, SchemaError> {
    CompiledSchema::compile(&ResponseSchema::from_value(schema).unwrap())
}

#[test]
fn every_pattern_shape_of_the_corpus_compiles_and_judges_as_ecma_does() {
    let corpus: Vec<Value> = serde_json::from_str(include_str!("../corpus/refused_shapes.json"))
        .expect("the corpus is JSON");
    assert!(corpus.len() >= 6);
    for case in &corpus {
        let shape = case["shape"].as_str().unwrap();
        let compiled = compile(case["schema"].clone()).unwrap_or_else(|e| panic!("{shape}: {e}"));
        for answer in case["valid"].as_array().unwrap() {
            let report = compiled.validate(answer);
            assert!(report.is_empty(), "{shape}: {answer} {report:?}");
        }
        for answer in case["invalid"].as_array().unwrap() {
            let report = compiled.validate(answer);
            assert!(!report.is_empty(), "{shape}: {answer} was accepted");
            assert_ne!(report.issues[0].keyword, "budget", "{shape}: {report:?}");
        }
    }
}

/// `defs` definitions `k0..`, each an object of one `kind` constant and a `spec` that is any of
/// `leaves` leaf definitions — a union of `$ref`s over unions of `$ref`s (`union` at the root:
/// `anyOf` like the service schema, `allOf`-style extension like Cloudify's when `all`).
fn wide_union(defs: usize, leaves: usize, union: &str) -> Value {
    let mut definitions = Map::new();
    for l in 0..leaves {
        definitions.insert(
            format!("leaf{l}"),
            json!({"type": "object", "properties": {format!("f{l}"): {"type": "string"}}, "required": [format!("f{l}")]}),
        );
    }
    let leaf_refs: Vec<Value> = (0..leaves)
        .map(|l| json!({"$ref": format!("#/definitions/leaf{l}")}))
        .collect();
    for d in 0..defs {
        let kind = if union == "anyOf" {
            json!({"const": format!("k{d}")})
        } else {
            json!({"type": "string"})
        };
        definitions.insert(
            format!("k{d}"),
            json!({"type": "object", "properties": {"kind": kind, "spec": {"anyOf": leaf_refs}}}),
        );
    }
    let refs: Vec<Value> = (0..defs)
        .map(|d| json!({"$ref": format!("#/definitions/k{d}")}))
        .collect();
    json!({"definitions": definitions, union: refs})
}

#[test]
fn wide_unions_of_refs_like_the_schema_store_ones_are_accepted_and_validate() {
    for (union, defs) in [("anyOf", 238), ("allOf", 125)] {
        let schema = wide_union(defs, 70, union);
        let cost = schema_cost(&schema);
        assert!(
            (10_000..MAX_SCHEMA_COST).contains(&cost),
            "{union}: cost {cost} should sit where the real schemas do"
        );
        let compiled = compile(schema).unwrap_or_else(|e| panic!("{union}: {e}"));
        let good = json!({"kind": "k7", "spec": {"f3": "x"}});
        assert!(compiled.validate(&good).is_empty(), "{union}");
        let bad = json!({"kind": "k7", "spec": {"f3": 1}});
        let report = compiled.validate(&bad);
        assert!(!report.is_empty(), "{union}");
        assert_ne!(report.issues[0].keyword, "budget", "{union}: {report:?}");
    }
}

#[test]
fn the_hostile_fan_out_is_still_refused() {
    let mut defs = Map::new();
    for i in 0..20 {
        let next = json!({"$ref": format!("#/$defs/d{}", i + 1)});
        defs.insert(format!("d{i}"), json!({"anyOf": [next.clone(), next]}));
    }
    defs.insert("d20".into(), json!({"type": "string"}));
    let hostile = json!({"$ref": "#/$defs/d0", "$defs": defs});
    match compile(hostile) {
        Err(SchemaError::TooExpensive { estimate, budget }) => {
            assert!(estimate > 1_000_000, "{estimate}");
            assert_eq!(budget, MAX_SCHEMA_COST);
        }
        other => panic!("expected TooExpensive, got {other:?}"),
    }
}
