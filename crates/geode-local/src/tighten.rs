//! [`tighten`]: the caller's JSON Schema narrowed for decoding, so a small model cannot wander.
//!
//! A small model under a schema that leaves room invents property after property, pads the
//! text with blank lines, or writes a free string until the token budget ends. The grammar
//! given to llguidance is therefore built from a narrowed copy of the schema. Every narrowing
//! only removes answers (each answer of the narrowed schema is an answer of the original), and
//! the answer is still validated against the caller's original schema. Each narrowing is named
//! as a [`Transform`] (JSON Pointer into the caller's schema, and what was done) for the
//! ledger's `transforms`.
//!
//! | narrowing | where | never when |
//! |---|---|---|
//! | the root typed: `type: object` | a root whose type the schema leaves open (`{"properties": ...}` without `type`): geode reads such an answer as a JSON object ([`AnswerRoot`]), so the decoder must write one | the root is typed `object` already |
//! | compact whitespace: `x-guidance` with `whitespace_flexible: false` and the separators `", "` and `": "` (the model's own spacing), no other whitespace | the root | the caller's schema sets `x-guidance.whitespace_flexible` or `whitespace_pattern` itself |
//! | objects closed: `additionalProperties: false` | an object schema that leaves `additionalProperties` open (absent, `true` or `{}`) | see below; `required` names a key not in `properties`; `minProperties` needs more keys than `properties` has (without `patternProperties`) |
//! | free strings capped: `maxLength: max(`[`STRING_CAP`]`, minLength)` | a `type: string` schema without `maxLength`, `pattern` or `format` | see below |
//!
//! A schema is only narrowed where it is evaluated **alone**: the root, and the schemas it
//! reaches through `properties`, `items`, `prefixItems`, `additionalItems`,
//! `additionalProperties`, `anyOf` (when the parent asserts nothing besides `type`) and
//! `$defs`/`definitions`, from a parent that is itself alone and has no in-place applicator
//! (`allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, `$ref`, `dependentSchemas`,
//! `dependencies`, `dependentRequired`, `unevaluated*`, `enum`, `const`), nor
//! `patternProperties` or `contains` beside them. Elsewhere another schema applies to the same
//! value, and closing one side could reject what the other requires (`allOf: [{properties:
//! {a}}, {properties: {b}}]`). A `$defs` entry is alone only while every `$ref` to it sits alone
//! with nothing but annotations beside it. A schema with a `$ref` that is not a local JSON
//! Pointer (`#...`), a nested `$id`, `$dynamicRef` or `$recursiveRef` is not narrowed at all
//! (its reference graph is not followed here).

use geode::schema::ResponseSchema;
use geode::schema::root::AnswerRoot;
use geode::vocab::Transform;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// The `maxLength` given to a free string (one without `maxLength`, `pattern` or `format`), in
/// characters; raised to the schema's `minLength` when that is larger. Chosen by measurement on
/// JSONSchemaBench (see the README): long enough for names, titles, sentences and URLs, short
/// enough that a looping string ends well inside a 512-token budget.
pub const STRING_CAP: u64 = 160;

/// The separators of compact decoding: the spacing SmolLM2 writes on its own.
const ITEM_SEPARATOR: &str = ", ";
const KEY_SEPARATOR: &str = ": ";

/// Keywords that apply another schema to the same value, or pin the value itself: a schema with
/// one of them is not closed or capped, and its children are not alone.
const IN_PLACE: [&str; 17] = [
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
    "dependentSchemas",
    "dependencies",
    "dependentRequired",
    "unevaluatedProperties",
    "unevaluatedItems",
    "enum",
    "const",
];

/// Keywords that assert nothing about the value.
const ANNOTATIONS: [&str; 17] = [
    "x-guidance",
    "title",
    "description",
    "default",
    "examples",
    "$comment",
    "readOnly",
    "writeOnly",
    "deprecated",
    "$schema",
    "$id",
    "id",
    "$anchor",
    "$defs",
    "definitions",
    "contentMediaType",
    "contentEncoding",
];

/// The narrowed schema and what was done.
#[derive(Debug, Clone, PartialEq)]
pub struct Tightened {
    /// The schema llguidance compiles.
    pub schema: Value,
    /// Each narrowing, in document order (compact whitespace first).
    pub transforms: Vec<Transform>,
}

/// One narrowing to apply.
#[derive(Debug, Clone, PartialEq)]
enum Edit {
    Close,
    CapString(u64),
}

/// The schema narrowed for decoding (see the module docs).
pub fn tighten(schema: &ResponseSchema) -> Tightened {
    let original = schema.as_value();
    let mut out = original.clone();
    let mut transforms = Vec::new();
    if let Some(edit) = compact_whitespace(&mut out) {
        transforms.push(edit);
    }
    if let Some(edit) = type_object_root(schema, &mut out) {
        transforms.push(edit);
    }
    let schema = original;
    if let Some(plan) = plan(schema) {
        for (pointer, edit) in plan {
            let Some(Value::Object(node)) = out.pointer_mut(&pointer) else {
                continue;
            };
            let action = match edit {
                Edit::Close => {
                    node.insert("additionalProperties".to_owned(), Value::Bool(false));
                    "additionalProperties: false for decoding (the schema leaves the object open)"
                        .to_owned()
                }
                Edit::CapString(cap) => {
                    node.insert("maxLength".to_owned(), json!(cap));
                    format!("maxLength: {cap} for decoding (a free string without maxLength)")
                }
            };
            transforms.push(Transform { pointer, action });
        }
    }
    Tightened {
        schema: out,
        transforms,
    }
}

/// Sets compact whitespace in the root's `x-guidance`, unless the caller chose whitespace there.
fn compact_whitespace(schema: &mut Value) -> Option<Transform> {
    let root = schema.as_object_mut()?;
    let guidance = root
        .entry("x-guidance")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()?;
    if guidance.contains_key("whitespace_flexible") || guidance.contains_key("whitespace_pattern") {
        return None;
    }
    guidance.insert("whitespace_flexible".to_owned(), Value::Bool(false));
    guidance
        .entry("item_separator")
        .or_insert_with(|| json!(ITEM_SEPARATOR));
    guidance
        .entry("key_separator")
        .or_insert_with(|| json!(KEY_SEPARATOR));
    Some(Transform {
        pointer: String::new(),
        action: format!(
            "compact whitespace for decoding: separators {ITEM_SEPARATOR:?} and \
             {KEY_SEPARATOR:?}, no other whitespace between tokens"
        ),
    })
}

/// Types the root `object` when geode reads the answer as an object but the schema leaves the
/// root's type open (the decoder would otherwise be free to write a string).
fn type_object_root(schema: &ResponseSchema, out: &mut Value) -> Option<Transform> {
    let root = out.as_object_mut()?;
    if AnswerRoot::of(schema) != AnswerRoot::Object
        || root.get("type").and_then(Value::as_str) == Some("object")
    {
        return None;
    }
    root.insert("type".to_owned(), json!("object"));
    Some(Transform {
        pointer: String::new(),
        action: "type: object for decoding (the schema leaves the root's type open; geode reads \
                 the answer as a JSON object)"
            .to_owned(),
    })
}

/// The narrowings of `schema` (`None`: its references are not followed, nothing is narrowed).
fn plan(schema: &Value) -> Option<Vec<(String, Edit)>> {
    // Pinned pointers are `$ref` targets referenced from a place that is not alone; pinning can
    // make another `$ref` site not alone, so repeat until nothing changes.
    let mut pinned = BTreeSet::new();
    loop {
        let mut walk = Walk {
            pinned: &pinned,
            new_pins: BTreeSet::new(),
            edits: Vec::new(),
        };
        walk.visit(schema, String::new(), true, true)?;
        let before = pinned.len();
        let (new_pins, edits) = (walk.new_pins, walk.edits);
        pinned.extend(new_pins);
        if pinned.len() == before {
            return Some(edits);
        }
    }
}

struct Walk<'a> {
    pinned: &'a BTreeSet<String>,
    new_pins: BTreeSet<String>,
    edits: Vec<(String, Edit)>,
}

impl Walk<'_> {
    /// Visits the schema at `pointer`; `None` gives up on the whole document.
    fn visit(&mut self, node: &Value, pointer: String, alone: bool, root: bool) -> Option<()> {
        let Value::Object(map) = node else {
            return Some(());
        };
        let alone = alone && !self.pinned.contains(&pointer);
        if !root && (map.contains_key("$id") || is_resource_id(map.get("id"))) {
            return None;
        }
        if map.contains_key("$dynamicRef") || map.contains_key("$recursiveRef") {
            return None;
        }
        if let Some(reference) = map.get("$ref") {
            let target = local_pointer(reference)?;
            let only_annotations = map
                .keys()
                .all(|k| k == "$ref" || ANNOTATIONS.contains(&k.as_str()));
            if !(alone && only_annotations) {
                self.new_pins.insert(target);
            }
        }
        if alone {
            for edit in edits_for(map) {
                self.edits.push((pointer.clone(), edit));
            }
        }
        let clean = alone && !IN_PLACE.iter().any(|k| map.contains_key(*k));
        let direct =
            clean && !map.contains_key("patternProperties") && !map.contains_key("contains");
        let any_of_alone = alone
            && map
                .keys()
                .all(|k| k == "type" || k == "anyOf" || ANNOTATIONS.contains(&k.as_str()));
        for (key, value) in map {
            let at = format!("{pointer}/{}", escape(key));
            match key.as_str() {
                "properties" | "patternProperties" | "dependentSchemas" => {
                    let children_alone = key == "properties" && direct;
                    self.visit_map(value, &at, children_alone)?;
                }
                "$defs" | "definitions" => self.visit_map(value, &at, true)?,
                "items" | "prefixItems" => match value {
                    Value::Array(items) => {
                        for (i, item) in items.iter().enumerate() {
                            self.visit(item, format!("{at}/{i}"), direct, false)?;
                        }
                    }
                    other => self.visit(other, at, direct, false)?,
                },
                "additionalItems" | "additionalProperties" => {
                    self.visit(value, at, direct, false)?;
                }
                "anyOf" | "allOf" | "oneOf" => {
                    for (i, item) in value.as_array().into_iter().flatten().enumerate() {
                        let branch_alone = key == "anyOf" && any_of_alone;
                        self.visit(item, format!("{at}/{i}"), branch_alone, false)?;
                    }
                }
                "not"
                | "if"
                | "then"
                | "else"
                | "contains"
                | "propertyNames"
                | "unevaluatedItems"
                | "unevaluatedProperties" => {
                    self.visit(value, at, false, false)?;
                }
                "dependencies" => self.visit_map(value, &at, false)?,
                _ => {}
            }
        }
        Some(())
    }

    /// Visits each schema of a name → schema map.
    fn visit_map(&mut self, map: &Value, pointer: &str, alone: bool) -> Option<()> {
        for (name, child) in map.as_object().into_iter().flatten() {
            self.visit(child, format!("{pointer}/{}", escape(name)), alone, false)?;
        }
        Some(())
    }
}

/// The narrowings of one schema that is alone (a `type` list may get both).
fn edits_for(map: &Map<String, Value>) -> Vec<Edit> {
    let mut edits = Vec::new();
    if IN_PLACE.iter().any(|k| map.contains_key(*k)) {
        return edits;
    }
    let types = declared_types(map);
    let has = |t: &str| types.iter().any(|x| x == t);
    let object_like = has("object") || (types.is_empty() && map.contains_key("properties"));
    if object_like && closable(map) {
        edits.push(Edit::Close);
    }
    if has("string")
        && !map.contains_key("maxLength")
        && !map.contains_key("pattern")
        && !map.contains_key("format")
    {
        let min = map.get("minLength").and_then(Value::as_u64).unwrap_or(0);
        edits.push(Edit::CapString(STRING_CAP.max(min)));
    }
    edits
}

/// True when closing this object schema leaves every answer it could give valid and at least
/// one answer possible.
fn closable(map: &Map<String, Value>) -> bool {
    let open = match map.get("additionalProperties") {
        None | Some(Value::Bool(true)) => true,
        Some(Value::Object(o)) => o.is_empty(),
        Some(_) => false,
    };
    if !open || map.contains_key("unevaluatedProperties") {
        return false;
    }
    let declared = map.get("properties").and_then(Value::as_object);
    let declared_count = declared.map_or(0, Map::len);
    let required_declared = map
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .all(|k| {
            k.as_str()
                .is_some_and(|k| declared.is_some_and(|d| d.contains_key(k)))
        });
    let min_props = map
        .get("minProperties")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let enough_keys = map.contains_key("patternProperties")
        || usize::try_from(min_props).is_ok_and(|m| m <= declared_count);
    required_declared && enough_keys
}

/// The `type` keyword as a list of names (empty when absent).
fn declared_types(map: &Map<String, Value>) -> Vec<String> {
    match map.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// A draft-04 `id` that changes the base URI (a fragment-only `id` does not).
fn is_resource_id(id: Option<&Value>) -> bool {
    id.and_then(Value::as_str)
        .is_some_and(|s| !s.starts_with('#'))
}

/// The JSON Pointer of a local `$ref` (`#` or `#/...`, no percent-encoding); `None` otherwise.
fn local_pointer(reference: &Value) -> Option<String> {
    let text = reference.as_str()?;
    let pointer = text.strip_prefix('#')?;
    if (pointer.is_empty() || pointer.starts_with('/')) && !pointer.contains('%') {
        Some(pointer.to_owned())
    } else {
        None
    }
}

/// One JSON Pointer reference token.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
#[path = "tighten_tests.rs"]
mod tests;
