//! The balanced-JSON-object finder used on model text.
//!
//! In: any text (a model's final answer). Out: the **last top-level `{…}` span that parses as JSON**,
//! as the exact substring, or `None`. Guarantees: one linear scan (memchr-driven), no recursion,
//! every candidate span parsed at most once and spans are disjoint, so the total work is linear in
//! the input; never panics.
//!
//! The scan follows the reference (`reference-behaviour.md` §4.1): only top-level spans are
//! candidates (a nested object is never tried on its own), `}` at depth 0 is ignored, square
//! brackets are not tracked, code fences are irrelevant, and candidates are tried last to first.
//! It differs in two places, both on purpose:
//!
//! | input | reference | geode | why |
//! |---|---|---|---|
//! | `The 5" screen {"a": 1}` | None | `{"a": 1}` | string state is tracked only inside braces, so a quote in prose cannot invert it |
//! | `\"{"a":1}` | None | `{"a":1}` | same: a backslash or quote outside braces is prose |
//! | `{"a": NaN}` | `{"a": NaN}` | None | serde_json follows RFC 8259: no `NaN`/`Infinity` |
//!
//! Parsing is serde_json's: duplicate keys keep the last value (as Python does), nesting deeper than
//! 128 levels is a parse error (so a 10 MB `{{{…}}}` is refused after 128 levels, not recursed into).
//! [`find_last_object`] checks syntax only (no `Value` is built); it accepts numbers such as `1e400`
//! that [`extract_last_object`] refuses because they do not fit an `f64`.

use memchr::{memchr, memchr2, memchr3};
use serde::de::IgnoredAny;
use serde_json::Value;
use std::ops::Range;

/// The byte ranges of every top-level balanced `{…}` span in `text`, in order.
///
/// Inside braces, `"` opens and closes strings and `\` escapes the next byte inside a string;
/// outside braces every byte but `{` is prose. A span that never closes ends the scan (nothing
/// after it can be at depth 0).
pub fn top_level_spans(text: &str) -> Vec<Range<usize>> {
    let b = text.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while let Some(start) = find(b, i, |c| c == b'{', |h| memchr(b'{', h)) {
        match span_end(b, start) {
            Some(end) => {
                spans.push(start..end);
                i = end;
            }
            None => break,
        }
    }
    spans
}

/// How many bytes to look at one by one before handing the search to memchr: dense inputs
/// (`{{{{`, `""""`, short JSON strings) then cost no memchr call per byte.
const SHORT_SCAN: usize = 16;

/// Index of the first byte at or after `from` for which `hit` holds: a short byte-wise look, then
/// memchr (`far`) for the rest.
#[inline(always)]
fn find(
    b: &[u8],
    from: usize,
    hit: impl Fn(u8) -> bool,
    far: impl Fn(&[u8]) -> Option<usize>,
) -> Option<usize> {
    let near = b.get(from..)?;
    let stop = near.len().min(SHORT_SCAN);
    match near[..stop].iter().position(|&c| hit(c)) {
        Some(k) => Some(from + k),
        None => far(&near[stop..]).map(|k| from + stop + k),
    }
}

/// The end (exclusive) of the balanced span opening at `start` (a `{`), or `None` if it never closes.
fn span_end(b: &[u8], start: usize) -> Option<usize> {
    let mut depth = 1usize;
    let mut j = start + 1;
    loop {
        let k = find(
            b,
            j,
            |c| matches!(c, b'{' | b'}' | b'"'),
            |h| memchr3(b'{', b'}', b'"', h),
        )?;
        match b[k] {
            b'"' => j = string_end(b, k + 1)?,
            b'{' => {
                depth += 1;
                j = k + 1;
            }
            _ => {
                depth -= 1;
                j = k + 1;
                if depth == 0 {
                    return Some(j);
                }
            }
        }
    }
}

/// The index just past the closing quote of a string whose content starts at `j`.
fn string_end(b: &[u8], mut j: usize) -> Option<usize> {
    loop {
        let q = find(
            b,
            j,
            |c| matches!(c, b'"' | b'\\'),
            |h| memchr2(b'"', b'\\', h),
        )?;
        if b[q] == b'"' {
            return Some(q + 1);
        }
        j = q + 2;
    }
}

/// Tries the top-level spans of `text` from last to first with `parse`; returns the first span
/// `parse` accepts, with what it returned. Each span is given to `parse` at most once.
pub fn last_object_with<'a, T>(
    text: &'a str,
    mut parse: impl FnMut(&'a str) -> Option<T>,
) -> Option<(&'a str, T)> {
    top_level_spans(text).into_iter().rev().find_map(|r| {
        let slice = text.get(r)?;
        parse(slice).map(|t| (slice, t))
    })
}

/// Finds the last balanced top-level `{…}` in `text` that parses as a JSON object, returning
/// the exact substring and the parsed value.
///
/// ```
/// use geode::schema::extract::extract_last_object;
/// let (s, v) = extract_last_object("Here:\n```json\n{\"a\": 1}\n```\nDone").unwrap();
/// assert_eq!(s, "{\"a\": 1}");
/// assert_eq!(v["a"], 1);
/// assert!(extract_last_object("no braces").is_none());
/// ```
pub fn extract_last_object(text: &str) -> Option<(&str, Value)> {
    last_object_with(text, |s| match serde_json::from_str::<Value>(s) {
        Ok(v @ Value::Object(_)) => Some(v),
        _ => None,
    })
}

/// Like [`extract_last_object`] but checks JSON syntax only, without building a `Value`
/// (several times faster on large answers).
pub fn find_last_object(text: &str) -> Option<&str> {
    last_object_with(text, |s| serde_json::from_str::<IgnoredAny>(s).ok()).map(|(s, _)| s)
}

#[cfg(test)]
#[path = "extract_tests.rs"]
mod tests;
