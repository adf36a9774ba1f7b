//! The worker's answer check on every kind of root.

use super::*;
use crate::vocab::TerminationReason;
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
    // A whole answer of the wrong type is the answer, and the validator says why it fails.
    let c = check(ints.clone(), "{\"a\": [1]}", Validation::Full);
    assert_eq!(
        c.verdict,
        WorkerCheck::Fail {
            reason: CheckFailure::Invalid { count: 1 }
        }
    );
    assert_eq!(c.issues()[0].keyword, "type");
    // The shallow check judges no type: it wants an array and finds none.
    for validation in [Validation::Full, Validation::RequiredKeys] {
        let text = if validation == Validation::Full {
            "Here it is: {\"a\": [1]}"
        } else {
            "{\"a\": [1]}"
        };
        let c = check(ints.clone(), text, validation);
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
}

#[test]
fn an_untyped_root_takes_any_whole_value_and_validates_it() {
    for (schema, text, valid) in [
        (json!({"uniqueItems": true}), "[1, 1]", false),
        (json!({"uniqueItems": true}), "[1, 2]", true),
        (json!({"items": {"type": "integer"}}), "[1, \"x\"]", false),
        (json!({"format": "email"}), "\"a@b.c\"", true),
        (json!({"format": "email"}), "\"nope\"", false),
        (json!({"required": ["a"]}), "12", true),
        (json!({}), "null", true),
    ] {
        let c = check(schema.clone(), text, Validation::Full);
        assert_eq!(c.passed(), valid, "{schema} {text}: {c:?}");
        assert!(
            c.object.is_some(),
            "{schema} {text}: the value is the answer"
        );
    }
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
    let prompt = build_schema_retry_prompt(&ints, Some("nope"), &[], 0, false);
    assert!(
        prompt.contains("did not parse as the required JSON array"),
        "{prompt}"
    );
    assert!(prompt.contains("emit ONLY the JSON array"), "{prompt}");
    assert!(!prompt.contains("Required keys"), "{prompt}");
    let obj = ResponseSchema::from_value(json!({"type": "object", "required": ["a"]})).unwrap();
    let prompt = build_schema_retry_prompt(&obj, Some("nope"), &[], 0, false);
    assert!(
        prompt.contains("did not parse as the required JSON object"),
        "{prompt}"
    );
    assert!(prompt.contains("Required keys: ['a']"), "{prompt}");
}

#[test]
fn on_a_wrapped_wire_the_retry_prompt_asks_for_the_wrapper_and_points_under_value() {
    let ints =
        ResponseSchema::from_value(json!({"type": "array", "items": {"type": "integer"}})).unwrap();
    let compiled = CompiledSchema::compile(&ints).unwrap();
    let issues = compiled.validate(&json!([1, "x"]));
    let wrapped =
        build_schema_retry_prompt(&ints, Some(r#"{"value": [1, "x"]}"#), &issues, 0, true);
    assert!(
        wrapped.contains(r#"emit ONLY a JSON object whose key "value" holds the JSON array"#),
        "{wrapped}"
    );
    assert!(wrapped.contains("Required keys: ['value']"), "{wrapped}");
    assert!(
        wrapped.contains(r#"/value/1: "x" is not of type"#),
        "{wrapped}"
    );
    let no_parse = build_schema_retry_prompt(&ints, Some("nope"), &[], 0, true);
    assert!(
        no_parse.contains(r#"did not parse as the required JSON object whose key "value""#),
        "{no_parse}"
    );
    // The caller's schema is the one shown, and the same errors point at the bare value
    // when the wire did not wrap.
    let plain = build_schema_retry_prompt(&ints, Some(r#"[1, "x"]"#), &issues, 0, false);
    assert!(plain.contains(r#"/1: "x" is not of type"#), "{plain}");
    assert!(!plain.contains("/value"), "{plain}");
    for p in [&wrapped, &plain] {
        assert!(p.contains(r#""type": "array""#), "{p}");
    }
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
