//! The schema-guided fixes: a value of a type its schema does not admit, changed only where the
//! schema leaves one reading.
//!
//! | value | schema at that place | becomes | kind |
//! |---|---|---|---|
//! | a string holding a JSON number (`"42"`, `" -1.5 "`) that a JSON number holds exactly (not `"123456789012345678901234567890"`, which would come back as `1.2345678901234568e29`) | admits numbers (or integers, for an integral one), no strings | the number | `string_to_number` |
//! | `"true"` / `"false"` in any case | admits booleans, no strings | the boolean | `string_to_boolean` |
//! | a string outside the enum | an enum (or `const`s) with exactly one member equal to it but for case | that member | `enum_case` |
//! | a non-null value of a type not admitted (not a string holding `,` `;` or a line break, which may be a list written as text) | admits arrays, and its items admit the value as it is | `[value]` | `wrap_in_array` |
//!
//! The schema is followed through `properties`, `additionalProperties`, `items`, `prefixItems`,
//! local `$ref`s, `allOf`, and the one `anyOf`/`oneOf` branch that admits the value's type
//! (none is chosen when several do). Nothing else changes a value: `"1,000"`, `"yes"` or
//! `"N/A"` stay as written, for validation to refuse.

use super::{Repair, RepairKind, pointer_segment};
use crate::schema::root::{MAX_REF_HOPS, TypeSet, types_of};
use crate::schema::strict::{RefTarget, resolve_local_ref};
use serde_json::{Map, Value};

/// Applies every fix `schema` (a whole schema document) allows to `value`, appending each.
pub(super) fn coerce(value: &mut Value, schema: &Value, repairs: &mut Vec<Repair>) {
    let mut path = String::new();
    walk(value, schema, schema, &mut path, repairs);
}

fn walk(value: &mut Value, node: &Value, root: &Value, path: &mut String, out: &mut Vec<Repair>) {
    let types = types_of(node, root, MAX_REF_HOPS);
    if let Value::String(s) = value {
        if let Some(member) = enum_member(s, node, root) {
            *value = Value::String(member);
            out.push(Repair::new(RepairKind::EnumCase, path.clone()));
        } else if !types.contains(TypeSet::STRING) {
            if let Some(n) = number_in(s, types) {
                *value = n;
                out.push(Repair::new(RepairKind::StringToNumber, path.clone()));
            } else if let Some(b) = boolean_in(s, types) {
                *value = Value::Bool(b);
                out.push(Repair::new(RepairKind::StringToBoolean, path.clone()));
            }
        }
    }
    if wraps(value, types, node, root) {
        *value = Value::Array(vec![std::mem::take(value)]);
        out.push(Repair::new(RepairKind::WrapInArray, path.clone()));
    }
    let len = path.len();
    match value {
        Value::Object(map) => {
            let facets = facets_for(node, root, TypeSet::OBJECT);
            for (key, child) in map.iter_mut() {
                path.push('/');
                path.push_str(&pointer_segment(key));
                for schema in facets.iter().filter_map(|f| member_schema(f, key)) {
                    walk(child, schema, root, path, out);
                }
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            let facets = facets_for(node, root, TypeSet::ARRAY);
            for (i, child) in items.iter_mut().enumerate() {
                path.push('/');
                path.push_str(&i.to_string());
                for schema in facets.iter().filter_map(|f| item_schema(f, i)) {
                    walk(child, schema, root, path, out);
                }
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// The number a string holds, when `types` admits that number and no string, and the number
/// read is the one written: a text no JSON number can hold exactly (thirty digits, 2^53 + 1
/// with a fraction) is left as written, never replaced by a nearby number.
fn number_in(s: &str, types: TypeSet) -> Option<Value> {
    let t = s.trim();
    if !t.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        return None;
    }
    match serde_json::from_str::<Value>(t) {
        Ok(n @ Value::Number(_))
            if types.contains(TypeSet::of(&n)) && same_decimal(t, &n.to_string()) =>
        {
            Some(n)
        }
        _ => None,
    }
}

/// Whether two JSON number texts write the same decimal value (`1e3` and `1000.0` do; the
/// digits are compared, never a float made from them).
fn same_decimal(a: &str, b: &str) -> bool {
    decimal(a).is_some() && decimal(a) == decimal(b)
}

/// A JSON number text as (negative, significant digits, exponent of the last digit); zero
/// is `(false, "", 0)` whatever its sign or spelling.
fn decimal(text: &str) -> Option<(bool, String, i64)> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text),
    };
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
        None => (rest, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = format!("{int}{frac}");
    let trimmed = digits.trim_start_matches('0');
    let significant = trimmed.trim_end_matches('0');
    if significant.is_empty() {
        return Some((false, String::new(), 0));
    }
    let dropped = (trimmed.len() - significant.len()) as i64;
    let exp = exponent
        .checked_sub(frac.len() as i64)?
        .checked_add(dropped)?;
    Some((negative, significant.to_owned(), exp))
}

/// The boolean a string spells, when `types` admits booleans.
fn boolean_in(s: &str, types: TypeSet) -> Option<bool> {
    if !types.contains(TypeSet::BOOLEAN) {
        return None;
    }
    match s.trim() {
        t if t.eq_ignore_ascii_case("true") => Some(true),
        t if t.eq_ignore_ascii_case("false") => Some(false),
        _ => None,
    }
}

/// The one enum member equal to `s` but for case, when `s` itself is not a member.
fn enum_member(s: &str, node: &Value, root: &Value) -> Option<String> {
    let members = allowed_strings(node, root, MAX_REF_HOPS)?;
    if members.iter().any(|m| m == s) {
        return None;
    }
    let lower = s.to_lowercase();
    let mut hits = members.iter().filter(|m| m.to_lowercase() == lower);
    match (hits.next(), hits.next()) {
        (Some(one), None) => Some(one.clone()),
        _ => None,
    }
}

/// The strings a schema admits when it lists them (`enum`, `const`, or branches that each do);
/// `None` when it admits strings freely or lists none.
fn allowed_strings(node: &Value, root: &Value, hops: usize) -> Option<Vec<String>> {
    let m = node.as_object()?;
    if let Some(Value::Array(members)) = m.get("enum") {
        return Some(
            members
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
        );
    }
    if let Some(c) = m.get("const") {
        return Some(c.as_str().map(str::to_owned).into_iter().collect());
    }
    if let Some(Value::String(r)) = m.get("$ref")
        && hops > 0
        && let RefTarget::Found { value, .. } = resolve_local_ref(root, r)
    {
        return allowed_strings(value, root, hops - 1);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = m.get(key) {
            let mut all = Vec::new();
            for b in branches {
                if !types_of(b, root, hops).contains(TypeSet::STRING) {
                    continue;
                }
                all.extend(allowed_strings(b, root, hops)?);
            }
            return (!all.is_empty()).then_some(all);
        }
    }
    if let Some(Value::Array(branches)) = m.get("allOf") {
        return branches.iter().find_map(|b| allowed_strings(b, root, hops));
    }
    None
}

/// Whether `value` should become `[value]`: its type is not admitted, arrays are, and the
/// items admit it as it is.
fn wraps(value: &Value, types: TypeSet, node: &Value, root: &Value) -> bool {
    // A string holding a separator may be a list written as text: `["a, b"]` or `["a", "b"]`
    // is a guess.
    let listlike = value.as_str().is_some_and(|s| s.contains([',', ';', '\n']));
    if value.is_null()
        || listlike
        || value.is_array()
        || types == TypeSet::ALL
        || types.admits(value)
        || !types.contains(TypeSet::ARRAY)
    {
        return false;
    }
    let facets = facets_for(node, root, TypeSet::ARRAY);
    let mut first = facets.iter().filter_map(|f| item_schema(f, 0)).peekable();
    first.peek().is_some() && first.all(|s| types_of(s, root, MAX_REF_HOPS).admits(value))
}

/// The schema objects that apply to a value of type `want` at `node`: the node, its `$ref`
/// targets and `allOf` members, and the one `anyOf`/`oneOf` branch admitting `want`.
fn facets_for<'a>(node: &'a Value, root: &'a Value, want: TypeSet) -> Vec<&'a Map<String, Value>> {
    let mut out = Vec::new();
    facets(node, root, want, MAX_REF_HOPS, &mut out);
    out
}

fn facets<'a>(
    node: &'a Value,
    root: &'a Value,
    want: TypeSet,
    hops: usize,
    out: &mut Vec<&'a Map<String, Value>>,
) {
    let Some(m) = node.as_object() else {
        return;
    };
    out.push(m);
    if let Some(Value::String(r)) = m.get("$ref")
        && hops > 0
        && let RefTarget::Found { value, .. } = resolve_local_ref(root, r)
    {
        facets(value, root, want, hops - 1, out);
    }
    if let Some(Value::Array(all)) = m.get("allOf") {
        for b in all {
            facets(b, root, want, hops, out);
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = m.get(key) {
            let mut fitting = branches
                .iter()
                .filter(|b| types_of(b, root, hops).contains(want));
            if let (Some(one), None) = (fitting.next(), fitting.next()) {
                facets(one, root, want, hops, out);
            }
        }
    }
}

/// The schema of member `key` in one facet: `properties`, else `additionalProperties` when no
/// `patternProperties` could claim the key instead.
fn member_schema<'a>(facet: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if let Some(s) = facet.get("properties").and_then(|p| p.get(key)) {
        return Some(s);
    }
    if facet.contains_key("patternProperties") {
        return None;
    }
    facet.get("additionalProperties").filter(|s| s.is_object())
}

/// The schema of item `i` in one facet: `prefixItems` (or a tuple `items`), else `items` (or
/// `additionalItems` after a tuple).
fn item_schema(facet: &Map<String, Value>, i: usize) -> Option<&Value> {
    match (facet.get("prefixItems"), facet.get("items")) {
        (Some(Value::Array(prefix)), items) => {
            prefix.get(i).or_else(|| items.filter(|s| s.is_object()))
        }
        (None, Some(Value::Array(tuple))) => tuple
            .get(i)
            .or_else(|| facet.get("additionalItems").filter(|s| s.is_object())),
        (None, Some(items)) => Some(items).filter(|s| s.is_object()),
        _ => None,
    }
}
