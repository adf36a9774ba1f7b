//! [`check`]: refuses, before any token, a schema whose every answer is longer than the call's
//! token budget can hold.
//!
//! Why: `{"type": "array", "minItems": 1000000}` or `{"type": "string", "minLength": 1000000000}`
//! has no answer that fits `max_tokens`. llguidance compiles it, the model decodes until the
//! budget and the answer ends cut (`truncated`), after minutes at `geode run`'s default of
//! 32,768 tokens, for nothing. Instead the engine computes a **lower bound** on the length of
//! any answer the decoding schema allows ([`shortest_bytes`]), and on the tokens it needs: no
//! token of the model is longer than its longest one (`max_token_len` of the vocabulary), so an
//! answer of `B` bytes takes at least `B / longest` tokens. When even that is over the budget the
//! call is refused ([`LocalError::AnswerTooLong`], exit 2) with the keyword that makes it long.
//!
//! The bound only counts what every answer must contain: the quotes and `minLength` of a
//! string-only schema, the brackets, `minItems` items and separators of an array-only one, the
//! braces, `required` keys and `minProperties` of an object-only one, the shortest `const`/`enum`
//! value, the longest `allOf` entry, the shortest `anyOf`/`oneOf` branch, local `$ref`s (each
//! path followed at most [`MAX_DEPTH`] deep). Anything else counts as one byte, so the bound
//! never exceeds a real answer and no satisfiable call that could fit is refused.

use crate::error::LocalError;
use serde_json::{Map, Value};

/// How deep `$ref`s and subschemas are followed; deeper counts as one byte.
pub const MAX_DEPTH: usize = 64;

/// Subschemas visited at most (`anyOf` branches that each refer back to the root would
/// otherwise be walked exponentially often); past it each one counts as one byte, which keeps
/// the bound a lower bound.
pub const MAX_VISITS: u32 = 100_000;

/// What makes the shortest answer long: the keyword, its value and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// The JSON Pointer of the schema holding the keyword (in the decoding schema).
    pub pointer: String,
    /// `minLength`, `minItems`, `minProperties`, `required`, `const` or `enum`.
    pub keyword: &'static str,
    /// The keyword's value (a count), or the length of the shortest literal.
    pub value: u64,
}

/// A lower bound on an answer's length in bytes, and what contributes most to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bound {
    /// At least this many bytes.
    pub bytes: u64,
    /// The keyword behind the bound, when one is.
    pub cause: Option<Cause>,
}

impl Bound {
    const ONE: Bound = Bound {
        bytes: 1,
        cause: None,
    };

    fn max(self, other: Bound) -> Bound {
        if other.bytes > self.bytes {
            other
        } else {
            self
        }
    }
}

/// Separator lengths of the decoding grammar: llguidance's `x-guidance` `item_separator` and
/// `key_separator` at the root when whitespace is not flexible, else the bare `,` and `:`.
struct Separators {
    item: u64,
    key: u64,
}

impl Separators {
    fn of(root: &Value) -> Separators {
        let guidance = root.get("x-guidance");
        let fixed = guidance
            .and_then(|g| g.get("whitespace_flexible"))
            .and_then(Value::as_bool)
            == Some(false);
        let len = |key: &str| {
            guidance
                .and_then(|g| g.get(key))
                .and_then(Value::as_str)
                .filter(|_| fixed)
                .map_or(1, |s| u64::try_from(s.len()).unwrap_or(1).max(1))
        };
        Separators {
            item: len("item_separator"),
            key: len("key_separator"),
        }
    }
}

/// A lower bound on the bytes of any answer `schema` (a decoding schema) allows.
pub fn shortest_bytes(schema: &Value) -> Bound {
    let walk = Walk {
        root: schema,
        sep: Separators::of(schema),
        visits: std::cell::Cell::new(0),
    };
    walk.node(schema, "", 0)
}

/// Refuses `schema` when its shortest answer cannot fit `max_tokens` tokens of a model whose
/// longest token is `longest_token` bytes.
pub fn check(schema: &Value, max_tokens: u32, longest_token: usize) -> Result<(), LocalError> {
    let bound = shortest_bytes(schema);
    let longest = u64::try_from(longest_token.max(1)).unwrap_or(u64::MAX);
    let tokens = bound.bytes.div_ceil(longest);
    if tokens <= u64::from(max_tokens) {
        return Ok(());
    }
    let cause = bound.cause.map_or_else(
        || "what the schema requires".to_owned(),
        |c| {
            let at = if c.pointer.is_empty() {
                "/"
            } else {
                &c.pointer
            };
            format!("{} {} at {at}", c.keyword, c.value)
        },
    );
    Err(LocalError::AnswerTooLong {
        bytes: bound.bytes,
        tokens,
        max_tokens,
        cause,
    })
}

struct Walk<'a> {
    root: &'a Value,
    sep: Separators,
    visits: std::cell::Cell<u32>,
}

impl Walk<'_> {
    fn node(&self, schema: &Value, pointer: &str, depth: usize) -> Bound {
        let Value::Object(map) = schema else {
            return Bound::ONE;
        };
        self.visits.set(self.visits.get().saturating_add(1));
        if depth > MAX_DEPTH || self.visits.get() > MAX_VISITS {
            return Bound::ONE;
        }
        let mut bound = self.typed(map, pointer, depth);
        if let Some(target) = map
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            && let Some(resolved) = self.root.pointer(target)
        {
            bound = bound.max(self.node(resolved, target, depth + 1));
        }
        if let Some(entries) = map.get("allOf").and_then(Value::as_array) {
            for (i, entry) in entries.iter().enumerate() {
                bound = bound.max(self.node(entry, &format!("{pointer}/allOf/{i}"), depth + 1));
            }
        }
        for key in ["anyOf", "oneOf"] {
            let branches = map.get(key).and_then(Value::as_array);
            let shortest = branches
                .into_iter()
                .flatten()
                .enumerate()
                .map(|(i, b)| self.node(b, &format!("{pointer}/{key}/{i}"), depth + 1))
                .min_by_key(|b| b.bytes);
            if let Some(shortest) = shortest {
                bound = bound.max(shortest);
            }
        }
        if let Some(value) = map.get("const") {
            bound = bound.max(literal(pointer, "const", std::slice::from_ref(value)));
        }
        if let Some(Value::Array(values)) = map.get("enum")
            && !values.is_empty()
        {
            bound = bound.max(literal(pointer, "enum", values));
        }
        bound
    }

    /// The bound from the keywords of the schema's one type, when it has exactly one.
    fn typed(&self, map: &Map<String, Value>, pointer: &str, depth: usize) -> Bound {
        let count = |key: &str| map.get(key).and_then(Value::as_u64).unwrap_or(0);
        let cause = |keyword, value| {
            Some(Cause {
                pointer: pointer.to_owned(),
                keyword,
                value,
            })
        };
        match only_type(map) {
            Some("string") => {
                let min = count("minLength");
                Bound {
                    bytes: min.saturating_add(2),
                    cause: (min > 0).then(|| cause("minLength", min)).flatten(),
                }
            }
            Some("array") => {
                let n = count("minItems");
                if n == 0 {
                    return Bound {
                        bytes: 2,
                        cause: None,
                    };
                }
                let item = match map.get("items") {
                    Some(items @ (Value::Object(_) | Value::Bool(_))) => {
                        self.node(items, &format!("{pointer}/items"), depth + 1)
                    }
                    _ => Bound::ONE,
                };
                let bytes = n
                    .saturating_mul(item.bytes)
                    .saturating_add((n - 1).saturating_mul(self.sep.item))
                    .saturating_add(2);
                let cause = if n > 1 {
                    cause("minItems", n)
                } else {
                    item.cause
                };
                Bound { bytes, cause }
            }
            Some("object") => self.object(map, pointer, depth),
            _ => Bound::ONE,
        }
    }

    /// Braces, each required key with its separator and shortest value, and the keys
    /// `minProperties` asks for beyond them (the shortest key being `""`).
    fn object(&self, map: &Map<String, Value>, pointer: &str, depth: usize) -> Bound {
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let properties = map.get("properties").and_then(Value::as_object);
        let mut bytes: u64 = 2;
        let mut biggest: Option<Bound> = None;
        for name in &required {
            let value = match properties.and_then(|p| p.get(*name)) {
                Some(sub) => self.node(sub, &format!("{pointer}/properties/{name}"), depth + 1),
                None => Bound::ONE,
            };
            let key = u64::try_from(Value::String((*name).to_owned()).to_string().len())
                .unwrap_or(u64::MAX);
            bytes = bytes
                .saturating_add(key)
                .saturating_add(self.sep.key)
                .saturating_add(value.bytes);
            biggest = Some(match biggest {
                Some(b) => b.max(value),
                None => value,
            });
        }
        let n = u64::try_from(required.len()).unwrap_or(u64::MAX);
        let min_properties = map
            .get("minProperties")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let extra = min_properties.saturating_sub(n);
        // `"":1` per extra key.
        bytes = bytes.saturating_add(extra.saturating_mul(3u64.saturating_add(self.sep.key)));
        let keys = n.saturating_add(extra);
        bytes = bytes.saturating_add(keys.saturating_sub(1).saturating_mul(self.sep.item));
        let cause = if extra > 0 && extra >= n {
            Some(Cause {
                pointer: pointer.to_owned(),
                keyword: "minProperties",
                value: min_properties,
            })
        } else {
            biggest.and_then(|b| b.cause).or_else(|| {
                (n > 0).then(|| Cause {
                    pointer: pointer.to_owned(),
                    keyword: "required",
                    value: n,
                })
            })
        };
        Bound { bytes, cause }
    }
}

/// `type` when it names exactly one type.
fn only_type(map: &Map<String, Value>) -> Option<&str> {
    match map.get("type")? {
        Value::String(t) => Some(t),
        Value::Array(types) if types.len() == 1 => types[0].as_str(),
        _ => None,
    }
}

/// The shortest of `values` written as compact JSON.
fn literal(pointer: &str, keyword: &'static str, values: &[Value]) -> Bound {
    let bytes = values
        .iter()
        .map(|v| u64::try_from(v.to_string().len()).unwrap_or(u64::MAX))
        .min()
        .unwrap_or(1);
    Bound {
        bytes,
        cause: Some(Cause {
            pointer: pointer.to_owned(),
            keyword,
            value: bytes,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_every_answer_must_hold_is_counted() {
        let b = shortest_bytes(&json!({"type": "string", "minLength": 10}));
        assert_eq!(b.bytes, 12);
        assert_eq!(b.cause.unwrap().keyword, "minLength");
        let compact = json!({
            "x-guidance": {"whitespace_flexible": false, "item_separator": ", ", "key_separator": ": "},
            "type": "array", "items": {"type": "integer"}, "minItems": 3,
        });
        // `[1, 1, 1]`
        assert_eq!(shortest_bytes(&compact).bytes, 9);
        // `{"a": "", "b": 1}` less the optional key.
        let object = json!({
            "x-guidance": {"whitespace_flexible": false, "item_separator": ", ", "key_separator": ": "},
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}, "c": {"type": "string"}},
            "required": ["a", "b"],
        });
        assert_eq!(shortest_bytes(&object).bytes, 17);
        // Shortest branch, longest allOf entry, shortest enum value, a $ref.
        let s = json!({
            "$defs": {"long": {"type": "string", "minLength": 50}},
            "anyOf": [{"$ref": "#/$defs/long"}, {"enum": ["ab", "abcdef"]}],
        });
        assert_eq!(shortest_bytes(&s).bytes, 4);
        let s = json!({"allOf": [{"$ref": "#/$defs/long"}], "$defs": {"long": {"type": "string", "minLength": 50}}});
        assert_eq!(shortest_bytes(&s).bytes, 52);
    }

    #[test]
    fn a_recursive_or_untyped_schema_is_bounded_and_small() {
        let s = json!({"$ref": "#", "minLength": 1_000_000});
        assert_eq!(shortest_bytes(&s).bytes, 1);
        // 2^64 paths without the visit budget.
        let s = json!({"anyOf": [{"$ref": "#"}, {"$ref": "#"}], "allOf": [{"$ref": "#"}]});
        assert_eq!(shortest_bytes(&s).bytes, 1);
        assert_eq!(shortest_bytes(&json!(true)).bytes, 1);
        assert_eq!(shortest_bytes(&json!({"minItems": 1_000_000})).bytes, 1);
    }

    #[test]
    fn a_schema_whose_shortest_answer_cannot_fit_is_refused_naming_the_keyword() {
        // `[1, 1, ...]`: 3,000,000 bytes, at least 37,038 tokens of 81 bytes (SmolLM2's longest).
        let s = json!({
            "x-guidance": {"whitespace_flexible": false, "item_separator": ", ", "key_separator": ": "},
            "type": "array", "items": {"type": "integer"}, "minItems": 1_000_000,
        });
        let err = check(&s, 32_768, 81).unwrap_err().to_string();
        assert!(err.contains("minItems 1000000 at /"), "{err}");
        assert!(err.contains("max_tokens 32768"), "{err}");
        let s = json!({"type": "object", "properties": {"t": {"type": "string", "minLength": 1_000_000_000_u64}}, "required": ["t"]});
        let err = check(&s, 512, 81).unwrap_err().to_string();
        assert!(
            err.contains("minLength 1000000000 at /properties/t"),
            "{err}"
        );
        check(&json!({"type": "string", "minLength": 100}), 512, 81).unwrap();
        check(
            &json!({"type": "string", "maxLength": 1_000_000_000_u64}),
            16,
            81,
        )
        .unwrap();
    }
}
