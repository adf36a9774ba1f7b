use super::*;
use crate::schema::fixtures::schema;
use crate::schema::formats::FormatMode;
use crate::schema::validate::CompiledSchema;
use proptest::prelude::*;
use serde_json::json;

#[test]
fn the_tape_meets_the_validators_representation_contract() {
    let text = jsonschema_value::conformance::document().to_string();
    let tape = Tape::parse(&text).unwrap();
    jsonschema_value::conformance::assert_conformance::<TapeJson>(&tape.root());
}

/// Both paths give the same report for `answer` (which must parse).
fn same_report(schema_value: &Value, answer: &str, formats: FormatMode) {
    let s = schema(schema_value.clone());
    let by_value = CompiledSchema::compile_with(&s, formats).unwrap();
    let by_tape = CompiledSchema::<TapeJson>::build(&s, formats, None).unwrap();
    let value: Value = serde_json::from_str(answer).unwrap();
    let tape = Tape::parse(answer).unwrap();
    assert_eq!(
        by_tape.validate(&tape),
        by_value.validate(&value),
        "schema {schema_value}, answer {answer}"
    );
}

#[test]
fn every_keyword_reports_the_same_on_a_tape_as_on_a_value() {
    let cases: &[(Value, &[&str])] = &[
        (
            json!({"type": "object", "required": ["a", "b"], "additionalProperties": false,
                   "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 10},
                                  "b": {"enum": ["x", 1.0, null, [1], {"k": true}]}}}),
            &[
                r#"{"a": 3, "b": "x"}"#,
                r#"{"a": 3.0, "b": 1}"#,
                r#"{"a": -1, "b": "y", "c": 0}"#,
                r#"{"a": 11.5}"#,
                r#"{"a": 1e1, "b": {"k": true}}"#,
                r#"{"a": 1, "b": [1.0]}"#,
                r#"{"a": 18446744073709551615, "b": null}"#,
                r#"[1]"#,
            ],
        ),
        (
            json!({"type": "array", "items": {"type": "number", "multipleOf": 0.5},
                   "uniqueItems": true, "minItems": 2, "maxItems": 4, "contains": {"const": 2}}),
            &[
                "[1, 2]",
                "[1, 1.0]",
                "[0.3, 2]",
                "[2]",
                "[1,2,3,4,5]",
                "[-0, 2]",
                "[1, 2.0]",
            ],
        ),
        (
            json!({"type": "object",
                   "patternProperties": {"^x-": {"type": "string", "maxLength": 3}},
                   "propertyNames": {"pattern": "^[a-z-]+$"},
                   "dependentRequired": {"a": ["b"]},
                   "minProperties": 1}),
            &[
                r#"{"x-a": "abc"}"#,
                r#"{"x-a": "abcd"}"#,
                r#"{"x-é": "é"}"#,
                r#"{"A": 1}"#,
                r#"{"a": 1}"#,
                r#"{}"#,
                r#"{"x-\u0062": "\u00e9\u00e9\u00e9\u00e9"}"#,
            ],
        ),
        (
            json!({"type": "object", "properties": {
                "when": {"type": "string", "format": "date-time"},
                "id": {"type": "string", "format": "uuid"},
                "mail": {"type": "string", "format": "email"},
                "code": {"type": "string", "pattern": "^[A-Fa-f\\d]{4}$"}}}),
            &[
                r#"{"when": "2026-12-03T10:00:00Z", "id": "0b6a2f0e-9f43-4b5e-8a5a-2f0c6d1e7a11"}"#,
                r#"{"when": "yesterday", "id": "not-a-uuid", "mail": "nope", "code": "12g4"}"#,
                r#"{"code": "1aF9"}"#,
            ],
        ),
        (
            json!({"$defs": {"node": {"type": "object", "properties": {
                       "v": {"type": "integer"}, "next": {"$ref": "#/$defs/node"}},
                       "unevaluatedProperties": false}},
                   "$ref": "#/$defs/node"}),
            &[
                r#"{"v": 1, "next": {"v": 2, "next": {"v": 3}}}"#,
                r#"{"v": 1, "next": {"v": "2", "w": 0}}"#,
            ],
        ),
        (
            json!({"$schema": "http://json-schema.org/draft-04/schema#",
                   "type": "object", "properties": {"n": {"type": "integer", "maximum": 5, "exclusiveMaximum": true}}}),
            &[
                r#"{"n": 4}"#,
                r#"{"n": 5}"#,
                r#"{"n": 1.0}"#,
                r#"{"n": 1e308}"#,
                r#"{"n": 1e18}"#,
            ],
        ),
        (
            json!({"$schema": "http://json-schema.org/draft-04/schema#",
                   "type": "integer", "multipleOf": 0.123456789}),
            // The suite's "float division = inf" case: invalid, by the same keyword both ways.
            &["1e308", "1.5e300", "12345678901234567890123", "100e0", "7"],
        ),
        (
            json!({"anyOf": [{"type": "string", "minLength": 2}, {"type": "boolean"}],
                   "not": {"const": "no"}}),
            &[r#""ok""#, r#""no""#, "true", r#""x""#, "null", "12"],
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
            // Repeated keys: serde_json keeps the last value, so both paths judge "a": 2.
            &[r#"{"a": "one", "a": 2}"#, r#"{"a": 1, "a": "two"}"#],
        ),
    ];
    for (schema_value, answers) in cases {
        for answer in *answers {
            same_report(schema_value, answer, FormatMode::Assert);
            same_report(schema_value, answer, FormatMode::Annotate);
        }
    }
}

#[test]
fn numbers_read_as_serde_json_reads_them() {
    for text in [
        "0",
        "-0",
        "7",
        "-7",
        "1.5",
        "1e2",
        "-1E-2",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "-9223372036854775809",
        "1.0",
    ] {
        let ours = TapeNumber::read(text);
        let theirs: Number = serde_json::from_str(text).unwrap();
        assert_eq!(ours.as_u64(), theirs.as_u64(), "{text}");
        assert_eq!(ours.as_i64(), theirs.as_i64(), "{text}");
        assert_eq!(ours.as_f64(), theirs.as_f64(), "{text}");
        assert_eq!(*ours.to_number(), theirs, "{text}");
        assert_eq!(
            ours.is_integer(),
            jsonschema_value::types::number_is_integer(&theirs),
            "{text}"
        );
    }
}

#[test]
fn a_big_answer_past_the_budget_is_refused_on_both_paths() {
    let s = json!({"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]}});
    let answer = format!("[{}]", vec!["1"; 200_000].join(","));
    same_report(&s, &answer, FormatMode::Assert);
}

fn arb_item() -> impl Strategy<Value = Value> {
    let scalar = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..120).prop_map(|n| json!(n)),
        (-2.0f64..2.0).prop_map(|f| json!(f)),
        prop::sample::select(vec!["accept", "reject", "x", "", "é"]).prop_map(|s| json!(s)),
    ];
    scalar.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop::sample::select(vec!["id", "name", "score", "ok", "tags", "zz"]),
                    inner
                ),
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
        ]
    })
}

proptest! {
    #[test]
    fn any_answer_gets_the_same_report_on_both_paths(
        decision in prop::sample::select(vec!["accept", "reject", "maybe"]),
        items in prop::collection::vec(arb_item(), 0..5),
    ) {
        let s = json!({
            "type": "object",
            "properties": {
                "decision": {"enum": ["accept", "reject"]},
                "items": {"type": "array", "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "integer", "minimum": 0},
                        "name": {"type": "string", "minLength": 1},
                        "score": {"type": "number", "maximum": 1},
                        "ok": {"type": "boolean"},
                        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}
                    },
                    "required": ["id", "name"],
                    "additionalProperties": false
                }}
            },
            "required": ["decision", "items"]
        });
        let answer = json!({"decision": decision, "items": items}).to_string();
        same_report(&s, &answer, FormatMode::Assert);
    }
}
