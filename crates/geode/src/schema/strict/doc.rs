//! What the strict walk reads of a schema (part of [`super`], in its own file for size): one
//! trait, [`Doc`], with two holders, a `serde_json::Value` and a [`TapeNode`], so the rules are
//! written once and [`super::check_strict_text`] checks a schema's text without building a
//! `Value`.

use crate::schema::tape::{Elements, Kind, Members, TapeNode};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// One JSON value of a schema, as the strict walk reads it. `Copy`: a reference or a tape index.
pub(crate) trait Doc<'a>: Copy + 'a {
    /// An object's members, (name, value) in document order.
    type Members: Iterator<Item = (Cow<'a, str>, Self)>;
    /// An array's elements in order.
    type Elements: Iterator<Item = Self>;

    /// True for an object.
    fn is_object(self) -> bool;
    /// An object's members (nothing for another type).
    fn members(self) -> Self::Members;
    /// An array's elements; `None` for another type.
    fn elements(self) -> Option<Self::Elements>;
    /// An object's value for `key` (the last one when a key repeats).
    fn get(self, key: &str) -> Option<Self>;
    /// Elements of an array, members of an object.
    fn len(self) -> usize;
    /// A string's text.
    fn as_str(self) -> Option<Cow<'a, str>>;
    /// True for a string equal to `s`.
    fn str_is(self, s: &str) -> bool;
    /// True for a string.
    fn is_string(self) -> bool;
    /// True for `false`.
    fn is_false(self) -> bool;
    /// True for `null`.
    fn is_null(self) -> bool;
    /// The value at a JSON Pointer below this one.
    fn pointer(self, pointer: &str) -> Option<Self>;
}

/// A member of a schema object: a linear scan for small objects (cheaper than hashing).
pub(crate) fn get<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if m.len() <= 8 {
        m.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
    } else {
        m.get(key)
    }
}

/// The members of a `Value` object, names borrowed.
pub(crate) struct ValueMembers<'a>(Option<serde_json::map::Iter<'a>>);

impl<'a> Iterator for ValueMembers<'a> {
    type Item = (Cow<'a, str>, &'a Value);
    fn next(&mut self) -> Option<Self::Item> {
        let (k, v) = self.0.as_mut()?.next()?;
        Some((Cow::Borrowed(k.as_str()), v))
    }
}

impl<'a> Doc<'a> for &'a Value {
    type Members = ValueMembers<'a>;
    type Elements = std::slice::Iter<'a, Value>;

    fn is_object(self) -> bool {
        self.is_object()
    }
    fn members(self) -> ValueMembers<'a> {
        ValueMembers(self.as_object().map(Map::iter))
    }
    fn elements(self) -> Option<Self::Elements> {
        self.as_array().map(|a| a.iter())
    }
    fn get(self, key: &str) -> Option<Self> {
        get(self.as_object()?, key)
    }
    fn len(self) -> usize {
        match self {
            Value::Object(m) => m.len(),
            Value::Array(a) => a.len(),
            _ => 0,
        }
    }
    fn as_str(self) -> Option<Cow<'a, str>> {
        Value::as_str(self).map(Cow::Borrowed)
    }
    fn str_is(self, s: &str) -> bool {
        Value::as_str(self) == Some(s)
    }
    fn is_string(self) -> bool {
        self.is_string()
    }
    fn is_false(self) -> bool {
        *self == Value::Bool(false)
    }
    fn is_null(self) -> bool {
        self.is_null()
    }
    fn pointer(self, pointer: &str) -> Option<Self> {
        Value::pointer(self, pointer)
    }
}

/// The members of a tape object, names decoded (borrowed unless escaped).
pub(crate) struct TapeMembers<'a>(Members<'a>);

impl<'a> Iterator for TapeMembers<'a> {
    type Item = (Cow<'a, str>, TapeNode<'a>);
    fn next(&mut self) -> Option<Self::Item> {
        let (k, v) = self.0.next()?;
        Some((k.as_str().unwrap_or_default(), v))
    }
}

impl<'a> Doc<'a> for TapeNode<'a> {
    type Members = TapeMembers<'a>;
    type Elements = Elements<'a>;

    fn is_object(self) -> bool {
        self.kind() == Kind::Object
    }
    fn members(self) -> TapeMembers<'a> {
        TapeMembers(TapeNode::members(self))
    }
    fn elements(self) -> Option<Elements<'a>> {
        (self.kind() == Kind::Array).then(|| TapeNode::elements(self))
    }
    fn get(self, key: &str) -> Option<Self> {
        TapeNode::get(self, key)
    }
    fn len(self) -> usize {
        TapeNode::len(self)
    }
    fn as_str(self) -> Option<Cow<'a, str>> {
        TapeNode::as_str(self)
    }
    fn str_is(self, s: &str) -> bool {
        TapeNode::str_is(self, s)
    }
    fn is_string(self) -> bool {
        self.kind() == Kind::String
    }
    fn is_false(self) -> bool {
        self.kind() == Kind::False
    }
    fn is_null(self) -> bool {
        self.kind() == Kind::Null
    }
    fn pointer(self, pointer: &str) -> Option<Self> {
        TapeNode::pointer(self, pointer)
    }
}
