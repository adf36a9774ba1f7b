//! The answer's root: which JSON types a schema admits at the top level.
//!
//! In: a [`ResponseSchema`]. Out: an [`AnswerRoot`] — [`AnswerRoot::Object`] when the schema
//! admits only objects, [`AnswerRoot::Any`] when it says nothing about the root's type (`{}`,
//! `{"required":["a"]}`, `{"items":{…}}`: JSON Schema admits every value there, so geode does
//! too), else [`AnswerRoot::Values`] with the [`TypeSet`] it admits (`array`, `string`,
//! `["integer","null"]`, an `enum` of strings, an `anyOf` of an array and a number, ...).
//! Extraction ([`super::extract::extract_answer`]) and the worker's shallow check follow it.
//!
//! What the model is *asked* to write is [`AnswerRoot::asked`]: the same, except that an open
//! root described by object keywords (`properties`, `required`, ...) is asked for as an object.
//! Prompts, the local decoder's narrowing and the object-only wires follow that; acceptance never
//! does.
//!
//! How the set is found, per keyword (every keyword narrows; the root is the intersection):
//!
//! | keyword | admitted types |
//! |---|---|
//! | `type` (a name or a list) | those types (`number` includes `integer`) |
//! | `enum` / `const` | the types of the listed values (`1.0` counts as an integer) |
//! | `anyOf` / `oneOf` | the union over the branches |
//! | `allOf` | the intersection over the branches |
//! | a local `$ref` | the target's set (8 hops at most, then unrestricted) |
//! | anything else, `true`, `$dynamicRef` | unrestricted |
//!
//! [`wrap_root`] and [`unwrap_root`] are the pure rewrite a wire with an object-only subset
//! needs (OpenAI strict): the root moves under `properties.value` of a closed object, and the
//! answer's `value` is taken out again before validation against the caller's schema.

use super::ResponseSchema;
use super::strict::{RefTarget, resolve_local_ref};
use serde_json::{Map, Value, json};

/// A set of JSON types, as a bit set. Integers and other numbers are apart, so that `integer`
/// and `number` can be told from each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TypeSet(u8);

impl TypeSet {
    /// `null`.
    pub const NULL: Self = Self(1);
    /// `true` / `false`.
    pub const BOOLEAN: Self = Self(2);
    /// `{…}`.
    pub const OBJECT: Self = Self(4);
    /// `[…]`.
    pub const ARRAY: Self = Self(8);
    /// A number with no fractional part (`3`, `3.0`).
    pub const INTEGER: Self = Self(16);
    /// A number with a fractional part (`3.5`).
    pub const FRACTION: Self = Self(32);
    /// `"…"`.
    pub const STRING: Self = Self(64);
    /// Every JSON type.
    pub const ALL: Self = Self(127);
    /// No type at all (an unsatisfiable root such as `false`).
    pub const EMPTY: Self = Self(0);

    /// The set a JSON Schema type name stands for; `None` for an unknown name.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "null" => Self::NULL,
            "boolean" => Self::BOOLEAN,
            "object" => Self::OBJECT,
            "array" => Self::ARRAY,
            "integer" => Self::INTEGER,
            "number" => Self(Self::INTEGER.0 | Self::FRACTION.0),
            "string" => Self::STRING,
            _ => return None,
        })
    }

    /// The one-type set of a value (`1.0` is an integer, as JSON Schema says).
    pub fn of(value: &Value) -> Self {
        match value {
            Value::Null => Self::NULL,
            Value::Bool(_) => Self::BOOLEAN,
            Value::Object(_) => Self::OBJECT,
            Value::Array(_) => Self::ARRAY,
            Value::String(_) => Self::STRING,
            Value::Number(n) => {
                if n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0) {
                    Self::INTEGER
                } else {
                    Self::FRACTION
                }
            }
        }
    }

    /// [`Self::of`] for a value held as a [`Tape`](crate::schema::tape::Tape).
    pub fn of_node(node: crate::schema::tape::TapeNode<'_>) -> Self {
        use crate::schema::tape::Kind;
        match node.kind() {
            Kind::Null => Self::NULL,
            Kind::False | Kind::True => Self::BOOLEAN,
            Kind::Object => Self::OBJECT,
            Kind::Array => Self::ARRAY,
            Kind::String => Self::STRING,
            Kind::Number if node.is_integer() => Self::INTEGER,
            Kind::Number => Self::FRACTION,
        }
    }

    /// Both sets' types.
    pub fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// The types in both sets.
    pub fn intersect(self, other: Self) -> Self {
        Self(self.0 & other.0)
    }

    /// True when every type of `other` is in `self`.
    pub fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0 && other.0 != 0
    }

    /// True when `value`'s type is in the set.
    pub fn admits(self, value: &Value) -> bool {
        self.contains(Self::of(value))
    }

    /// The JSON Schema names of the set (`["array", "null"]`; `number` when both integers and
    /// fractions are in).
    pub fn names(self) -> Vec<&'static str> {
        let mut out = Vec::new();
        for (bit, name) in [
            (Self::NULL, "null"),
            (Self::BOOLEAN, "boolean"),
            (Self::OBJECT, "object"),
            (Self::ARRAY, "array"),
            (Self::STRING, "string"),
        ] {
            if self.contains(bit) {
                out.push(name);
            }
        }
        match (self.contains(Self::INTEGER), self.contains(Self::FRACTION)) {
            (true, true) => out.push("number"),
            (true, false) => out.push("integer"),
            (false, true) => out.push("number with a fraction"),
            (false, false) => {}
        }
        out
    }
}

impl std::fmt::Display for TypeSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = self.names();
        if names.is_empty() {
            return f.write_str("nothing");
        }
        f.write_str(&names.join(" or "))
    }
}

/// What the answer's top-level value may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerRoot {
    /// A JSON object, found by GEODE's rule (the last balanced `{…}` that parses).
    Object,
    /// Any JSON value: the schema does not restrict the root's type (`{}`, `{"required":["a"]}`).
    Any,
    /// A value of one of these types (never exactly `{object}`, never every type).
    Values(TypeSet),
}

/// Most `$ref` hops followed when finding the root's types.
pub(crate) const MAX_REF_HOPS: usize = 8;

impl AnswerRoot {
    /// The root of a schema (see the module table).
    ///
    /// ```
    /// use geode::schema::{ResponseSchema, root::{AnswerRoot, TypeSet}};
    /// let s = |t: &str| AnswerRoot::of(&ResponseSchema::from_json_str(t).unwrap());
    /// assert_eq!(s(r#"{"type":"object"}"#), AnswerRoot::Object);
    /// assert_eq!(s(r#"{"required":["a"]}"#), AnswerRoot::Any);
    /// assert_eq!(s(r#"{"type":"array"}"#), AnswerRoot::Values(TypeSet::ARRAY));
    /// assert_eq!(s(r#"{"enum":["a","b"]}"#), AnswerRoot::Values(TypeSet::STRING));
    /// ```
    pub fn of(schema: &ResponseSchema) -> Self {
        let root = schema.as_value();
        match types_of(root, root, MAX_REF_HOPS) {
            TypeSet::ALL => Self::Any,
            TypeSet::OBJECT => Self::Object,
            types => Self::Values(types),
        }
    }

    /// The root the model is asked to write: [`Self::of`], except that an open root that object
    /// keywords describe (`properties`, `required`, `additionalProperties`, ...) is asked for as
    /// an object, since that is plainly what the schema's author means. Acceptance still follows
    /// [`Self::of`]: `[1]` is a valid answer to `{"required":["a"]}`.
    ///
    /// ```
    /// use geode::schema::{ResponseSchema, root::AnswerRoot};
    /// let s = |t: &str| AnswerRoot::asked(&ResponseSchema::from_json_str(t).unwrap());
    /// assert_eq!(s(r#"{"required":["a"]}"#), AnswerRoot::Object);
    /// assert_eq!(s(r#"{"uniqueItems":true}"#), AnswerRoot::Any);
    /// ```
    pub fn asked(schema: &ResponseSchema) -> Self {
        match Self::of(schema) {
            Self::Any if describes_object(schema.as_value()) => Self::Object,
            root => root,
        }
    }

    /// The types a root value may have.
    pub fn types(self) -> TypeSet {
        match self {
            Self::Object => TypeSet::OBJECT,
            Self::Any => TypeSet::ALL,
            Self::Values(t) => t,
        }
    }

    /// True for [`AnswerRoot::Object`].
    pub fn is_object(self) -> bool {
        self == Self::Object
    }

    /// The answer in words, for messages and prompts: `JSON object`, `JSON array`,
    /// `JSON value (string or null)`.
    pub fn describe(self) -> String {
        match self {
            Self::Object => "JSON object".to_owned(),
            Self::Any => "JSON value".to_owned(),
            Self::Values(t) => match t.names().as_slice() {
                [one] if !one.contains(' ') => format!("JSON {one}"),
                _ => format!("JSON value ({t})"),
            },
        }
    }
}

/// Keywords that only constrain objects.
const OBJECT_KEYWORDS: &[&str] = &[
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
];

/// True when a schema's root names an object keyword.
fn describes_object(root: &Value) -> bool {
    root.as_object()
        .is_some_and(|m| OBJECT_KEYWORDS.iter().any(|k| m.contains_key(*k)))
}

/// The types `node` admits, `root` being the document `$ref`s resolve in.
pub(crate) fn types_of(node: &Value, root: &Value, hops: usize) -> TypeSet {
    let m = match node {
        Value::Bool(true) => return TypeSet::ALL,
        Value::Object(m) => m,
        _ => return TypeSet::EMPTY,
    };
    let mut set = TypeSet::ALL;
    match m.get("type") {
        Some(Value::String(t)) => set = set.intersect(named(std::slice::from_ref(t))),
        Some(Value::Array(ts)) => {
            let names: Vec<String> = ts
                .iter()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect();
            set = set.intersect(named(&names));
        }
        _ => {}
    }
    if let Some(Value::Array(values)) = m.get("enum") {
        let of = values
            .iter()
            .fold(TypeSet::EMPTY, |a, v| a.union(TypeSet::of(v)));
        set = set.intersect(of);
    }
    if let Some(c) = m.get("const") {
        set = set.intersect(TypeSet::of(c));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = m.get(key) {
            let of = branches
                .iter()
                .fold(TypeSet::EMPTY, |a, b| a.union(types_of(b, root, hops)));
            set = set.intersect(of);
        }
    }
    if let Some(Value::Array(branches)) = m.get("allOf") {
        for b in branches {
            set = set.intersect(types_of(b, root, hops));
        }
    }
    if let Some(Value::String(r)) = m.get("$ref")
        && hops > 0
        && let RefTarget::Found { value, .. } = resolve_local_ref(root, r)
    {
        set = set.intersect(types_of(value, root, hops - 1));
    }
    set
}

/// The union of the sets of some type names (unknown names add nothing).
fn named(names: &[String]) -> TypeSet {
    names
        .iter()
        .filter_map(|n| TypeSet::from_name(n))
        .fold(TypeSet::EMPTY, TypeSet::union)
}

/// The property a wrapped root travels in (see [`wrap_root`]).
pub const WRAP_KEY: &str = "value";

/// Keywords that belong to the schema resource, not to the root value: they move to the top of
/// the wrapper so that `$ref`s into `$defs` and the dialect still resolve.
const RESOURCE_KEYWORDS: &[&str] = &["$schema", "$id", "$defs", "definitions"];

/// Wraps a schema's root for a wire that takes only object roots:
/// `{"type":"object","properties":{"value":ROOT},"required":["value"],"additionalProperties":false}`.
///
/// `$schema`, `$id`, `$defs` and `definitions` move to the wrapper, so `#/$defs/...` references
/// still resolve; any other local reference (`#`, `#/items`) is rewritten to point under
/// `#/properties/value`. Pure: the caller's schema is not touched. Undo on the answer with
/// [`unwrap_root`].
///
/// ```
/// use geode::schema::root::{wrap_root, unwrap_root};
/// use serde_json::json;
/// let w = wrap_root(&json!({"type":"array","items":{"$ref":"#/$defs/n"},"$defs":{"n":{"type":"integer"}}}));
/// assert_eq!(w["properties"]["value"]["items"]["$ref"], "#/$defs/n");
/// assert_eq!(w["$defs"]["n"]["type"], "integer");
/// assert_eq!(unwrap_root(json!({"value":[1,2]})), Some(json!([1,2])));
/// ```
pub fn wrap_root(schema: &Value) -> Value {
    let mut inner = schema.clone();
    let mut outer = Map::new();
    if let Value::Object(m) = &mut inner {
        for &k in RESOURCE_KEYWORDS {
            if let Some(mut v) = m.shift_remove(k) {
                if k == "$defs" || k == "definitions" {
                    rewrite_refs(&mut v);
                }
                outer.insert(k.to_owned(), v);
            }
        }
    }
    rewrite_refs(&mut inner);
    outer.insert("type".to_owned(), json!("object"));
    outer.insert("properties".to_owned(), json!({ WRAP_KEY: inner }));
    outer.insert("required".to_owned(), json!([WRAP_KEY]));
    outer.insert("additionalProperties".to_owned(), Value::Bool(false));
    Value::Object(outer)
}

/// Points every local `$ref` that does not go into `$defs`/`definitions` under the wrapper's
/// `properties.value` (iterative).
fn rewrite_refs(inner: &mut Value) {
    let mut stack: Vec<&mut Value> = vec![inner];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(m) => {
                for (k, child) in m.iter_mut() {
                    if k == "$ref"
                        && let Value::String(r) = child
                        && let Some(pointer) = r.strip_prefix('#')
                        && !pointer.starts_with("/$defs")
                        && !pointer.starts_with("/definitions")
                        && (pointer.is_empty() || pointer.starts_with('/'))
                    {
                        *r = format!("#/properties/{WRAP_KEY}{pointer}");
                    } else {
                        stack.push(child);
                    }
                }
            }
            Value::Array(a) => stack.extend(a.iter_mut()),
            _ => {}
        }
    }
}

/// The root value of an answer to a [`wrap_root`]ped schema: the `value` member of an object
/// that has exactly that member; `None` otherwise.
pub fn unwrap_root(answer: Value) -> Option<Value> {
    match answer {
        Value::Object(mut m) if m.len() == 1 => m.shift_remove(WRAP_KEY),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
