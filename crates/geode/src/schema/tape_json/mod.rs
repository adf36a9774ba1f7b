//! The [`Tape`] as a `jsonschema` value representation, so a compiled validator reads an answer
//! in place, with no `serde_json::Value` built (`CompiledSchema<TapeJson>::validate`, in
//! [`super::validate`]).
//!
//! Numbers read as serde_json reads them: an integer that fits `u64` (or, negative, `i64`) is
//! exact, anything else an `f64` parsed by serde_json itself, so bounds and `multipleOf` decide
//! as they do on a `Value`. Keys are found by a linear scan, and `required` is checked in one
//! pass over an object's members ([`Json::KEYS_PER_LOOKUP`]). The tests run the crate's
//! conformance check on it and compare every report with the `Value` path's.

use super::tape::{Kind, Members, Tape, TapeNode};
use jsonschema::json::{Array, Json, JsonNumber, Node, NodeIdentity, Object};
use jsonschema::types::JsonType;
use serde_json::{Number, Value};
use std::borrow::Cow;

/// The marker type naming the tape representation (`jsonschema::options_for::<TapeJson>()`).
pub struct TapeJson;

impl Json for TapeJson {
    type Node<'a> = TapeNode<'a>;
    type PreparedKey = Box<str>;
    type StringBuffer = ();

    /// A members pass visits keys at the cost of a scan each, and a lookup is a scan too: the
    /// pass is never dearer, so `required` always takes it (bounded to keep the product small).
    const KEYS_PER_LOOKUP: usize = 1 << 16;

    /// A tape is a tree: no node is its own descendant.
    const ACYCLIC: bool = true;

    fn prepare_key(key: &str) -> Box<str> {
        key.into()
    }

    fn with_string_node<T>((): &mut (), string: &str, f: impl FnOnce(TapeNode<'_>) -> T) -> T {
        let tape = Tape::string(string);
        f(tape.root())
    }
}

impl<'a> Node<'a, TapeJson> for TapeNode<'a> {
    type Object = TapeNode<'a>;
    type Array = TapeNode<'a>;
    type Number = TapeNumber<'a>;

    fn as_object(&self) -> Option<TapeNode<'a>> {
        (self.kind() == Kind::Object).then_some(*self)
    }

    fn as_array(&self) -> Option<TapeNode<'a>> {
        (self.kind() == Kind::Array).then_some(*self)
    }

    fn as_string(&self) -> Option<Cow<'a, str>> {
        self.as_str()
    }

    fn as_number(&self) -> Option<TapeNumber<'a>> {
        (self.kind() == Kind::Number).then(|| TapeNumber::read(self.raw()))
    }

    fn as_boolean(&self) -> Option<bool> {
        match self.kind() {
            Kind::True => Some(true),
            Kind::False => Some(false),
            _ => None,
        }
    }

    fn is_null(&self) -> bool {
        self.kind() == Kind::Null
    }

    fn is_number(&self) -> bool {
        self.kind() == Kind::Number
    }

    fn is_string(&self) -> bool {
        self.kind() == Kind::String
    }

    fn json_type(&self) -> JsonType {
        match self.kind() {
            Kind::Null => JsonType::Null,
            Kind::False | Kind::True => JsonType::Boolean,
            Kind::Number => JsonType::Number,
            Kind::String => JsonType::String,
            Kind::Array => JsonType::Array,
            Kind::Object => JsonType::Object,
        }
    }

    fn equals_value(&self, expected: &Value) -> bool {
        match (self.kind(), expected) {
            (Kind::Null, Value::Null) => true,
            (Kind::True, Value::Bool(b)) => *b,
            (Kind::False, Value::Bool(b)) => !*b,
            (Kind::String, Value::String(s)) => self.str_is(s),
            (Kind::Number, Value::Number(n)) => {
                jsonschema::json::cmp::equal_numbers(&TapeNumber::read(self.raw()), n)
            }
            (Kind::Array, Value::Array(items)) => {
                TapeNode::len(*self) == items.len()
                    && TapeNode::elements(*self)
                        .zip(items)
                        .all(|(a, b)| a.equals_value(b))
            }
            (Kind::Object, Value::Object(_)) => {
                jsonschema::json::cmp::equal(&TapeNode::to_value(*self), expected)
            }
            _ => false,
        }
    }

    fn to_value(&self) -> Cow<'a, Value> {
        Cow::Owned(TapeNode::to_value(*self))
    }

    fn identity(&self) -> Option<NodeIdentity> {
        Some(NodeIdentity::tagged(self.tape_address(), self.index()))
    }
}

impl<'a> Object<'a, TapeJson> for TapeNode<'a> {
    type Node = TapeNode<'a>;
    type MemberName = Cow<'a, str>;
    type MembersIter = Named<'a>;

    fn len(&self) -> usize {
        TapeNode::len(*self)
    }

    fn get(&self, key: &Box<str>) -> Option<TapeNode<'a>> {
        TapeNode::get(*self, key)
    }

    fn members(&self) -> Named<'a> {
        Named(TapeNode::members(*self))
    }
}

/// An object's members with their names decoded.
pub struct Named<'a>(Members<'a>);

impl<'a> Iterator for Named<'a> {
    type Item = (Cow<'a, str>, TapeNode<'a>);
    fn next(&mut self) -> Option<Self::Item> {
        let (k, v) = self.0.next()?;
        Some((k.as_str().unwrap_or_default(), v))
    }
}

impl<'a> Array<'a, TapeJson> for TapeNode<'a> {
    type Node = TapeNode<'a>;
    type ElementsIter = super::tape::Elements<'a>;

    fn len(&self) -> usize {
        TapeNode::len(*self)
    }

    fn elements(&self) -> super::tape::Elements<'a> {
        TapeNode::elements(*self)
    }
}

impl TapeNode<'_> {
    /// True for a number whose value is an integer (`1.0` is one, as JSON Schema says, and as
    /// [`crate::schema::root::TypeSet::of`] reads a `Value`).
    pub fn is_integer(self) -> bool {
        self.kind() == Kind::Number && TapeNumber::read(self.raw()).is_integer()
    }
}

/// A number of a tape, read as serde_json reads it.
#[derive(Debug, Clone, Copy)]
pub struct TapeNumber<'a> {
    text: &'a str,
    value: Read,
}

/// serde_json's three number forms.
#[derive(Debug, Clone, Copy)]
enum Read {
    PosInt(u64),
    NegInt(i64),
    Float(f64),
}

impl<'a> TapeNumber<'a> {
    fn read(text: &'a str) -> Self {
        let integer = !text.contains(['.', 'e', 'E']);
        let value = if !integer {
            Read::Float(float(text))
        } else if let Some(magnitude) = text.strip_prefix('-') {
            // serde_json reads `-0` as the float -0.0.
            match text.parse::<i64>() {
                Ok(n) if magnitude != "0" => Read::NegInt(n),
                _ => Read::Float(float(text)),
            }
        } else {
            text.parse::<u64>()
                .map_or_else(|_| Read::Float(float(text)), Read::PosInt)
        };
        Self { text, value }
    }
}

/// A number's `f64`, parsed by serde_json (the tape refused those out of range).
fn float(text: &str) -> f64 {
    serde_json::from_str::<f64>(text).unwrap_or(f64::NAN)
}

impl JsonNumber for TapeNumber<'_> {
    fn as_u64(&self) -> Option<u64> {
        match self.value {
            Read::PosInt(n) => Some(n),
            _ => None,
        }
    }

    fn as_i64(&self) -> Option<i64> {
        match self.value {
            Read::PosInt(n) => i64::try_from(n).ok(),
            Read::NegInt(n) => Some(n),
            Read::Float(_) => None,
        }
    }

    fn as_f64(&self) -> Option<f64> {
        Some(match self.value {
            Read::PosInt(n) => n as f64,
            Read::NegInt(n) => n as f64,
            Read::Float(f) => f,
        })
    }

    fn as_str(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.text)
    }

    fn to_number(&self) -> Cow<'_, Number> {
        Cow::Owned(match self.value {
            Read::PosInt(n) => Number::from(n),
            Read::NegInt(n) => Number::from(n),
            Read::Float(f) => Number::from_f64(f).unwrap_or_else(|| Number::from(0)),
        })
    }

    fn is_integer(&self) -> bool {
        match self.value {
            Read::PosInt(_) | Read::NegInt(_) => true,
            Read::Float(f) => f.fract() == 0.0,
        }
    }

    /// As a `Value` answers it (draft 4's `integer`), so `geode validate` and the worker agree: a
    /// `Value` holds an `f64`, not its literal, and reads an exponent form of 2^63 or more as
    /// an integer (`1e308` is one there, though the text has an exponent).
    fn is_written_as_integer(&self) -> bool {
        JsonNumber::is_written_as_integer(&*self.to_number())
    }
}

#[cfg(test)]
mod tests;
