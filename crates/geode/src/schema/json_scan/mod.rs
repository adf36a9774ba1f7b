//! A JSON syntax check that builds nothing: one pass, an explicit stack, strings skipped eight
//! bytes at a time. It answers what the shallow check needs (is this text one JSON value, and
//! which of these keys does its top-level object have) faster than a serde `IgnoredAny` parse.
//!
//! It accepts exactly RFC 8259 JSON (the grammar serde_json accepts: no `NaN`, no trailing
//! commas, no comments, no control characters in strings, escapes `\" \\ \/ \b \f \n \r \t \uXXXX`),
//! nesting without a depth limit (iterative). A `\u` escape is checked for four hex digits only
//! (a lone surrogate passes, as in serde_json's syntax-only parse). The tests hold it equal to
//! serde_json's verdict.

/// The `required` names present as keys of the top-level object of `text`, or `None` when
/// `text` is not exactly one JSON value (surrounding JSON whitespace allowed). For a top-level
/// value that is not an object, every entry is `true` (`required` applies to objects only).
pub fn scan_keys(text: &str, required: &[&str]) -> Option<Vec<bool>> {
    let b = text.as_bytes();
    let mut seen = vec![false; required.len()];
    let start = skip_ws(b, 0);
    let end = Values::default().end_of(b, start, required, &mut seen)?;
    if skip_ws(b, end) != b.len() {
        return None;
    }
    if b[start] != b'{' {
        seen.iter_mut().for_each(|s| *s = true);
    }
    Some(seen)
}

/// A reusable container stack for [`Values::end_of`] (one allocation for many values).
#[derive(Default)]
pub(crate) struct Values {
    stack: Vec<u8>,
}

impl Values {
    /// The index just after the one JSON value that starts at `i` (no whitespace skipped before
    /// or after it), or `None` when no valid value starts there. When that value is an object,
    /// its keys among `required` are marked in `seen`.
    pub(crate) fn end_of(
        &mut self,
        b: &[u8],
        mut i: usize,
        required: &[&str],
        seen: &mut [bool],
    ) -> Option<usize> {
        let stack = &mut self.stack;
        stack.clear();
        let top_is_object = b.get(i) == Some(&b'{');
        // Parse one value at `i`, then loop on what follows it.
        'value: loop {
            match *b.get(i)? {
                open @ (b'{' | b'[') => {
                    let close = if open == b'{' { b'}' } else { b']' };
                    i = skip_ws(b, i + 1);
                    if b.get(i) == Some(&close) {
                        i += 1;
                    } else {
                        stack.push(open);
                        if open == b'{' {
                            i = key(b, i, stack.len() == 1 && top_is_object, required, seen)?;
                        }
                        continue 'value;
                    }
                }
                b'"' => i = string_end(b, i + 1)?,
                b't' => i = literal(b, i, b"true")?,
                b'f' => i = literal(b, i, b"false")?,
                b'n' => i = literal(b, i, b"null")?,
                _ => i = number_end(b, i)?,
            }
            // After a value: close containers or go on to the next member.
            loop {
                let Some(&top) = stack.last() else {
                    return Some(i);
                };
                i = skip_ws(b, i);
                match (top, *b.get(i)?) {
                    (b'{', b',') => {
                        let at = skip_ws(b, i + 1);
                        let record = stack.len() == 1 && top_is_object;
                        i = key(b, at, record, required, seen)?;
                        continue 'value;
                    }
                    (b'[', b',') => {
                        i = skip_ws(b, i + 1);
                        continue 'value;
                    }
                    (b'{', b'}') | (b'[', b']') => {
                        stack.pop();
                        i += 1;
                    }
                    _ => return None,
                }
            }
        }
    }
}

/// Parses `"key"` and `:` at `i` (records the key when `record`); returns the index after `:`
/// and its whitespace.
#[inline(always)]
fn key(b: &[u8], i: usize, record: bool, required: &[&str], seen: &mut [bool]) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let (end, escaped) = string_end_escaped(b, i + 1)?;
    if record {
        let raw = &b[i + 1..end - 1];
        if escaped {
            let decoded: String = serde_json::from_slice(&b[i..end]).ok()?;
            mark(decoded.as_bytes(), required, seen);
        } else {
            mark(raw, required, seen);
        }
    }
    let colon = skip_ws(b, end);
    if b.get(colon) != Some(&b':') {
        return None;
    }
    Some(skip_ws(b, colon + 1))
}

fn mark(key: &[u8], required: &[&str], seen: &mut [bool]) {
    for (k, s) in required.iter().zip(seen.iter_mut()) {
        if k.as_bytes() == key {
            *s = true;
        }
    }
}

/// The index after JSON whitespace at `i`.
#[inline(always)]
pub(super) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(c) = b.get(i) {
        if !matches!(c, b' ' | b'\n' | b'\r' | b'\t') {
            break;
        }
        i += 1;
    }
    i
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// A high bit in every byte of `w` that is `"`, `\` or below 0x20 (may also flag bytes after
/// a flagged one, never misses one; only used to find where to look byte by byte).
#[inline(always)]
fn special(w: u64) -> u64 {
    let has_zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let quote = has_zero(w ^ (ONES * u64::from(b'"')));
    let backslash = has_zero(w ^ (ONES * u64::from(b'\\')));
    let control = w.wrapping_sub(ONES * 0x20) & !w & HIGHS;
    quote | backslash | control
}

/// The index after the closing quote of a string whose content starts at `i`.
#[inline(always)]
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    string_end_escaped(b, i).map(|(end, _)| end)
}

/// [`string_end`], and whether the string holds an escape.
#[inline(always)]
pub(super) fn string_end_escaped(b: &[u8], mut i: usize) -> Option<(usize, bool)> {
    let mut escaped = false;
    loop {
        while let Some(chunk) = b.get(i..i + 8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let m = special(u64::from_le_bytes(word));
            if m != 0 {
                i += (m.trailing_zeros() / 8) as usize;
                break;
            }
            i += 8;
        }
        match *b.get(i)? {
            b'"' => return Some((i + 1, escaped)),
            b'\\' => {
                escaped = true;
                match *b.get(i + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                    b'u' => {
                        let hex = b.get(i + 2..i + 6)?;
                        if !hex.iter().all(u8::is_ascii_hexdigit) {
                            return None;
                        }
                        i += 6;
                    }
                    _ => return None,
                }
            }
            c if c < 0x20 => return None,
            _ => i += 1,
        }
    }
}

/// The index after `word` at `i`, when it is there.
pub(super) fn literal(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    (b.get(i..i + word.len())? == word).then_some(i + word.len())
}

/// The index after an RFC 8259 number at `i`.
#[inline(always)]
pub(super) fn number_end(b: &[u8], mut i: usize) -> Option<usize> {
    let digits = |b: &[u8], mut i: usize| {
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        (i > start).then_some(i)
    };
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => i = digits(b, i)?,
        _ => return None,
    }
    if b.get(i) == Some(&b'.') {
        i = digits(b, i + 1)?;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        i = digits(b, i)?;
    }
    Some(i)
}

#[cfg(test)]
mod tests;
