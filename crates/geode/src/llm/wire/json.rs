//! [`JsonOut`]: a minimal JSON writer for request bodies on the hot path.
//!
//! Request building is benchmarked (`benches/wire.rs`, target ≥ 20× the reference), and most of
//! its time went into serde's per-string escaping of many short keys. This writer copies strings
//! in runs between the bytes that need escaping (found by a branch-free scan that vectorises),
//! escapes those as serde_json does, and hands every number to `serde_json`, so the output is
//! byte-for-byte what `serde_json::to_writer` produces (a property test checks this). Commas are placed by the writer: call
//! [`JsonOut::key`] before each member and [`JsonOut::item`] before each array element.

use serde_json::Value;

/// An append-only JSON text buffer.
#[derive(Debug, Default)]
pub struct JsonOut {
    buf: Vec<u8>,
    first: bool,
}

impl JsonOut {
    /// An empty buffer with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            buf: Vec::with_capacity(capacity),
            first: true,
        }
    }

    /// The JSON text written so far.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    /// `{`.
    pub fn begin_object(&mut self) {
        self.buf.push(b'{');
        self.first = true;
    }

    /// `}`.
    pub fn end_object(&mut self) {
        self.buf.push(b'}');
        self.first = false;
    }

    /// `[`.
    pub fn begin_array(&mut self) {
        self.buf.push(b'[');
        self.first = true;
    }

    /// `]`.
    pub fn end_array(&mut self) {
        self.buf.push(b']');
        self.first = false;
    }

    fn comma(&mut self) {
        if !self.first {
            self.buf.push(b',');
        }
        self.first = false;
    }

    /// Starts a member: `,"name":` (no comma for the first member).
    pub fn key(&mut self, name: &str) {
        self.comma();
        self.raw_string(name);
        self.buf.push(b':');
    }

    /// Starts an array element (a comma unless it is the first).
    pub fn item(&mut self) {
        self.comma();
    }

    /// A string value.
    pub fn string(&mut self, s: &str) {
        self.raw_string(s);
        self.first = false;
    }

    /// A boolean value.
    pub fn bool(&mut self, b: bool) {
        self.buf
            .extend_from_slice(if b { b"true" } else { b"false" });
        self.first = false;
    }

    /// An unsigned integer value.
    pub fn u64(&mut self, n: u64) {
        self.number(&serde_json::Number::from(n));
    }

    /// A float value (`null` when not finite, as serde_json writes it).
    pub fn f32(&mut self, x: f32) {
        match serde_json::Number::from_f64(f64::from(x)) {
            Some(n) => self.number(&n),
            None => self.buf.extend_from_slice(b"null"),
        }
        self.first = false;
    }

    fn number(&mut self, n: &serde_json::Number) {
        // Writing to a Vec cannot fail.
        let _ = serde_json::to_writer(&mut self.buf, n);
        self.first = false;
    }

    /// Any JSON value, written as `serde_json` would (compact, member order kept).
    pub fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.buf.extend_from_slice(b"null"),
            Value::Bool(b) => self.bool(*b),
            Value::Number(n) => self.number(n),
            Value::String(s) => self.raw_string(s),
            Value::Array(items) => {
                self.begin_array();
                for x in items {
                    self.item();
                    self.value(x);
                }
                self.end_array();
            }
            Value::Object(m) => {
                self.begin_object();
                for (k, x) in m {
                    self.key(k);
                    self.value(x);
                }
                self.end_object();
            }
        }
        self.first = false;
    }

    fn raw_string(&mut self, s: &str) {
        let bytes = s.as_bytes();
        self.buf.reserve(bytes.len() + 2);
        self.buf.push(b'"');
        let mut start = 0;
        while let Some(i) = find_escape(&bytes[start..]) {
            let i = start + i;
            self.buf.extend_from_slice(&bytes[start..i]);
            push_escape(&mut self.buf, bytes[i]);
            start = i + 1;
        }
        self.buf.extend_from_slice(&bytes[start..]);
        self.buf.push(b'"');
    }
}

/// True for a byte JSON must escape: `"`, `\` and control characters below 0x20.
#[inline]
fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// True when any byte of the block needs escaping (no early exit, so it vectorises).
#[inline]
fn dirty(block: &[u8]) -> bool {
    block.iter().fold(false, |acc, &b| {
        acc | (b < 0x20) | (b == b'"') | (b == b'\\')
    })
}

/// The first byte that needs escaping. Clean 16-byte blocks are checked without branches
/// (the compiler vectorises the fixed-size loop).
fn find_escape(bytes: &[u8]) -> Option<usize> {
    let mut blocks = bytes.chunks_exact(16);
    let mut offset = 0;
    for block in &mut blocks {
        if dirty(block) {
            return block
                .iter()
                .position(|&b| needs_escape(b))
                .map(|p| offset + p);
        }
        offset += 16;
    }
    let tail = blocks.remainder();
    tail.iter()
        .position(|&b| needs_escape(b))
        .map(|p| offset + p)
}

/// Writes the escape for `b` exactly as serde_json does.
fn push_escape(buf: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match b {
        b'"' => buf.extend_from_slice(b"\\\""),
        b'\\' => buf.extend_from_slice(b"\\\\"),
        b'\n' => buf.extend_from_slice(b"\\n"),
        b'\r' => buf.extend_from_slice(b"\\r"),
        b'\t' => buf.extend_from_slice(b"\\t"),
        0x08 => buf.extend_from_slice(b"\\b"),
        0x0c => buf.extend_from_slice(b"\\f"),
        _ => buf.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[usize::from(b >> 4)],
            HEX[usize::from(b & 0xf)],
        ]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn values_are_written_exactly_as_serde_json_writes_them() {
        let v = json!({"a": [1, -2, 3.5, true, null, "x\"y\n\u{1}"], "b": {}, "c": [],
                       "ü": {"nested": [{"k": "v"}]}, "big": 18446744073709551615u64});
        let mut out = JsonOut::with_capacity(0);
        out.value(&v);
        assert_eq!(
            String::from_utf8(out.into_bytes()).unwrap(),
            serde_json::to_string(&v).unwrap()
        );
    }

    #[test]
    fn members_and_items_get_commas_between_them() {
        let mut o = JsonOut::with_capacity(0);
        o.begin_object();
        o.key("a");
        o.begin_array();
        o.item();
        o.u64(1);
        o.item();
        o.begin_object();
        o.end_object();
        o.end_array();
        o.key("b");
        o.bool(false);
        o.key("c");
        o.f32(f32::NAN);
        o.end_object();
        assert_eq!(o.into_bytes(), br#"{"a":[1,{}],"b":false,"c":null}"#);
    }

    proptest! {
        #[test]
        fn any_string_matches_serde_json(s in ".*") {
            let mut out = JsonOut::with_capacity(0);
            out.string(&s);
            prop_assert_eq!(String::from_utf8(out.into_bytes()).unwrap(), serde_json::to_string(&s).unwrap());
        }
    }
}
