//! An incremental, tolerant JSON parser for answers that arrive in pieces.
//!
//! Feed it chunks ([`PartialJson::feed`]); at any time it shows the value read so far
//! ([`PartialJson::value`]) and the JSON Pointers of the values that are closed
//! ([`PartialJson::complete`], in closing order). Each byte is looked at once: the value is
//! built in place, never re-parsed, so a whole answer costs time linear in its length whatever
//! the chunking (string bodies are copied in bulk between `"`/`\`, found with memchr).
//!
//! | input | shown | complete |
//! |---|---|---|
//! | text before the first `{` or `[` (prose, a code fence) | nothing | - |
//! | an open string `"abc` | the string so far, growing | no |
//! | a number or literal not yet ended (`12` may become `123`) | not shown | no |
//! | a closed string, number, `true`/`false`/`null` | the value | its pointer |
//! | a closed `{...}` / `[...]` | the value | its pointer (`""` for the root) |
//! | text after the root closed | ignored | - |
//!
//! A pointer is listed only once its value can no longer change, so a cut anywhere never
//! reports a value complete that the full text would give differently. Syntax errors are
//! [`PartialError`]s and stop the parser (the value read so far stays). Strings follow RFC 8259
//! as serde_json does: escapes, surrogate pairs, no raw control characters; numbers are read by
//! serde_json; nesting is limited to [`MAX_DEPTH`] levels.

use serde_json::{Map, Value};

/// Deepest nesting accepted (serde_json's own limit).
pub const MAX_DEPTH: usize = 128;

/// Why the parser stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PartialError {
    /// A byte that JSON does not allow here.
    #[error("invalid JSON at byte {offset}: {what}")]
    Syntax {
        /// Bytes consumed before the offending one.
        offset: usize,
        /// What was wrong.
        what: String,
    },
    /// Nesting deeper than [`MAX_DEPTH`].
    #[error("JSON nests deeper than {MAX_DEPTH} levels at byte {offset}")]
    TooDeep {
        /// Bytes consumed before the offending one.
        offset: usize,
    },
}

#[derive(Debug, Clone, PartialEq)]
enum Seg {
    Key(String),
    Index(usize),
}

#[derive(Debug)]
struct Frame {
    object: bool,
    at: Option<Seg>,
    key: String,
    len: usize,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Lex {
    Preamble,
    Value,
    ValueOrEnd,
    KeyOrEnd,
    Key,
    Colon,
    AfterValue,
    Str { key: bool },
    Number,
    Literal { word: &'static [u8], matched: usize },
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Esc {
    None,
    Backslash,
    Unicode { digits: u8, code: u32 },
}

/// The parser. See the module docs.
#[derive(Debug)]
pub struct PartialJson {
    root: Option<Value>,
    stack: Vec<Frame>,
    lex: Lex,
    esc: Esc,
    high_surrogate: Option<u32>,
    text: String,
    leaf: Option<Seg>,
    complete: Vec<String>,
    offset: usize,
    error: Option<PartialError>,
}

impl Default for PartialJson {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialJson {
    /// A parser waiting for the first `{` or `[`.
    pub fn new() -> Self {
        Self {
            root: None,
            stack: Vec::new(),
            lex: Lex::Preamble,
            esc: Esc::None,
            high_surrogate: None,
            text: String::new(),
            leaf: None,
            complete: Vec::new(),
            offset: 0,
            error: None,
        }
    }

    /// The value read so far (`None` before the root opened).
    pub fn value(&self) -> Option<&Value> {
        self.root.as_ref()
    }

    /// The pointers of the closed values, in closing order.
    pub fn complete(&self) -> &[String] {
        &self.complete
    }

    /// Whether the root value has closed.
    pub fn is_done(&self) -> bool {
        self.lex == Lex::Done
    }

    /// The error that stopped the parser, if any.
    pub fn error(&self) -> Option<&PartialError> {
        self.error.as_ref()
    }

    /// Reads one more chunk. After an error, returns that error and reads nothing.
    pub fn feed(&mut self, chunk: &str) -> Result<(), PartialError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let result = self.feed_bytes(chunk.as_bytes());
        self.flush_text();
        if let Err(e) = &result {
            self.error = Some(e.clone());
        }
        result
    }

    fn err(&self, at: usize, what: impl Into<String>) -> PartialError {
        PartialError::Syntax {
            offset: self.offset + at,
            what: what.into(),
        }
    }

    fn feed_bytes(&mut self, bytes: &[u8]) -> Result<(), PartialError> {
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            match self.lex {
                Lex::Done => {
                    i = bytes.len();
                    continue;
                }
                Lex::Preamble => match memchr::memchr2(b'{', b'[', &bytes[i..]) {
                    Some(p) => {
                        i += p;
                        self.lex = Lex::Value;
                        continue;
                    }
                    None => i = bytes.len(),
                },
                Lex::Str { key } => {
                    i = self.string_bytes(bytes, i, key)?;
                    continue;
                }
                Lex::Number => {
                    if matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                        self.text.push(b as char);
                    } else {
                        self.end_number(i)?;
                        continue;
                    }
                }
                Lex::Literal { word, matched } => {
                    if word.get(matched) != Some(&b) {
                        return Err(
                            self.err(i, format!("expected {:?}", String::from_utf8_lossy(word)))
                        );
                    }
                    if matched + 1 == word.len() {
                        let v = match word {
                            b"true" => Value::Bool(true),
                            b"false" => Value::Bool(false),
                            _ => Value::Null,
                        };
                        self.scalar(v);
                    } else {
                        self.lex = Lex::Literal {
                            word,
                            matched: matched + 1,
                        };
                    }
                }
                _ if b.is_ascii_whitespace() => {}
                Lex::Value | Lex::ValueOrEnd => self.value_start(b, i)?,
                Lex::KeyOrEnd | Lex::Key => match b {
                    b'"' => {
                        self.lex = Lex::Str { key: true };
                        self.text.clear();
                    }
                    b'}' if self.lex == Lex::KeyOrEnd => self.close(),
                    _ => return Err(self.err(i, "expected a key")),
                },
                Lex::Colon if b == b':' => self.lex = Lex::Value,
                Lex::Colon => return Err(self.err(i, "expected ':'")),
                Lex::AfterValue => {
                    let object = self.stack.last().is_some_and(|f| f.object);
                    match (b, object) {
                        (b',', true) => self.lex = Lex::Key,
                        (b',', false) => self.lex = Lex::Value,
                        (b'}', true) | (b']', false) => self.close(),
                        _ => return Err(self.err(i, "expected ',' or a closing bracket")),
                    }
                }
            }
            i += 1;
        }
        self.offset += bytes.len();
        Ok(())
    }

    fn value_start(&mut self, b: u8, i: usize) -> Result<(), PartialError> {
        match b {
            b'{' | b'[' => {
                if self.stack.len() >= MAX_DEPTH {
                    return Err(PartialError::TooDeep {
                        offset: self.offset + i,
                    });
                }
                let object = b == b'{';
                let empty = if object {
                    Value::Object(Map::new())
                } else {
                    Value::Array(Vec::new())
                };
                let at = self.insert(empty);
                self.stack.push(Frame {
                    object,
                    at,
                    key: String::new(),
                    len: 0,
                });
                self.lex = if object {
                    Lex::KeyOrEnd
                } else {
                    Lex::ValueOrEnd
                };
            }
            b']' if self.lex == Lex::ValueOrEnd => self.close(),
            b'"' => {
                self.leaf = self.insert(Value::String(String::new()));
                self.text.clear();
                self.lex = Lex::Str { key: false };
            }
            b'-' | b'0'..=b'9' => {
                self.text.clear();
                self.text.push(b as char);
                self.lex = Lex::Number;
            }
            b't' | b'f' | b'n' => {
                let word: &'static [u8] = match b {
                    b't' => b"true",
                    b'f' => b"false",
                    _ => b"null",
                };
                self.lex = Lex::Literal { word, matched: 1 };
            }
            _ => return Err(self.err(i, "expected a value")),
        }
        Ok(())
    }

    /// Reads string bytes from `i`; returns the index of the next byte to look at.
    fn string_bytes(
        &mut self,
        bytes: &[u8],
        mut i: usize,
        key: bool,
    ) -> Result<usize, PartialError> {
        while i < bytes.len() {
            match self.esc {
                Esc::None => {}
                Esc::Backslash => {
                    let c = match bytes[i] {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            self.esc = Esc::Unicode { digits: 0, code: 0 };
                            i += 1;
                            continue;
                        }
                        _ => return Err(self.err(i, "invalid escape")),
                    };
                    self.push_char(c, i)?;
                    self.esc = Esc::None;
                    i += 1;
                    continue;
                }
                Esc::Unicode { digits, code } => {
                    let d = (bytes[i] as char)
                        .to_digit(16)
                        .ok_or_else(|| self.err(i, "invalid \\u escape"))?;
                    let code = code * 16 + d;
                    i += 1;
                    if digits < 3 {
                        self.esc = Esc::Unicode {
                            digits: digits + 1,
                            code,
                        };
                        continue;
                    }
                    self.esc = Esc::None;
                    self.unicode(code, i)?;
                    continue;
                }
            }
            let rest = &bytes[i..];
            let stop = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
            if stop > 0 {
                if self.high_surrogate.is_some() {
                    return Err(self.err(i, "lone leading surrogate"));
                }
                let piece = &rest[..stop];
                if let Some(p) = piece.iter().position(|c| *c < 0x20) {
                    return Err(self.err(i + p, "control character in a string"));
                }
                // Chunks are `&str` and the cuts are at '"' or '\\' (ASCII), so this is UTF-8.
                self.text.push_str(&String::from_utf8_lossy(piece));
                i += stop;
                continue;
            }
            if rest[0] == b'\\' {
                self.esc = Esc::Backslash;
                i += 1;
                continue;
            }
            // The closing quote.
            if self.high_surrogate.is_some() {
                return Err(self.err(i, "lone leading surrogate"));
            }
            i += 1;
            if key {
                if let Some(top) = self.stack.last_mut() {
                    top.key = std::mem::take(&mut self.text);
                }
                self.lex = Lex::Colon;
            } else {
                self.flush_text();
                let leaf = self.leaf.take();
                let pointer = self.pointer(leaf.as_ref());
                self.complete.push(pointer);
                self.lex = Lex::AfterValue;
            }
            return Ok(i);
        }
        Ok(i)
    }

    fn push_char(&mut self, c: char, i: usize) -> Result<(), PartialError> {
        if self.high_surrogate.is_some() {
            return Err(self.err(i, "lone leading surrogate"));
        }
        self.text.push(c);
        Ok(())
    }

    fn unicode(&mut self, code: u32, i: usize) -> Result<(), PartialError> {
        match (self.high_surrogate.take(), code) {
            (None, 0xD800..=0xDBFF) => {
                self.high_surrogate = Some(code);
                Ok(())
            }
            (Some(high), 0xDC00..=0xDFFF) => {
                let c = char::from_u32(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00))
                    .ok_or_else(|| self.err(i, "invalid surrogate pair"))?;
                self.text.push(c);
                Ok(())
            }
            (None, 0xDC00..=0xDFFF) | (Some(_), _) => Err(self.err(i, "unpaired surrogate")),
            (None, c) => {
                let c = char::from_u32(c).ok_or_else(|| self.err(i, "invalid \\u escape"))?;
                self.text.push(c);
                Ok(())
            }
        }
    }

    fn end_number(&mut self, i: usize) -> Result<(), PartialError> {
        let v: Value = serde_json::from_str(&self.text)
            .map_err(|e| self.err(i, format!("bad number {:?}: {e}", self.text)))?;
        if !v.is_number() {
            return Err(self.err(i, "bad number"));
        }
        self.text.clear();
        self.scalar(v);
        Ok(())
    }

    /// Inserts a closed scalar and lists it complete.
    fn scalar(&mut self, v: Value) {
        let at = self.insert(v);
        let pointer = self.pointer(at.as_ref());
        self.complete.push(pointer);
        self.lex = Lex::AfterValue;
    }

    /// Closes the innermost container.
    fn close(&mut self) {
        let pointer = self.pointer(None);
        self.stack.pop();
        self.complete.push(pointer);
        self.lex = if self.stack.is_empty() {
            Lex::Done
        } else {
            Lex::AfterValue
        };
    }

    /// The pointer of the innermost container, plus `slot` when given.
    fn pointer(&self, slot: Option<&Seg>) -> String {
        let mut p = String::new();
        for seg in self
            .stack
            .iter()
            .skip(1)
            .filter_map(|f| f.at.as_ref())
            .chain(slot)
        {
            p.push('/');
            match seg {
                Seg::Key(k) => p.push_str(&k.replace('~', "~0").replace('/', "~1")),
                Seg::Index(n) => p.push_str(&n.to_string()),
            }
        }
        p
    }

    fn container_mut(&mut self) -> Option<&mut Value> {
        let mut cur = self.root.as_mut()?;
        for f in self.stack.iter().skip(1) {
            cur = match f.at.as_ref()? {
                Seg::Key(k) => cur.as_object_mut()?.get_mut(k)?,
                Seg::Index(n) => cur.as_array_mut()?.get_mut(*n)?,
            };
        }
        Some(cur)
    }

    /// Puts `v` in the innermost container's next slot (or at the root); returns the slot.
    fn insert(&mut self, v: Value) -> Option<Seg> {
        let Some(top) = self.stack.last_mut() else {
            self.root = Some(v);
            return None;
        };
        let seg = if top.object {
            Seg::Key(top.key.clone())
        } else {
            Seg::Index(top.len)
        };
        top.len += 1;
        match (self.container_mut(), &seg) {
            (Some(Value::Object(m)), Seg::Key(k)) => {
                m.insert(k.clone(), v);
            }
            (Some(Value::Array(a)), Seg::Index(_)) => a.push(v),
            _ => {}
        }
        Some(seg)
    }

    /// Appends the pending text of an open value string to its leaf.
    fn flush_text(&mut self) {
        if self.lex != (Lex::Str { key: false }) || self.text.is_empty() {
            return;
        }
        let text = std::mem::take(&mut self.text);
        let leaf = self.leaf.clone();
        let slot = match (self.container_mut(), leaf) {
            (Some(Value::Object(m)), Some(Seg::Key(k))) => m.get_mut(&k),
            (Some(Value::Array(a)), Some(Seg::Index(n))) => a.get_mut(n),
            _ => None,
        };
        if let Some(Value::String(s)) = slot {
            s.push_str(&text);
        }
    }
}

#[cfg(test)]
mod tests;
