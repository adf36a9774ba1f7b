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
//! | `not`, `if`/`then`/`else`, `dependencies`, `dependentRequired`, `dependentSchemas`, `uniqueItems`, `contains`/`minContains`/`maxContains`, `propertyNames`, `unevaluatedProperties`, `unevaluatedItems` | removed (checked afterwards) |
//! | `format: iri` | `format: uri` (a narrowing: every URI is an IRI) |
//! | any other `format` llguidance does not know | removed (checked afterwards, as far as geode's validator knows the format) |

use geode::schema::dialect;
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
    dialect::joined(&dialect::STRICT_FORMATS, &["uri", "unknown"]);

/// One change for llguidance.
#[derive(Debug, Clone, PartialEq)]
enum Relax {
    OneOfAsAnyOf,
    Remove(String),
    IriAsUri,
    RemoveFormat(String),
}

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
        if let Some(Value::Object(node)) = at.and_then(|at| out.pointer_mut(&at)) {
            apply(node, &change);
            applied.push(Transform {
                pointer,
                action: describe(&change),
            });
        }
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
        Relax::Remove(k) => {
            node.shift_remove(k);
        }
        Relax::RemoveFormat(_) => {
            node.shift_remove("format");
        }
        Relax::IriAsUri => {
            node.insert("format".to_owned(), json!("uri"));
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
    for k in UNCOMPILED {
        if map.contains_key(k) {
            found.push((pointer.clone(), Relax::Remove(k.to_owned())));
        }
    }
    if let Some(Value::String(format)) = map.get("format")
        && !COMPILED_FORMATS.contains(&format.as_str())
    {
        let change = if format == "iri" {
            Relax::IriAsUri
        } else {
            Relax::RemoveFormat(format.clone())
        };
        found.push((pointer.clone(), change));
    }
    // Keywords removed wholesale (UNCOMPILED) are not entered: nothing inside is compiled.
    super::each_subschema(map, &pointer, true, &mut |child, at| {
        collect(child, at, found);
    });
}
