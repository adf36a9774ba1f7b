//! A parsed JSON document that borrows its text: one flat array of 12-byte entries, built in one
//! pass with no allocation per value. It is what the fast paths read instead of a
//! `serde_json::Value` (whose build, one allocation per string, array and object, bounds full
//! validation and schema loading): full validation through `jsonschema`'s representation trait
//! ([`super::tape_json`]), and the strict check of a schema's text ([`super::strict::check_strict_text`]).
//!
//! It accepts exactly what `serde_json::from_str::<Value>` accepts, and the tests hold it to
//! that verdict:
//!
//! | input | tape | serde_json |
//! |---|---|---|
//! | RFC 8259 JSON, surrounding whitespace | a [`Tape`] | a `Value` |
//! | nesting of 128 containers or more | [`TapeError::TooDeep`] | "recursion limit exceeded" |
//! | a number outside `f64` (`1e400`, 400 digits) | [`TapeError::NumberOutOfRange`] | "number out of range" |
//! | a lone surrogate escape (`"\ud800"`) | [`TapeError::Syntax`] | an error |
//! | a key repeated in one object | a [`Tape`] with [`Tape::has_duplicate_keys`] | the last value wins |
//!
//! A repeated key is the one place the two read differently (a tape keeps both members), so a
//! caller that must read such a document as serde_json does checks the flag and falls back.
//!
//! The text is read by the reader the strict check's one-pass certifier also uses
//! (`json_read.rs`); the tape is what it records.
//!
//! Layout: a scalar's entry holds its byte span (a string's without the quotes, and whether it
//! holds an escape); a container's entry holds its member count and the index just past its
//! subtree, so a container is skipped in O(1). An object's members follow it as key entry, value
//! subtree, key entry, value subtree, and so on.

pub use super::json_read::{Kind, MAX_TAPE_DEPTH, TapeError};
use super::json_read::{Sink, Stop, read, same};
use serde_json::Value;
use std::borrow::Cow;
use std::convert::Infallible;

/// One value: for a scalar, `a..b` is its byte span (a string's content, without quotes); for a
/// container, `a` is its element (member) count and `b` the index just past its subtree.
#[derive(Debug, Clone, Copy)]
struct Entry {
    kind: Kind,
    /// A string holding at least one escape.
    escaped: bool,
    a: u32,
    b: u32,
}

/// A JSON document as a flat array of entries over its borrowed text.
///
/// ```
/// use geode::schema::tape::{Kind, Tape};
/// let tape = Tape::parse(r#"{"a": [1, "x\n"], "b": null}"#).unwrap();
/// let root = tape.root();
/// let a = root.get("a").unwrap();
/// assert_eq!(a.kind(), Kind::Array);
/// let items: Vec<_> = a.elements().map(|n| n.to_value()).collect();
/// assert_eq!(items, [serde_json::json!(1), serde_json::json!("x\n")]);
/// assert_eq!(root.get("b").unwrap().kind(), Kind::Null);
/// assert!(Tape::parse("[1,]").is_err());
/// ```
#[derive(Debug)]
pub struct Tape<'s> {
    text: &'s str,
    entries: Vec<Entry>,
    /// Values in the document (entries that are not object keys).
    values: u64,
    duplicate_keys: bool,
}

impl<'s> Tape<'s> {
    /// Parses `text` (exactly one JSON value, whitespace around it allowed).
    pub fn parse(text: &'s str) -> Result<Self, TapeError> {
        let mut p = Builder {
            b: text.as_bytes(),
            text,
            // About one value per four bytes of schema-like JSON; one allocation for most.
            entries: Vec::with_capacity(text.len() / 4 + 1),
            keys: 0,
            duplicate_keys: false,
            seen: Vec::new(),
        };
        read(text, &mut p).map_err(|stop| match stop {
            Stop::Invalid(e) => e,
            Stop::Halted(never) => match never {},
        })?;
        let values = (p.entries.len() - p.keys) as u64;
        Ok(Self {
            text,
            entries: p.entries,
            values,
            duplicate_keys: p.duplicate_keys,
        })
    }

    /// A tape holding one string whose decoded content is `content` (for validators that run
    /// a name through the same machinery as a value).
    pub(crate) fn string(content: &'s str) -> Self {
        Self {
            text: content,
            entries: vec![Entry {
                kind: Kind::String,
                escaped: false,
                a: 0,
                b: content.len() as u32,
            }],
            values: 1,
            duplicate_keys: false,
        }
    }

    /// The document's root value.
    pub fn root(&self) -> TapeNode<'_> {
        TapeNode { tape: self, at: 0 }
    }

    /// How many values the document holds (object keys not counted).
    pub fn values(&self) -> u64 {
        self.values
    }

    /// True when some object repeats a key. A tape keeps every member, where serde_json keeps
    /// the last value of a repeated key; read such a document through `serde_json` to get its
    /// semantics.
    pub fn has_duplicate_keys(&self) -> bool {
        self.duplicate_keys
    }
}

/// One value of a [`Tape`]; `Copy`, two words.
#[derive(Clone, Copy)]
pub struct TapeNode<'a> {
    tape: &'a Tape<'a>,
    at: u32,
}

impl std::fmt::Debug for TapeNode<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TapeNode({:?} at {})", self.kind(), self.at)
    }
}

impl<'a> TapeNode<'a> {
    fn entry(self) -> Entry {
        self.tape.entries[self.at as usize]
    }

    /// The value's JSON type.
    pub fn kind(self) -> Kind {
        self.entry().kind
    }

    /// The index of this node in its tape (unique among the tape's nodes).
    pub fn index(self) -> u32 {
        self.at
    }

    /// The tape's address, which with [`Self::index`] tells nodes of different tapes apart.
    pub fn tape_address(self) -> usize {
        std::ptr::from_ref(self.tape) as usize
    }

    /// A scalar's text as written (a number's digits; a string's content, escapes undecoded).
    pub fn raw(self) -> &'a str {
        let e = self.entry();
        match e.kind {
            Kind::Array | Kind::Object => "",
            _ => &self.tape.text[e.a as usize..e.b as usize],
        }
    }

    /// A string's decoded content; `None` for any other type.
    pub fn as_str(self) -> Option<Cow<'a, str>> {
        let e = self.entry();
        if e.kind != Kind::String {
            return None;
        }
        Some(decode(self.tape.text, e))
    }

    /// True for a string equal to `s` once decoded.
    pub fn str_is(self, s: &str) -> bool {
        let e = self.entry();
        e.kind == Kind::String
            && if e.escaped {
                self.as_str().is_some_and(|d| d == s)
            } else {
                same(
                    &self.tape.text.as_bytes()[e.a as usize..e.b as usize],
                    s.as_bytes(),
                )
            }
    }

    /// Elements of an array, members of an object (0 for a scalar).
    pub fn len(self) -> usize {
        let e = self.entry();
        match e.kind {
            Kind::Array | Kind::Object => e.a as usize,
            _ => 0,
        }
    }

    /// True for an empty array or object, and for a scalar.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// A cursor over this node's children when it is of `kind` (else over nothing).
    fn children(self, kind: Kind) -> Cursor<'a> {
        let left = if self.kind() == kind { self.len() } else { 0 };
        Cursor {
            tape: self.tape,
            at: self.at + 1,
            left,
        }
    }

    /// An array's elements in order (nothing for any other type).
    pub fn elements(self) -> Elements<'a> {
        Elements(self.children(Kind::Array))
    }

    /// An object's members in document order, as (key node, value node) (nothing for any other
    /// type). Every member is listed, a repeated key's too.
    pub fn members(self) -> Members<'a> {
        Members(self.children(Kind::Object))
    }

    /// An object's value for `key` (the last one when the key repeats); `None` for a missing key
    /// or a non-object. A linear scan: objects here are small, and a scan beats hashing them.
    pub fn get(self, key: &str) -> Option<TapeNode<'a>> {
        if !self.tape.duplicate_keys {
            return self.members().find(|(k, _)| k.str_is(key)).map(|(_, v)| v);
        }
        let mut found = None;
        for (k, v) in self.members() {
            if k.str_is(key) {
                found = Some(v);
            }
        }
        found
    }

    /// The value at a JSON Pointer (`""` is this node; `~0`/`~1` escapes decoded).
    pub fn pointer(self, pointer: &str) -> Option<TapeNode<'a>> {
        if pointer.is_empty() {
            return Some(self);
        }
        let rest = pointer.strip_prefix('/')?;
        let mut node = self;
        for token in rest.split('/') {
            let token = token.replace("~1", "/").replace("~0", "~");
            node = match node.kind() {
                Kind::Object => node.get(&token)?,
                Kind::Array => {
                    // The pointer grammar: no sign, no leading zero.
                    if token.is_empty()
                        || (token.len() > 1 && token.starts_with('0'))
                        || !token.bytes().all(|c| c.is_ascii_digit())
                    {
                        return None;
                    }
                    node.elements().nth(token.parse().ok()?)?
                }
                _ => return None,
            };
        }
        Some(node)
    }

    /// The value as a `serde_json::Value` (a repeated key keeps its last value, as serde_json
    /// does). Recursion is bounded by [`MAX_TAPE_DEPTH`].
    pub fn to_value(self) -> Value {
        match self.kind() {
            Kind::Null => Value::Null,
            Kind::False => Value::Bool(false),
            Kind::True => Value::Bool(true),
            Kind::Number => serde_json::from_str(self.raw()).unwrap_or(Value::Null),
            Kind::String => Value::String(self.as_str().unwrap_or_default().into_owned()),
            Kind::Array => Value::Array(self.elements().map(TapeNode::to_value).collect()),
            Kind::Object => Value::Object(
                self.members()
                    .map(|(k, v)| (k.as_str().unwrap_or_default().into_owned(), v.to_value()))
                    .collect(),
            ),
        }
    }
}

/// The index just past the subtree whose root entry is at `at`.
#[inline(always)]
fn past(entries: &[Entry], at: usize) -> usize {
    let e = entries[at];
    match e.kind {
        Kind::Array | Kind::Object => e.b as usize,
        _ => at + 1,
    }
}

/// Where the next child of a container starts, and how many are left.
#[derive(Clone)]
struct Cursor<'a> {
    tape: &'a Tape<'a>,
    at: u32,
    left: usize,
}

impl<'a> Cursor<'a> {
    /// The next child, which spans `width` subtrees (an element 1, a member its key and value).
    #[inline(always)]
    fn step(&mut self, width: u32) -> Option<TapeNode<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let first = TapeNode {
            tape: self.tape,
            at: self.at,
        };
        let last = self.at + width - 1;
        self.at = past(&self.tape.entries, last as usize) as u32;
        Some(first)
    }
}

/// The elements of an array node, in order.
#[derive(Clone)]
pub struct Elements<'a>(Cursor<'a>);

impl<'a> Iterator for Elements<'a> {
    type Item = TapeNode<'a>;
    fn next(&mut self) -> Option<TapeNode<'a>> {
        self.0.step(1)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.0.left, Some(self.0.left))
    }
}

impl ExactSizeIterator for Elements<'_> {}

/// The members of an object node, as (key, value), in document order.
#[derive(Clone)]
pub struct Members<'a>(Cursor<'a>);

impl<'a> Iterator for Members<'a> {
    type Item = (TapeNode<'a>, TapeNode<'a>);
    fn next(&mut self) -> Option<Self::Item> {
        let key = self.0.step(2)?;
        let value = TapeNode {
            tape: key.tape,
            at: key.at + 1,
        };
        Some((key, value))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.0.left, Some(self.0.left))
    }
}

impl ExactSizeIterator for Members<'_> {}

/// The [`Sink`] that records an entry per value.
struct Builder<'s> {
    b: &'s [u8],
    text: &'s str,
    entries: Vec<Entry>,
    /// Key entries recorded.
    keys: usize,
    duplicate_keys: bool,
    /// The repeated-key check's hash table for big objects (reused).
    seen: Vec<u64>,
}

impl Sink for Builder<'_> {
    /// The container's entry index.
    type Tag = u32;
    type Halt = Infallible;
    const DOCUMENT: u32 = u32::MAX;

    #[inline(always)]
    fn open(&mut self, _parent: u32, object: bool) -> Result<u32, Infallible> {
        let at = self.entries.len();
        let kind = if object { Kind::Object } else { Kind::Array };
        self.push(kind, false, 0, at + 1);
        Ok(at as u32)
    }

    #[inline(always)]
    fn close(&mut self, at: u32, object: bool, count: u32) -> Result<(), Infallible> {
        let end = self.entries.len() as u32;
        let entry = &mut self.entries[at as usize];
        (entry.a, entry.b) = (count, end);
        if object && count > 1 {
            self.check_repeated_keys(at as usize);
        }
        Ok(())
    }

    #[inline(always)]
    fn key(&mut self, _parent: u32, a: usize, b: usize, escaped: bool) -> Result<(), Infallible> {
        self.keys += 1;
        self.push(Kind::String, escaped, a, b);
        Ok(())
    }

    #[inline(always)]
    fn scalar(
        &mut self,
        _parent: u32,
        kind: Kind,
        a: usize,
        b: usize,
        escaped: bool,
    ) -> Result<(), Infallible> {
        self.push(kind, escaped, a, b);
        Ok(())
    }
}

impl Builder<'_> {
    #[inline(always)]
    fn push(&mut self, kind: Kind, escaped: bool, a: usize, b: usize) {
        self.entries.push(Entry {
            kind,
            escaped,
            a: a as u32,
            b: b as u32,
        });
    }

    /// Sets `duplicate_keys` when the object at `top` (closed, two members or more) repeats a
    /// key: pairwise for a few keys, through a hash table of raw spans for more. Raw spans are
    /// compared; an object with an escaped key is compared decoded (rare: sorted).
    fn check_repeated_keys(&mut self, top: usize) {
        let count = self.entries[top].a as usize;
        let keys = KeyIndices {
            entries: &self.entries,
            at: top + 1,
            left: count,
        };
        let b = self.b;
        let span = |e: &Entry| &b[e.a as usize..e.b as usize];
        if keys.clone().any(|k| self.entries[k].escaped) {
            let mut decoded: Vec<Cow<'_, str>> =
                keys.map(|k| decode(self.text, self.entries[k])).collect();
            decoded.sort_unstable();
            self.duplicate_keys |= decoded.windows(2).any(|w| w[0] == w[1]);
            return;
        }
        if count <= 8 {
            let mut first = [0usize; 8];
            for (j, k) in keys.enumerate() {
                let key = span(&self.entries[k]);
                if first[..j]
                    .iter()
                    .any(|&f| same(span(&self.entries[f]), key))
                {
                    self.duplicate_keys = true;
                    return;
                }
                first[j] = k;
            }
            return;
        }
        // Open addressing, at most half full; a slot holds the key's hash (high half) and its
        // entry index + 1 (low half, 0 is empty), so only equal hashes compare bytes.
        let size = (count * 2).next_power_of_two();
        self.seen.clear();
        self.seen.resize(size, 0);
        for k in keys {
            let key = span(&self.entries[k]);
            let h = hash(key);
            let tag = h & !u64::from(u32::MAX);
            let mut slot = h as usize & (size - 1);
            loop {
                let held = self.seen[slot];
                if held == 0 {
                    self.seen[slot] = tag | (k as u64 + 1);
                    break;
                }
                if held & !u64::from(u32::MAX) == tag
                    && span(&self.entries[(held as u32) as usize - 1]) == key
                {
                    self.duplicate_keys = true;
                    return;
                }
                slot = (slot + 1) & (size - 1);
            }
        }
    }
}

/// The entry indices of an object's keys, in order (its value subtrees skipped).
#[derive(Clone)]
struct KeyIndices<'e> {
    entries: &'e [Entry],
    at: usize,
    left: usize,
}

impl Iterator for KeyIndices<'_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let key = self.at;
        self.at = past(self.entries, key + 1);
        Some(key)
    }
}

/// A fast non-cryptographic hash of a key's bytes (FxHash's mix, eight bytes at a time).
fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h: u64 = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    let mut w = [0u8; 8];
    w[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    h = (h.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    // The high bits are the best mixed.
    h ^ (h >> 32)
}

/// The decoded content of the string entry `e` of `text`: borrowed unless it holds an escape.
fn decode(text: &str, e: Entry) -> Cow<'_, str> {
    let raw = &text[e.a as usize..e.b as usize];
    if !e.escaped {
        return Cow::Borrowed(raw);
    }
    // The span, quotes included, is a checked JSON string, so this decode cannot fail.
    let quoted = &text[e.a as usize - 1..e.b as usize + 1];
    Cow::Owned(serde_json::from_str::<String>(quoted).unwrap_or_default())
}

#[cfg(test)]
mod tests;
