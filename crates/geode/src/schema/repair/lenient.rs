//! The lenient reader: JSON plus the syntax fixes of [`super::RepairKind`], each one recorded
//! with the JSON Pointer of where it applied. Anything else that is not JSON is an error, so
//! that no reading is a guess.
//!
//! One recursive-descent pass over a byte range of the text, nesting bounded at
//! [`MAX_DEPTH`] (serde_json's limit). What it takes beyond JSON:
//!
//! | input | read as | kind |
//! |---|---|---|
//! | `'text'`, `‘text’` | a string; a quote closes it only when `,` `:` `}` `]` or the end follows (so `'it's'` is one string) | `single_quotes`, `smart_quotes` |
//! | `“text”` | a string, closed likewise | `smart_quotes` |
//! | `name:` | the key `"name"` (letters, digits, `_`, `$`, `-`; not starting with a digit) | `unquoted_keys` |
//! | `[1, 2,]`, `{"a": 1,}` | the comma dropped | `trailing_commas` |
//! | `// …`, `/* … */`, `# …` | skipped | `comments` |
//! | `True`, `False`, `None` | `true`, `false`, `null` | `python_literals` |
//! | the end of the text where `,` or a closing bracket is due | the container closed | `missing_closing_bracket` (the caller allows one) |

use super::{Repair, RepairKind, pointer_segment};
use serde_json::{Map, Value};

/// Deepest nesting read (serde_json's limit).
pub(super) const MAX_DEPTH: usize = 128;

/// Why a range is not a value even read leniently.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum SyntaxError {
    /// Something no fix covers.
    #[error("unexpected {found} at byte {at}, expected {expected}")]
    Unexpected {
        /// What stood there.
        found: String,
        /// Its byte offset in the text.
        at: usize,
        /// What was due.
        expected: &'static str,
    },
    /// The text ends where no fix may close it (inside a string, after a comma or a key).
    #[error("the text ends inside {inside}")]
    Eof {
        /// Where.
        inside: &'static str,
    },
    /// Nested deeper than [`MAX_DEPTH`].
    #[error("nesting deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// A number JSON cannot hold (`1e400`).
    #[error("number out of range at byte {at}")]
    Number {
        /// Its byte offset.
        at: usize,
    },
}

/// A value read from a range, where it ends, and the fixes made.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Parsed {
    /// The value.
    pub value: Value,
    /// The byte offset just after the value.
    pub end: usize,
    /// The fixes, in order.
    pub repairs: Vec<Repair>,
    /// How many containers the end of the range closed.
    pub closed_at_end: usize,
}

/// Reads one value starting at `start` (space and comments before it skipped) in
/// `text[..end]`; what follows the value is left to the caller.
pub(super) fn read_prefix(text: &str, start: usize, end: usize) -> Result<Parsed, SyntaxError> {
    let mut p = Reader::new(text, start, end);
    p.skip_space()?;
    let value = p.value()?;
    Ok(Parsed {
        value,
        end: p.pos,
        repairs: p.repairs,
        closed_at_end: p.closed_at_end,
    })
}

/// Reads `text[start..end]` as exactly one value: only space and comments may follow it.
pub(super) fn read_whole(text: &str, start: usize, end: usize) -> Result<Parsed, SyntaxError> {
    let mut parsed = read_prefix(text, start, end)?;
    let mut p = Reader::new(text, parsed.end, end);
    p.skip_space()?;
    if p.pos < end {
        return Err(p.unexpected("the end of the answer"));
    }
    parsed.repairs.extend(p.repairs);
    Ok(parsed)
}

struct Reader<'a> {
    text: &'a str,
    pos: usize,
    end: usize,
    /// Escaped JSON Pointer segments of the value being read.
    path: Vec<String>,
    repairs: Vec<Repair>,
    closed_at_end: usize,
    depth: usize,
}

/// Opening quotes of lenient strings, each with its kind and the quotes that may close it.
const LOOSE_QUOTES: [(char, RepairKind, &[char]); 5] = [
    ('\'', RepairKind::SingleQuotes, &['\'']),
    (
        '\u{201C}',
        RepairKind::SmartQuotes,
        &['\u{201C}', '\u{201D}'],
    ),
    (
        '\u{201D}',
        RepairKind::SmartQuotes,
        &['\u{201C}', '\u{201D}'],
    ),
    (
        '\u{2018}',
        RepairKind::SmartQuotes,
        &['\u{2018}', '\u{2019}'],
    ),
    (
        '\u{2019}',
        RepairKind::SmartQuotes,
        &['\u{2018}', '\u{2019}'],
    ),
];

fn loose_quote(c: char) -> Option<(RepairKind, &'static [char])> {
    LOOSE_QUOTES
        .iter()
        .find(|(open, _, _)| *open == c)
        .map(|(_, kind, closers)| (*kind, *closers))
}

impl<'a> Reader<'a> {
    /// A reader of `text[pos..end]` at the root, with nothing repaired yet.
    fn new(text: &'a str, pos: usize, end: usize) -> Self {
        Self {
            text,
            pos,
            end,
            path: Vec::new(),
            repairs: Vec::new(),
            closed_at_end: 0,
            depth: 0,
        }
    }

    fn peek(&self) -> Option<char> {
        self.text.get(self.pos..self.end)?.chars().next()
    }

    fn peek_at(&self, at: usize) -> Option<char> {
        self.text.get(at..self.end)?.chars().next()
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn pointer(&self) -> String {
        self.path.iter().map(|s| format!("/{s}")).collect()
    }

    fn note(&mut self, kind: RepairKind) {
        let at = self.pointer();
        self.repairs.push(Repair::new(kind, at));
    }

    fn unexpected(&self, expected: &'static str) -> SyntaxError {
        match self.peek() {
            None => SyntaxError::Eof { inside: expected },
            Some(c) => SyntaxError::Unexpected {
                found: format!("{c:?}"),
                at: self.pos,
                expected,
            },
        }
    }

    /// Skips JSON whitespace and comments (each comment a repair at the current path).
    fn skip_space(&mut self) -> Result<(), SyntaxError> {
        loop {
            match self.peek() {
                Some(' ' | '\t' | '\n' | '\r') => self.pos += 1,
                Some('#') => self.line_comment(),
                Some('/') => match self.peek_at(self.pos + 1) {
                    Some('/') => self.line_comment(),
                    Some('*') => {
                        let body = self.pos + 2;
                        let close = self
                            .text
                            .get(body..self.end)
                            .and_then(|rest| rest.find("*/"))
                            .ok_or(SyntaxError::Eof {
                                inside: "a comment",
                            })?;
                        self.pos = body + close + 2;
                        self.note(RepairKind::Comments);
                    }
                    _ => return Ok(()),
                },
                _ => return Ok(()),
            }
        }
    }

    fn line_comment(&mut self) {
        let rest = self.text.get(self.pos..self.end).unwrap_or_default();
        self.pos += rest.find('\n').unwrap_or(rest.len());
        self.note(RepairKind::Comments);
    }

    fn value(&mut self) -> Result<Value, SyntaxError> {
        let Some(c) = self.peek() else {
            return Err(SyntaxError::Eof { inside: "a value" });
        };
        match c {
            '{' => self.object(),
            '[' => self.array(),
            '"' => self.strict_string().map(Value::String),
            '-' | '0'..='9' => self.number(),
            c if c.is_ascii_alphabetic() || c == '_' => self.word(),
            c => match loose_quote(c) {
                Some((kind, closers)) => {
                    self.note(kind);
                    self.loose_string(closers).map(Value::String)
                }
                None => Err(self.unexpected("a value")),
            },
        }
    }

    fn enter(&mut self) -> Result<(), SyntaxError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(SyntaxError::TooDeep);
        }
        Ok(())
    }

    /// After a member or element: `,` (maybe trailing), the closer, or the end of the range
    /// (one missing bracket, which the caller allows or not). True when the container ended.
    fn after_item(&mut self, closer: char) -> Result<bool, SyntaxError> {
        self.skip_space()?;
        if self.eat(closer) {
            return Ok(true);
        }
        if self.peek().is_none() {
            self.closed_at_end += 1;
            self.note(RepairKind::MissingClosingBracket);
            return Ok(true);
        }
        if !self.eat(',') {
            return Err(self.unexpected(if closer == '}' {
                "',' or '}'"
            } else {
                "',' or ']'"
            }));
        }
        self.skip_space()?;
        if self.eat(closer) {
            self.note(RepairKind::TrailingCommas);
            return Ok(true);
        }
        Ok(false)
    }

    fn object(&mut self) -> Result<Value, SyntaxError> {
        self.enter()?;
        self.pos += 1;
        let mut map = Map::new();
        self.skip_space()?;
        if !self.eat('}') {
            loop {
                let key = self.key()?;
                self.skip_space()?;
                if !self.eat(':') {
                    return Err(self.unexpected("':'"));
                }
                self.skip_space()?;
                self.path.push(pointer_segment(&key));
                let value = self.value()?;
                self.path.pop();
                map.insert(key, value);
                if self.after_item('}')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        Ok(Value::Object(map))
    }

    fn array(&mut self) -> Result<Value, SyntaxError> {
        self.enter()?;
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_space()?;
        if !self.eat(']') {
            loop {
                self.path.push(items.len().to_string());
                let value = self.value()?;
                self.path.pop();
                items.push(value);
                if self.after_item(']')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        Ok(Value::Array(items))
    }

    /// A key: a JSON string, a lenient string, or a bare name.
    fn key(&mut self) -> Result<String, SyntaxError> {
        let Some(c) = self.peek() else {
            return Err(SyntaxError::Eof {
                inside: "an object",
            });
        };
        if c == '"' {
            return self.strict_string();
        }
        if let Some((kind, closers)) = loose_quote(c) {
            let key = self.loose_string(closers)?;
            self.note_member(kind, &key);
            return Ok(key);
        }
        if c.is_alphabetic() || c == '_' || c == '$' {
            let rest = self.text.get(self.pos..self.end).unwrap_or_default();
            let len = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$' || c == '-'))
                .unwrap_or(rest.len());
            let key = rest[..len].to_owned();
            self.pos += len;
            self.note_member(RepairKind::UnquotedKeys, &key);
            return Ok(key);
        }
        Err(self.unexpected("a key"))
    }

    /// A repair of the key of member `key` of the object being read.
    fn note_member(&mut self, kind: RepairKind, key: &str) {
        let at = format!("{}/{}", self.pointer(), pointer_segment(key));
        self.repairs.push(Repair::new(kind, at));
    }

    fn strict_string(&mut self) -> Result<String, SyntaxError> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(SyntaxError::Eof { inside: "a string" });
            };
            match c {
                '"' => {
                    self.pos += 1;
                    return Ok(out);
                }
                '\\' => self.escape(&mut out)?,
                c if (c as u32) < 0x20 => {
                    return Err(self.unexpected("a string character"));
                }
                c => {
                    out.push(c);
                    self.pos += c.len_utf8();
                }
            }
        }
    }

    /// A string opened by a lenient quote: closed by one of `closers` followed by `,` `:` `}`
    /// `]` or the end of the range (after spaces); any other such quote is part of it.
    fn loose_string(&mut self, closers: &[char]) -> Result<String, SyntaxError> {
        let open = self.peek().map_or(1, char::len_utf8);
        self.pos += open;
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(SyntaxError::Eof { inside: "a string" });
            };
            if closers.contains(&c) && self.closes_at(self.pos + c.len_utf8()) {
                self.pos += c.len_utf8();
                return Ok(out);
            }
            match c {
                '\\' => self.escape(&mut out)?,
                c if (c as u32) < 0x20 => {
                    return Err(self.unexpected("a string character"));
                }
                c => {
                    out.push(c);
                    self.pos += c.len_utf8();
                }
            }
        }
    }

    /// Whether a quote just before `at` ends its string: only spaces, then a structural
    /// character or the end, follow.
    fn closes_at(&self, at: usize) -> bool {
        let rest = self.text.get(at..self.end).unwrap_or_default();
        match rest
            .trim_start_matches([' ', '\t', '\n', '\r'])
            .chars()
            .next()
        {
            None => true,
            Some(c) => matches!(c, ',' | ':' | '}' | ']'),
        }
    }

    /// One escape sequence (JSON's, plus `\'`), appended to `out`.
    fn escape(&mut self, out: &mut String) -> Result<(), SyntaxError> {
        self.pos += 1;
        let Some(c) = self.peek() else {
            return Err(SyntaxError::Eof { inside: "a string" });
        };
        self.pos += c.len_utf8();
        let decoded = match c {
            '"' => '"',
            '\'' => '\'',
            '\\' => '\\',
            '/' => '/',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'u' => return self.unicode_escape(out),
            _ => {
                self.pos -= c.len_utf8();
                return Err(self.unexpected("an escape"));
            }
        };
        out.push(decoded);
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, SyntaxError> {
        let digits = self
            .text
            .get(self.pos..self.pos + 4)
            .filter(|d| self.pos + 4 <= self.end && d.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| self.unexpected("four hex digits"))?;
        let n = u32::from_str_radix(digits, 16).map_err(|_| self.unexpected("four hex digits"))?;
        self.pos += 4;
        Ok(n)
    }

    /// `\uXXXX`, with a surrogate pair read whole.
    fn unicode_escape(&mut self, out: &mut String) -> Result<(), SyntaxError> {
        let first = self.hex4()?;
        let code = if (0xD800..0xDC00).contains(&first) {
            if !(self.eat('\\') && self.eat('u')) {
                return Err(self.unexpected("a low surrogate"));
            }
            let low = self.hex4()?;
            if !(0xDC00..0xE000).contains(&low) {
                return Err(self.unexpected("a low surrogate"));
            }
            0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00)
        } else {
            first
        };
        let c = char::from_u32(code).ok_or_else(|| self.unexpected("a character"))?;
        out.push(c);
        Ok(())
    }

    /// A number in JSON's grammar, nothing looser (`+1`, `.5`, `01`, `NaN` are errors).
    fn number(&mut self) -> Result<Value, SyntaxError> {
        let start = self.pos;
        let b = self.text.as_bytes();
        let digits = |mut i: usize| {
            while i < self.end && b[i].is_ascii_digit() {
                i += 1;
            }
            i
        };
        let mut i = start;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        match b.get(i).filter(|_| i < self.end) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => i = digits(i),
            _ => {
                self.pos = i;
                return Err(self.unexpected("a digit"));
            }
        }
        if i < self.end && b.get(i) == Some(&b'.') {
            let after = digits(i + 1);
            if after == i + 1 {
                self.pos = i + 1;
                return Err(self.unexpected("a digit"));
            }
            i = after;
        }
        if i < self.end && matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if i < self.end && matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let after = digits(i);
            if after == i {
                self.pos = i;
                return Err(self.unexpected("a digit"));
            }
            i = after;
        }
        self.pos = i;
        if self
            .peek()
            .is_some_and(|c| c.is_alphanumeric() || c == '.' || c == '_')
        {
            return Err(self.unexpected("the end of a number"));
        }
        let slice = self.text.get(start..i).unwrap_or_default();
        match serde_json::from_str::<Value>(slice) {
            Ok(n @ Value::Number(_)) => Ok(n),
            _ => Err(SyntaxError::Number { at: start }),
        }
    }

    /// `true`, `false`, `null`, or Python's `True`, `False`, `None`; any other word is an error.
    fn word(&mut self) -> Result<Value, SyntaxError> {
        let rest = self.text.get(self.pos..self.end).unwrap_or_default();
        let len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let (value, python) = match &rest[..len] {
            "true" => (Value::Bool(true), false),
            "false" => (Value::Bool(false), false),
            "null" => (Value::Null, false),
            "True" => (Value::Bool(true), true),
            "False" => (Value::Bool(false), true),
            "None" => (Value::Null, true),
            _ => return Err(self.unexpected("a value (a bare word is not one)")),
        };
        if python {
            self.note(RepairKind::PythonLiterals);
        }
        self.pos += len;
        Ok(value)
    }
}
