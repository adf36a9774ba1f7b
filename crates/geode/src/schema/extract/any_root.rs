//! Extraction for any root (part of [`super`], in its own file for size): the rule for
//! [`AnswerRoot::Values`] and [`AnswerRoot::Any`] roots, and [`extract_answer`] /
//! [`find_answer`] that pick the rule.

use super::{find_last_object, last_object_after};
use crate::schema::root::{AnswerRoot, TypeSet};
use crate::schema::tape::Tape;
use memchr::memmem;
use serde_json::Value;
use std::ops::Range;

/// The answer of `text` for a schema root, by the rule of the module table: the whole text when
/// it is one JSON value, else for [`AnswerRoot::Object`] GEODE's last balanced object
/// ([`super::extract_last_object`]), else the root's own steps. Returns the exact substring and
/// the parsed value.
///
/// ```
/// use geode::schema::extract::extract_answer;
/// use geode::schema::root::{AnswerRoot, TypeSet};
/// let ints = AnswerRoot::Values(TypeSet::ARRAY);
/// let (s, v) = extract_answer("Sure: [1, 2, 3] as asked.", ints).unwrap();
/// assert_eq!((s, v), ("[1, 2, 3]", serde_json::json!([1, 2, 3])));
/// assert!(extract_answer("Sure: 42", ints).is_none());
/// ```
pub fn extract_answer(text: &str, root: AnswerRoot) -> Option<(&str, Value)> {
    extract_with(
        text,
        root,
        Whole::AnyType,
        |s| serde_json::from_str(s).ok(),
        TypeSet::of,
    )
}

/// [`extract_answer`] for the shallow check, which judges no type: a whole answer of a type the
/// root does not admit is passed over for the root's own steps (GEODE's rule finds the object
/// in `[{"a": 1}]`), so that what is found is always of the root's type.
pub(crate) fn extract_typed_answer(text: &str, root: AnswerRoot) -> Option<(&str, Value)> {
    extract_with(
        text,
        root,
        Whole::OfRootType,
        |s| serde_json::from_str(s).ok(),
        TypeSet::of,
    )
}

/// What the whole trimmed text must be to be the answer as it is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Whole {
    /// Any JSON value (the validator judges its type).
    AnyType,
    /// A value of one of the root's types.
    OfRootType,
}

/// [`extract_answer`] with the answer read into a [`Tape`] instead of a `Value`: the same
/// answer is picked (a tape takes exactly what serde_json takes), with no allocation per value.
///
/// ```
/// use geode::schema::extract::extract_answer_tape;
/// use geode::schema::root::AnswerRoot;
/// let (s, tape) = extract_answer_tape("Done: {\"a\": [1]} ok", AnswerRoot::Object).unwrap();
/// assert_eq!((s, tape.root().len()), ("{\"a\": [1]}", 1));
/// ```
pub fn extract_answer_tape(text: &str, root: AnswerRoot) -> Option<(&str, Tape<'_>)> {
    extract_with(
        text,
        root,
        Whole::AnyType,
        |s| Tape::parse(s).ok(),
        |t| TypeSet::of_node(t.root()),
    )
}

/// The answer of `text` for a schema root, each candidate read by `parse` and kept when its
/// type (`type_of`) fits the root: the one rule behind [`extract_answer`] (a `Value`) and
/// [`extract_answer_tape`] (a tape). A text that is one JSON value as a whole is that value
/// whatever its type (the validator then says whether the type fits), so that piping a value
/// into `geode validate` and validating it in memory agree.
pub(super) fn extract_with<'a, T>(
    text: &'a str,
    root: AnswerRoot,
    whole_rule: Whole,
    parse: impl Fn(&'a str) -> Option<T>,
    type_of: impl Fn(&T) -> TypeSet,
) -> Option<(&'a str, T)> {
    let whole = text.trim_matches(is_json_space);
    let admitted = match whole_rule {
        Whole::AnyType => TypeSet::ALL,
        Whole::OfRootType => root.types(),
    };
    let tried = first_byte_fits(whole, admitted);
    if tried && let Some(t) = parse(whole).filter(|t| admitted.contains(type_of(t))) {
        return Some((whole, t));
    }
    let object = |s: &'a str| parse(s).filter(|t| type_of(t) == TypeSet::OBJECT);
    match root {
        AnswerRoot::Object => last_object_after(text, tried, object),
        // An untyped root may be an array by what it says (`{"items": ...}`): the last array
        // in the prose is taken when no object is there.
        AnswerRoot::Any => fenced_value(text, &parse)
            .or_else(|| last_object_after(text, tried, object))
            .or_else(|| {
                last_value_after(text, TypeSet::ARRAY, tried, |s| {
                    parse(s).filter(|t| type_of(t) == TypeSet::ARRAY)
                })
            }),
        AnswerRoot::Values(types) => last_value_after(text, types, tried, |s| {
            parse(s).filter(|t| types.contains(type_of(t)))
        }),
    }
}

/// The whole trimmed text when `parse` takes it, else [`fenced_value`]: the steps of an untyped
/// root before the object rule.
pub(crate) fn whole_or_fenced<'a, T>(
    text: &'a str,
    parse: impl Fn(&'a str) -> Option<T>,
) -> Option<(&'a str, T)> {
    let whole = text.trim_matches(is_json_space);
    if first_byte_fits(whole, TypeSet::ALL)
        && let Some(t) = parse(whole)
    {
        return Some((whole, t));
    }
    fenced_value(text, parse)
}

/// The last fenced `json` (or untagged) block whose trimmed content `parse` takes.
fn fenced_value<'a, T>(
    text: &'a str,
    parse: impl Fn(&'a str) -> Option<T>,
) -> Option<(&'a str, T)> {
    fenced_blocks(text).into_iter().rev().find_map(|r| {
        let block = text.get(r)?.trim_matches(is_json_space);
        parse(block).map(|t| (block, t))
    })
}

/// Like [`extract_answer`] but checks syntax and type only, without building a `Value`.
pub fn find_answer(text: &str, root: AnswerRoot) -> Option<&str> {
    let scan = |s: &str| crate::schema::json_scan::scan_keys(s, &[]);
    let whole = text.trim_matches(is_json_space);
    let tried = first_byte_fits(whole, TypeSet::ALL);
    if tried && scan(whole).is_some() {
        return Some(whole);
    }
    match root {
        AnswerRoot::Object => find_last_object(text),
        AnswerRoot::Any => fenced_value(text, scan)
            .map(|(s, _)| s)
            .or_else(|| find_last_object(text))
            .or_else(|| {
                last_value_after(text, TypeSet::ARRAY, tried, |s| {
                    scan(s).filter(|_| s.starts_with('['))
                })
                .map(|(s, _)| s)
            }),
        AnswerRoot::Values(types) => last_value_after(text, types, tried, scan).map(|(s, _)| s),
    }
}

/// The rule for a non-object root, with `parse` deciding whether a candidate is accepted (it is
/// only called on candidates whose first byte already fits `types`). Candidates, in order: the
/// whole trimmed text, the fenced blocks last to first, the balanced spans last to first.
pub fn last_value_with<'a, T>(
    text: &'a str,
    types: TypeSet,
    parse: impl FnMut(&'a str) -> Option<T>,
) -> Option<(&'a str, T)> {
    last_value_after(text, types, false, parse)
}

/// [`last_value_with`], told whether the whole trimmed text has already been refused.
fn last_value_after<'a, T>(
    text: &'a str,
    types: TypeSet,
    whole_refused: bool,
    mut parse: impl FnMut(&'a str) -> Option<T>,
) -> Option<(&'a str, T)> {
    let mut try_one = |s: &'a str| -> Option<(&'a str, T)> {
        if !first_byte_fits(s, types) {
            return None;
        }
        let t = parse(s)?;
        // A number's first byte cannot tell an integer from a fraction: look at its value.
        if matches!(s.as_bytes().first(), Some(b'-' | b'0'..=b'9'))
            && !serde_json::from_str::<Value>(s).is_ok_and(|v| types.admits(&v))
        {
            return None;
        }
        Some((s, t))
    };
    let whole = text.trim_matches(is_json_space);
    if !whole_refused && let Some(found) = try_one(whole) {
        return Some(found);
    }
    for r in fenced_blocks(text).into_iter().rev() {
        let block = text.get(r)?.trim_matches(is_json_space);
        if let Some(found) = try_one(block) {
            return Some(found);
        }
    }
    let containers = types.intersect(TypeSet::OBJECT.union(TypeSet::ARRAY));
    if containers == TypeSet::EMPTY {
        return None;
    }
    if containers == TypeSet::OBJECT {
        return last_object_after(text, whole_refused, |s| try_one(s).map(|(_, t)| t));
    }
    bracket_spans(text)
        .into_iter()
        .rev()
        .find_map(|r| try_one(text.get(r)?))
}

/// JSON's whitespace (and nothing else: a non-breaking space is not JSON).
fn is_json_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

/// True when the first byte of `s` can start a value of one of `types`.
fn first_byte_fits(s: &str, types: TypeSet) -> bool {
    let kind = match s.as_bytes().first() {
        Some(b'{') => TypeSet::OBJECT,
        Some(b'[') => TypeSet::ARRAY,
        Some(b'"') => TypeSet::STRING,
        Some(b't' | b'f') => TypeSet::BOOLEAN,
        Some(b'n') => TypeSet::NULL,
        Some(b'-' | b'0'..=b'9') => TypeSet::INTEGER.union(TypeSet::FRACTION),
        _ => return false,
    };
    types.intersect(kind) != TypeSet::EMPTY
}

/// The content ranges of the fenced code blocks of `text` whose info string is `json` (any
/// case) or empty, in order. A fence is three or more backticks at the start of a line (after
/// up to three spaces); it closes at the next such line with nothing after the backticks. An
/// unclosed block is not a block.
pub fn fenced_blocks(text: &str) -> Vec<Range<usize>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut open: Option<(usize, bool)> = None;
    let mut skip_to = 0;
    for pos in memmem::find_iter(b, b"```") {
        if pos < skip_to || !at_line_start(b, pos) {
            continue;
        }
        let ticks_end = pos + b[pos..].iter().take_while(|&&c| c == b'`').count();
        let line_end = memchr::memchr(b'\n', &b[ticks_end..]).map_or(b.len(), |k| ticks_end + k);
        let info = text[ticks_end..line_end].trim();
        skip_to = ticks_end;
        match open {
            None => {
                let json = info.is_empty() || info.eq_ignore_ascii_case("json");
                open = Some(((line_end + 1).min(b.len()), json));
            }
            Some((start, json)) if info.is_empty() => {
                if json && start <= pos {
                    out.push(start..pos);
                }
                open = None;
            }
            Some(_) => {}
        }
    }
    out
}

/// True when only up to three spaces separate `pos` from the start of its line.
fn at_line_start(b: &[u8], pos: usize) -> bool {
    let mut k = pos;
    while k > 0 && b[k - 1] == b' ' && pos - k < 3 {
        k -= 1;
    }
    k == 0 || b[k - 1] == b'\n'
}

/// The top-level balanced `[…]` and `{…}` spans of `text`, in order. `[`/`{` and `]`/`}` count
/// as one depth; quotes open strings only inside a span; a span that never closes ends the scan.
pub fn bracket_spans(text: &str) -> Vec<Range<usize>> {
    let b = text.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let Some(k) = memchr::memchr2(b'[', b'{', &b[i..]) else {
            break;
        };
        let start = i + k;
        let (mut depth, mut strings) = (0usize, super::Strings::default());
        let mut end = None;
        for (j, &c) in b.iter().enumerate().skip(start) {
            if !strings.structural(c) {
                continue;
            }
            match c {
                b'[' | b'{' => depth += 1,
                b']' | b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(j + 1);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else { break };
        spans.push(start..end);
        i = end;
    }
    spans
}
