//! Anthropic's schema projection and the residual constraints a wire copy leaves to local checks.
//!
//! In: the caller's [`ResponseSchema`] (never modified). Out: from [`project_anthropic`], a
//! [`Projection`] — the wire copy, the constraints the copy lost ([`Residual`], checked locally
//! against the original) and one ledger [`Transform`] per rewrite. The provider limits a schema
//! breaks are [`super::preflight`]'s. Which adapter uses which is its
//! [`crate::llm::registry::SchemaRoute`]. Pure, iterative, no IO.
//!
//! Anthropic projection, per subschema (keyword lists are the `const`s of [`AnthropicPolicy`]):
//!
//! | keyword | on the wire | locally |
//! |---|---|---|
//! | numeric (`minimum`, `maximum`, `exclusive*`, `multipleOf`), `minLength`/`maxLength`, array constraints beyond `minItems` 0/1, `not`, `if`/`then`/`else`, `dependent*`, `propertyNames`, `min/maxProperties`, `unevaluated*`, `content*` | removed | residual |
//! | `minItems` other than 0 or 1, `format` outside the supported list, `pattern` with lookaround/backreferences/`\b`, `enum` with array or object members | removed | residual |
//! | `oneOf` | rewritten as `anyOf` | residual (exclusivity) |
//! | absent or `true` `additionalProperties` on an object schema | set to `false` (required) | nothing: the wire is stricter than the original |
//!
//! Everything else stays; [`anthropic_native_fits`] then says whether what stays is inside the
//! subset (no recursion, local refs only, no `allOf` over a `$ref`, no typed `additionalProperties`,
//! no `patternProperties`/`prefixItems`, ...). Removing a keyword only widens what the wire
//! accepts, so every answer the original schema accepts is still possible on the wire.

use super::ResponseSchema;
use super::strict::{RefTarget, child, resolve_local_ref};
use crate::vocab::Transform;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// A constraint the wire copy does not carry; the worker checks it against the original schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Residual {
    /// JSON Pointer to the subschema in the caller's schema (`""` is the root).
    pub pointer: String,
    /// The keyword left off the wire.
    pub keyword: String,
    /// Its value in the caller's schema.
    pub value: Value,
}

impl std::fmt::Display for Residual {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = super::shown_pointer(&self.pointer);
        write!(f, "{at}: {} {} (checked locally)", self.keyword, self.value)
    }
}

/// What [`project_anthropic`] did: the wire copy, the residual constraints and the ledger transforms.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    /// The schema to put on the wire.
    pub wire: Value,
    /// Constraints removed from the wire copy, to check locally.
    pub residuals: Vec<Residual>,
    /// One entry per rewrite, for the ledger.
    pub transforms: Vec<Transform>,
}

/// The string formats OpenAI's strict mode takes (`date-time` ... `uuid`), the ones every
/// grammar-constrained wire compiles: Anthropic's native format adds `uri`
/// ([`AnthropicPolicy::FORMATS`]), the local engine's llguidance `uri` and `unknown`.
pub const STRICT_FORMATS: [&str; 9] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// `base` followed by `more`, built at compile time, so a wire's list of names can be stated as
/// another's and more (e.g. `joined::<10>(&STRICT_FORMATS, &["uri"])`); `M` must be the sum of
/// the lengths (else the build stops).
pub const fn joined<const M: usize>(
    base: &[&'static str],
    more: &[&'static str],
) -> [&'static str; M] {
    assert!(base.len() + more.len() == M, "M is not the joined length");
    let mut out = [""; M];
    let mut i = 0;
    while i < M {
        out[i] = if i < base.len() {
            base[i]
        } else {
            more[i - base.len()]
        };
        i += 1;
    }
    out
}

/// The Anthropic native structured-output subset, as Anthropic documents it for
/// `output_config.format` (platform.claude.com/docs/en/build-with-claude/structured-outputs).
pub struct AnthropicPolicy;

impl AnthropicPolicy {
    /// Keywords always removed from the wire copy and checked locally.
    pub const REMOVED: &'static [&'static str] = &[
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "maxItems",
        "uniqueItems",
        "contains",
        "minContains",
        "maxContains",
        "minProperties",
        "maxProperties",
        "propertyNames",
        "not",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
        "unevaluatedProperties",
        "unevaluatedItems",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
    ];
    /// String formats the native format supports: the strict ones and `uri`.
    pub const FORMATS: &'static [&'static str] = &joined::<10>(&STRICT_FORMATS, &["uri"]);
    /// Keywords the native format accepts (with the value rules of [`anthropic_native_fits`]).
    pub const SUPPORTED: &'static [&'static str] = &[
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "allOf",
        "$ref",
        "$defs",
        "definitions",
        "default",
        "format",
        "pattern",
        "minItems",
        "title",
        "description",
        "examples",
        "$comment",
        "$schema",
        "deprecated",
        "readOnly",
        "writeOnly",
    ];
}

/// Keywords whose value is one subschema.
const SINGLE: &[&str] = &[
    "additionalProperties",
    "additionalItems",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contentSchema",
    "items",
];
/// Keywords whose value is an array of subschemas (`items` too, in its tuple form).
const LISTS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];
/// Keywords whose value maps names to subschemas.
const MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// The subschemas directly under one schema object: (reference tokens, value).
pub(crate) fn subschemas(m: &Map<String, Value>) -> Vec<([String; 2], &Value, bool)> {
    let mut out = Vec::new();
    for &k in SINGLE {
        if let Some(v @ (Value::Object(_) | Value::Bool(_))) = m.get(k) {
            out.push(([k.to_owned(), String::new()], v, false));
        }
    }
    for &k in LISTS {
        if let Some(Value::Array(a)) = m.get(k) {
            out.extend(
                a.iter()
                    .enumerate()
                    .map(|(i, v)| ([k.to_owned(), i.to_string()], v, true)),
            );
        }
    }
    for &k in MAPS {
        if let Some(Value::Object(o)) = m.get(k) {
            out.extend(o.iter().map(|(n, v)| ([k.to_owned(), n.clone()], v, true)));
        }
    }
    out
}

/// Builds the pointer of a subschema from its tokens.
pub(crate) fn sub_pointer(ptr: &str, tokens: &[String; 2], two: bool) -> String {
    if two {
        child(ptr, &[&tokens[0], &tokens[1]])
    } else {
        child(ptr, &[&tokens[0]])
    }
}

/// Projects the caller's schema into Anthropic's native subset (the table above). The caller's
/// schema is never modified.
///
/// ```
/// use geode::schema::{ResponseSchema, projection::project_anthropic};
/// let s = ResponseSchema::from_json_str(
///     r#"{"type":"object","properties":{"n":{"type":"string","minLength":3}},"required":["n"],"additionalProperties":false}"#,
/// ).unwrap();
/// let p = project_anthropic(&s);
/// assert!(p.wire["properties"]["n"].get("minLength").is_none());
/// assert_eq!(p.residuals[0].keyword, "minLength");
/// assert_eq!(s.as_value()["properties"]["n"]["minLength"], 3);
/// ```
pub fn project_anthropic(schema: &ResponseSchema) -> Projection {
    let mut p = Projection {
        wire: schema.as_value().clone(),
        residuals: Vec::new(),
        transforms: Vec::new(),
    };
    anthropic_in_place(&mut p);
    p
}

/// The Anthropic projection: walks the wire copy (wire pointer, caller pointer) top-down and
/// rewrites each subschema in place.
fn anthropic_in_place(p: &mut Projection) {
    let mut stack: Vec<(String, String)> = vec![(String::new(), String::new())];
    while let Some((wire_ptr, orig_ptr)) = stack.pop() {
        let Some(Value::Object(m)) = p.wire.pointer_mut(&wire_ptr) else {
            continue;
        };
        let renamed = rewrite_node(m, &orig_ptr, &mut p.residuals, &mut p.transforms);
        let mut children: Vec<(String, String)> = subschemas(m)
            .into_iter()
            .map(|(tokens, _, two)| {
                let wire = sub_pointer(&wire_ptr, &tokens, two);
                let mut orig_tokens = tokens.clone();
                if renamed && orig_tokens[0] == "anyOf" {
                    orig_tokens[0] = "oneOf".to_owned();
                }
                (wire, sub_pointer(&orig_ptr, &orig_tokens, two))
            })
            .collect();
        children.reverse();
        stack.extend(children);
    }
}

/// Rewrites one subschema for the Anthropic subset. Returns true when `oneOf` became `anyOf`.
fn rewrite_node(
    m: &mut Map<String, Value>,
    ptr: &str,
    residuals: &mut Vec<Residual>,
    transforms: &mut Vec<Transform>,
) -> bool {
    let mut remove = |m: &mut Map<String, Value>, keyword: &str, why: &str| {
        if let Some(value) = m.shift_remove(keyword) {
            transforms.push(Transform {
                pointer: ptr.to_owned(),
                action: format!("removed keyword {keyword} ({why}; checked locally)"),
            });
            residuals.push(Residual {
                pointer: ptr.to_owned(),
                keyword: keyword.to_owned(),
                value,
            });
        }
    };
    for &k in AnthropicPolicy::REMOVED {
        remove(m, k, "not in the Anthropic subset");
    }
    if m.get("minItems")
        .is_some_and(|v| v.as_u64().is_none_or(|n| n > 1))
    {
        remove(m, "minItems", "only 0 or 1 is supported");
    }
    if m.get("format").is_some_and(|v| {
        v.as_str()
            .is_none_or(|f| !AnthropicPolicy::FORMATS.contains(&f))
    }) {
        remove(m, "format", "unsupported format");
    }
    if m.get("pattern")
        .is_some_and(|v| v.as_str().is_none_or(|s| !simple_pattern(s)))
    {
        remove(m, "pattern", "lookaround, backreference or \\b");
    }
    if let Some(Value::Array(members)) = m.get("enum")
        && members.iter().any(|v| v.is_array() || v.is_object())
    {
        remove(m, "enum", "array or object members");
    }
    let mut renamed = false;
    if m.contains_key("oneOf") {
        if m.contains_key("anyOf") {
            remove(m, "oneOf", "beside anyOf");
        } else if let Some(branches) = m.shift_remove("oneOf") {
            residuals.push(Residual {
                pointer: ptr.to_owned(),
                keyword: "oneOf".to_owned(),
                value: branches.clone(),
            });
            m.insert("anyOf".to_owned(), branches);
            transforms.push(Transform {
                pointer: ptr.to_owned(),
                action: "rewrote oneOf as anyOf (exclusivity checked locally)".to_owned(),
            });
            renamed = true;
        }
    }
    let is_object = m.contains_key("properties")
        || match m.get("type") {
            Some(Value::String(t)) => t == "object",
            Some(Value::Array(ts)) => ts.iter().any(|t| t.as_str() == Some("object")),
            _ => false,
        };
    if is_object
        && matches!(
            m.get("additionalProperties"),
            None | Some(Value::Bool(true))
        )
    {
        m.insert("additionalProperties".to_owned(), Value::Bool(false));
        transforms.push(Transform {
            pointer: ptr.to_owned(),
            action: "set additionalProperties to false (the native format requires it)".to_owned(),
        });
    }
    renamed
}

/// True when a regex uses none of lookaround, backreferences and `\b`/`\B`.
fn simple_pattern(p: &str) -> bool {
    let mut chars = p.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if matches!(chars.next(), Some('b' | 'B' | 'k' | '1'..='9')) {
                    return false;
                }
            }
            '(' if chars.peek() == Some(&'?') => {
                let rest: String = chars.clone().take(3).collect();
                if rest.starts_with("?=")
                    || rest.starts_with("?!")
                    || rest.starts_with("?<=")
                    || rest.starts_with("?<!")
                {
                    return false;
                }
            }
            _ => {}
        }
    }
    true
}

/// Whether the Anthropic native format can take the schema after [`project_anthropic`]: `Err` lists why not
/// (one line each, with a JSON Pointer into the projected copy).
pub fn anthropic_native_fits(schema: &ResponseSchema) -> Result<(), Vec<String>> {
    let wire = project_anthropic(schema).wire;
    let mut why = Vec::new();
    let mut refs: Vec<(String, String)> = Vec::new();
    let mut stack: Vec<(&Value, String)> = vec![(&wire, String::new())];
    while let Some((node, ptr)) = stack.pop() {
        let Value::Object(m) = node else { continue };
        let at = super::shown_pointer(&ptr);
        for k in m.keys() {
            if !AnthropicPolicy::SUPPORTED.contains(&k.as_str()) {
                why.push(format!("{at}: keyword {k} is not supported"));
            }
        }
        if m.get("additionalProperties")
            .is_some_and(|ap| ap != &Value::Bool(false))
        {
            why.push(format!(
                "{at}: additionalProperties must be false, not a schema"
            ));
        }
        if matches!(m.get("items"), Some(Value::Array(_))) {
            why.push(format!("{at}: tuple-form items is not supported"));
        }
        if let Some(Value::Array(branches)) = m.get("allOf")
            && branches.iter().any(|b| b.get("$ref").is_some())
        {
            why.push(format!("{at}: allOf with $ref is not supported"));
        }
        if let Some(Value::String(r)) = m.get("$ref") {
            match resolve_local_ref(&wire, r) {
                RefTarget::Found { pointer, .. } => refs.push((ptr.clone(), pointer)),
                RefTarget::Missing => why.push(format!("{at}: $ref {r} does not resolve")),
                RefTarget::NotLocal => {
                    why.push(format!("{at}: external $ref {r} is not supported"))
                }
            }
        }
        let mut children: Vec<(&Value, String)> = subschemas(m)
            .into_iter()
            .map(|(t, v, two)| (v, sub_pointer(&ptr, &t, two)))
            .collect();
        children.reverse();
        stack.extend(children);
    }
    if let Some(target) = recursive_target(&refs) {
        let at = super::shown_pointer(&target);
        why.push(format!("{at}: recursive schemas are not supported"));
    }
    if why.is_empty() { Ok(()) } else { Err(why) }
}

/// A `$ref` target that can reach itself, if any. `refs` holds (where the `$ref` is, its target).
fn recursive_target(refs: &[(String, String)]) -> Option<String> {
    let inside = |loc: &str, target: &str| {
        loc == target
            || (loc.starts_with(target) && loc.as_bytes().get(target.len()) == Some(&b'/'))
    };
    let targets: Vec<&str> = {
        let mut t: Vec<&str> = refs.iter().map(|(_, t)| t.as_str()).collect();
        t.sort_unstable();
        t.dedup();
        t
    };
    let index: HashMap<&str, usize> = targets.iter().enumerate().map(|(i, t)| (*t, i)).collect();
    let edges: Vec<Vec<usize>> = targets
        .iter()
        .map(|t| {
            refs.iter()
                .filter(|(loc, _)| inside(loc, t))
                .filter_map(|(_, to)| index.get(to.as_str()).copied())
                .collect()
        })
        .collect();
    // Iterative three-colour DFS.
    let mut colour = vec![0u8; targets.len()];
    for start in 0..targets.len() {
        if colour[start] != 0 {
            continue;
        }
        let mut stack = vec![(start, 0usize)];
        colour[start] = 1;
        while let Some((n, next)) = stack.pop() {
            if let Some(&to) = edges[n].get(next) {
                stack.push((n, next + 1));
                match colour[to] {
                    1 => return Some(targets[to].to_owned()),
                    0 => {
                        colour[to] = 1;
                        stack.push((to, 0));
                    }
                    _ => {}
                }
            } else {
                colour[n] = 2;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests;
