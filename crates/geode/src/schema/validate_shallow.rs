//! The reference's shallow check on answer text (part of [`super`], in its own file for size).

use crate::schema::root::AnswerRoot;
use crate::schema::{ResponseSchema, extract};
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use std::borrow::Cow;

/// The outcome of [`shallow_check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShallowCheck<'a> {
    /// The answer (the last balanced object, for an object root) parsed and, when it is an
    /// object, has every required key.
    Pass {
        /// The answer's exact text (an object's, an array's, ...).
        object: &'a str,
    },
    /// No answer of the root's type parsed (no balanced JSON object, for an object root).
    NoObject,
    /// The last balanced object lacks these required keys (in `required` order).
    MissingKeys {
        /// The object's exact text.
        object: &'a str,
        /// The missing keys.
        keys: Vec<String>,
    },
}

/// The reference's worker check on answer text (§4.2 steps 6–8): the last top-level object that
/// parses must have every top-level `required` key. For a schema whose root is not an object
/// ([`AnswerRoot::Values`]) the answer is found by [`extract::find_answer`]'s rule and must parse
/// as a value of the root's type; `required` applies only when that value is an object.
/// Values are not built, only syntax-checked
/// (several times faster than parsing into a `Value`). Like
/// [`extract::find_last_object`], it accepts numbers that do not fit an `f64` (`1e400`), as
/// Python's `json.loads` does; [`extract::extract_last_object`] does not.
///
/// ```
/// use geode::schema::{ResponseSchema, validate::{shallow_check, ShallowCheck}};
/// let s = ResponseSchema::from_json_str(r#"{"required":["a","b"]}"#).unwrap();
/// assert_eq!(shallow_check(&s, r#"ok {"a":1}"#),
///            ShallowCheck::MissingKeys { object: r#"{"a":1}"#, keys: vec!["b".into()] });
/// ```
pub fn shallow_check<'a>(schema: &ResponseSchema, text: &'a str) -> ShallowCheck<'a> {
    let required = schema.required_keys();
    let parse = |s: &'a str| {
        if !s.starts_with('{') {
            return serde_json::from_str::<IgnoredAny>(s)
                .ok()
                .map(|_| vec![true; required.len()]);
        }
        let mut de = serde_json::Deserializer::from_str(s);
        let seen = KeysSeed {
            required: &required,
        }
        .deserialize(&mut de)
        .ok()?;
        de.end().ok()?;
        Some(seen)
    };
    let found = match AnswerRoot::of(schema) {
        AnswerRoot::Object => extract::last_object_with(text, parse),
        AnswerRoot::Values(types) => extract::last_value_with(text, types, parse),
    };
    match found {
        None => ShallowCheck::NoObject,
        Some((object, seen)) => {
            let keys: Vec<String> = required
                .iter()
                .zip(seen)
                .filter(|(_, present)| !present)
                .map(|(k, _)| (*k).to_owned())
                .collect();
            if keys.is_empty() {
                ShallowCheck::Pass { object }
            } else {
                ShallowCheck::MissingKeys { object, keys }
            }
        }
    }
}

/// Deserialises a JSON object, ignoring values, into "which of `required` appear as keys".
struct KeysSeed<'r> {
    required: &'r [&'r str],
}

impl<'de> DeserializeSeed<'de> for KeysSeed<'_> {
    type Value = Vec<bool>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Vec<bool>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for KeysSeed<'_> {
    type Value = Vec<bool>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<bool>, A::Error> {
        let mut seen = vec![false; self.required.len()];
        while let Some(key) = map.next_key_seed(KeyStr)? {
            for (i, r) in self.required.iter().enumerate() {
                if *r == key {
                    seen[i] = true;
                }
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(seen)
    }
}

/// A map key, borrowed from the input when it has no escapes.
struct KeyStr;

impl<'de> DeserializeSeed<'de> for KeyStr {
    type Value = Cow<'de, str>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyStr {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string key")
    }
    fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}
