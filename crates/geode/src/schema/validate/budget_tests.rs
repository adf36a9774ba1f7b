//! Tests for the validation budgets: schema cost, validation work, error listing and counting.

use super::*;
use crate::schema::cost::tests::chained;
use serde_json::json;

fn compile(v: Value) -> Result<CompiledSchema, SchemaError> {
    CompiledSchema::compile(&ResponseSchema::from_value(v).unwrap())
}

/// An array schema whose `items` is the `anyOf` chain of `levels` ending in `leaf`.
fn chain_of_items(levels: usize, leaf: Value) -> Value {
    let mut s = chained("anyOf", levels, leaf);
    let first = s.as_object_mut().and_then(|m| m.remove("$ref")).unwrap();
    s["type"] = json!("array");
    s["items"] = json!({ "$ref": first });
    s
}

/// An object with `n` integer members `p0..`.
fn integers(n: usize) -> Value {
    Value::Object((0..n).map(|i| (format!("p{i}"), json!(i))).collect())
}

#[test]
fn the_hostile_chains_from_the_issue_are_too_expensive() {
    for keyword in ["anyOf", "allOf", "oneOf"] {
        for leaf in [json!({"type": "string"}), json!({})] {
            match compile(chained(keyword, 20, leaf)) {
                Err(SchemaError::TooExpensive { estimate, budget }) => {
                    assert!(estimate > 4_000_000, "{keyword}: {estimate}");
                    assert_eq!(budget, MAX_SCHEMA_COST);
                }
                other => panic!("{keyword}: expected TooExpensive, got {other:?}"),
            }
        }
    }
    let message = compile(chained("anyOf", 20, json!({})))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(message.contains("too expensive"), "{message}");
}

#[test]
fn the_cost_budget_sits_between_fourteen_and_fifteen_chained_levels() {
    // 4 × 2^14 - 2 = 65,534 checks per location: compiled, and an invalid answer lists its error.
    let c = compile(chained("anyOf", 14, json!({"type": "string"}))).unwrap();
    let report = c.validate(&json!({"x": 1}));
    assert_eq!(report.issues.len(), 1);
    assert_eq!(report.issues[0].keyword, "anyOf");
    assert!(matches!(
        compile(chained("anyOf", 15, json!({"type": "string"}))),
        Err(SchemaError::TooExpensive {
            estimate: 131_070,
            ..
        })
    ));
}

#[test]
fn the_examples_and_benchmark_schemas_are_far_under_the_budget() {
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let mut seen = 0;
    for entry in std::fs::read_dir(examples).unwrap() {
        let path = entry.unwrap().path();
        if path.to_string_lossy().ends_with(".schema.json") {
            let schema = ResponseSchema::from_file(&path).unwrap();
            assert!(check_cost(schema.as_value()).unwrap() < 100, "{path:?}");
            CompiledSchema::compile(&schema).unwrap();
            seen += 1;
        }
    }
    assert!(seen >= 2, "no example schema found in {examples}");
    // A tree schema (recursion through `$ref: "#"`) and a union of nullable members.
    let tree = json!({"type": "object", "properties": {
        "value": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "children": {"type": "array", "items": {"$ref": "#"}}}});
    assert!(check_cost(&tree).unwrap() < 10);
}

#[test]
fn errors_past_one_hundred_are_counted_not_listed() {
    let c = compile(json!({"type": "object", "additionalProperties": {"type": "string"}})).unwrap();
    let report = c.validate(&integers(250));
    assert_eq!(report.issues.len(), MAX_REPORTED_ERRORS);
    assert_eq!(report.more_errors, 150);
    assert_eq!(report.total(), 250);
    assert!(report.issues.iter().all(|i| i.keyword == "type"));
    // The retry feedback says how many were not shown.
    let text = render_issues(&report, report.more_errors);
    assert_eq!(text.lines().last(), Some("… and 230 more"));
}

#[test]
fn counting_stops_at_its_bound() {
    let c = compile(json!({"additionalProperties": {"type": "string"}})).unwrap();
    let n = MAX_REPORTED_ERRORS + MAX_COUNTED_ERRORS as usize + 50;
    let report = c.validate(&integers(n));
    assert_eq!(report.issues.len(), MAX_REPORTED_ERRORS);
    assert_eq!(report.more_errors, MAX_COUNTED_ERRORS);
}

#[test]
fn an_answer_too_costly_to_check_gets_one_budget_issue() {
    // 1022 checks per item; 40,000 items are over the validation work budget.
    let c = compile(chain_of_items(8, json!({}))).unwrap();
    let answer = Value::Array(vec![json!(1); 40_000]);
    let report = c.validate(&answer);
    assert_eq!(report.issues.len(), 1, "{report:?}");
    assert_eq!(report.issues[0].keyword, "budget");
    assert!(
        report.issues[0].message.contains("not checked"),
        "{report:?}"
    );
    assert!(!c.is_valid(&answer));
    // A small answer under the same schema is checked.
    assert!(c.validate(&Value::Array(vec![json!(1); 10])).is_empty());
}

#[test]
fn errors_too_costly_to_list_are_summarised_but_the_verdict_stands() {
    // 1022 checks per item × 500 items: checked (valid or not), but errors not listed.
    let c = compile(chain_of_items(8, json!({"type": "string"}))).unwrap();
    let valid = Value::Array(vec![json!("s"); 500]);
    assert!(c.validate(&valid).is_empty());
    let report = c.validate(&Value::Array(vec![json!(1); 500]));
    assert_eq!(report.issues.len(), 1, "{report:?}");
    assert_eq!(report.issues[0].keyword, "budget");
    assert!(
        report.issues[0].message.contains("does not match"),
        "{report:?}"
    );
    // The same mistake in a short answer is listed.
    let report = c.validate(&Value::Array(vec![json!(1); 3]));
    assert_eq!(report.issues.len(), 3);
    assert!(report.issues.iter().all(|i| i.keyword == "anyOf"));
}

#[test]
fn a_valid_answer_takes_the_fast_path_whatever_the_error_budget() {
    let c = compile(json!({"additionalProperties": {"type": "integer"}})).unwrap();
    let report = c.validate(&integers(300_000));
    assert!(report.is_empty() && report.more_errors == 0);
}

#[test]
fn the_counts_reach_the_ledger_verdict_and_serialise_only_when_nonzero() {
    use crate::ledger::ValidationVerdict;
    let v = ValidationVerdict {
        valid: false,
        errors: Vec::new(),
        more_errors: 999_900,
    };
    let json = serde_json::to_value(&v).unwrap();
    assert_eq!(json["more_errors"], 999_900);
    let none = ValidationVerdict {
        more_errors: 0,
        ..v
    };
    assert!(
        serde_json::to_value(&none)
            .unwrap()
            .get("more_errors")
            .is_none()
    );
}
