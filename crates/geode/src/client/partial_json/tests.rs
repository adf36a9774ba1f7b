#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use proptest::prelude::*;
use serde_json::json;

fn parse_all(text: &str) -> PartialJson {
    let mut p = PartialJson::new();
    p.feed(text).unwrap();
    p
}

#[test]
fn reads_a_whole_answer_after_prose_and_ignores_what_follows() {
    let p = parse_all(
        "Here you go:\n```json\n{\"a\": [1, 2.5, \"x\"], \"b\": {\"c\": null, \"d\": true}}\n``` done {\"z\":1}",
    );
    assert_eq!(
        p.value().unwrap(),
        &json!({"a": [1, 2.5, "x"], "b": {"c": null, "d": true}})
    );
    assert!(p.is_done());
    assert_eq!(
        p.complete(),
        ["/a/0", "/a/1", "/a/2", "/a", "/b/c", "/b/d", "/b", ""]
    );
}

#[test]
fn a_cut_mid_value_never_reports_that_value_complete() {
    let cases: [(&str, &[&str], Value); 6] = [
        (r#"{"a": 12"#, &[], json!({})),
        (r#"{"a": "x"#, &[], json!({"a": "x"})),
        (r#"{"a": tru"#, &[], json!({})),
        (r#"{"a": [1, 2"#, &["/a/0"], json!({"a": [1]})),
        (
            r#"{"a": {"b": 1}, "c": [ "#,
            &["/a/b", "/a"],
            json!({"a": {"b": 1}, "c": []}),
        ),
        (r#"{"a": "x\u00"#, &[], json!({"a": "x"})),
    ];
    for (text, complete, shown) in cases {
        let p = parse_all(text);
        assert_eq!(p.complete(), complete, "{text}");
        assert_eq!(p.value().unwrap(), &shown, "{text}");
        assert!(!p.is_done());
    }
}

#[test]
fn a_growing_string_is_shown_across_chunks_with_escapes_split() {
    let mut p = PartialJson::new();
    for chunk in [r#"{"k": "ab"#, r#"c\"#, r#"n\ud83d"#, r#"\ude00 é"#, "\"}"] {
        p.feed(chunk).unwrap();
    }
    assert_eq!(p.value().unwrap(), &json!({"k": "abc\n\u{1F600} é"}));
    assert_eq!(p.complete(), ["/k", ""]);
}

#[test]
fn keys_with_slash_and_tilde_are_escaped_in_pointers() {
    let p = parse_all(r#"{"a/b": {"c~d": 1}}"#);
    assert_eq!(p.complete(), ["/a~1b/c~0d", "/a~1b", ""]);
}

#[test]
fn syntax_errors_stop_the_parser_and_keep_what_was_read() {
    let mut p = PartialJson::new();
    p.feed(r#"{"a": 1, "b": ]"#).unwrap_err();
    assert_eq!(p.value().unwrap(), &json!({"a": 1}));
    assert!(matches!(p.feed("}"), Err(PartialError::Syntax { .. })));
    for bad in [
        r#"{"a": 01}"#,
        r#"{"a" 1}"#,
        r#"{"a": [1,]}"#,
        "{\"a\": \"\u{1}\"}",
        r#"{"a": "\ud800x"}"#,
        r#"{"a": nul!}"#,
    ] {
        assert!(PartialJson::new().feed(bad).is_err(), "{bad}");
        assert!(serde_json::from_str::<Value>(bad).is_err(), "{bad}");
    }
}

#[test]
fn nesting_past_the_limit_is_refused() {
    let deep = "[".repeat(MAX_DEPTH + 1);
    assert!(matches!(
        PartialJson::new().feed(&deep),
        Err(PartialError::TooDeep { .. })
    ));
    assert!(PartialJson::new().feed(&"[".repeat(MAX_DEPTH)).is_ok());
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn arb_answer() -> impl Strategy<Value = (String, Vec<usize>)> {
    (arb_json(), any::<bool>())
        .prop_map(|(v, pretty)| {
            let root = match v {
                Value::Object(_) | Value::Array(_) => v,
                other => json!({ "v": other }),
            };
            if pretty {
                serde_json::to_string_pretty(&root).unwrap()
            } else {
                serde_json::to_string(&root).unwrap()
            }
        })
        .prop_flat_map(|text| {
            let n = text.len();
            (Just(text), prop::collection::vec(0..=n, 0..12))
        })
}

/// `text` cut at `cuts` (moved to char boundaries).
fn chunks(text: &str, cuts: &[usize]) -> Vec<String> {
    let mut cuts: Vec<usize> = cuts
        .iter()
        .map(|&c| {
            let mut c = c.min(text.len());
            while !text.is_char_boundary(c) {
                c += 1;
            }
            c
        })
        .collect();
    cuts.push(0);
    cuts.push(text.len());
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2)
        .map(|w| text[w[0]..w[1]].to_owned())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// For any chunking of a valid answer: a pointer listed complete always shows the final
    /// value there, and the last partial equals the final value.
    #[test]
    fn partials_never_contradict_the_final_value((text, cuts) in arb_answer()) {
        let last: Value = serde_json::from_str(&text).unwrap();
        let mut p = PartialJson::new();
        for chunk in chunks(&text, &cuts) {
            p.feed(&chunk).unwrap();
            let shown = p.value().unwrap_or(&Value::Null);
            for pointer in p.complete() {
                prop_assert_eq!(shown.pointer(pointer), last.pointer(pointer), "at {}", pointer);
            }
        }
        prop_assert!(p.is_done());
        prop_assert_eq!(p.value().unwrap(), &last);
    }

    /// Any prefix of a valid answer lists only values that the whole answer has, equal.
    #[test]
    fn a_prefix_lists_only_values_the_whole_answer_agrees_on((text, cuts) in arb_answer()) {
        let last: Value = serde_json::from_str(&text).unwrap();
        let mut cut = cuts.first().copied().unwrap_or(0).min(text.len());
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        let p = parse_all(&text[..cut]);
        let shown = p.value().cloned().unwrap_or(Value::Null);
        for pointer in p.complete() {
            prop_assert_eq!(shown.pointer(pointer), last.pointer(pointer), "at {}", pointer);
        }
        if cut < text.trim_end().len() {
            prop_assert!(!p.complete().contains(&String::new()), "root complete before its end");
        }
    }
}
