//! Balanced-JSON extraction (`geode::schema::extract`) on any text.

use geode::schema::extract::{extract_last_object, find_last_object, top_level_spans};
use serde::de::IgnoredAny;
use serde_json::Value;
use std::ops::Range;

/// Runs the scanner and both finders on `data` (read as UTF-8, invalid bytes replaced).
///
/// Invariants: the spans are exactly those of the byte-by-byte rule (the SWAR block scanner is
/// checked against it); [`extract_last_object`] returns the last span that parses as an object,
/// and its value is that parse; [`find_last_object`] returns the last span that is valid JSON
/// syntax, which is never before the extracted one.
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let text = text.as_ref();
    let spans = top_level_spans(text);
    assert_eq!(spans, byte_rule_spans(text), "block scanner != byte rule");
    let slices: Vec<&str> = spans
        .iter()
        .map(|r| match text.get(r.clone()) {
            Some(s) if s.starts_with('{') && s.ends_with('}') => s,
            other => panic!("span {r:?} is not a braced substring: {other:?}"),
        })
        .collect();

    let syntax_ok = |s: &str| serde_json::from_str::<IgnoredAny>(s).is_ok();
    let object = |s: &str| match serde_json::from_str::<Value>(s) {
        Ok(v @ Value::Object(_)) => Some(v),
        _ => None,
    };
    let last_valid = slices.iter().rposition(|s| syntax_ok(s));
    let last_object = slices.iter().rposition(|s| object(s).is_some());

    match (find_last_object(text), last_valid) {
        (None, None) => {}
        (Some(found), Some(i)) => assert!(
            std::ptr::eq(found, slices[i]),
            "find_last_object returned {found:?}, not the last valid span {:?}",
            slices[i]
        ),
        (found, expected) => panic!(
            "find_last_object returned {found:?}; the last valid span is {:?}",
            expected.map(|i| slices[i])
        ),
    }
    match (extract_last_object(text), last_object) {
        (None, None) => {}
        (Some((found, value)), Some(i)) => {
            assert!(
                std::ptr::eq(found, slices[i]),
                "extract_last_object returned {found:?}, not the last object span {:?}",
                slices[i]
            );
            assert_eq!(
                object(found),
                Some(value),
                "the value is not the text's parse"
            );
        }
        (found, expected) => panic!(
            "extract_last_object returned {found:?}; the last object span is {:?}",
            expected.map(|i| slices[i])
        ),
    }
    assert!(
        last_valid >= last_object,
        "an object span is not valid JSON"
    );
}

/// The scan rule, one byte at a time and written independently of the scanner: outside braces
/// only `{` matters; inside, `"` toggles strings, `\` escapes the next byte in a string, and
/// braces outside strings nest. A span that never closes ends the scan.
fn byte_rule_spans(text: &str) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    let mut open: Option<(usize, usize)> = None; // (start, depth)
    let (mut in_string, mut escaped) = (false, false);
    for (i, b) in text.bytes().enumerate() {
        let Some((start, depth)) = open else {
            if b == b'{' {
                open = Some((i, 1));
            }
            continue;
        };
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        open = match b {
            b'"' => {
                in_string = true;
                Some((start, depth))
            }
            b'{' => Some((start, depth + 1)),
            b'}' if depth == 1 => {
                spans.push(start..i + 1);
                None
            }
            b'}' => Some((start, depth - 1)),
            _ => Some((start, depth)),
        };
    }
    spans
}
