//! Assertions shared by the entry functions.

use std::fmt::{Debug, Display};

/// Panics unless `error` renders as one non-empty line (the contract of geode's errors).
pub(crate) fn one_line(error: &impl Display) {
    let text = error.to_string();
    assert!(!text.trim().is_empty(), "an error renders as nothing");
    assert!(
        !text.contains(['\n', '\r']),
        "an error is not one line: {text:?}"
    );
}

/// Panics unless two runs on the same input gave the same result (compared by `Debug`, which
/// every result and error type has).
pub(crate) fn same<T: Debug>(first: &T, second: &T, what: &str) {
    let (a, b) = (format!("{first:?}"), format!("{second:?}"));
    assert!(a == b, "{what} is not deterministic:\n{a}\n{b}");
}
