//! One test per row of the extraction table (module docs of `extract.rs`), plus the edges of
//! fences and spans.

use super::*;
use crate::schema::root::{AnswerRoot, TypeSet};
use serde_json::json;

const ARRAY: AnswerRoot = AnswerRoot::Values(TypeSet::ARRAY);

fn got(text: &str, root: AnswerRoot) -> Option<(&str, Value)> {
    let found = extract_answer(text, root);
    // The syntax-only twin agrees on every input.
    assert_eq!(
        found.as_ref().map(|(s, _)| *s),
        find_answer(text, root),
        "{text:?}"
    );
    found
}

#[test]
fn row_object_root_keeps_the_reference_rule() {
    let text = "Both: [{\"a\":1},{\"b\":2}]";
    assert_eq!(
        got(text, AnswerRoot::Object).map(|x| x.1),
        Some(json!({"b": 2}))
    );
    assert_eq!(
        got(
            "```json\n{\"a\":1}\n```\nthen {\"b\":2}",
            AnswerRoot::Object
        )
        .map(|x| x.1),
        Some(json!({"b": 2}))
    );
}

#[test]
fn row_whole_trimmed_answer_of_an_allowed_type() {
    assert_eq!(
        got("  [1, 2, 3]\n", ARRAY),
        Some(("[1, 2, 3]", json!([1, 2, 3])))
    );
    assert_eq!(
        got("\"hello\"", AnswerRoot::Values(TypeSet::STRING)).map(|x| x.1),
        Some(json!("hello"))
    );
    assert_eq!(
        got("42", AnswerRoot::Values(TypeSet::INTEGER)).map(|x| x.1),
        Some(json!(42))
    );
    let number = AnswerRoot::Values(TypeSet::from_name("number").unwrap());
    assert_eq!(got("-4.5e1", number).map(|x| x.1), Some(json!(-45.0)));
    assert_eq!(
        got("false", AnswerRoot::Values(TypeSet::BOOLEAN)).map(|x| x.1),
        Some(json!(false))
    );
    assert_eq!(
        got("null", AnswerRoot::Values(TypeSet::NULL)).map(|x| x.1),
        Some(json!(null))
    );
}

#[test]
fn row_a_whole_answer_that_is_one_value_is_taken_whatever_its_type() {
    // The validator, not the extractor, says the type is wrong: piping a value into
    // `geode validate` gives the verdict validating it in memory gives.
    let int = AnswerRoot::Values(TypeSet::INTEGER);
    assert_eq!(got("4.5", int).map(|x| x.1), Some(json!(4.5)));
    assert_eq!(got("\"[1]\"", ARRAY).map(|x| x.1), Some(json!("[1]")));
    assert_eq!(
        got("{\"a\":[1]}", ARRAY).map(|x| x.1),
        Some(json!({"a": [1]}))
    );
    assert_eq!(
        got(" [{\"a\":1},{\"b\":2}]\n", AnswerRoot::Object).map(|x| x.1),
        Some(json!([{"a": 1}, {"b": 2}]))
    );
    for (text, value) in [
        ("[1, 1]", json!([1, 1])),
        ("12", json!(12)),
        ("\"a@b.c\"", json!("a@b.c")),
        ("null", json!(null)),
        ("{\"a\": 1}", json!({"a": 1})),
    ] {
        assert_eq!(
            got(text, AnswerRoot::Any).map(|x| x.1),
            Some(value),
            "{text}"
        );
    }
}

#[test]
fn row_untyped_roots_read_a_fence_then_the_object_rule() {
    let any = AnswerRoot::Any;
    assert_eq!(
        got("Here:\n```json\n[1, 1]\n```\nthat is all.", any).map(|x| x.1),
        Some(json!([1, 1]))
    );
    assert_eq!(
        got("I think {\"a\": 1} and [2] fit", any).map(|x| x.1),
        Some(json!({"a": 1}))
    );
    assert_eq!(got("The answer is 42.", any), None);
}

#[test]
fn row_last_fenced_json_block() {
    let text = "First try:\n```json\n[1]\n```\nBetter:\n```json\n[2, 3]\n```\nDone [4 items]";
    assert_eq!(got(text, ARRAY).map(|x| x.1), Some(json!([2, 3])));
    // An untagged fence counts; a fence tagged with another language does not.
    let string = AnswerRoot::Values(TypeSet::STRING);
    assert_eq!(
        got("Answer:\n```\n\"yes\"\n```", string).map(|x| x.1),
        Some(json!("yes"))
    );
    assert_eq!(got("```python\n\"yes\"\n```", string), None);
    // A later fenced block of the wrong type is skipped for an earlier one of the right type.
    let text = "```json\n\"a\"\n```\n```json\n[1]\n```";
    assert_eq!(got(text, string).map(|x| x.1), Some(json!("a")));
    // An unclosed fence is not a block.
    assert_eq!(got("```json\n\"a\"", string), None);
}

#[test]
fn row_last_balanced_span_of_an_allowed_type() {
    assert_eq!(
        got("Sure: [1, 2] or rather [3] — done.", ARRAY).map(|x| x.1),
        Some(json!([3]))
    );
    // Nested arrays are not candidates on their own; a broken last span falls back.
    assert_eq!(
        got("x [[1], [2]] then [bad", ARRAY).map(|x| x.1),
        Some(json!([[1], [2]]))
    );
    assert_eq!(got("[1] then [2,]", ARRAY).map(|x| x.1), Some(json!([1])));
    // An array inside an object is inside a span, not a candidate.
    assert_eq!(
        got("[1] then {\"a\": [2]}", ARRAY).map(|x| x.1),
        Some(json!([1]))
    );
    // Brackets inside strings do not count.
    assert_eq!(
        got("see [\"a]b\", \"[\"]!", ARRAY).map(|x| x.1),
        Some(json!(["a]b", "["]))
    );
    // Objects and arrays both, when both are allowed: the last span wins.
    let both = AnswerRoot::Values(TypeSet::ARRAY.union(TypeSet::NULL).union(TypeSet::OBJECT));
    assert_eq!(
        got("[1] and {\"a\":2}.", both).map(|x| x.1),
        Some(json!({"a": 2}))
    );
}

#[test]
fn row_objects_without_arrays_use_the_object_rule() {
    let obj_or_null = AnswerRoot::Values(TypeSet::OBJECT.union(TypeSet::NULL));
    assert_eq!(got("null", obj_or_null).map(|x| x.1), Some(json!(null)));
    assert_eq!(
        got("[{\"a\":1},{\"b\":2}] ok", obj_or_null).map(|x| x.1),
        Some(json!({"b": 2}))
    );
}

#[test]
fn row_scalars_inside_prose_are_not_extracted() {
    let int = AnswerRoot::Values(TypeSet::INTEGER);
    assert_eq!(got("The answer is 42.", int), None);
    assert_eq!(
        got("It is \"yes\".", AnswerRoot::Values(TypeSet::STRING)),
        None
    );
    assert_eq!(
        got("true, I think", AnswerRoot::Values(TypeSet::BOOLEAN)),
        None
    );
    assert_eq!(got("", ARRAY), None);
}

#[test]
fn fences_need_a_line_start_and_spans_stop_at_an_unclosed_one() {
    assert_eq!(
        fenced_blocks("a ```json\n[1]\n```"),
        Vec::<Range<usize>>::new()
    );
    assert_eq!(fenced_blocks("   ```json\n[1]\n   ```").len(), 1);
    assert_eq!(
        fenced_blocks("    ```json\n[1]\n```"),
        Vec::<Range<usize>>::new()
    );
    assert_eq!(bracket_spans("[1] [2 [3]"), vec![0..3]);
    assert_eq!(bracket_spans("] [1]"), vec![2..5]);
}

#[test]
fn ten_megabytes_of_brackets_finish() {
    let open = "[".repeat(10 << 20);
    assert_eq!(got(&open, ARRAY), None);
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    assert_eq!(
        extract_answer(&deep, ARRAY),
        None,
        "deeper than serde_json's 128 levels"
    );
    let many = "[1]".repeat(1 << 20);
    assert_eq!(got(&many, ARRAY).map(|x| x.1), Some(json!([1])));
}

#[test]
fn row_untyped_root_takes_an_array_in_prose_when_no_object_is_there() {
    // `{"items": {...}}`: an array by what it says, with no `type`.
    assert_eq!(
        got("Here: [1, 2] as asked.", AnswerRoot::Any),
        Some(("[1, 2]", json!([1, 2])))
    );
    // An object in the prose still wins, as GEODE's rule says.
    assert_eq!(
        got("[1] or {\"a\": 1}", AnswerRoot::Any).map(|(s, _)| s),
        Some("{\"a\": 1}")
    );
    assert_eq!(got("no value here", AnswerRoot::Any), None);
}
