//! The longest answer a decoding schema allows, in tokens, for [`super::budget`].
//!
//! [`worst_case`] walks the narrowed schema (following its local `$ref`s) and adds up the
//! longest text each part can take, in two kinds of characters:
//! * **free**: what the model chooses inside a string (its `maxLength`, or the longest match of
//!   an anchored, bounded `pattern`) or a number ([`NUMBER_CHARS`]). Counted as one token
//!   each: SmolLM2 writes digits one token at a time, and a looping string is often digits and
//!   punctuation (`"2015_2017_2013_..."`).
//! * **fixed**: what the schema gives: keys, quotes, brackets, separators, `enum`/`const`
//!   values, `true`/`false`/`null`. Counted as [`FIXED_CHARS_PER_TOKEN`] characters a token
//!   (`{"`, `": "` and `", "` are one token each, key words like `document` one token, but
//!   `_`, digits and short names split: measured on a GOV.UK content item of JSONSchemaBench,
//!   whose 25 required keys and enum values took more than 3 characters a token would allow).
//!
//! The result is `None` (unbounded) for a string without `maxLength` or bounded pattern, an
//! array without `maxItems`, an object whose keys are free, a schema that allows anything, and
//! a `$ref` back into a schema being measured (recursion). A value must satisfy every `allOf`
//! entry and its `$ref`, so the smallest of their bounds holds; an `anyOf`/`oneOf` takes its
//! largest branch. A number is assumed to take at most [`NUMBER_CHARS`] characters (JSON does
//! not bound it; the model does not write longer ones in practice), an integer with both bounds
//! at most the longer bound written out.

use super::tighten_regex::max_len;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// The characters a number is assumed to take at most.
pub(super) const NUMBER_CHARS: u64 = 24;

/// The longest integer `map` allows: the longer of its `minimum` and `maximum` written out when
/// both are integers (an `int32` is decoded within 11 characters), else [`NUMBER_CHARS`].
fn integer_chars(map: &Map<String, Value>) -> u64 {
    let bound = |k| {
        map.get(k)
            .and_then(Value::as_i64)
            .map(|b| b.to_string().len())
    };
    match (bound("minimum"), bound("maximum")) {
        (Some(lo), Some(hi)) => {
            u64::try_from(lo.max(hi)).map_or(NUMBER_CHARS, |n| n.min(NUMBER_CHARS))
        }
        _ => NUMBER_CHARS,
    }
}

/// Characters of schema-given text per token.
pub(super) const FIXED_CHARS_PER_TOKEN: u64 = 2;

/// The length of an answer, in the two kinds of characters of the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Size {
    /// Characters the model chooses (one token each).
    pub free: u64,
    /// Characters the schema gives.
    pub fixed: u64,
}

impl Size {
    fn fixed(n: u64) -> Self {
        Self { free: 0, fixed: n }
    }

    fn free(n: u64) -> Self {
        Self { free: n, fixed: 0 }
    }

    fn plus(self, other: Self) -> Self {
        Self {
            free: self.free.saturating_add(other.free),
            fixed: self.fixed.saturating_add(other.fixed),
        }
    }

    fn times(self, n: u64) -> Self {
        Self {
            free: self.free.saturating_mul(n),
            fixed: self.fixed.saturating_mul(n),
        }
    }

    /// The tokens this many characters take at most (see the module docs).
    pub fn tokens(self) -> u64 {
        self.free
            .saturating_add(self.fixed.div_ceil(FIXED_CHARS_PER_TOKEN))
    }
}

/// The larger of two bounds (unbounded when either is).
fn larger(a: Option<Size>, b: Option<Size>) -> Option<Size> {
    let (a, b) = (a?, b?);
    Some(if b.tokens() > a.tokens() { b } else { a })
}

/// The smaller of two bounds that both hold (the known one when the other is unbounded).
fn smaller(a: Option<Size>, b: Option<Size>) -> Option<Size> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.tokens() < a.tokens() { b } else { a }),
        (a, None) => a,
        (None, b) => b,
    }
}

/// The longest answer `schema` (a decoding schema, its root the document of its `$ref`s)
/// allows; `None` when unbounded.
pub(super) fn worst_case(schema: &Value) -> Option<Size> {
    Measure {
        doc: schema,
        memo: HashMap::new(),
        active: Vec::new(),
    }
    .size(schema)
}

struct Measure<'a> {
    doc: &'a Value,
    /// Sizes of `$ref` targets already measured.
    memo: HashMap<String, Option<Size>>,
    /// `$ref` targets being measured (a reference to one of them recurs).
    active: Vec<String>,
}

impl Measure<'_> {
    fn size(&mut self, node: &Value) -> Option<Size> {
        let map = match node {
            Value::Bool(false) => return Some(Size::default()),
            Value::Object(map) => map,
            _ => return None,
        };
        if let Some(value) = map.get("const") {
            return Some(literal(value));
        }
        if let Some(Value::Array(values)) = map.get("enum") {
            return values
                .iter()
                .map(literal)
                .max_by_key(|s| s.tokens())
                .or(Some(Size::default()));
        }
        let mut bound = self.own(map);
        if let Some(Value::String(reference)) = map.get("$ref") {
            let target = self.reference(reference);
            bound = smaller(bound, target);
        }
        if let Some(Value::Array(all)) = map.get("allOf") {
            for entry in all {
                let entry = self.size(entry);
                bound = smaller(bound, entry);
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = map.get(key) {
                let mut widest = Some(Size::default());
                for branch in branches {
                    widest = larger(widest, self.size(branch));
                }
                bound = smaller(bound, widest);
            }
        }
        bound
    }

    /// The bound from the schema's own type keywords (`None`: its type is open).
    fn own(&mut self, map: &Map<String, Value>) -> Option<Size> {
        let mut types: Vec<&str> = match map.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if types.is_empty() {
            if ["properties", "additionalProperties", "patternProperties"]
                .iter()
                .any(|k| map.contains_key(*k))
            {
                types.push("object");
            } else if map.contains_key("items") || map.contains_key("prefixItems") {
                types.push("array");
            } else {
                return None;
            }
        }
        let mut widest = Some(Size::default());
        for t in types {
            let size = match t {
                "string" => string(map),
                "integer" => Some(Size::free(integer_chars(map))),
                "number" => Some(Size::free(NUMBER_CHARS)),
                "boolean" => Some(Size::fixed(5)),
                "null" => Some(Size::fixed(4)),
                "array" => self.array(map),
                "object" => self.object(map),
                _ => None,
            };
            widest = larger(widest, size);
        }
        widest
    }

    fn reference(&mut self, reference: &str) -> Option<Size> {
        let pointer = reference.strip_prefix('#')?.to_owned();
        if self.active.contains(&pointer) {
            return None;
        }
        if let Some(known) = self.memo.get(&pointer) {
            return *known;
        }
        let target = self.doc.pointer(&pointer)?;
        self.active.push(pointer.clone());
        let size = self.size(target);
        self.active.pop();
        self.memo.insert(pointer, size);
        size
    }

    fn array(&mut self, map: &Map<String, Value>) -> Option<Size> {
        let brackets = Size::fixed(2);
        let max = map.get("maxItems").and_then(Value::as_u64)?;
        if max == 0 {
            return Some(brackets);
        }
        // Positional items (`prefixItems`, or draft-04 `items` as a list), then the rest.
        let (positional, rest) = match (map.get("prefixItems"), map.get("items")) {
            (Some(Value::Array(p)), rest) => (p.as_slice(), rest),
            (None, Some(Value::Array(p))) => (p.as_slice(), map.get("additionalItems")),
            (None, rest) => (&[][..], rest),
            (Some(_), rest) => (&[][..], rest),
        };
        let separator = Size::fixed(2);
        let mut total = brackets;
        let mut counted = 0;
        for item in positional
            .iter()
            .take(usize::try_from(max).unwrap_or(usize::MAX))
        {
            total = total.plus(self.size(item)?).plus(separator);
            counted += 1;
        }
        let left = max.saturating_sub(counted);
        if left > 0 {
            let item = match rest {
                Some(Value::Bool(false)) => Size::default(),
                Some(schema) => self.size(schema)?.plus(separator),
                None => return None,
            };
            total = total.plus(item.times(left));
        }
        Some(total)
    }

    fn object(&mut self, map: &Map<String, Value>) -> Option<Size> {
        let mut total = Size::fixed(2);
        // `"key": value, ` for each declared property.
        for (key, value) in map
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if value == &Value::Bool(false) {
                continue;
            }
            let key = Size::fixed(u64::try_from(key.chars().count()).unwrap_or(u64::MAX) + 6);
            total = total.plus(key).plus(self.size(value)?);
        }
        let patterns = map.get("patternProperties").and_then(Value::as_object);
        let closed = map.get("additionalProperties") == Some(&Value::Bool(false));
        if !closed {
            return None;
        }
        if let Some(patterns) = patterns.filter(|p| !p.is_empty()) {
            let max = map.get("maxProperties").and_then(Value::as_u64)?;
            let mut entry = Some(Size::default());
            for (pattern, value) in patterns {
                let key = max_len(pattern).map(|n| Size::free(n).plus(Size::fixed(6)));
                let value = self.size(value);
                entry = larger(entry, key.zip(value).map(|(k, v)| k.plus(v)));
            }
            total = total.plus(entry?.times(max));
        }
        Some(total)
    }
}

/// A string's longest text: its `maxLength`, the longest match of its anchored pattern, or
/// the longest text of a fixed-length format; `None` otherwise.
fn string(map: &Map<String, Value>) -> Option<Size> {
    let quotes = Size::fixed(2);
    let by_length = map.get("maxLength").and_then(Value::as_u64);
    let by_pattern = map.get("pattern").and_then(Value::as_str).and_then(max_len);
    let by_format = map
        .get("format")
        .and_then(Value::as_str)
        .and_then(format_len);
    let longest = [by_length, by_pattern, by_format]
        .into_iter()
        .flatten()
        .min()?;
    Some(quotes.plus(Size::free(longest)))
}

/// The longest text of a format whose values have a bounded length.
fn format_len(format: &str) -> Option<u64> {
    match format {
        "date" => Some(10),
        "time" => Some(32),
        "date-time" => Some(42),
        "uuid" => Some(36),
        "ipv4" => Some(15),
        "ipv6" => Some(45),
        _ => None,
    }
}

/// An `enum`/`const` value as compact JSON (schema-given text).
fn literal(value: &Value) -> Size {
    let text = value.to_string();
    Size::fixed(u64::try_from(text.chars().count()).unwrap_or(u64::MAX))
}
