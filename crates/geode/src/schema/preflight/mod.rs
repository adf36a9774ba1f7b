//! Offline preflight of provider limits (part of [`super`], in its own file for size).
//!
//! OpenAI strict mode documents hard limits ("Supported schemas" in its Structured Outputs guide,
//! platform.openai.com/docs/guides/structured-outputs); a schema past them is refused by
//! the server. [`preflight`] finds them before the call, with the limit named and a pointer. They
//! are counted on the copy the wire gets ([`crate::schema::subset::openai_strict`]: a wrapped root
//! is one more property and nesting level), the pointers given in the caller's schema.
//! Only OpenAI documents numeric limits; which adapters are held to them is their
//! [`crate::llm::registry::SchemaRoute`].

use super::ResponseSchema;
use super::projection::{sub_pointer, subschemas};
use crate::schema::strict::child;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The OpenAI strict-mode limits (platform.openai.com/docs/guides/structured-outputs, raised
/// July 2025).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenAiLimits {
    /// Object properties in the whole schema.
    pub max_properties: usize,
    /// Levels of object nesting.
    pub max_nesting: usize,
    /// Enum values in the whole schema.
    pub max_enum_values: usize,
    /// Characters of all property names, definition names, enum values and const values.
    pub max_total_chars: usize,
    /// A string enum with more values than this is also held to `max_large_enum_chars`.
    pub large_enum_values: usize,
    /// Characters of one large string enum.
    pub max_large_enum_chars: usize,
}

/// The limits OpenAI documents for strict mode.
pub const OPENAI_STRICT_LIMITS: OpenAiLimits = OpenAiLimits {
    max_properties: 5000,
    max_nesting: 10,
    max_enum_values: 1000,
    max_total_chars: 120_000,
    large_enum_values: 250,
    max_large_enum_chars: 15_000,
};

/// One provider limit a schema breaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitViolation {
    /// The limit, in words.
    pub limit: String,
    /// What the schema has.
    pub found: usize,
    /// What the provider allows.
    pub max: usize,
    /// Where the limit was crossed (JSON Pointer into the schema).
    pub pointer: String,
}

impl std::fmt::Display for LimitViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = crate::schema::shown_pointer(&self.pointer);
        write!(
            f,
            "{}: {} found, at most {} allowed (at {at})",
            self.limit, self.found, self.max
        )
    }
}

/// The violations as one line: `limit: found, at most max (at pointer); ...`.
pub fn violations_text(violations: &[LimitViolation]) -> String {
    violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The OpenAI strict-mode limits `schema` breaks, found offline. `Err` lists every one.
///
/// ```
/// use geode::schema::{ResponseSchema, preflight::openai_strict_limits};
/// let values: Vec<String> = (0..1001).map(|i| format!("v{i}")).collect();
/// let s = ResponseSchema::from_value(serde_json::json!({"enum": values})).unwrap();
/// let err = openai_strict_limits(&s).unwrap_err();
/// assert_eq!((err[0].found, err[0].max), (1001, 1000));
/// ```
pub fn openai_strict_limits(schema: &ResponseSchema) -> Result<(), Vec<LimitViolation>> {
    let found = Preflight::new(schema).openai_strict().to_vec();
    if found.is_empty() { Ok(()) } else { Err(found) }
}

/// One schema's preflight, each count made once however many adapters ask: `geode schema
/// check` counts a big schema once for every OpenAI-bound adapter, not once per adapter.
///
/// ```
/// use geode::schema::{ResponseSchema, preflight::Preflight};
/// let values: Vec<String> = (0..1001).map(|i| format!("v{i}")).collect();
/// let s = ResponseSchema::from_value(serde_json::json!({"enum": values})).unwrap();
/// let preflight = Preflight::new(&s);
/// assert_eq!(preflight.openai_strict().len(), 1);
/// ```
pub struct Preflight<'a> {
    schema: &'a ResponseSchema,
    openai: std::cell::OnceCell<Vec<LimitViolation>>,
}

impl<'a> Preflight<'a> {
    /// Nothing is counted until a set of limits is asked for.
    pub fn new(schema: &'a ResponseSchema) -> Self {
        Self {
            schema,
            openai: std::cell::OnceCell::new(),
        }
    }

    /// The OpenAI strict-mode limits the schema breaks (empty: none), counted on first use.
    pub fn openai_strict(&self) -> &[LimitViolation] {
        self.openai
            .get_or_init(|| openai_wire_violations(self.schema))
    }
}

/// OpenAI's limits counted on the copy the wire gets: a wrapped root is one more property and
/// level. Pointers are given back in the caller's schema (the wrapper's own are the root).
fn openai_wire_violations(schema: &ResponseSchema) -> Vec<LimitViolation> {
    let plan = crate::schema::subset::openai_strict(schema);
    let wire = plan.wire.as_ref().unwrap_or(schema.as_value());
    let mut found = openai_violations(wire, &OPENAI_STRICT_LIMITS);
    if plan.wrapped {
        let under = format!("/properties/{}", crate::schema::root::WRAP_KEY);
        for v in &mut found {
            if let Some(rest) = v.pointer.strip_prefix(&under) {
                v.pointer = rest.to_owned();
            }
        }
    }
    found
}

/// Counts the OpenAI strict limits over every subschema (`$defs` included, each once).
///
/// Nesting counts object schemas (`type` "object" or `properties` present) on the path from the
/// root; a definition starts its own count. Characters are Unicode scalar values; a non-string
/// enum or const value counts as its JSON text.
fn openai_violations(root: &Value, l: &OpenAiLimits) -> Vec<LimitViolation> {
    #[derive(Default)]
    struct Tally {
        count: usize,
        first_over: Option<String>,
    }
    impl Tally {
        fn add(&mut self, n: usize, max: usize, ptr: &str) {
            self.count += n;
            if self.count > max && self.first_over.is_none() {
                self.first_over = Some(ptr.to_owned());
            }
        }
    }
    let chars = |v: &Value| match v {
        Value::String(s) => s.chars().count(),
        other => other.to_string().chars().count(),
    };
    let (mut props, mut nesting, mut enums, mut text) = (
        Tally::default(),
        Tally::default(),
        Tally::default(),
        Tally::default(),
    );
    let mut out = Vec::new();
    let mut stack: Vec<(&Value, String, usize)> = vec![(root, String::new(), 0)];
    while let Some((node, ptr, parent_level)) = stack.pop() {
        let Value::Object(m) = node else { continue };
        let is_object =
            m.contains_key("properties") || m.get("type").and_then(Value::as_str) == Some("object");
        let level = parent_level + usize::from(is_object);
        if level > nesting.count {
            nesting.count = level;
            if level > l.max_nesting && nesting.first_over.is_none() {
                nesting.first_over = Some(ptr.clone());
            }
        }
        if let Some(Value::Object(p)) = m.get("properties") {
            props.add(p.len(), l.max_properties, &ptr);
            text.add(
                p.keys().map(|k| k.chars().count()).sum(),
                l.max_total_chars,
                &ptr,
            );
        }
        for defs in ["$defs", "definitions"] {
            if let Some(Value::Object(d)) = m.get(defs) {
                text.add(
                    d.keys().map(|k| k.chars().count()).sum(),
                    l.max_total_chars,
                    &ptr,
                );
            }
        }
        if let Some(Value::Array(values)) = m.get("enum") {
            enums.add(values.len(), l.max_enum_values, &ptr);
            let len: usize = values.iter().map(chars).sum();
            text.add(len, l.max_total_chars, &ptr);
            if values.len() > l.large_enum_values
                && values.iter().all(Value::is_string)
                && len > l.max_large_enum_chars
            {
                out.push(LimitViolation {
                    limit: format!(
                        "characters of one string enum with more than {} values",
                        l.large_enum_values
                    ),
                    found: len,
                    max: l.max_large_enum_chars,
                    pointer: child(&ptr, &["enum"]),
                });
            }
        }
        if let Some(c) = m.get("const") {
            text.add(chars(c), l.max_total_chars, &ptr);
        }
        for (tokens, v, two) in subschemas(m).into_iter().rev() {
            let is_def = tokens[0] == "$defs" || tokens[0] == "definitions";
            stack.push((
                v,
                sub_pointer(&ptr, &tokens, two),
                if is_def { 0 } else { level },
            ));
        }
    }
    let limits = [
        ("object properties in total", props, l.max_properties),
        ("levels of object nesting", nesting, l.max_nesting),
        ("enum values in total", enums, l.max_enum_values),
        (
            "characters of property names, definition names, enum and const values",
            text,
            l.max_total_chars,
        ),
    ];
    let mut head: Vec<LimitViolation> = limits
        .into_iter()
        .filter_map(|(name, t, max)| {
            t.first_over.map(|pointer| LimitViolation {
                limit: format!("OpenAI strict: {name}"),
                found: t.count,
                max,
                pointer,
            })
        })
        .collect();
    for v in &mut out {
        v.limit = format!("OpenAI strict: {}", v.limit);
    }
    head.extend(out);
    head
}

#[cfg(test)]
mod tests;
