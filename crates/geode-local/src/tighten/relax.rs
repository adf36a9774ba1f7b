//! Keywords llguidance cannot compile, taken out of the decoding grammar and left to geode's
//! validation of the answer (which always runs against the caller's original schema).
//!
//! llguidance refuses a whole schema for one keyword it does not implement (`Unimplemented
//! keys: ["not"]`) or one format it does not know. Rather than refusing the call, the grammar
//! is compiled without it, the ledger names each such keyword with its pointer, and the answer
//! is validated in full afterwards (an answer the keyword rejects fails validation and gets the
//! worker's retry with the errors, never a silent pass). These are the only places where the
//! decoding grammar is **wider** than the caller's schema:
//!
//! | keyword | in the grammar |
//! |---|---|
//! | `oneOf` | decoded as `anyOf` (exclusivity checked afterwards); beside an `anyOf`, as an `allOf` entry `{"anyOf": [...]}` |
//! | `not` of a schema every value matches (`{}`, `true`, annotations only) | the whole schema decoded as `false` (a narrowing: it rejects every value, so llguidance refuses a required one before any token, and leaves out an optional one) |
//! | `not`, `if`/`then`/`else`, `dependencies`, `dependentRequired`, `dependentSchemas`, `uniqueItems`, `contains`/`minContains`/`maxContains`, `propertyNames`, `unevaluatedProperties`, `unevaluatedItems` | removed (checked afterwards) |
//! | `format: iri` | `format: uri` (a narrowing: every URI is an IRI) |
//! | `format: int32` / `int64` (OpenAPI's, common in Kubernetes and other OpenAPI-made schemas) | the format's signed range as `minimum`/`maximum`, where the schema's own bounds are not tighter (a narrowing: a model cannot write a 200-digit `port`) |
//! | any other `format` llguidance does not know | removed (checked afterwards, as far as geode's validator knows the format) |

use geode::schema::projection;
use geode::vocab::Transform;
use serde_json::{Map, Value, json};

/// Keywords llguidance 1.9 knows but does not compile.
pub(super) const UNCOMPILED: [&str; 14] = [
    "not",
    "if",
    "then",
    "else",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
];

/// Of [`UNCOMPILED`], those that constrain only array items or key names, never which keys an
/// object must have.
const NEVER_REQUIRE_KEYS: [&str; 5] = [
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "propertyNames",
];

/// Whether `keyword` is left to validation ([`UNCOMPILED`]) and can still require keys: an object
/// beside one is not closed, nor its keys bounded. Strings and arrays beside them are capped (the
/// grammar decodes without them).
pub(super) fn may_require_keys(keyword: &str) -> bool {
    UNCOMPILED.contains(&keyword) && !NEVER_REQUIRE_KEYS.contains(&keyword)
}

/// The formats llguidance 1.9 compiles (`llguidance::json::formats`): the strict ones, `uri` and
/// `unknown`.
pub(super) const COMPILED_FORMATS: [&str; 11] =
    projection::joined(&projection::STRICT_FORMATS, &["uri", "unknown"]);

/// Keywords that never reject a value: a schema of only these (or `true`, `{}`) matches every
/// value, and `not` of it matches none.
const ANNOTATIONS: [&str; 8] = [
    "title",
    "description",
    "$comment",
    "examples",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Whether every value matches `schema` for sure (`true`, `{}`, annotations only).
fn matches_everything(schema: &Value) -> bool {
    match schema {
        Value::Bool(b) => *b,
        Value::Object(map) => map.keys().all(|k| ANNOTATIONS.contains(&k.as_str())),
        _ => false,
    }
}

/// One change for llguidance.
#[derive(Debug, Clone, PartialEq)]
enum Relax {
    /// `not` of a schema every value matches: the node matches nothing, decoded as `false`
    /// (removing `not` would decode every value, each then rejected by validation and
    /// retried: a `{"not": {}}` root, which is also what a `false` root becomes, decoded an
    /// unconstrained answer twice).
    NothingMatches,
    OneOfAsAnyOf,
    Remove(String),
    IriAsUri,
    RemoveFormat(String),
    /// An OpenAPI integer format, decoded as its range.
    IntegerRange {
        format: &'static str,
        min: i64,
        max: i64,
    },
}

/// OpenAPI's integer formats llguidance does not know, and their signed ranges. llguidance 1.9
/// reads bounds through an `f64`, and `±i64::MAX` rounds to ±2^63, whose negation overflows in
/// it: `int64` is decoded within [`INT64_DECODED`], the largest `f64` below 2^63 (1,023 values
/// short of each end).
const INTEGER_FORMATS: [(&str, i64, i64); 2] = [
    ("int32", i32::MIN as i64, i32::MAX as i64),
    ("int64", -INT64_DECODED, INT64_DECODED),
];

/// 2^63 − 1024: the largest `f64` below 2^63, an exact `i64`.
const INT64_DECODED: i64 = 9_223_372_036_854_774_784;

/// Makes `out` (a copy of `original`) compilable by llguidance where a keyword stops it, and
/// names each change. Pointers are into `original`; `out` must still have its shape there.
pub(crate) fn relax(original: &Value, out: &mut Value) -> Vec<Transform> {
    let mut found = Vec::new();
    collect(original, String::new(), &mut found);
    // Deepest first, so a rename of `oneOf` never moves a node still to be changed. A node that
    // a narrowing removed (a closed object's additionalProperties) is not decoded at all: no
    // change, and nothing to name.
    let mut applied = Vec::new();
    for (pointer, change) in found.into_iter().rev() {
        let at = locate(out, &pointer);
        let Some(slot) = at.and_then(|at| out.pointer_mut(&at)) else {
            continue;
        };
        if change == Relax::NothingMatches && slot.is_object() {
            *slot = Value::Bool(false);
        } else if let Value::Object(node) = slot {
            apply(node, &change);
        } else {
            continue;
        }
        applied.push(Transform {
            pointer,
            action: describe(&change),
        });
    }
    applied.reverse();
    applied
}

/// Where the node at `pointer` of the caller's schema is in `out`: the same place, or, inside a
/// map whose `additionalProperties` schema the narrowing moved under its key pattern, there.
fn locate(out: &Value, pointer: &str) -> Option<String> {
    if out.pointer(pointer).is_some_and(Value::is_object) {
        return Some(pointer.to_owned());
    }
    let moved = format!(
        "/patternProperties/{}",
        super::escape(super::MAP_KEY_PATTERN)
    );
    pointer
        .match_indices("/additionalProperties")
        .map(|(i, m)| format!("{}{moved}{}", &pointer[..i], &pointer[i + m.len()..]))
        .find(|candidate| out.pointer(candidate).is_some_and(Value::is_object))
}

fn describe(change: &Relax) -> String {
    match change {
        Relax::NothingMatches => "not of a schema every value matches: no value matches here, \
                                  decoded as false (llguidance refuses it where a value is \
                                  required)"
            .to_owned(),
        Relax::OneOfAsAnyOf => "oneOf decoded as anyOf (llguidance cannot compile oneOf; that \
                                exactly one branch holds is checked by validating the answer)"
            .to_owned(),
        Relax::Remove(k) => format!(
            "{k} removed from the decoding grammar (llguidance cannot compile it; checked by \
             validating the answer)"
        ),
        Relax::IriAsUri => "format: uri for decoding (llguidance does not know iri; every URI \
                            is an IRI)"
            .to_owned(),
        Relax::RemoveFormat(f) => format!(
            "format {f:?} removed from the decoding grammar (llguidance does not know it; \
             checked by validating the answer, as far as geode's validator knows the format)"
        ),
        Relax::IntegerRange { format, min, max } => format!(
            "format {format:?} decoded as its range {min}..={max} where the schema's bounds are \
             wider (llguidance does not know it; a narrowing)"
        ),
    }
}

/// Sets `node[key]` to `bound` unless the schema's own value there is already within it
/// (`within(own, bound)`).
fn bound(node: &mut Map<String, Value>, key: &str, bound: i64, within: fn(f64, f64) -> bool) {
    #[allow(clippy::cast_precision_loss)] // a comparison: the i64 ends of the ranges round outward
    let tighter = node
        .get(key)
        .and_then(Value::as_f64)
        .is_some_and(|own| within(own, bound as f64));
    if !tighter {
        node.insert(key.to_owned(), json!(bound));
    }
}

fn apply(node: &mut Map<String, Value>, change: &Relax) {
    match change {
        Relax::OneOfAsAnyOf => {
            let Some(branches) = node.shift_remove("oneOf") else {
                return;
            };
            if node.contains_key("anyOf") {
                let all = node
                    .entry("allOf")
                    .or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(all) = all {
                    all.push(json!({"anyOf": branches}));
                }
            } else {
                node.insert("anyOf".to_owned(), branches);
            }
        }
        // Replaces the whole node: done by the caller.
        Relax::NothingMatches => {}
        Relax::Remove(k) => {
            node.shift_remove(k);
        }
        Relax::RemoveFormat(_) => {
            node.shift_remove("format");
        }
        Relax::IriAsUri => {
            node.insert("format".to_owned(), json!("uri"));
        }
        Relax::IntegerRange { min, max, .. } => {
            node.shift_remove("format");
            bound(node, "minimum", *min, |own, b| own >= b);
            bound(node, "maximum", *max, |own, b| own <= b);
        }
    }
}

/// Walks every schema of the document (pre-order), recording what llguidance would refuse.
fn collect(node: &Value, pointer: String, found: &mut Vec<(String, Relax)>) {
    let Value::Object(map) = node else {
        return;
    };
    if map.get("oneOf").is_some_and(Value::is_array) {
        found.push((pointer.clone(), Relax::OneOfAsAnyOf));
    }
    if map.get("not").is_some_and(matches_everything) {
        // Nothing inside matters any more: the node becomes `false`.
        found.push((pointer, Relax::NothingMatches));
        return;
    }
    for k in UNCOMPILED {
        if map.contains_key(k) {
            found.push((pointer.clone(), Relax::Remove(k.to_owned())));
        }
    }
    if let Some(Value::String(format)) = map.get("format")
        && !COMPILED_FORMATS.contains(&format.as_str())
    {
        let range = INTEGER_FORMATS.iter().find(|(f, ..)| f == format);
        let change = match (format.as_str(), range) {
            ("iri", _) => Relax::IriAsUri,
            (_, Some(&(format, min, max))) => Relax::IntegerRange { format, min, max },
            (_, None) => Relax::RemoveFormat(format.clone()),
        };
        found.push((pointer.clone(), change));
    }
    // Keywords removed wholesale (UNCOMPILED) are not entered: nothing inside is compiled.
    super::each_subschema(map, &pointer, true, &mut |child, at| {
        collect(child, at, found);
    });
}
