//! The scanner against serde_json: the same verdict on valid, broken and mutated JSON.

use super::*;
use crate::schema::extract::last_valid_object;
use crate::schema::fixtures::arb_json;
use proptest::prelude::*;
use serde::de::IgnoredAny;

fn serde_ok(s: &str) -> bool {
    serde_json::from_str::<IgnoredAny>(s).is_ok()
}

#[test]
fn the_grammar_edges_agree_with_serde_json() {
    let cases = [
        "{}",
        "[]",
        " {} ",
        "{\"a\":1}",
        "[1,2]",
        "\"s\"",
        "0",
        "-0",
        "1.5e-3",
        "1E+2",
        "true",
        "false",
        "null",
        "{\"a\":{\"b\":[1,{\"c\":null}]}}",
        "\"\\u00e9\\n\\\"\"",
        "\"é\"",
        "01",
        "1.",
        ".5",
        "-",
        "1e",
        "+1",
        "{,}",
        "[1,]",
        "{\"a\":1,}",
        "{\"a\"}",
        "{\"a\" 1}",
        "[1 2]",
        "{}{}",
        "tru",
        "nul",
        "True",
        "NaN",
        "\"\\x\"",
        "\"\\u12\"",
        "\"\\u12G4\"",
        "\"a\u{1}b\"",
        "\"unterminated",
        "[",
        "]",
        "{\"a\":1]",
        "[1}",
        "",
        " ",
        "1 2",
        "{\"a\":[1,2,{\"b\":\"}\"}]}",
        "[[[[[]]]]]",
        "\"\\/\\b\\f\\r\\t\"",
        "-12.34e+56",
        "{\"k\\\"\":1}",
        "[\"a\\\\\"]",
        "\"12345678\\\"9012345\"",
    ];
    for c in cases {
        assert_eq!(scan_keys(c, &[]).is_some(), serde_ok(c), "{c:?}");
    }
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert_eq!(scan_keys(&deep, &[]).is_some(), serde_ok(&deep));
}

#[test]
fn top_level_keys_are_found_escaped_or_not() {
    let text = r#"{"a": {"b": 1}, "c\u0064": [ {"e": 2} ], "f": "\"g\": 1"}"#;
    assert_eq!(
        scan_keys(text, &["a", "b", "cd", "e", "f", "g"]),
        Some(vec![true, false, true, false, true, false])
    );
    assert_eq!(
        scan_keys("[1]", &["a"]),
        Some(vec![true]),
        "not an object: nothing to require"
    );
    assert_eq!(scan_keys("{\"a\":}", &["a"]), None);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn serialised_values_pass_with_their_keys(v in arb_json(), pretty in any::<bool>()) {
        let text = if pretty { serde_json::to_string_pretty(&v).unwrap() } else { v.to_string() };
        let keys: Vec<String> = v.as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
        let mut required: Vec<&str> = keys.iter().map(String::as_str).collect();
        required.push("not-a-key-\u{1}");
        let seen = scan_keys(&text, &required);
        prop_assert!(seen.is_some(), "{}", text);
        let seen = seen.unwrap();
        let last = seen.len() - 1;
        prop_assert!(seen[..last].iter().all(|s| *s));
        prop_assert_eq!(seen[last], !v.is_object());
    }

    #[test]
    fn mutated_text_gets_serde_json_s_verdict(v in arb_json(), at in any::<prop::sample::Index>(), op in 0u8..3, byte in prop::sample::select(vec![b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b'1', b'e', b'-', b'.', b' ', b'u', b'n', 0x01])) {
        let mut bytes = v.to_string().into_bytes();
        let i = at.index(bytes.len() + 1);
        match op {
            0 if i < bytes.len() => { bytes.remove(i); }
            1 => bytes.insert(i, byte),
            _ if i < bytes.len() => bytes[i] = byte,
            _ => {}
        }
        if let Ok(text) = String::from_utf8(bytes) {
            prop_assert_eq!(scan_keys(&text, &[]).is_some(), serde_ok(&text), "{:?}", text);
        }
    }
}

/// The two-pass rule [`last_valid_object`] must equal: find the spans, then check the last first.
fn two_pass<'a>(text: &'a str, required: &[&str]) -> Option<(&'a str, Vec<bool>)> {
    crate::schema::extract::last_object_with(text, |s| scan_keys(s, required))
}

#[test]
fn the_one_pass_object_rule_equals_spans_then_checks() {
    let cases = [
        "",
        "prose only",
        "{}",
        r#"{"a":1}"#,
        r#" {"a":1} "#,
        r#"Plan {not json}. Answer: {"a": {"b": 1}} and {"b": 2} {broken"#,
        r#"{"a":1} {"b":2}"#,
        r#"{"a":1} {"b":2"#,
        r#"{"a":1}} trailing brace at depth 0 {"b":[1}"#,
        r#"{"a":[1,2}], "b": 1} then {"a": 2}"#,
        r#"{"s":"}"} {"t":"{"}"#,
        r#"{"esc":"\"}{"} x"#,
        r#"The 5" screen {"a": 1}"#,
        "```json\n{\"a\": 1}\n```\nDone {x}",
        r#"{"a": NaN} {"a": 1e400}"#,
        r#"{"a": 1e400} {"a": NaN}"#,
        r#"{{"a":1}}"#,
        r#"{"a":{"b":1}"#,
        "{\"a\":\"\u{1}\"} {\"a\":2}",
        r#"{"a":1}{"a":2}{"a":"#,
    ];
    for c in cases {
        for required in [&[][..], &["a", "b", "s"][..]] {
            assert_eq!(
                last_valid_object(c, required),
                two_pass(c, required),
                "{c:?} {required:?}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Values, broken values and prose in any order: the one pass picks what the two passes do.
    #[test]
    fn prose_and_objects_in_any_order_agree_with_the_two_pass_rule(
        parts in prop::collection::vec((arb_json(), 0u8..4, any::<prop::sample::Index>()), 0..5),
    ) {
        let mut text = String::new();
        for (v, kind, at) in &parts {
            let json = v.to_string();
            match kind {
                0 => text.push_str(&json),
                1 => text.push_str(&json[..json.floor_char_boundary(at.index(json.len() + 1))]),
                2 => text.push_str(" {prose \"quoted} } "),
                _ => text.push_str("\n```json\n"),
            }
        }
        let required = ["a", "b", ""];
        prop_assert_eq!(last_valid_object(&text, &required), two_pass(&text, &required), "{:?}", text);
    }
}
