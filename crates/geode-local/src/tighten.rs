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
use tighten_regex::bounded;
use geode::schema::root::AnswerRoot;
use geode::vocab::Transform;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// The `maxLength` given to a free string (one without `maxLength`, `pattern` or `format`), in
/// characters; raised to the schema's `minLength` when that is larger. Chosen by measurement on
/// JSONSchemaBench (see the README): long enough for names, titles, sentences and URLs, short
/// enough that a looping string ends well inside a 512-token budget.
pub const STRING_CAP: u64 = 160;

/// The `maxItems` given to an array without one, raised to its `minItems`: SmolLM2 repeats list
/// items until the budget ends. Chosen by measurement on JSONSchemaBench (see the README).
pub const ITEM_CAP: u64 = 5;

/// The `maxProperties` given to a map (keys from `patternProperties` or a schema-valued
/// `additionalProperties`, no optional declared property), raised to its `minProperties` and
/// its number of `required` names.
pub const MAP_CAP: u64 = 8;

/// The most repetitions of one part of a `pattern` (or of a map's key pattern): `*` becomes
/// `{0,32}`, `+` `{1,32}` (see [`bounded`]).
pub const REPEAT_CAP: u32 = 32;

/// The key pattern of a map whose keys the schema leaves free (`additionalProperties` a
/// schema, nothing declared): short identifier-like keys.
pub const MAP_KEY_PATTERN: &str = "^[A-Za-z0-9_.-]{1,32}$";

/// The separators of compact decoding: the spacing SmolLM2 writes on its own.
const ITEM_SEPARATOR: &str = ", ";
const KEY_SEPARATOR: &str = ": ";

/// Keywords that apply another schema to the same value in the decoding grammar, or pin the
/// value itself: a schema with one of them is not narrowed, and its children are not alone.
const IN_PLACE: [&str; 8] = [
    "allOf", "anyOf", "oneOf", "$ref", "$dynamicRef", "$recursiveRef", "enum", "const",
];

/// Keywords left out of the decoding grammar and checked by validation ([`relax`]) that can
/// still require keys: an object beside one is not closed, nor its keys bounded. Strings and
/// arrays beside them are capped (the grammar decodes without them).
const LEFT_TO_VALIDATION: [&str; 9] = [
    "not",
    "if",
    "then",
    "else",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
    "unevaluatedItems",
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
    /// A `maxLength` the schema gives, lowered: (the schema's, the new one).
    LowerMaxLength(u64, u64),
    /// `pattern` replaced by its bounded form.
    BoundPattern(String),
    CapItems(u64),
    /// A free map's `additionalProperties` schema moved under [`MAP_KEY_PATTERN`].
    BoundMapKeys,
    /// The one `patternProperties` key pattern replaced by its bounded form: (old, new).
    BoundKeyPattern(String, String),
    CapProperties(u64),
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
    if let Some(plan) = plan(original) {
        // Deepest first: a free map's value schema is narrowed before the map moves it.
        let mut narrowed = Vec::new();
        for (pointer, edit) in plan.into_iter().rev() {
            let Some(Value::Object(node)) = out.pointer_mut(&pointer) else {
                continue;
            };
            let action = apply(node, edit);
            narrowed.push(Transform { pointer, action });
        }
        transforms.extend(narrowed.into_iter().rev());
    }
    // After the narrowings (their pointers cross `oneOf`, which this renames).
    transforms.extend(relax::relax(original, &mut out));
    Tightened {
        schema: out,
        transforms,
    }
}

/// Applies one narrowing to its node; returns the ledger's description.
fn apply(node: &mut Map<String, Value>, edit: Edit) -> String {
    match edit {
        Edit::Close => {
            let valued = node
                .insert("additionalProperties".to_owned(), Value::Bool(false))
                .is_some_and(|v| v.as_object().is_some_and(|o| !o.is_empty()));
            if valued {
                "additionalProperties: false for decoding (the schema allows other keys under \
                 a schema; only the declared ones are decoded)"
                    .to_owned()
            } else {
                "additionalProperties: false for decoding (the schema leaves the object open)"
                    .to_owned()
            }
        }
        Edit::CapString(cap) => {
            node.insert("maxLength".to_owned(), json!(cap));
            format!("maxLength: {cap} for decoding (a string without maxLength)")
        }
        Edit::LowerMaxLength(given, cap) => {
            node.insert("maxLength".to_owned(), json!(cap));
            format!("maxLength: {cap} for decoding (the schema allows {given})")
        }
        Edit::BoundPattern(bounded) => {
            let action = format!(
                "pattern {bounded:?} for decoding (the schema's pattern, anchored, with each \
                 repetition at most {REPEAT_CAP})"
            );
            node.insert("pattern".to_owned(), json!(bounded));
            action
        }
        Edit::CapItems(cap) => {
            node.insert("maxItems".to_owned(), json!(cap));
            format!("maxItems: {cap} for decoding (an array without maxItems)")
        }
        Edit::BoundMapKeys => {
            let value = node
                .shift_remove("additionalProperties")
                .unwrap_or(Value::Bool(true));
            let mut keys = Map::new();
            keys.insert(MAP_KEY_PATTERN.to_owned(), value);
            node.insert("patternProperties".to_owned(), Value::Object(keys));
            node.insert("additionalProperties".to_owned(), Value::Bool(false));
            format!(
                "keys matching {MAP_KEY_PATTERN:?} for decoding (a map whose keys the schema \
                 leaves free; its additionalProperties schema applies to them)"
            )
        }
        Edit::BoundKeyPattern(old, new) => {
            if let Some(Value::Object(patterns)) = node.get_mut("patternProperties")
                && let Some(value) = patterns.shift_remove(&old)
            {
                patterns.insert(new.clone(), value);
            }
            format!(
                "patternProperties key {new:?} for decoding (the schema's {old:?}, anchored, \
                 with each repetition at most {REPEAT_CAP})"
            )
        }
        Edit::CapProperties(cap) => {
            node.insert("maxProperties".to_owned(), json!(cap));
            format!("maxProperties: {cap} for decoding (a map without maxProperties)")
        }
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
        let mut closes = false;
        if alone {
            for edit in edits_for(map) {
                closes |= edit == Edit::Close;
                self.edits.push((pointer.clone(), edit));
            }
        }
        let clean = alone && !IN_PLACE.iter().any(|k| map.contains_key(*k));
        let direct =
            clean && !map.contains_key("patternProperties") && !map.contains_key("contains");
        // Branches of the one anyOf (or oneOf, decoded as anyOf) of a schema that asserts
        // nothing else.
        let combinators = ["anyOf", "oneOf"]
            .iter()
            .filter(|k| map.contains_key(**k))
            .count();
        let branches_alone = alone
            && combinators == 1
            && map.keys().all(|k| {
                k == "type" || k == "anyOf" || k == "oneOf" || ANNOTATIONS.contains(&k.as_str())
            });
        // The one pattern of an object that declares no property: it alone gives its keys'
        // values a schema.
        let declares = map
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty());
        let one_pattern = map
            .get("patternProperties")
            .and_then(Value::as_object)
            .is_some_and(|p| p.len() == 1);
        let pattern_alone = clean && one_pattern && !declares && !map.contains_key("contains");
        for (key, value) in map {
            let at = format!("{pointer}/{}", escape(key));
            match key.as_str() {
                "properties" | "patternProperties" | "dependentSchemas" => {
                    let children_alone = match key.as_str() {
                        "properties" => direct,
                        "patternProperties" => pattern_alone,
                        _ => false,
                    };
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
                "additionalItems" => self.visit(value, at, direct, false)?,
                // Closing replaces it: nothing in it is decoded.
                "additionalProperties" => self.visit(value, at, direct && !closes, false)?,
                "anyOf" | "allOf" | "oneOf" => {
                    for (i, item) in value.as_array().into_iter().flatten().enumerate() {
                        let branch_alone = key != "allOf" && branches_alone;
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

/// The narrowings of one schema that is alone (a `type` list may get several).
fn edits_for(map: &Map<String, Value>) -> Vec<Edit> {
    let mut edits = Vec::new();
    if IN_PLACE.iter().any(|k| map.contains_key(*k)) {
        return edits;
    }
    let types = declared_types(map);
    let has = |t: &str| types.iter().any(|x| x == t);
    let object_like = has("object") || (types.is_empty() && map.contains_key("properties"));
    let may_require_keys = LEFT_TO_VALIDATION.iter().any(|k| map.contains_key(*k));
    if object_like && !may_require_keys {
        edits.extend(object_edits(map));
    }
    if has("string") {
        edits.extend(string_edit(map));
    }
    if has("array") && !map.contains_key("maxItems") {
        let min = map.get("minItems").and_then(Value::as_u64).unwrap_or(0);
        edits.push(Edit::CapItems(ITEM_CAP.max(min)));
    }
    edits
}

/// Closing an open object, or bounding a map's keys and size.
fn object_edits(map: &Map<String, Value>) -> Vec<Edit> {
    let mut edits = Vec::new();
    let closes = closable(map);
    if closes {
        edits.push(Edit::Close);
    }
    let mut is_map = false;
    if free_map(map) {
        edits.push(Edit::BoundMapKeys);
        is_map = true;
    } else if let Some(edit) = bound_key_pattern(map, closes) {
        edits.push(edit);
        is_map = true;
    }
    if is_map && !map.contains_key("maxProperties") {
        let declared = map.get("properties").and_then(Value::as_object);
        let required = names(map.get("required"));
        // llguidance takes maxProperties only when every declared property is required.
        let all_required =
            declared.is_none_or(|d| d.keys().all(|k| required.iter().any(|r| r == k)));
        let min = map.get("minProperties").and_then(Value::as_u64).unwrap_or(0);
        let count = u64::try_from(required.len()).unwrap_or(u64::MAX);
        if all_required {
            edits.push(Edit::CapProperties(MAP_CAP.max(min).max(count)));
        }
    }
    edits
}

/// A map whose keys are free: `additionalProperties` a schema that is not `{}`, and nothing
/// else about keys (no properties, patternProperties, propertyNames or required).
fn free_map(map: &Map<String, Value>) -> bool {
    let valued = matches!(map.get("additionalProperties"), Some(Value::Object(o)) if !o.is_empty());
    let declares = |k: &str| match map.get(k) {
        None => false,
        Some(Value::Object(o)) => !o.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(_) => true,
    };
    valued
        && !declares("properties")
        && !declares("patternProperties")
        && !declares("required")
        && !map.contains_key("propertyNames")
}

/// The one `patternProperties` key pattern bounded, when that loses no key the schema gives a
/// value schema to: the object is closed (or closing now), and every declared or required name
/// the pattern matches still matches the bounded pattern.
fn bound_key_pattern(map: &Map<String, Value>, closing: bool) -> Option<Edit> {
    let Some(Value::Object(patterns)) = map.get("patternProperties") else {
        return None;
    };
    let closed = closing || map.get("additionalProperties") == Some(&Value::Bool(false));
    if patterns.len() != 1 || !closed {
        return None;
    }
    let (old, _) = patterns.iter().next()?;
    let new = bounded(old, REPEAT_CAP)?;
    let original = regex::Regex::new(old).ok()?;
    let narrowed = regex::Regex::new(&new).ok()?;
    let declared = map
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|d| d.keys().cloned());
    let mut named = names(map.get("required"));
    named.extend(declared);
    let min = map.get("minProperties").and_then(Value::as_u64).unwrap_or(0);
    let keeps = named
        .iter()
        .all(|n| !original.is_match(n) || narrowed.is_match(n));
    (keeps && min <= 1).then_some(Edit::BoundKeyPattern(old.clone(), new))
}

/// The narrowing of a string: a cap on a free string, a lower cap on a large `maxLength`, or a
/// bounded `pattern`.
fn string_edit(map: &Map<String, Value>) -> Option<Edit> {
    let min = map.get("minLength").and_then(Value::as_u64).unwrap_or(0);
    let cap = STRING_CAP.max(min);
    let max = map.get("maxLength").and_then(Value::as_u64);
    if let Some(Value::String(pattern)) = map.get("pattern") {
        // The bounded pattern keeps the shortest match; with a minLength it might not reach it.
        if min > 0 || max.is_some_and(|m| m <= cap) {
            return None;
        }
        return bounded(pattern, REPEAT_CAP).map(Edit::BoundPattern);
    }
    if map.contains_key("format") && min > 0 {
        // A format with a minLength: a short enough instance may not exist.
        return None;
    }
    match max {
        None => Some(Edit::CapString(cap)),
        Some(given) if given > cap => Some(Edit::LowerMaxLength(given, cap)),
        Some(_) => None,
    }
}

/// The strings of a `required`-like list.
fn names(list: Option<&Value>) -> Vec<String> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// True when closing this object schema leaves every answer it could give valid and at least
/// one answer possible.
fn closable(map: &Map<String, Value>) -> bool {
    let declares_properties = map
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    // A schema-valued additionalProperties beside declared properties is closed too (only the
    // declared keys are decoded); without declared properties it is a map ([`free_map`]).
    let open = match map.get("additionalProperties") {
        None | Some(Value::Bool(true)) => true,
        Some(Value::Object(o)) => o.is_empty() || declares_properties,
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

#[path = "tighten_regex.rs"]
mod tighten_regex;

#[path = "tighten_relax.rs"]
mod relax;

#[cfg(test)]
#[path = "tighten_tests.rs"]
mod tests;
