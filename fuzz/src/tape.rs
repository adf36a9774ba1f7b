//! The tape (`geode::schema::tape`) on any text, against serde_json.

use geode::schema::extract::{extract_answer, extract_answer_tape};
use geode::schema::root::{AnswerRoot, TypeSet};
use geode::schema::strict::{check_strict, check_strict_text};
use geode::schema::tape::Tape;
use serde_json::Value;

/// Parses `data` (read as UTF-8, invalid bytes replaced) as a tape and as a `Value`.
///
/// Invariants: the tape takes exactly what serde_json takes and reads back the same value; the
/// strict check of the text (certified in one pass, or walked) equals the strict check of the
/// parsed value, and refuses what the tape refuses with the same error; extraction through a
/// tape picks the same answer as extraction through a `Value`, for an object root and an array
/// root.
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let text = text.as_ref();
    let tape = Tape::parse(text);
    let value = serde_json::from_str::<Value>(text);
    match (&tape, &value) {
        (Ok(tape), Ok(value)) => {
            assert_eq!(
                &tape.root().to_value(),
                value,
                "the tape reads another value"
            );
            assert_eq!(
                check_strict_text(text).ok(),
                Some(check_strict(value)),
                "the text's strict verdict differs"
            );
        }
        (Err(e), Err(_)) => {
            assert_eq!(
                check_strict_text(text).err().as_ref(),
                Some(e),
                "the strict check of a text that is not JSON"
            );
        }
        _ => panic!("tape {tape:?}, serde_json {value:?}"),
    }
    let array = AnswerRoot::Values(TypeSet::ARRAY.union(TypeSet::INTEGER));
    for root in [AnswerRoot::Object, array] {
        let by_tape = extract_answer_tape(text, root).map(|(s, t)| (s, t.root().to_value()));
        assert_eq!(by_tape, extract_answer(text, root), "extraction differs");
    }
}
