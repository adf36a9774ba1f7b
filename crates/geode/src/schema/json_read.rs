//! The one reader of JSON text with serde_json's verdict: a single pass that reports each value
//! to a [`Sink`], in document order, and refuses what `serde_json::from_str::<Value>` refuses
//! (see the table in [`super::tape`]). Two sinks read through it: the [`super::tape::Tape`]
//! builder, and the strict check's one-pass certifier ([`super::strict::check_strict_text`]).
//!
//! It shares its lexing with [`super::json_scan`] (whitespace, strings eight bytes at a time,
//! literals, numbers) and adds what serde_json's `Value` build checks on top of the grammar: the
//! nesting limit, numbers that fit an `f64`, and `\u` escapes that pair their surrogates.

use super::json_scan::{literal, number_end, skip_ws, string_end_escaped};
use arrayvec::ArrayVec;

/// Deepest nesting a tape takes: serde_json's recursion limit (127 containers parse, 128 do not).
pub const MAX_TAPE_DEPTH: usize = 127;

/// Why a text is not a [`super::tape::Tape`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TapeError {
    /// The text is not one JSON value.
    #[error("not JSON: syntax error at byte {at}")]
    Syntax {
        /// Byte offset where the text stops being JSON.
        at: usize,
    },
    /// Containers nest deeper than [`MAX_TAPE_DEPTH`].
    #[error("JSON nests deeper than {MAX_TAPE_DEPTH} levels")]
    TooDeep,
    /// A number does not fit an `f64` (serde_json refuses it too).
    #[error("a JSON number is out of range")]
    NumberOutOfRange,
    /// The text is 4 GiB or more (entries hold 32-bit offsets).
    #[error("JSON text of 4 GiB or more")]
    TooLarge,
}

/// The JSON type of a tape entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `null`.
    Null,
    /// `false`.
    False,
    /// `true`.
    True,
    /// A number (kept as its text).
    Number,
    /// A string (kept as its text, decoded on demand).
    String,
    /// An array.
    Array,
    /// An object.
    Object,
}

/// Why [`read`] stopped before the end.
#[derive(Debug)]
pub(super) enum Stop<H> {
    /// The text is not JSON (or not JSON serde_json takes).
    Invalid(TapeError),
    /// The sink asked to stop, with its reason.
    Halted(H),
}

impl<H> From<TapeError> for Stop<H> {
    fn from(e: TapeError) -> Self {
        Self::Invalid(e)
    }
}

/// What [`read`] reports. `parent` is the tag [`Sink::open`] gave the innermost open container
/// ([`Sink::DOCUMENT`] for the root value); spans are byte ranges of the text (a string's without
/// its quotes).
pub(super) trait Sink {
    /// What the sink keeps of an open container.
    type Tag: Copy;
    /// Why the sink stops reading (`Infallible` for a sink that never does).
    type Halt;
    /// The `parent` of the root value.
    const DOCUMENT: Self::Tag;
    /// A container opens; the tag returned is given back as the `parent` of its children and to
    /// [`Sink::close`].
    fn open(&mut self, parent: Self::Tag, object: bool) -> Result<Self::Tag, Self::Halt>;
    /// The container tagged `tag` closes, holding `count` elements (members).
    fn close(&mut self, tag: Self::Tag, object: bool, count: u32) -> Result<(), Self::Halt>;
    /// An object member's key, before its value.
    fn key(
        &mut self,
        parent: Self::Tag,
        a: usize,
        b: usize,
        escaped: bool,
    ) -> Result<(), Self::Halt>;
    /// A scalar value of `kind` (`escaped` only for a string holding an escape).
    fn scalar(
        &mut self,
        parent: Self::Tag,
        kind: Kind,
        a: usize,
        b: usize,
        escaped: bool,
    ) -> Result<(), Self::Halt>;
}

/// An open container: its sink tag, its values so far, and whether it is an object.
#[derive(Clone, Copy)]
struct Open<T> {
    tag: T,
    count: u32,
    object: bool,
}

/// Reads `text` (exactly one JSON value, whitespace around it allowed) into `sink`.
pub(super) fn read<S: Sink>(text: &str, sink: &mut S) -> Result<(), Stop<S::Halt>> {
    let b = text.as_bytes();
    if u32::try_from(b.len()).is_err() {
        return Err(TapeError::TooLarge.into());
    }
    let syntax = |at: usize| TapeError::Syntax { at };
    // On the call stack, uninitialised until used: the depth limit bounds it.
    let mut stack: ArrayVec<Open<S::Tag>, MAX_TAPE_DEPTH> = ArrayVec::new();
    let mut parent = S::DOCUMENT;
    let mut i = skip_ws(b, 0);
    // Read one value at `i`, then loop on what follows it.
    'value: loop {
        match *b.get(i).ok_or_else(|| syntax(i))? {
            open @ (b'{' | b'[') => {
                if stack.len() == MAX_TAPE_DEPTH {
                    return Err(TapeError::TooDeep.into());
                }
                let object = open == b'{';
                let tag = sink.open(parent, object).map_err(Stop::Halted)?;
                let close = if object { b'}' } else { b']' };
                i = skip_ws(b, i + 1);
                if b.get(i) == Some(&close) {
                    sink.close(tag, object, 0).map_err(Stop::Halted)?;
                    i += 1;
                } else {
                    // Room is checked above (before the sink hears of it).
                    stack
                        .try_push(Open {
                            tag,
                            count: 0,
                            object,
                        })
                        .map_err(|_| TapeError::TooDeep)?;
                    parent = tag;
                    if object {
                        i = key(b, i, parent, sink)?;
                    }
                    continue 'value;
                }
            }
            b'"' => {
                let (end, escaped) = string(b, i)?;
                sink.scalar(parent, Kind::String, i + 1, end - 1, escaped)
                    .map_err(Stop::Halted)?;
                i = end;
            }
            b't' => i = word(b, i, b"true", Kind::True, parent, sink)?,
            b'f' => i = word(b, i, b"false", Kind::False, parent, sink)?,
            b'n' => i = word(b, i, b"null", Kind::Null, parent, sink)?,
            _ => {
                let end = number(text, i)?;
                sink.scalar(parent, Kind::Number, i, end, false)
                    .map_err(Stop::Halted)?;
                i = end;
            }
        }
        // After a value: count it in its container, then close containers or go on to the
        // next member.
        loop {
            let Some(top) = stack.last_mut() else {
                break 'value;
            };
            top.count += 1;
            let Open { tag, count, object } = *top;
            i = skip_ws(b, i);
            match (object, *b.get(i).ok_or_else(|| syntax(i))?) {
                (true, b',') => {
                    i = key(b, skip_ws(b, i + 1), parent, sink)?;
                    continue 'value;
                }
                (false, b',') => {
                    i = skip_ws(b, i + 1);
                    continue 'value;
                }
                (true, b'}') | (false, b']') => {
                    stack.pop();
                    parent = stack.last().map_or(S::DOCUMENT, |o| o.tag);
                    sink.close(tag, object, count).map_err(Stop::Halted)?;
                    i += 1;
                }
                _ => return Err(syntax(i).into()),
            }
        }
    }
    if skip_ws(b, i) != b.len() {
        return Err(syntax(i).into());
    }
    Ok(())
}

/// A string at `i` (its opening quote): the index after its closing quote, and whether it
/// holds an escape.
#[inline(always)]
fn string(b: &[u8], i: usize) -> Result<(usize, bool), TapeError> {
    let (end, escaped) = string_end_escaped(b, i + 1).ok_or(TapeError::Syntax { at: i })?;
    if escaped && !surrogates_pair(&b[i + 1..end - 1]) {
        return Err(TapeError::Syntax { at: i });
    }
    Ok((end, escaped))
}

/// An object key and its `:` at `i`; returns the index after the colon's whitespace.
#[inline(always)]
fn key<S: Sink>(b: &[u8], i: usize, parent: S::Tag, sink: &mut S) -> Result<usize, Stop<S::Halt>> {
    if b.get(i) != Some(&b'"') {
        return Err(TapeError::Syntax { at: i }.into());
    }
    let (end, escaped) = string(b, i)?;
    sink.key(parent, i + 1, end - 1, escaped)
        .map_err(Stop::Halted)?;
    let colon = skip_ws(b, end);
    if b.get(colon) != Some(&b':') {
        return Err(TapeError::Syntax { at: colon }.into());
    }
    Ok(skip_ws(b, colon + 1))
}

/// `true`, `false` or `null` at `i`.
fn word<S: Sink>(
    b: &[u8],
    i: usize,
    word: &[u8],
    kind: Kind,
    parent: S::Tag,
    sink: &mut S,
) -> Result<usize, Stop<S::Halt>> {
    let end = literal(b, i, word).ok_or(TapeError::Syntax { at: i })?;
    sink.scalar(parent, kind, i, end, false)
        .map_err(Stop::Halted)?;
    Ok(end)
}

/// A number at `i`; returns the index after it.
fn number(text: &str, i: usize) -> Result<usize, TapeError> {
    let end = number_end(text.as_bytes(), i).ok_or(TapeError::Syntax { at: i })?;
    let digits = &text.as_bytes()[i..end];
    // An integer of up to 19 digits fits u64/i64; anything else is read as f64, as serde_json
    // does, and must be finite.
    let short_integer = digits.len() <= 19 && !digits.iter().any(|c| b".eE".contains(c));
    if !short_integer && !text[i..end].parse::<f64>().is_ok_and(|f| f.is_finite()) {
        return Err(TapeError::NumberOutOfRange);
    }
    Ok(end)
}

/// Byte equality for the short keys and names of JSON documents, without a `memcmp` call: up to
/// 16 bytes are compared as two (overlapping) words, shorter ones settle on their length and end
/// bytes first.
#[inline(always)]
pub(super) fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], at: usize| {
        s.get(at..at + 8)
            .and_then(|w| <[u8; 8]>::try_from(w).ok())
            .map_or(0, u64::from_le_bytes)
    };
    match n {
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        0..8 => a.last() == b.last() && a.first() == b.first() && a == b,
        _ => a == b,
    }
}

/// True when every `\u` escape of a string's raw content is a scalar value or a high surrogate
/// followed by a low one (serde_json refuses a lone surrogate when it builds a `String`).
fn surrogates_pair(raw: &[u8]) -> bool {
    let hex = |at: usize| -> Option<u32> {
        let digits = std::str::from_utf8(raw.get(at..at + 4)?).ok()?;
        u32::from_str_radix(digits, 16).ok()
    };
    let mut i = 0;
    while i < raw.len() {
        if raw[i] != b'\\' {
            i += 1;
            continue;
        }
        if raw.get(i + 1) != Some(&b'u') {
            i += 2;
            continue;
        }
        let Some(unit) = hex(i + 2) else { return false };
        i += 6;
        match unit {
            0xD800..=0xDBFF => {
                let low = (raw.get(i..i + 2) == Some(b"\\u"))
                    .then(|| hex(i + 2))
                    .flatten();
                if !matches!(low, Some(0xDC00..=0xDFFF)) {
                    return false;
                }
                i += 6;
            }
            0xDC00..=0xDFFF => return false,
            _ => {}
        }
    }
    true
}
