//! Finding the answer in model text: GEODE's balanced-object rule for object roots, and
//! the any-root rule for the others.
//!
//! [`extract_answer`] (and [`find_answer`], syntax only) picks the rule from the schema's
//! [`AnswerRoot`](super::root::AnswerRoot). The rule, one row per step, first match wins (each
//! row has a test named after it in `extract_value_tests.rs`, `row_*`):
//!
//! | root | step | candidate | accepted when |
//! |---|---|---|---|
//! | every root | 0 | the whole answer, trimmed of JSON whitespace | it parses as one JSON value, of any type (the validator then judges the type) |
//! | object | 1 | the last top-level `{…}` span, then earlier ones (GEODE's rule, below) | it parses as an object |
//! | untyped (`{}`, `{"required":[…]}`) | 1 | each fenced code block tagged `json` or untagged, last to first | its trimmed content parses as JSON |
//! | untyped | 2 | the object rule | it parses as an object |
//! | untyped | 3 | each top-level balanced `[…]` span, last to first (an untyped root may be an array by what it says, `{"items": …}`) | it parses as an array |
//! | any other | 1 | the whole answer, trimmed of JSON whitespace | it parses as a value of an allowed type |
//! | any other | 2 | each fenced code block tagged `json` or untagged, last to first | its trimmed content parses as a value of an allowed type |
//! | any other, admitting arrays | 3 | each top-level balanced `[…]` or `{…}` span (both kinds count as one depth), last to first | it parses as a value of an allowed type |
//! | any other, admitting objects but not arrays | 3 | the object rule above | it parses as an object |
//! | any other, admitting only scalars | – | nothing else: a bare `42` or `true` inside prose is not told from prose | – |
//!
//! The object rule (GEODE's `_last_balanced_json_object`,
//! docs/reference.md#validation-and-the-one-retry):
//! In: any text (a model's final answer). Out: the **last top-level `{…}` span that parses as JSON**,
//! as the exact substring, or `None`. Guarantees: one linear scan (memchr between objects, 64-byte
//! branch-free SWAR blocks inside them), no recursion, every candidate span parsed at most once
//! and spans are disjoint, so the total work is linear in the input; never panics.
//!
//! The scan follows GEODE's: only top-level spans are
//! candidates (a nested object is never tried on its own), `}` at depth 0 is ignored, square
//! brackets are not tracked, code fences are irrelevant, and candidates are tried last to first.
//! It differs in these rows of GEODE's edge-case table, all on purpose:
//!
//! | input | GEODE | geode | why |
//! |---|---|---|---|
//! | `The 5" screen {"a": 1}` | None | `{"a": 1}` | string state is tracked only inside braces, so a quote in prose cannot invert it |
//! | `\"{"a":1}` | None | `{"a":1}` | same: a backslash or quote outside braces is prose |
//! | `{"a": NaN}` | `{"a": NaN}` | None | serde_json follows RFC 8259: no `NaN`/`Infinity` |
//!
//! Parsing is serde_json's: duplicate keys keep the last value (as Python does), nesting deeper than
//! 128 levels is a parse error (so a 10 MB `{{{…}}}` is refused after 128 levels, not recursed into).
//! [`find_last_object`] checks syntax only (no `Value` is built); it accepts numbers such as `1e400`
//! that [`extract_last_object`] refuses because they do not fit an `f64`.

use memchr::memchr;
use serde_json::Value;
use std::ops::Range;

/// The byte ranges of every top-level balanced `{…}` span in `text`, in order.
///
/// Inside braces, `"` opens and closes strings and `\\` escapes the next byte inside a string;
/// outside braces every byte but `{` is prose. A span that never closes ends the scan (nothing
/// after it can be at depth 0).
///
/// Between spans the next `{` is found with memchr. Inside spans, 64-byte blocks are done whole:
/// escaped bytes come from the backslash runs, string state is the running XOR of the unescaped
/// quote bits, and only braces outside strings are visited, several spans per block if need be.
/// That treats every backslash as an escape, which equals the rule unless an escaping backslash
/// sits outside a string (not JSON anyway): such a block, and the tail, go byte by byte.
pub fn top_level_spans(text: &str) -> Vec<Range<usize>> {
    let b = text.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    'prose: while let Some(first) = next_open_brace(b, i) {
        let mut start = first;
        let mut st = Scan::open();
        i = start + 1;
        let mut bytewise = false;
        'span: while i < b.len() {
            let block = match b.get(i..i + BLOCK) {
                Some(s) if !bytewise => <&[u8; BLOCK]>::try_from(s).ok(),
                _ => None,
            };
            bytewise = false;
            if let Some(block) = block {
                let (quotes, braces, backslashes) = classify(block);
                let mut carry_escape = u64::from(st.strings.escape);
                let escaped = escaped_bits(backslashes, &mut carry_escape);
                // Backslashes that escape the next byte, and quotes that are not escaped.
                let starters = backslashes & !escaped;
                let quotes = quotes & !escaped;
                let carry = if st.strings.in_string { u64::MAX } else { 0 };
                let mut valid = u64::MAX;
                let mut inside = prefix_xor(quotes) ^ carry;
                // Escaping everywhere equals the rule (escaping only in strings) unless an
                // escaping backslash sits outside a string: then go byte by byte.
                if starters & !inside == 0 {
                    let mut structural = braces & !inside;
                    while structural != 0 {
                        let k = structural.trailing_zeros() as usize;
                        structural &= structural - 1;
                        if block[k] == b'{' {
                            st.depth += 1;
                            continue;
                        }
                        st.depth -= 1;
                        if st.depth > 0 {
                            continue;
                        }
                        spans.push(start..i + k + 1);
                        // Depth 0 for the rest of the block: the next `{` opens a fresh span.
                        let mut opens = braces & above(k);
                        while opens != 0 && block[opens.trailing_zeros() as usize] != b'{' {
                            opens &= opens - 1;
                        }
                        if opens == 0 {
                            i += BLOCK;
                            continue 'prose;
                        }
                        let s = opens.trailing_zeros() as usize;
                        start = i + s;
                        st = Scan::open();
                        valid = above(s);
                        inside = prefix_xor(quotes & valid);
                        if starters & valid & !inside != 0 {
                            i = start + 1;
                            bytewise = true;
                            continue 'span;
                        }
                        structural = braces & !inside & valid;
                    }
                    st.strings = Strings {
                        in_string: (inside & valid) >> 63 != 0,
                        escape: carry_escape != 0,
                    };
                    i += BLOCK;
                    continue;
                }
            }
            let end = (i + BLOCK).min(b.len());
            for (k, &c) in b.iter().enumerate().take(end).skip(i) {
                if st.step(c) {
                    spans.push(start..k + 1);
                    i = k + 1;
                    continue 'prose;
                }
            }
            i = end;
        }
        break;
    }
    spans
}

/// The index of the first `{` at or after `from`.
#[inline(always)]
pub(crate) fn next_open_brace(b: &[u8], from: usize) -> Option<usize> {
    find(b, from, |c| c == b'{', |h| memchr(b'{', h))
}

/// The index just after the top-level span that opens at `b[open]` (a `{`), by the rule of
/// [`top_level_spans`], byte by byte; `None` when it never closes.
pub(crate) fn span_end(b: &[u8], open: usize) -> Option<usize> {
    let mut st = Scan::open();
    let k = b.get(open + 1..)?.iter().position(|&c| st.step(c))?;
    Some(open + 1 + k + 1)
}

/// How many bytes to look at one by one before handing the search for `{` to memchr: dense
/// inputs (`{}{}{}`) then cost no memchr call per span.
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

/// Bytes classified at once by [`classify`].
const BLOCK: usize = 64;
const ONES: u64 = 0x0101_0101_0101_0101;
const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;

/// Where a byte-by-byte walk over JSON text stands with respect to strings: `"` opens and
/// closes one, `\\` escapes the next byte inside one.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Strings {
    in_string: bool,
    escape: bool,
}

impl Strings {
    /// Consumes `c`; true when it is structural: outside every string, and not a quote.
    #[inline(always)]
    pub(crate) fn structural(&mut self, c: u8) -> bool {
        if self.escape {
            self.escape = false;
        } else if self.in_string {
            match c {
                b'\\' => self.escape = true,
                b'"' => self.in_string = false,
                _ => {}
            }
        } else if c == b'"' {
            self.in_string = true;
        } else {
            return true;
        }
        false
    }
}

/// The byte-by-byte state inside a span.
struct Scan {
    depth: usize,
    strings: Strings,
}

impl Scan {
    /// The state just after a span's opening `{`.
    fn open() -> Self {
        Self {
            depth: 1,
            strings: Strings::default(),
        }
    }

    /// Consumes one byte; true when it closed the span.
    #[inline(always)]
    fn step(&mut self, c: u8) -> bool {
        if self.strings.structural(c) {
            match c {
                b'{' => self.depth += 1,
                b'}' => {
                    self.depth -= 1;
                    return self.depth == 0;
                }
                _ => {}
            }
        }
        false
    }
}

/// The bits strictly above bit `k`.
#[inline(always)]
fn above(k: usize) -> u64 {
    u64::MAX.checked_shl(k as u32 + 1).unwrap_or(0)
}

/// The high bit of every byte of `w` equal to `c` (exact, no false positives).
#[inline(always)]
fn eq_bytes(w: u64, c: u8) -> u64 {
    let x = w ^ (ONES * u64::from(c));
    !(((x & LOW7).wrapping_add(LOW7)) | x | LOW7)
}

/// Packs the high bit of each byte into the low 8 bits (byte k → bit k).
#[inline(always)]
fn movemask(m: u64) -> u64 {
    ((m >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56
}

/// Bit k set where `block[k]` is a quote, a brace, a backslash (three masks). Eight bytes at a
/// time (SWAR), no branches.
#[inline(always)]
fn classify(block: &[u8; BLOCK]) -> (u64, u64, u64) {
    let (mut quotes, mut braces, mut backslash) = (0u64, 0u64, 0u64);
    for (w, chunk) in block.chunks_exact(8).enumerate() {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        quotes |= movemask(eq_bytes(x, b'"')) << (8 * w);
        braces |= movemask(eq_bytes(x, b'{') | eq_bytes(x, b'}')) << (8 * w);
        backslash |= movemask(eq_bytes(x, b'\\')) << (8 * w);
    }
    (quotes, braces, backslash)
}

/// The bytes escaped by a backslash, treating every backslash as an escape (simdjson's
/// branch-free odd-run trick). `carry` is 1 when the block's first byte is escaped; on return it
/// says the same of the next block.
#[inline(always)]
fn escaped_bits(backslash: u64, carry: &mut u64) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let backslash = backslash & !*carry;
    let follows_escape = (backslash << 1) | *carry;
    let odd_starts = backslash & !EVEN & !follows_escape;
    let (even_runs, overflow) = odd_starts.overflowing_add(backslash);
    *carry = u64::from(overflow);
    (EVEN ^ (even_runs << 1)) & follows_escape
}

/// Bit k of the result is the XOR of bits 0..=k of `x`: with quote bits in, "inside a string".
#[inline(always)]
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// Tries the top-level spans of `text` from last to first with `parse`; returns the first span
/// `parse` accepts, with what it returned. Each span is given to `parse` at most once.
///
/// Fast path: when the text trimmed of JSON whitespace is `{…}` and `parse` accepts it whole,
/// that is the answer without scanning for spans (a valid JSON object is exactly one top-level
/// span, so the rule gives the same text). Most answers of a strict provider are just that.
pub fn last_object_with<'a, T>(
    text: &'a str,
    parse: impl FnMut(&'a str) -> Option<T>,
) -> Option<(&'a str, T)> {
    last_object_after(text, false, parse)
}

/// [`last_object_with`], told whether `parse` has already refused the whole trimmed text (so
/// that it is not parsed twice).
pub(super) fn last_object_after<'a, T>(
    text: &'a str,
    whole_refused: bool,
    mut parse: impl FnMut(&'a str) -> Option<T>,
) -> Option<(&'a str, T)> {
    let whole = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'));
    let tried_whole = whole.starts_with('{') && whole.ends_with('}');
    if tried_whole
        && !whole_refused
        && let Some(t) = parse(whole)
    {
        return Some((whole, t));
    }
    top_level_spans(text).into_iter().rev().find_map(|r| {
        let slice = text.get(r)?;
        if tried_whole && slice.len() == whole.len() {
            return None; // the whole text, already refused
        }
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
    last_object_with(text, |s| {
        serde_json::from_str::<Value>(s)
            .ok()
            .filter(Value::is_object)
    })
}

/// Why [`extract_last_object`] found no object in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NoObject {
    /// The text holds no balanced top-level `{…}` span.
    NoBalancedSpan,
    /// Balanced spans exist but none parses; `message` is the parser's reason for the last one
    /// (e.g. `number out of range at line 1 column 9` for `{"a": 1e400}`).
    Unparsable {
        /// serde_json's message, with line and column inside the span.
        message: String,
    },
}

impl std::fmt::Display for NoObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoBalancedSpan => f.write_str("no balanced JSON object in the text"),
            Self::Unparsable { message } => {
                write!(f, "the last balanced {{…}} is not valid JSON: {message}")
            }
        }
    }
}

/// Says why `text` holds no object [`extract_last_object`] accepts (call it after that returned
/// `None`): no balanced span at all, or the parser's reason for the last span.
///
/// ```
/// use geode::schema::extract::{explain_no_object, NoObject};
/// assert_eq!(explain_no_object("prose only"), NoObject::NoBalancedSpan);
/// let why = explain_no_object(r#"{"a": 1e400}"#).to_string();
/// assert!(why.contains("number out of range"), "{why}");
/// ```
pub fn explain_no_object(text: &str) -> NoObject {
    let Some(last) = top_level_spans(text).pop() else {
        return NoObject::NoBalancedSpan;
    };
    let span = text.get(last).unwrap_or_default();
    match serde_json::from_str::<Value>(span) {
        Err(e) => NoObject::Unparsable {
            message: e.to_string(),
        },
        // Not reached after `extract_last_object` returned `None`; said plainly if it is.
        Ok(_) => NoObject::Unparsable {
            message: "it parses; call this only when extraction failed".to_owned(),
        },
    }
}

/// Like [`extract_last_object`] but checks JSON syntax only, without building a `Value`
/// (several times faster on large answers).
pub fn find_last_object(text: &str) -> Option<&str> {
    last_valid_object(text, &[]).map(|(s, _)| s)
}

/// GEODE's object rule (this module's docs) with syntax checking only, in
/// one pass: the last top-level `{…}` span of `text` that is valid JSON, with the `required`
/// names present among its keys. Each span is checked as it is met (a valid object is exactly one
/// span: its braces balance where the value ends), and only a span that fails is walked again,
/// byte by byte, to find where it ends. So a text that is one object, or holds one inside prose
/// and a fence, is read once, where finding the spans first and checking the last read it twice.
///
/// ```
/// use geode::schema::extract::last_valid_object;
/// let text = r#"Plan {not json}. Answer: {"a": {"b": 1}} and {"b": 2} {broken"#;
/// assert_eq!(last_valid_object(text, &["a", "b"]), Some((r#"{"b": 2}"#, vec![false, true])));
/// assert_eq!(last_valid_object("{nope}", &[]), None);
/// ```
pub fn last_valid_object<'a>(text: &'a str, required: &[&str]) -> Option<(&'a str, Vec<bool>)> {
    let b = text.as_bytes();
    let mut values = super::json_scan::Values::default();
    let (mut seen, mut best_seen) = (vec![false; required.len()], vec![false; required.len()]);
    let mut best = None;
    let mut i = 0;
    while let Some(open) = next_open_brace(b, i) {
        seen.iter_mut().for_each(|s| *s = false);
        match values.end_of(b, open, required, &mut seen) {
            Some(end) => {
                best = Some(open..end);
                std::mem::swap(&mut seen, &mut best_seen);
                i = end;
            }
            None => match span_end(b, open) {
                Some(end) => i = end,
                None => break,
            },
        }
    }
    Some((text.get(best?)?, best_seen))
}

mod any_root;
pub use any_root::{
    bracket_spans, extract_answer, extract_answer_tape, fenced_blocks, find_answer, last_value_with,
};
pub(crate) use any_root::{extract_typed_answer, whole_or_fenced};

#[cfg(test)]
mod tests;

#[cfg(test)]
mod any_root_tests;
