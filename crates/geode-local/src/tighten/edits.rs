//! The narrowings of one schema for [`super`]: which apply to a schema that is alone
//! ([`edits_for`]), and each applied to its node with the ledger's description ([`apply`]).

use super::budget::{Beside, Caps, Cut};
use super::relax::may_require_keys;
use super::tighten_regex::bounded;
use super::{IN_PLACE, MAP_KEY_PATTERN, REPEAT_CAP};
use serde_json::{Map, Value, json};

/// One narrowing to apply.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Edit {
    Close,
    CapString(u64),
    /// A `maxLength` the schema gives, lowered: (the schema's, the new one).
    LowerMaxLength(u64, u64),
    /// `pattern` replaced by its bounded form, each repetition at most this many times.
    BoundPattern(String, u32),
    CapItems(u64),
    /// A free map's `additionalProperties` schema moved under [`MAP_KEY_PATTERN`].
    BoundMapKeys,
    /// The one `patternProperties` key pattern replaced by its bounded form: (old, new, the
    /// repetition cap).
    BoundKeyPattern(String, String, u32),
    CapProperties(u64),
    /// An array whose items recur into the schema: `maxItems: 0` (the recursion cut).
    CutRecursion,
    /// An array whose items may be any JSON value (no longest answer): `maxItems: 0`.
    CutFreeItems,
    /// Required names the object does not declare, declared as strings of at most this length
    /// (so it can be closed).
    DeclareRequired(Vec<String>, u64),
    /// Optional properties taken out of a closed object: (names, because they recur).
    LeaveOut(Vec<String>, bool),
}

/// Applies one narrowing to its node; returns the ledger's description.
pub(super) fn apply(node: &mut Map<String, Value>, edit: Edit) -> String {
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
        Edit::BoundPattern(bounded, cap) => {
            let action = format!(
                "pattern {bounded:?} for decoding (the schema's pattern, anchored, with each \
                 repetition at most {cap})"
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
        Edit::BoundKeyPattern(old, new, cap) => {
            if let Some(Value::Object(patterns)) = node.get_mut("patternProperties")
                && let Some(value) = patterns.shift_remove(&old)
            {
                patterns.insert(new.clone(), value);
            }
            format!(
                "patternProperties key {new:?} for decoding (the schema's {old:?}, anchored, \
                 with each repetition at most {cap})"
            )
        }
        Edit::CapProperties(cap) => {
            node.insert("maxProperties".to_owned(), json!(cap));
            format!("maxProperties: {cap} for decoding (a map without maxProperties)")
        }
        Edit::CutRecursion => {
            node.insert("maxItems".to_owned(), json!(0));
            "maxItems: 0 for decoding (its items refer back to a schema they are inside; the \
             recursion is cut to fit the token budget)"
                .to_owned()
        }
        Edit::DeclareRequired(names, cap) => {
            let properties = node
                .entry("properties")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(properties) = properties {
                for name in &names {
                    properties.insert(name.clone(), json!({"type": "string", "maxLength": cap}));
                }
            }
            format!(
                "properties {names:?} declared as strings of at most {cap} characters for \
                 decoding (required, any value allowed, not declared; so the object can be \
                 closed to fit the token budget)"
            )
        }
        Edit::CutFreeItems => {
            node.insert("maxItems".to_owned(), json!(0));
            "maxItems: 0 for decoding (its items may be any JSON value, which has no longest \
             answer; cut to fit the token budget)"
                .to_owned()
        }
        Edit::LeaveOut(names, recursive) => {
            if let Some(Value::Object(properties)) = node.get_mut("properties") {
                for name in &names {
                    properties.shift_remove(name);
                }
            }
            let why = if recursive {
                "optional, they refer back to a schema they are inside; the recursion is cut to \
                 fit the token budget"
            } else {
                "optional; left out to fit the token budget"
            };
            format!("properties {names:?} left out for decoding ({why})")
        }
    }
}

/// The narrowings of one schema that is alone (a `type` list may get several), with these
/// caps, and the recursion cut at this schema when there is one.
pub(super) fn edits_for(map: &Map<String, Value>, caps: &Caps, cut: Option<&Cut>) -> Vec<Edit> {
    let mut edits = Vec::new();
    if IN_PLACE.iter().any(|k| map.contains_key(*k)) {
        return edits;
    }
    let types = declared_types(map);
    let has = |t: &str| types.iter().any(|x| x == t);
    let object_like = has("object") || (types.is_empty() && map.contains_key("properties"));
    let may_require_keys = map.keys().any(|k| may_require_keys(k));
    if object_like && !may_require_keys {
        edits.extend(object_edits(map, caps, cut));
    }
    if has("string") {
        edits.extend(string_edit(map, caps));
    }
    let min_items = map.get("minItems").and_then(Value::as_u64).unwrap_or(0);
    let free_items = matches!(map.get("items"), None | Some(Value::Bool(true)))
        || map
            .get("items")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty);
    if has("array") && cut == Some(&Cut::Items) && min_items == 0 {
        edits.push(Edit::CutRecursion);
    } else if has("array") && caps.cut_free && free_items && min_items == 0 {
        edits.push(Edit::CutFreeItems);
    } else if has("array") && !map.contains_key("maxItems") {
        edits.push(Edit::CapItems(caps.items.max(min_items)));
    }
    edits
}

/// The caps of a string or array that is not alone (another schema applies to the same value),
/// where [`Beside`] found that no schema of the document needs a longer one.
pub(super) fn beside_edits(map: &Map<String, Value>, caps: &Caps, beside: Beside) -> Vec<Edit> {
    let mut edits = Vec::new();
    if IN_PLACE.iter().any(|k| map.contains_key(*k)) {
        return edits;
    }
    let types = declared_types(map);
    let has = |t: &str| types.iter().any(|x| x == t);
    let plain_string = !["pattern", "format", "minLength", "maxLength"]
        .iter()
        .any(|k| map.contains_key(*k));
    if beside.strings && has("string") && plain_string {
        edits.push(Edit::CapString(caps.string));
    }
    if beside.items
        && has("array")
        && !map.contains_key("maxItems")
        && !map.contains_key("minItems")
    {
        edits.push(Edit::CapItems(caps.items));
    }
    edits
}

/// The optional properties a closed object leaves out: those that recur (`cut`), and with
/// [`Caps::optional`] off every optional one, keeping enough for `minProperties`.
fn left_out(map: &Map<String, Value>, caps: &Caps, cut: Option<&Cut>) -> Option<Edit> {
    let declared = map.get("properties").and_then(Value::as_object)?;
    let required = names(map.get("required"));
    let min = map
        .get("minProperties")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let mut kept = u64::try_from(required.len()).unwrap_or(u64::MAX);
    let recurring =
        |name: &str| matches!(cut, Some(Cut::Properties(n)) if n.iter().any(|c| c == name));
    let mut out = Vec::new();
    let mut recursive = true;
    for name in declared.keys().filter(|k| !required.contains(k)) {
        if recurring(name) {
            out.push(name.clone());
        } else if !caps.optional && kept >= min {
            out.push(name.clone());
            recursive = false;
        } else {
            kept += 1;
        }
    }
    // Leaving recurring ones out must not go below minProperties either.
    if kept < min || out.is_empty() {
        return None;
    }
    Some(Edit::LeaveOut(out, recursive))
}

/// Closing an open object, or bounding a map's keys and size.
fn object_edits(map: &Map<String, Value>, caps: &Caps, cut: Option<&Cut>) -> Vec<Edit> {
    let mut edits = Vec::new();
    let mut closes = closable(map);
    if !closes && caps.cut_free {
        // Past the first rung: required names the schema does not declare (any value) are
        // declared as short strings, so the object can be closed.
        if let Some(edit) = declare_required(map, caps) {
            edits.push(edit);
            closes = true;
        }
    }
    if closes {
        edits.push(Edit::Close);
    }
    let closed = closes || map.get("additionalProperties") == Some(&Value::Bool(false));
    let mut gone: Vec<String> = Vec::new();
    if closed && let Some(edit) = left_out(map, caps, cut) {
        if let Edit::LeaveOut(names, _) = &edit {
            gone.clone_from(names);
        }
        edits.push(edit);
    }
    let mut is_map = false;
    if free_map(map) {
        edits.push(Edit::BoundMapKeys);
        is_map = true;
    } else if let Some(edit) = bound_key_pattern(map, closes, caps.repeat) {
        edits.push(edit);
        is_map = true;
    }
    if is_map && !map.contains_key("maxProperties") {
        let declared = map.get("properties").and_then(Value::as_object);
        let required = names(map.get("required"));
        // llguidance takes maxProperties only when every declared property is required.
        // (Those left out are not declared in the decoding grammar.)
        let all_required = declared.is_none_or(|d| {
            d.keys()
                .filter(|k| !gone.contains(k))
                .all(|k| required.iter().any(|r| r == k))
        });
        let min = map
            .get("minProperties")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let count = u64::try_from(required.len()).unwrap_or(u64::MAX);
        if all_required {
            edits.push(Edit::CapProperties(caps.map.max(min).max(count)));
        }
    }
    edits
}

/// The required names an open object (any value for other keys) does not declare, declared as
/// strings of at most the rung's length, when that makes the object closable.
fn declare_required(map: &Map<String, Value>, caps: &Caps) -> Option<Edit> {
    let open = match map.get("additionalProperties") {
        None | Some(Value::Bool(true)) => true,
        Some(Value::Object(o)) => o.is_empty(),
        Some(_) => false,
    };
    let declared = map.get("properties").and_then(Value::as_object);
    let undeclared: Vec<String> = names(map.get("required"))
        .into_iter()
        .filter(|n| declared.is_none_or(|d| !d.contains_key(n)))
        .collect();
    if !open || undeclared.is_empty() || map.contains_key("patternProperties") {
        return None;
    }
    let mut with = map.clone();
    let properties = with
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(properties) = properties {
        for name in &undeclared {
            properties.insert(name.clone(), json!({}));
        }
    }
    closable(&with).then_some(Edit::DeclareRequired(undeclared, caps.string))
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
fn bound_key_pattern(map: &Map<String, Value>, closing: bool, repeat: u32) -> Option<Edit> {
    let Some(Value::Object(patterns)) = map.get("patternProperties") else {
        return None;
    };
    let closed = closing || map.get("additionalProperties") == Some(&Value::Bool(false));
    if patterns.len() != 1 || !closed {
        return None;
    }
    let (old, _) = patterns.iter().next()?;
    // The rung's repetition cap, or the first rung's when that loses a declared name.
    let original = regex::Regex::new(old).ok()?;
    [repeat, REPEAT_CAP]
        .into_iter()
        .find_map(|cap| bound_keys_at(map, old, &original, cap))
}

/// [`bound_key_pattern`] with one repetition cap.
fn bound_keys_at(
    map: &Map<String, Value>,
    old: &str,
    original: &regex::Regex,
    repeat: u32,
) -> Option<Edit> {
    let new = bounded(old, repeat)?;
    let narrowed = regex::Regex::new(&new).ok()?;
    let declared = map
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|d| d.keys().cloned());
    let mut named = names(map.get("required"));
    named.extend(declared);
    let min = map
        .get("minProperties")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let keeps = named
        .iter()
        .all(|n| !original.is_match(n) || narrowed.is_match(n));
    (keeps && min <= 1).then_some(Edit::BoundKeyPattern(old.to_owned(), new, repeat))
}

/// The narrowing of a string: a cap on a free string, a lower cap on a large `maxLength`, or a
/// bounded `pattern`.
fn string_edit(map: &Map<String, Value>, caps: &Caps) -> Option<Edit> {
    let min = map.get("minLength").and_then(Value::as_u64).unwrap_or(0);
    let cap = caps.string.max(min);
    let max = map.get("maxLength").and_then(Value::as_u64);
    if let Some(Value::String(pattern)) = map.get("pattern") {
        // The bounded pattern keeps the shortest match; with a minLength it might not reach it.
        if min > 0 || max.is_some_and(|m| m <= cap) {
            return None;
        }
        return bounded(pattern, caps.repeat).map(|p| Edit::BoundPattern(p, caps.repeat));
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
