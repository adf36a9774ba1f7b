//! Tests for the one-pass certifier: one per row of its table, errors equal to the tape's, and
//! property tests that hold it to the walk (it never certifies what the walk refuses) and show it
//! settles the schemas generators emit.

use super::{Certified, certify};
use crate::schema::strict::{check_strict, check_strict_text};
use crate::schema::tape::{Tape, TapeError};
use serde_json::{Value, json};

/// Asserts whether the certifier settles `text` (`settled`: it answers compatible), and that
/// `check_strict_text` gives the walk's verdict on the value serde_json reads from `text`.
/// Returns whether the walk finds it compatible.
fn certifies(text: &str, settled: bool) -> bool {
    let answer = matches!(certify(text), Ok(Certified::Compatible));
    assert_eq!(answer, settled, "certify {text}");
    let value: Value = serde_json::from_str(text).unwrap();
    let walked = check_strict(&value);
    assert_eq!(check_strict_text(text).unwrap(), walked, "text {text}");
    if settled {
        assert!(walked.compatible, "certified, but the walk refuses {text}");
    }
    walked.compatible
}

const CLOSED: &str = r#"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false}"#;

#[test]
fn a_closed_object_with_every_property_required_in_order_is_settled() {
    assert!(certifies(CLOSED, true));
    let pretty = serde_json::to_string_pretty(&serde_json::from_str::<Value>(CLOSED).unwrap());
    assert!(certifies(&pretty.unwrap(), true));
    // Required first, properties after.
    let swapped =
        r#"{"additionalProperties":false,"required":["a"],"type":"object","properties":{"a":{}}}"#;
    assert!(certifies(swapped, true));
}

#[test]
fn required_names_in_another_order_are_handed_to_the_walk() {
    let text = r#"{"type":"object","properties":{"a":{},"b":{}},"required":["b","a"],"additionalProperties":false}"#;
    assert!(
        certifies(text, false),
        "compatible, but not settled in one pass"
    );
}

#[test]
fn a_broken_object_rule_is_never_certified() {
    for text in [
        r#"{"type":"object","properties":{"a":{}},"required":["a"]}"#,
        r#"{"type":"object","properties":{"a":{}},"required":["a"],"additionalProperties":true}"#,
        r#"{"type":"object","properties":{"a":{}},"required":["a"],"additionalProperties":{}}"#,
        r#"{"type":"object","properties":{"a":{},"b":{}},"required":["a"],"additionalProperties":false}"#,
        r#"{"type":"object","properties":{"a":{}},"required":["a","b"],"additionalProperties":false}"#,
        r#"{"type":"object","properties":"a","additionalProperties":false}"#,
        r#"{"type":"object","properties":["a"],"additionalProperties":false}"#,
        r#"{"type":"object","required":[1],"additionalProperties":false}"#,
        r#"{"type":"object","required":[["a"]],"additionalProperties":false}"#,
        r#"{"type":"object","required":{"a":1},"additionalProperties":false}"#,
        r#"{"type":"object","required":"a","additionalProperties":false}"#,
    ] {
        assert!(!certifies(text, false), "{text}");
    }
    // Null `properties` and `required` are absent ones.
    let nulls =
        r#"{"type":"object","properties":null,"required":null,"additionalProperties":false}"#;
    assert!(certifies(nulls, true));
}

#[test]
fn properties_of_a_schema_that_is_not_an_object_are_checked_anyway() {
    // The walk does not visit them; the certifier does, so it hands this one back.
    let text = r#"{"type":"array","properties":{"a":{"type":"object"}}}"#;
    assert!(certifies(text, false));
    // Untyped, with compatible properties: settled.
    assert!(certifies(r#"{"properties":{"a":{"type":"string"}}}"#, true));
}

#[test]
fn subschemas_are_checked_where_the_walk_checks_them() {
    let open = r#"{"type":"object"}"#;
    for keyword in ["items", "additionalProperties", "not"] {
        let text = format!(r#"{{"{keyword}":{open}}}"#);
        assert!(!certifies(&text, false), "{text}");
        let text = format!(r#"{{"{keyword}":{CLOSED}}}"#);
        assert!(certifies(&text, true), "{text}");
    }
    for keyword in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        let text = format!(r#"{{"{keyword}":[{CLOSED},{open}]}}"#);
        assert!(!certifies(&text, false), "{text}");
        let text = format!(r#"{{"{keyword}":[{CLOSED},true,[{open}]]}}"#);
        assert!(certifies(&text, true), "{text}");
        // Not an array: the walk reads nothing there.
        let text = format!(r#"{{"{keyword}":{open}}}"#);
        assert!(certifies(&text, true), "{text}");
    }
    // Tuple-form `items` (an array) is not inspected.
    assert!(certifies(&format!(r#"{{"items":[{open}]}}"#), true));
}

#[test]
fn values_the_rules_do_not_read_are_not_checked() {
    let text = r#"{"type":"object","properties":{"a":{"enum":[{"type":"object"}],"default":{"type":"object"},"const":{"properties":{}},"examples":[{"type":"object"}],"description":"{\"type\":\"object\"}"}},"required":["a"],"additionalProperties":false,"$defs":{"unused":{"type":"object"}}}"#;
    assert!(certifies(text, true));
}

#[test]
fn a_repeated_rule_keyword_is_handed_to_the_walk() {
    for text in [
        r#"{"type":"string","type":"object"}"#,
        r#"{"type":"object","additionalProperties":false,"additionalProperties":true}"#,
        // Each `properties` alone lists a required name, together both: the last one counts.
        r#"{"type":"object","additionalProperties":false,"properties":{"a":{}},"properties":{"b":{}},"required":["a","b"]}"#,
        r#"{"type":"object","additionalProperties":false,"properties":{"a":{}},"required":[],"required":["a"]}"#,
    ] {
        certifies(text, false);
    }
    // A repeated subschema keyword is not a rule keyword: both are checked.
    let text = format!(r#"{{"items":{CLOSED},"items":{CLOSED}}}"#);
    assert!(certifies(&text, true));
}

#[test]
fn escapes_in_keys_names_and_type_are_handed_to_the_walk() {
    for text in [
        r#"{"typ\u0065":"object"}"#,
        r#"{"type":"obj\u0065ct"}"#,
        r#"{"type":"object","properties":{"\u0061":{}},"required":["a"],"additionalProperties":false}"#,
        r#"{"type":"object","properties":{"a":{}},"required":["\u0061"],"additionalProperties":false}"#,
    ] {
        certifies(text, false);
    }
    // An escape where the rules do not read is fine.
    assert!(certifies(r#"{"description":"a \"quoted\" \u00e9"}"#, true));
}

#[test]
fn a_ref_is_handed_to_the_walk() {
    let text = format!(r##"{{"$defs":{{"x":{CLOSED}}},"$ref":"#/$defs/x"}}"##);
    assert!(certifies(&text, false));
    let text = r##"{"$defs":{"x":{"type":"object"}},"items":{"$ref":"#/$defs/x"}}"##;
    assert!(!certifies(text, false));
}

#[test]
fn a_repeated_property_name_has_each_schema_checked() {
    let text = r#"{"type":"object","properties":{"a":{"type":"object"},"a":{"type":"string"}},"required":["a","a"],"additionalProperties":false}"#;
    assert!(certifies(text, false), "the walk reads the last `a` only");
    let text = r#"{"type":"object","properties":{"a":{},"a":{}},"required":["a","a"],"additionalProperties":false}"#;
    assert!(certifies(text, true));
    let text = r#"{"type":"object","properties":{"a":{},"a":{}},"required":["a"],"additionalProperties":false}"#;
    assert!(certifies(text, false));
}

#[test]
fn a_root_that_is_not_an_object_is_settled() {
    for text in ["[1,{\"type\":\"object\"}]", "\"x\"", "true", "null", "12.5"] {
        assert!(certifies(text, true), "{text}");
    }
}

#[test]
fn the_certifier_refuses_what_the_tape_refuses_with_the_same_error() {
    let deep = "[".repeat(200);
    for text in [
        "",
        "{",
        r#"{"type":"string",}"#,
        r#"{"type":"string"} x"#,
        "[1e400]",
        r#"{"a":"\ud800"}"#,
        &deep,
    ] {
        let from_tape = Tape::parse(text).map(|_| ()).unwrap_err();
        assert_eq!(certify(text).map(|_| ()).unwrap_err(), from_tape, "{text}");
        assert_eq!(check_strict_text(text).unwrap_err(), from_tape, "{text}");
    }
    // An error after the point where the certifier hands back is the tape's to find.
    let text = r##"{"$ref":"#","type":}"##;
    assert!(matches!(certify(text), Ok(Certified::Unsettled)));
    assert!(matches!(
        check_strict_text(text),
        Err(TapeError::Syntax { .. })
    ));
}

/// Strict-compatible schemas as generators write them: closed objects with every property
/// required in order, arrays of them, unions, descriptions and enums; no `$ref`.
fn arb_generated() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let name = prop::sample::select(vec!["a", "b", "type", "properties", "é", "x y"]);
    let leaf = prop_oneof![
        Just(json!({"type": "string"})),
        Just(json!({"type": ["integer", "null"], "description": "n"})),
        Just(json!({"type": "string", "enum": ["x", {"type": "object"}]})),
        Just(json!({"type": "boolean"})),
    ];
    leaf.prop_recursive(4, 48, 5, move |inner| {
        prop_oneof![
            prop::collection::btree_map(name.clone(), inner.clone(), 0..5).prop_map(|p| {
                let required: Vec<&str> = p.keys().copied().collect();
                json!({"type": "object", "properties": p, "required": required,
                       "additionalProperties": false})
            }),
            inner
                .clone()
                .prop_map(|i| json!({"type": "array", "items": i})),
            prop::collection::vec(inner, 1..3).prop_map(|b| json!({"anyOf": b})),
        ]
    })
}

/// `v` as JSON text, with object `edits` applied in document order (one byte per object, cycled):
/// 0 repeats the first member with an open object schema first, 1 repeats the last member's key
/// with `true` after it, 2 escapes the first character of the first key, else nothing.
fn render(v: &Value, edits: &[u8], next: &mut usize, out: &mut String) {
    match v {
        Value::Object(m) => {
            let edit = edits.get(*next % edits.len().max(1)).copied().unwrap_or(9) % 6;
            *next += 1;
            out.push('{');
            // (key as written, value, whether edits apply inside it: not inside an added one).
            let mut members: Vec<(String, &Value, bool)> = m
                .iter()
                .map(|(k, v)| (Value::from(k.as_str()).to_string(), v, true))
                .collect();
            let open = json!({"type": "object"});
            let truthy = Value::Bool(true);
            match (edit, members.first().cloned(), members.last().cloned()) {
                (0, Some((k, ..)), _) => members.insert(0, (k, &open, false)),
                (1, _, Some((k, ..))) => members.push((k, &truthy, false)),
                (2, Some((k, ..)), _) => {
                    let c = k[1..].chars().next().unwrap_or('"');
                    if c != '"' && c != '\\' {
                        let escaped = format!("\"\\u{:04x}{}", c as u32, &k[1 + c.len_utf8()..]);
                        if (c as u32) < 0x10000 {
                            members[0].0 = escaped;
                        }
                    }
                }
                _ => {}
            }
            for (i, (k, v, edited)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(k);
                out.push(':');
                if *edited {
                    render(v, edits, next, out);
                } else {
                    out.push_str(&v.to_string());
                }
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, v) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                render(v, edits, next, out);
            }
            out.push(']');
        }
        _ => out.push_str(&v.to_string()),
    }
}

proptest::proptest! {
    /// What generators emit is settled in one pass, compact or pretty.
    #[test]
    fn generated_strict_schemas_are_settled(schema in arb_generated()) {
        for text in [schema.to_string(), serde_json::to_string_pretty(&schema).unwrap()] {
            proptest::prop_assert!(matches!(certify(&text), Ok(Certified::Compatible)), "{}", text);
            proptest::prop_assert!(check_strict(&schema).compatible);
        }
    }

    /// The certifier never certifies what the walk refuses, on any schema written with repeated
    /// keys and escapes, and `check_strict_text` always gives the walk's verdict on what
    /// serde_json reads.
    #[test]
    fn the_certifier_never_certifies_what_the_walk_refuses(
        schema in super::super::tests::arb_schema(),
        edits in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..8),
    ) {
        sound_on(&schema, &edits)?;
    }

    /// The same on schemas that start out compatible.
    #[test]
    fn edits_to_generated_schemas_are_never_certified_wrongly(
        schema in arb_generated(),
        edits in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..8),
    ) {
        sound_on(&schema, &edits)?;
    }
}

fn sound_on(schema: &Value, edits: &[u8]) -> Result<(), proptest::test_runner::TestCaseError> {
    let mut text = String::new();
    render(schema, edits, &mut 0, &mut text);
    let value: Value = serde_json::from_str(&text).unwrap();
    let walked = check_strict(&value);
    if matches!(certify(&text), Ok(Certified::Compatible)) {
        proptest::prop_assert!(walked.compatible, "{}", text);
    }
    proptest::prop_assert_eq!(check_strict_text(&text).unwrap(), walked);
    Ok(())
}
