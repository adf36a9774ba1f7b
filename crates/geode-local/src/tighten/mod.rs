//! [`tighten`]: the caller's JSON Schema narrowed for decoding, so a small model cannot wander.
//!
//! A small model under a schema that leaves room invents property after property, pads the
//! text with blank lines, writes a free string, a key or a list until the token budget ends.
//! The grammar given to llguidance is therefore built from a narrowed copy of the schema. Every
//! narrowing only removes answers (each answer of the narrowed schema is an answer of the
//! schema it narrows), and the answer is still validated against the caller's original schema.
//! Each narrowing is named as a [`Transform`] (JSON Pointer into the caller's schema, and what
//! was done) for the ledger's `transforms`.
//!
//! | narrowing | where | never when |
//! |---|---|---|
//! | the root typed: `type: object` | a root whose type the schema leaves open but whose keywords describe an object (`{"properties": ...}` without `type`; [`AnswerRoot::asked`]) | the root is typed `object` already; an open root without object keywords (`{}`, `{"items": …}`) |
//! | compact whitespace: `x-guidance` with `whitespace_flexible: false` and the separators `", "` and `": "` (the model's own spacing), no other whitespace | the root | the caller's schema sets `x-guidance.whitespace_flexible` or `whitespace_pattern` itself |
//! | objects closed: `additionalProperties: false` | an object schema that leaves `additionalProperties` open (absent, `true` or `{}`), or gives it a schema beside declared `properties` | see below; `required` names a key not in `properties`; `minProperties` needs more keys than `properties` has (without `patternProperties`); a keyword left to validation beside it (`not`, `if`, `dependencies`, ...) |
//! | strings capped: `maxLength: max(`[`STRING_CAP`]`, minLength)` | a `type: string` schema without `maxLength` and `pattern` (with a `format`: only without `minLength`) | see below |
//! | a large `maxLength` lowered to `max(`[`STRING_CAP`]`, minLength)` | a string without `pattern` or `format` whose `maxLength` is larger | |
//! | a `pattern` bounded: anchored, each unbounded repetition at most [`REPEAT_CAP`] (`tighten_regex::bounded`) | a string whose pattern is unbounded, without `minLength` | the pattern does not parse as a Rust regex, or has an assertion inside |
//! | arrays capped: `maxItems: max(`[`ITEM_CAP`]`, minItems)` | a `type: array` schema without `maxItems` | |
//! | a free map's keys: its `additionalProperties` schema moved under `patternProperties` [`MAP_KEY_PATTERN`], `additionalProperties: false` | an object with a schema-valued `additionalProperties` and no `properties`, `patternProperties`, `propertyNames` or `required` | |
//! | a map's key pattern bounded (as a `pattern`) | the one `patternProperties` entry of an object that is closed (or being closed) | a declared or required name the pattern matches would no longer match; `minProperties` above 1 |
//! | maps sized: `maxProperties: max(`[`MAP_CAP`]`, minProperties, required)` | a map bounded as above, without `maxProperties` | a declared property is optional (llguidance takes `maxProperties` only when all are required) |
//! | fitted to the token budget ([`tighten_within`]): the caps above lowered rung by rung (strings 64/32/16/8/4, lists 3/2/1, maps 4/2/1, pattern repetitions 16/8/4/2/1; strings and lists also beside other schemas when nothing in the document needs longer), recursion cut (`maxItems: 0`, or the optional property left out, where a `$ref` recurs), lists of anything emptied, required names an open object does not declare declared as short strings (so it closes), and last optional properties left out | a schema whose longest answer (`tighten_size.rs`) does not fit the call's `max_tokens` | below `minLength`, `minItems`, `minProperties` or `required`; the ledger then says the budget may not be enough |
//!
//! A schema is only narrowed where it is evaluated **alone**: the root, and the schemas it
//! reaches through `properties`, `items`, `prefixItems`, `additionalItems`,
//! `additionalProperties`, the one `patternProperties` entry of an object without `properties`,
//! `anyOf` or `oneOf` (when the parent asserts nothing besides `type`; `oneOf` is decoded as
//! `anyOf`, see below) and `$defs`/`definitions`, from a parent that is itself alone and has no
//! in-place applicator of the decoding grammar (`allOf`, `anyOf`, `oneOf`, `$ref`, `enum`,
//! `const`), nor `patternProperties` or `contains` beside them. Elsewhere another schema applies
//! to the same value, and closing one side could reject what the other requires (`allOf:
//! [{properties: {a}}, {properties: {b}}]`). A `$defs` entry is alone only while every `$ref` to
//! it sits alone with nothing but annotations beside it. A schema with a `$ref` that is not a
//! local JSON Pointer (`#...`), a nested `$id`, `$dynamicRef` or `$recursiveRef` is not narrowed
//! at all (its reference graph is not followed here).
//!
//! Keywords llguidance cannot compile (`oneOf`, `not`, `if`/`then`/`else`, `dependencies`,
//! formats it does not know, ...) are taken out of the decoding grammar and left to validation,
//! each named in the ledger (`relax`); those are the only places where the decoding grammar
//! is wider than the caller's schema, and the narrowings above apply to that grammar.

use edits::{Edit, apply, edits_for};
use geode::schema::ResponseSchema;
use geode::schema::root::AnswerRoot;
use geode::vocab::Transform;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// The `maxLength` given to a string without `maxLength` or `pattern` (and the most a given
/// `maxLength` keeps), in characters; raised to the schema's `minLength` when that is larger.
/// Chosen by measurement on JSONSchemaBench (docs/local-model.md#budgets-chosen-by-measurement):
/// long enough for names, titles, sentences and URLs, short enough that a looping string ends
/// well inside a 512-token budget.
pub const STRING_CAP: u64 = 160;

/// The `maxItems` given to an array without one, raised to its `minItems`: SmolLM2 repeats list
/// items until the budget ends. Measured on JSONSchemaBench against 3 (with 64-character
/// strings), which did not end fewer answers at the budget
/// (docs/local-model.md#budgets-chosen-by-measurement).
pub const ITEM_CAP: u64 = 5;

/// The `maxProperties` given to a map (keys from `patternProperties` or a schema-valued
/// `additionalProperties`, no optional declared property), raised to its `minProperties` and
/// its number of `required` names.
pub const MAP_CAP: u64 = 8;

/// The most repetitions of one part of a `pattern` (or of a map's key pattern): `*` becomes
/// `{0,32}`, `+` `{1,32}` (see `tighten_regex::bounded`).
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
    "allOf",
    "anyOf",
    "oneOf",
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
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

/// The schema narrowed for decoding (see the module docs), whatever the token budget;
/// [`tighten_within`] narrows further when its worst case would not fit one.
pub fn tighten(schema: &ResponseSchema) -> Tightened {
    tighten_with(schema, &budget::FIRST_CAPS, &budget::Cuts::new())
}

pub use budget::tighten_within;

/// The schema narrowed with these caps, cutting the recursion at `cuts`.
fn tighten_with(schema: &ResponseSchema, caps: &budget::Caps, cuts: &budget::Cuts) -> Tightened {
    let original = schema.as_value();
    let mut out = original.clone();
    let mut transforms = Vec::new();
    if let Some(edit) = compact_whitespace(&mut out) {
        transforms.push(edit);
    }
    if let Some(edit) = type_object_root(schema, &mut out) {
        transforms.push(edit);
    }
    if let Some(plan) = plan(original, caps, cuts) {
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

/// Types the root `object` when the schema leaves the root's type open but describes an object
/// ([`AnswerRoot::asked`]; the decoder would otherwise be free to write a string). A narrowing:
/// every answer it allows, the caller's schema allows.
fn type_object_root(schema: &ResponseSchema, out: &mut Value) -> Option<Transform> {
    let root = out.as_object_mut()?;
    if AnswerRoot::asked(schema) != AnswerRoot::Object
        || root.get("type").and_then(Value::as_str) == Some("object")
    {
        return None;
    }
    root.insert("type".to_owned(), json!("object"));
    Some(Transform {
        pointer: String::new(),
        action: "type: object for decoding (the schema leaves the root's type open and \
                 describes an object)"
            .to_owned(),
    })
}

/// The narrowings of `schema` (`None`: its references are not followed, nothing is narrowed).
fn plan(schema: &Value, caps: &budget::Caps, cuts: &budget::Cuts) -> Option<Vec<(String, Edit)>> {
    // Pinned pointers are `$ref` targets referenced from a place that is not alone; pinning can
    // make another `$ref` site not alone, so repeat until nothing changes.
    let mut pinned = BTreeSet::new();
    let beside = budget::Beside::of(schema, caps);
    loop {
        let mut walk = Walk {
            caps,
            cuts,
            beside,
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
    caps: &'a budget::Caps,
    cuts: &'a budget::Cuts,
    /// Which caps apply where another schema applies to the same value too.
    beside: budget::Beside,
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
        // What a recursion cut or the budget leaves out is not decoded: not visited.
        let mut left_out: &[String] = &[];
        let mut items_cut = false;
        let edits = if alone {
            edits_for(map, self.caps, self.cuts.get(&pointer))
        } else {
            edits::beside_edits(map, self.caps, self.beside)
        };
        for edit in &edits {
            match edit {
                Edit::Close => closes = true,
                Edit::LeaveOut(names, _) => left_out = names,
                Edit::CutRecursion => items_cut = true,
                _ => {}
            }
            self.edits.push((pointer.clone(), edit.clone()));
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
                "properties" if !left_out.is_empty() => {
                    for (name, child) in value.as_object().into_iter().flatten() {
                        if !left_out.contains(name) {
                            let at = format!("{at}/{}", escape(name));
                            self.visit(child, at, direct, false)?;
                        }
                    }
                }
                "items" | "prefixItems" | "additionalItems" if items_cut => {}
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
                // Closing replaces it: nothing in it is decoded (nor are its `$ref`s followed).
                "additionalProperties" if closes => {}
                "additionalProperties" => self.visit(value, at, direct, false)?,
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

/// Calls `visit` with each schema applied to the value of `map` or its parts, and its pointer:
/// under `properties`, `patternProperties`, `items`, `prefixItems`, `allOf`, `anyOf`, `oneOf`,
/// `additionalItems` and `additionalProperties`, and `$defs`/`definitions` when `with_defs`.
fn each_subschema(
    map: &Map<String, Value>,
    pointer: &str,
    with_defs: bool,
    visit: &mut dyn FnMut(&Value, String),
) {
    for (key, value) in map {
        let at = format!("{pointer}/{}", escape(key));
        match key.as_str() {
            "$defs" | "definitions" if !with_defs => {}
            "properties" | "patternProperties" | "$defs" | "definitions" => {
                for (name, child) in value.as_object().into_iter().flatten() {
                    visit(child, format!("{at}/{}", escape(name)));
                }
            }
            "items" | "prefixItems" | "allOf" | "anyOf" | "oneOf" => match value {
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        visit(item, format!("{at}/{i}"));
                    }
                }
                other => visit(other, at),
            },
            "additionalItems" | "additionalProperties" => visit(value, at),
            _ => {}
        }
    }
}

/// One JSON Pointer reference token.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

mod tighten_regex;

mod edits;

mod relax;

mod budget;

mod size;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod relax_tests;

#[cfg(test)]
mod budget_tests;
