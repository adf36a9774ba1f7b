//! Tests for the extractor: every row of GEODE's edge-case table for its balanced-object rule
//! (docs/reference.md#validation-and-the-one-retry), 10 MB hostile inputs,
//! and property tests.

use super::*;
use proptest::prelude::*;
use serde::de::IgnoredAny;
use serde_json::json;

/// GEODE's scan (`_last_balanced_json_object`), byte by byte: quotes toggle string state
/// everywhere, including prose outside braces (the string rule itself is [`Strings`], shared
/// with the scan). Used to pin GEODE's column of the table.
fn reference_spans(text: &str) -> Vec<Range<usize>> {
    let (mut depth, mut strings, mut start) = (0usize, Strings::default(), 0usize);
    let mut spans = Vec::new();
    for (i, &b) in text.as_bytes().iter().enumerate() {
        if !strings.structural(b) {
            continue;
        }
        match b {
            b'{' => {
                if depth == 0 {
                    start = i;
                }
                depth += 1;
            }
            b'}' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    spans.push(start..i + 1);
                }
            }
            _ => {}
        }
    }
    spans
}

/// GEODE's answer with serde_json as the parser (NaN aside, the same as `json.loads`).
fn reference_extract(text: &str) -> Option<&str> {
    reference_spans(text).into_iter().rev().find_map(|r| {
        let s = &text[r];
        matches!(serde_json::from_str::<Value>(s), Ok(Value::Object(_))).then_some(s)
    })
}

/// Our byte-by-byte rule, without memchr, to check the memchr scan against.
fn naive_spans(text: &str) -> Vec<Range<usize>> {
    let (mut depth, mut strings, mut start) = (0usize, Strings::default(), 0usize);
    let mut spans = Vec::new();
    for (i, &b) in text.as_bytes().iter().enumerate() {
        if depth == 0 {
            if b == b'{' {
                start = i;
                depth = 1;
            }
        } else if strings.structural(b) {
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        spans.push(start..i + 1);
                    }
                }
                _ => {}
            }
        }
    }
    spans
}

/// GEODE's edge-case table and its pinned tests where geode gives GEODE's answer:
/// input, the object both find.
const AGREED: &[(&str, Option<&str>)] = &[
    // A fenced object in prose is found.
    ("Here:\n```json\n{\"a\": 1}\n```\nDone", Some("{\"a\": 1}")),
    // The last of two objects wins.
    (r#"{"a":1} then {"b":2}"#, Some(r#"{"b":2}"#)),
    // An unparseable last block falls back to an earlier one.
    (r#"{"a":1} then {"b":}"#, Some(r#"{"a":1}"#)),
    // An unclosed outer brace hides the inner object.
    (r#"x {"outer": {"inner": 1} trailing"#, None),
    // An odd quote after the object is harmless.
    (r#"{"a": 1} the 5" screen"#, Some(r#"{"a": 1}"#)),
    // An array root yields its last object.
    (r#"[{"a":1},{"b":2}]"#, Some(r#"{"b":2}"#)),
    // A closing brace at depth zero is ignored.
    (r#"} {"a":1}"#, Some(r#"{"a":1}"#)),
    // Curly words in prose are skipped.
    (r#"use {curly} braces {"a":1}"#, Some(r#"{"a":1}"#)),
    // A nested object in an invalid outer one is not tried.
    (r#"{"a": {"b": 1}, bad}"#, None),
    // Single-quoted keys are not JSON.
    ("{'a': 1}", None),
    // Duplicate keys: the span is found (the value keeps the last, see below).
    (r#"{"a":1,"a":2}"#, Some(r#"{"a":1,"a":2}"#)),
    // Apostrophes are harmless.
    (r#"it's {"a": 1}"#, Some(r#"{"a": 1}"#)),
    // No braces give none.
    ("just prose, no object", None),
    ("", None),
    // A closing brace inside a string does not end the span.
    (r#"x {"a": "}", "b": 2} y"#, Some(r#"{"a": "}", "b": 2}"#)),
    // Escaped quotes inside strings are handled.
    (
        r#"x {"a": "say \"hi\" {", "b": "\\"} y"#,
        Some(r#"{"a": "say \"hi\" {", "b": "\\"}"#),
    ),
    // Nested objects are returned whole.
    (
        r#"{"a": {"b": {"c": [1, {"d": 2}]}}}"#,
        Some(r#"{"a": {"b": {"c": [1, {"d": 2}]}}}"#),
    ),
    // An unparseable later block is skipped.
    (
        r#"{"good": true} and later {not json}"#,
        Some(r#"{"good": true}"#),
    ),
];

/// The rows where geode differs from GEODE on purpose (the module docs' table): input,
/// the object geode finds; GEODE finds none.
const DIFFERS_ON_PURPOSE: &[(&str, Option<&str>)] = &[
    // A quote in prose outside braces does not flip string state in geode.
    (r#"The 5" screen {"a": 1}"#, Some(r#"{"a": 1}"#)),
    // A backslash outside braces is prose, not an escape, and the quote after it does not open
    // a string.
    (r#"\"{"a":1}"#, Some(r#"{"a":1}"#)),
];

/// Asserts what GEODE and both finders give for `input`.
fn row(input: &str, reference: Option<&str>, ours: Option<&str>) {
    assert_eq!(
        reference_extract(input),
        reference,
        "reference on {input:?}"
    );
    let got = extract_last_object(input).map(|(s, _)| s);
    assert_eq!(got, ours, "extract_last_object on {input:?}");
    assert_eq!(
        find_last_object(input),
        ours,
        "find_last_object on {input:?}"
    );
}

#[test]
fn every_agreed_row_gives_the_reference_output() {
    for &(input, found) in AGREED {
        row(input, found, found);
    }
}

#[test]
fn the_rows_that_differ_on_purpose_find_what_the_reference_misses() {
    for &(input, ours) in DIFFERS_ON_PURPOSE {
        row(input, None, ours);
    }
}

/// Differs on purpose: Python's `json.loads` accepts `NaN`; serde_json follows RFC 8259 and does
/// not, so geode finds no object here (the worker then retries instead of passing a non-JSON value).
#[test]
fn table_nan_differs_on_purpose_serde_json_rejects_it() {
    let input = r#"{"a": NaN}"#;
    // GEODE's scan does find this span; only the parser differs.
    assert_eq!(reference_spans(input), vec![0..input.len()]);
    assert_eq!(extract_last_object(input), None);
    assert_eq!(find_last_object(input), None);
}

#[test]
fn duplicate_keys_keep_the_last_value() {
    let (_, v) = extract_last_object(r#"{"a":1,"a":2}"#).unwrap();
    assert_eq!(v, json!({"a": 2}));
}

#[test]
fn escaped_quotes_inside_strings_give_the_unescaped_value() {
    let s = r#"x {"a": "say \"hi\" {", "b": "\\"} y"#;
    assert_eq!(
        extract_last_object(s).unwrap().1["a"],
        json!("say \"hi\" {")
    );
}

// ---- 10 MB hostile inputs (results asserted, not time) ----

const TEN_MB: usize = 10 * 1024 * 1024;

#[test]
fn five_million_nested_braces_are_refused_without_recursion() {
    let s = format!("{}{}", "{".repeat(TEN_MB / 2), "}".repeat(TEN_MB / 2));
    assert_eq!(top_level_spans(&s), vec![0..s.len()]);
    assert_eq!(extract_last_object(&s), None);
    assert_eq!(find_last_object(&s), None);
}

#[test]
fn ten_megabytes_of_unclosed_braces_give_none() {
    let s = "{".repeat(TEN_MB);
    assert!(top_level_spans(&s).is_empty());
    assert_eq!(extract_last_object(&s), None);
    let s = format!("{{\"a\":1}}{}", "{".repeat(TEN_MB));
    assert_eq!(find_last_object(&s), Some("{\"a\":1}"));
}

#[test]
fn ten_megabytes_of_quotes_give_none_or_the_object() {
    let s = "\"".repeat(TEN_MB);
    assert_eq!(extract_last_object(&s), None);
    let s = format!("{}{{\"a\":1}}", "\"".repeat(TEN_MB + 1));
    assert_eq!(find_last_object(&s), Some("{\"a\":1}"));
    // Quotes inside an open brace pair up; the span is not JSON.
    let s = format!("{{{}}}", "\"".repeat(TEN_MB));
    assert_eq!(top_level_spans(&s).len(), 1);
    assert_eq!(find_last_object(&s), None);
    // An odd count leaves the string open to the end: no span at all.
    let s = format!("{{{}}}", "\"".repeat(TEN_MB + 1));
    assert!(top_level_spans(&s).is_empty());
}

#[test]
fn ten_megabytes_of_small_objects_return_the_last() {
    let mut s = String::with_capacity(TEN_MB + 32);
    let mut n = 0u64;
    while s.len() < TEN_MB {
        s.push_str(&format!("{{\"n\":{n}}} "));
        n += 1;
    }
    let (_, v) = extract_last_object(&s).unwrap();
    assert_eq!(v, json!({"n": n - 1}));
    let s = "{}".repeat(TEN_MB / 2);
    assert_eq!(find_last_object(&s), Some("{}"));
    let s = "}".repeat(TEN_MB) + "{\"z\":0}";
    assert_eq!(find_last_object(&s), Some("{\"z\":0}"));
}

#[test]
fn a_ten_megabyte_plain_json_answer_is_found_whole() {
    let items: Vec<Value> = (0..150_000)
        .map(|i| json!({"id": i, "name": format!("item {i} with \"quotes\" and {{braces}}"), "ok": true}))
        .collect();
    let text = format!("Answer:\n{}\n", json!({"items": items}));
    assert!(text.len() > 9 * 1024 * 1024, "{}", text.len());
    let (s, v) = extract_last_object(&text).unwrap();
    assert_eq!(s.len(), text.len() - "Answer:\n\n".len());
    assert_eq!(v["items"].as_array().map(Vec::len), Some(150_000));
    assert_eq!(find_last_object(&text), Some(s));
}

#[test]
fn out_of_range_numbers_pass_the_syntax_check_but_not_the_value_parse() {
    let s = r#"{"a":1} {"a":1e400}"#;
    assert_eq!(find_last_object(s), Some(r#"{"a":1e400}"#));
    assert_eq!(extract_last_object(s).map(|(o, _)| o), Some(r#"{"a":1}"#));
}

#[test]
fn explain_no_object_names_an_out_of_range_number_and_too_deep_nesting() {
    assert_eq!(explain_no_object(""), NoObject::NoBalancedSpan);
    assert_eq!(explain_no_object("} no {"), NoObject::NoBalancedSpan);
    let why = explain_no_object(r#"Answer: {"a": 1e400}"#);
    assert!(
        matches!(&why, NoObject::Unparsable { message } if message.contains("number out of range")),
        "{why:?}"
    );
    assert!(why.to_string().contains("not valid JSON"), "{why}");
    let deep = format!("{}{}", "{\"a\":".repeat(200), "}".repeat(200));
    let why = explain_no_object(&deep).to_string();
    assert!(why.contains("recursion limit"), "{why}");
}

#[test]
fn last_object_with_gives_each_span_once_last_first() {
    let mut seen = Vec::new();
    let got = last_object_with("{1} {2} {3}", |s| {
        seen.push(s);
        (s == "{2}").then_some(2)
    });
    assert_eq!(got, Some(("{2}", 2)));
    // The whole text is tried first (it is `{…}`), then each span once, last first.
    assert_eq!(seen, vec!["{1} {2} {3}", "{3}", "{2}"]);
}

#[test]
fn a_whole_object_answer_is_taken_without_a_span_scan_and_tried_once() {
    let mut seen = Vec::new();
    let text = " \n{\"a\": \"}{\"}\t\r\n";
    let got = last_object_with(text, |s| {
        seen.push(s);
        Some(s.len())
    });
    assert_eq!(got, Some(("{\"a\": \"}{\"}", 11)));
    assert_eq!(seen.len(), 1);
    // Refused whole, the same text is not given again as its own single span.
    seen.clear();
    assert_eq!(
        last_object_with("{\"a\": 1}", |s| {
            seen.push(s);
            None::<()>
        }),
        None
    );
    assert_eq!(seen, vec!["{\"a\": 1}"]);
}

// ---- property tests ----

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[a-z{}\"\\\\ \\[\\]:,'\u{e9}\u{1F600}]{0,12}".prop_map(Value::String),
    ]
}

fn json_object() -> impl Strategy<Value = Value> {
    let value = json_leaf().prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("[a-z\"{}]{1,6}", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    prop::collection::btree_map("[a-z\"{}\\\\]{1,6}", value, 0..6)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

/// Prose before the object: quotes, backslashes, stray `}` and brace groups without quotes.
fn prefix_noise() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            "[a-zA-Z0-9 .,:;!?'\\n\"\\\\}\\[\\]]{0,10}",
            "\\{[a-z ]{0,5}\\}",
            "\\{\\{[a-z]{0,3}\\}[a-z ]{0,3}\\}",
            "```json\\n",
        ],
        0..8,
    )
    .prop_map(|parts| parts.concat())
}

/// Prose after the object: anything but `{`.
fn suffix_noise() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 .,:;!?'\\n\"\\\\}\\[\\]`]{0,40}"
}

proptest! {
    #[test]
    fn an_object_in_brace_and_quote_noise_is_found(
        obj in json_object(),
        pretty in any::<bool>(),
        pre in prefix_noise(),
        post in suffix_noise(),
    ) {
        let body = if pretty {
            serde_json::to_string_pretty(&obj).unwrap()
        } else {
            obj.to_string()
        };
        let text = format!("{pre}{body}{post}");
        let (s, v) = extract_last_object(&text).unwrap();
        prop_assert_eq!(s, body.as_str());
        prop_assert_eq!(v, obj);
        prop_assert_eq!(find_last_object(&text), Some(body.as_str()));
    }

    #[test]
    fn arbitrary_text_never_panics_and_answers_are_consistent(text in any::<String>()) {
        check_consistent(&text)?;
    }

    #[test]
    fn brace_heavy_text_never_panics_and_answers_are_consistent(
        text in "[{}\"\\\\a:1, \u{e9}]{0,200}",
    ) {
        check_consistent(&text)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// Long inputs built from JSON-ish tokens cross many 64-byte blocks, with and without
    /// backslashes, so the block scanner is checked against the byte-by-byte rule.
    #[test]
    fn block_scanner_matches_the_byte_rule_on_long_inputs(
        parts in prop::collection::vec(
            prop_oneof![
                4 => Just("{"), 4 => Just("}"), 3 => Just("\""), 2 => Just("\\"),
                1 => Just("\\\\"), 1 => Just("\\\\\\"), 1 => Just("\\\""),
                3 => Just("\"key\": "), 2 => Just("{\"n\":1} "), 2 => Just("[1, 2]"),
                2 => Just("\"a \\\"q\\\" b\""), 2 => Just("\"x\\\\\""),
                3 => Just("lorem ipsum dolor sit amet "),
            ],
            0..400,
        ),
    ) {
        let text = parts.concat();
        prop_assert_eq!(top_level_spans(&text), naive_spans(&text));
    }
}

proptest! {
    /// Mostly well-formed answers (escape-heavy objects between prose) keep the block fast path
    /// busy; its spans must equal the byte rule's.
    #[test]
    fn objects_between_prose_match_the_byte_rule(
        parts in prop::collection::vec((json_object(), suffix_noise()), 1..12),
    ) {
        let text: String = parts.iter().map(|(o, p)| format!("{o}{p}")).collect();
        prop_assert_eq!(top_level_spans(&text), naive_spans(&text));
        let last = parts.last().map(|(o, _)| o.clone());
        prop_assert_eq!(extract_last_object(&text).map(|(_, v)| v), last);
    }
}

fn check_consistent(text: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(top_level_spans(text), naive_spans(text));
    if let Some((s, v)) = extract_last_object(text) {
        prop_assert!(text.contains(s));
        prop_assert_eq!(serde_json::from_str::<Value>(s).ok(), Some(v));
        prop_assert!(find_last_object(text).is_some());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// Whatever the text, what the finders return parses: [`extract_last_object`]'s text as the
    /// object it returns, [`find_last_object`]'s as JSON syntax. The parts include near-JSON that
    /// does not parse (`NaN`, `1e400` for the value parse, trailing commas, bare words, cut
    /// strings, nesting past serde_json's 128 levels) so that rejected spans sit between good ones.
    #[test]
    fn the_finders_never_return_text_that_does_not_parse(
        parts in prop::collection::vec(
            prop_oneof![
                json_object().prop_map(|o| o.to_string()),
                Just("{\"a\": NaN}".to_owned()),
                Just("{\"n\": 1e400}".to_owned()),
                Just("{\"a\": 1,}".to_owned()),
                Just("{a: 1}".to_owned()),
                Just("{\"s\": \"cut".to_owned()),
                Just(format!("{}{}", "{\"d\":".repeat(130), "}".repeat(130))),
                "[a-z {}\":,\\\\\\[\\]0-9.e+-]{0,24}",
            ],
            0..8,
        ),
    ) {
        let text = parts.concat();
        if let Some((s, v)) = extract_last_object(&text) {
            prop_assert_eq!(serde_json::from_str::<Value>(s).ok(), Some(v.clone()));
            prop_assert!(v.is_object());
        }
        if let Some(s) = find_last_object(&text) {
            prop_assert!(serde_json::from_str::<IgnoredAny>(s).is_ok(), "{s:?} does not parse");
        }
    }
}
