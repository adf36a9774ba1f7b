//! The worker's answer check on every kind of root.

use super::*;
use crate::agent::termination::TerminationReason;
use serde_json::json;

fn answered(text: &str) -> AgenticResult {
    AgenticResult {
        text: text.to_owned(),
        termination_reason: TerminationReason::Natural,
        ..AgenticResult::default()
    }
}

fn check(schema: Value, text: &str, validation: Validation) -> AnswerCheck {
    let schema = ResponseSchema::from_value(schema).unwrap();
    let compiled = CompiledSchema::compile(&schema).unwrap();
    check_answer(
        &answered(text),
        Some((&schema, &compiled)),
        None,
        validation,
    )
}

#[test]
fn an_array_root_passes_with_the_array_as_the_answer() {
    let ints = json!({"type": "array", "items": {"type": "integer"}});
    for validation in [Validation::Full, Validation::RequiredKeys] {
        let c = check(ints.clone(), "[1, 2, 3]", validation);
        assert!(c.passed(), "{c:?}");
        assert_eq!(c.object, Some(json!([1, 2, 3])));
    }
    let c = check(ints.clone(), "```json\n[1, \"x\"]\n```", Validation::Full);
    assert_eq!(
        c.verdict,
        WorkerCheck::Fail {
            reason: CheckFailure::Invalid { count: 1 }
        }
    );
    // The shallow check only wants an array.
    assert!(check(ints.clone(), "[1, \"x\"]", Validation::RequiredKeys).passed());
    let c = check(ints, "{\"a\": [1]}", Validation::Full);
    assert_eq!(
        c.verdict,
        WorkerCheck::Fail {
            reason: CheckFailure::NoValue {
                expected: "JSON array".into()
            }
        }
    );
    assert_eq!(c.trigger(), "no parseable JSON array");
}

#[test]
fn scalar_enum_and_union_roots_pass() {
    let cases = [
        (
            json!({"type": "string", "format": "date"}),
            "\"2024-02-29\"",
            json!("2024-02-29"),
        ),
        (json!({"type": "integer", "minimum": 0}), "7", json!(7)),
        (json!({"type": "number"}), "2.5", json!(2.5)),
        (json!({"type": "boolean"}), "true", json!(true)),
        (json!({"type": "null"}), "null", json!(null)),
        (
            json!({"enum": ["red", "green"]}),
            "\"green\"",
            json!("green"),
        ),
        (json!({"const": 3}), "3", json!(3)),
        (json!({"type": ["string", "null"]}), "null", json!(null)),
        (
            json!({"anyOf": [{"type": "array"}, {"type": "integer"}]}),
            "Here:\n```json\n[7]\n```",
            json!([7]),
        ),
        (
            json!({"oneOf": [{"type": "string"}, {"type": "boolean"}]}),
            "false",
            json!(false),
        ),
    ];
    for (schema, text, want) in cases {
        let c = check(schema.clone(), text, Validation::Full);
        assert!(c.passed(), "{schema} {text}: {c:?}");
        assert_eq!(c.object, Some(want), "{schema}");
    }
    let c = check(
        json!({"enum": ["red", "green"]}),
        "\"blue\"",
        Validation::Full,
    );
    assert!(!c.passed());
    assert_eq!(c.issues()[0].keyword, "enum");
}

#[test]
fn object_roots_keep_the_reference_check() {
    let schema = json!({"type": "object", "required": ["a"]});
    let c = check(
        schema.clone(),
        "[{\"b\": 1}, {\"a\": 2}]",
        Validation::RequiredKeys,
    );
    assert!(c.passed(), "{c:?}");
    assert_eq!(c.object, Some(json!({"a": 2})));
    let c = check(schema, "no object", Validation::Full);
    assert_eq!(
        c.verdict,
        WorkerCheck::Fail {
            reason: CheckFailure::NoObject { detail: None }
        }
    );
}

#[test]
fn the_retry_prompt_names_the_root() {
    let ints = ResponseSchema::from_value(json!({"type": "array"})).unwrap();
    let prompt = build_schema_retry_prompt(&ints, Some("nope"), &[], 0);
    assert!(
        prompt.contains("did not parse as the required JSON array"),
        "{prompt}"
    );
    assert!(prompt.contains("emit ONLY the JSON array"), "{prompt}");
    assert!(!prompt.contains("Required keys"), "{prompt}");
    let obj = ResponseSchema::from_value(json!({"type": "object", "required": ["a"]})).unwrap();
    let prompt = build_schema_retry_prompt(&obj, Some("nope"), &[], 0);
    assert!(
        prompt.contains("did not parse as the required JSON object"),
        "{prompt}"
    );
    assert!(prompt.contains("Required keys: ['a']"), "{prompt}");
}

#[test]
fn a_wrapped_wire_answer_is_unwrapped_before_validation() {
    let ints =
        ResponseSchema::from_value(json!({"type": "array", "items": {"type": "integer"}})).unwrap();
    let compiled = CompiledSchema::compile(&ints).unwrap();
    let wrapped = |text: &str| {
        let mut r = answered(text);
        r.wire.wrapped_root = true;
        check_answer(&r, Some((&ints, &compiled)), None, Validation::Full)
    };
    let c = wrapped(r#"{"value": [1, 2]}"#);
    assert!(c.passed(), "{c:?}");
    assert_eq!(c.object, Some(json!([1, 2])));
    // The caller's schema decides: a wrapped value that breaks it fails validation.
    let c = wrapped(r#"{"value": [1, "x"]}"#);
    assert_eq!(
        c.verdict,
        WorkerCheck::Fail {
            reason: CheckFailure::Invalid { count: 1 }
        }
    );
    // An answer that came back unwrapped anyway is still found by the root's rule.
    let c = wrapped("[4]");
    assert_eq!(c.object, Some(json!([4])));
    // Without the wire's wrap, `{"value": …}` is not an array answer.
    let mut plain = answered(r#"{"value": [1]}"#);
    plain.wire.wrapped_root = false;
    let c = check_answer(&plain, Some((&ints, &compiled)), None, Validation::Full);
    assert!(!c.passed(), "{c:?}");
}
