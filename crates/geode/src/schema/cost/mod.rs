//! A static estimate of how much work validating one instance location against a schema can
//! take, so that a hostile schema is refused before it is compiled or run.
//!
//! The validator's work explodes when many schema paths reach the *same* instance location:
//! `$defs` chained 20 levels deep as `anyOf: [{$ref: next}, {$ref: next}]` applies the last
//! definition 2^20 times to the root (seconds and gigabytes for `{"x":1}`), although the schema
//! has a few dozen nodes. [`schema_cost`] bounds that multiplicity without looking at any
//! instance: the largest number of subschema evaluations one instance location can receive.
//!
//! | keyword | how its subschemas count |
//! |---|---|
//! | in place: `allOf`, `anyOf`, `oneOf`, `not`, `if`, `then`, `else`, `dependentSchemas`, schema-valued `dependencies`, `contentSchema` | summed (they all apply to the same location) |
//! | `$ref`, `$dynamicRef`, `$recursiveRef` | the target, summed; when the target is ambiguous (an anchor defined twice, an `$id` matched loosely) the costliest candidate |
//! | `properties`, `prefixItems`, array-valued `items` | the costliest one (each applies to a different child) |
//! | `patternProperties` | summed (several patterns can match one key) |
//! | `additionalProperties`, `items`, `additionalItems`, `contains`, `propertyNames`, `unevaluatedItems`, `unevaluatedProperties` | added once |
//! | `$defs`, `definitions`, annotations, `enum`, `const`, `default`, ... | not counted (never evaluated unless referenced) |
//!
//! Every schema object counts 1 plus its subschemas as above, memoised per node, so the estimate
//! costs one pass over the schema graph (a chain of 10,000 definitions is fine: the walk is
//! iterative). A `$ref` back to a schema being estimated (recursion, as in tree schemas) counts
//! 1: recursion that descends into the instance is bounded by the instance, and in-place
//! recursion is refused by the validator. A `$ref` that does not resolve inside the document
//! counts 1 (the compiler refuses it, or it names a meta-schema the validator bundles).
//!
//! Validation work for a whole answer is then at most the estimate times the number of JSON
//! nodes in the answer; [`super::validate::CompiledSchema`] checks both products.

use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// Subschema keywords applied to the same instance location (summed).
const IN_PLACE: [&str; 5] = ["not", "if", "then", "else", "contentSchema"];
/// Keywords holding an array of subschemas applied in place (summed).
const IN_PLACE_ARRAYS: [&str; 3] = ["allOf", "anyOf", "oneOf"];
/// Keywords holding one subschema applied to child locations (added once).
const CHILD_ONE: [&str; 7] = [
    "additionalProperties",
    "additionalItems",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "items",
];

/// How one edge's cost combines with its siblings'.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Combine {
    /// Added to the total.
    Sum,
    /// The costliest edge of this group is added once.
    MaxOf(&'static str),
}

/// One subschema edge of a schema object.
enum Edge<'a> {
    /// A subschema (or a reference's target), combined as said.
    To(Combine, &'a Value),
    /// A reference with more possible targets than [`MAX_REF_CANDIDATES`]: counted as unbounded.
    Ambiguous,
}

/// The most targets one reference may have before the schema is counted as unbounded (an
/// anchor or `$id` repeated that often is hostile, and checking every one would be slow).
const MAX_REF_CANDIDATES: usize = 64;

/// The largest number of subschema evaluations one instance location can receive when an
/// instance is validated against `schema` (see the module table). Saturates at `u64::MAX`.
///
/// ```
/// use geode::schema::cost::schema_cost;
/// use serde_json::json;
/// assert_eq!(schema_cost(&json!({"type": "object"})), 1);
/// let mut defs = serde_json::Map::new();
/// for i in 0..20 {
///     let next = json!({"$ref": format!("#/$defs/d{}", i + 1)});
///     defs.insert(format!("d{i}"), json!({"anyOf": [next.clone(), next]}));
/// }
/// defs.insert("d20".into(), json!({"type": "string"}));
/// let hostile = json!({"$ref": "#/$defs/d0", "$defs": defs});
/// assert!(schema_cost(&hostile) > 1_000_000);
/// ```
pub fn schema_cost(schema: &Value) -> u64 {
    let index = Index::build(schema);
    let mut memo: HashMap<*const Value, u64> = HashMap::new();
    let mut open: HashSet<*const Value> = HashSet::new();
    let mut stack: Vec<(&Value, bool)> = vec![(schema, false)];
    while let Some((node, exiting)) = stack.pop() {
        let key: *const Value = node;
        if exiting {
            let cost = combine(node, &index, |child| {
                memo.get(&(child as *const Value)).copied().unwrap_or(1)
            });
            open.remove(&key);
            memo.insert(key, cost);
            continue;
        }
        if memo.contains_key(&key) || !open.insert(key) {
            continue;
        }
        stack.push((node, true));
        edges(node, &index, &mut |edge| {
            if let Edge::To(_, child) = edge {
                let k: *const Value = child;
                if !memo.contains_key(&k) && !open.contains(&k) {
                    stack.push((child, false));
                }
            }
        });
    }
    memo.get(&(schema as *const Value)).copied().unwrap_or(1)
}

/// 1 + the node's edges combined as the module table says, each edge valued by `cost`.
fn combine<'a>(node: &'a Value, index: &Index<'a>, cost: impl Fn(&'a Value) -> u64) -> u64 {
    let mut total: u64 = 1;
    let mut groups: Vec<(&'static str, u64)> = Vec::new();
    edges(node, index, &mut |edge| match edge {
        Edge::Ambiguous => total = u64::MAX,
        Edge::To(Combine::Sum, child) => total = total.saturating_add(cost(child)),
        Edge::To(Combine::MaxOf(group), child) => {
            let c = cost(child);
            match groups.iter_mut().find(|(g, _)| *g == group) {
                Some((_, best)) => *best = (*best).max(c),
                None => groups.push((group, c)),
            }
        }
    });
    groups
        .into_iter()
        .fold(total, |acc, (_, c)| acc.saturating_add(c))
}

/// Calls `visit` for every subschema edge of `node` (references resolved to their targets).
fn edges<'a>(node: &'a Value, index: &Index<'a>, visit: &mut dyn FnMut(Edge<'a>)) {
    let Value::Object(obj) = node else { return };
    for (key, value) in obj {
        let key = key.as_str();
        match (key, value) {
            ("$ref" | "$dynamicRef" | "$recursiveRef", Value::String(r)) => {
                let group = match key {
                    "$ref" => "$ref",
                    "$dynamicRef" => "$dynamicRef",
                    _ => "$recursiveRef",
                };
                match index.resolve(r, node) {
                    Some(targets) => each(visit, Combine::MaxOf(group), targets),
                    None => visit(Edge::Ambiguous),
                }
            }
            (k, v) if IN_PLACE.contains(&k) => each(visit, Combine::Sum, std::iter::once(v)),
            (k, Value::Array(items)) if IN_PLACE_ARRAYS.contains(&k) => {
                each(visit, Combine::Sum, items);
            }
            ("items" | "prefixItems", Value::Array(items)) => {
                let group = if key == "items" {
                    "items"
                } else {
                    "prefixItems"
                };
                each(visit, Combine::MaxOf(group), items);
            }
            (k, v) if CHILD_ONE.contains(&k) => each(visit, Combine::Sum, std::iter::once(v)),
            ("properties", Value::Object(m)) => {
                each(visit, Combine::MaxOf("properties"), m.values());
            }
            ("patternProperties" | "dependentSchemas", Value::Object(m)) => {
                each(visit, Combine::Sum, m.values());
            }
            ("dependencies", Value::Object(m)) => {
                each(visit, Combine::Sum, m.values().filter(|s| !s.is_array()));
            }
            _ => {}
        }
    }
}

/// Visits each schema of `schemas` as an edge combined by `how`.
fn each<'a>(
    visit: &mut dyn FnMut(Edge<'a>),
    how: Combine,
    schemas: impl IntoIterator<Item = &'a Value>,
) {
    schemas.into_iter().for_each(|s| visit(Edge::To(how, s)));
}

/// Where references can land: the document root, every `$id` resource, every anchor.
struct Index<'a> {
    root: &'a Value,
    /// The last path segment of each `$id` → the `$id`s and the schema objects carrying them.
    ids: HashMap<&'a str, Vec<(&'a str, &'a Value)>>,
    /// `$anchor` / `$dynamicAnchor` name → the schema objects carrying it.
    anchors: HashMap<&'a str, Vec<&'a Value>>,
    /// Each object holding a reference → the innermost `$id` resource around it.
    resource_of: HashMap<*const Value, &'a Value>,
}

impl<'a> Index<'a> {
    fn build(root: &'a Value) -> Self {
        let mut index = Index {
            root,
            ids: HashMap::new(),
            anchors: HashMap::new(),
            resource_of: HashMap::new(),
        };
        let mut stack = vec![(root, root)];
        while let Some((v, resource)) = stack.pop() {
            match v {
                Value::Object(m) => {
                    let resource = index.note(m, v, resource);
                    stack.extend(m.values().map(|c| (c, resource)));
                }
                Value::Array(a) => stack.extend(a.iter().map(|c| (c, resource))),
                _ => {}
            }
        }
        index
    }

    /// Records `node`'s `$id`, anchors and references; returns the resource `node` is in
    /// (itself when it has an `$id`, else `enclosing`).
    fn note(
        &mut self,
        m: &'a Map<String, Value>,
        node: &'a Value,
        enclosing: &'a Value,
    ) -> &'a Value {
        let mut resource = enclosing;
        if let Some(Value::String(id)) = m.get("$id").or_else(|| m.get("id")) {
            match id.strip_prefix('#') {
                Some(anchor) => self.anchors.entry(anchor).or_default().push(node),
                None => {
                    let id = id.split('#').next().unwrap_or("").trim_end_matches('/');
                    self.ids
                        .entry(last_segment(id))
                        .or_default()
                        .push((id, node));
                    resource = node;
                }
            }
        }
        for key in ["$anchor", "$dynamicAnchor"] {
            if let Some(Value::String(name)) = m.get(key) {
                self.anchors.entry(name.as_str()).or_default().push(node);
            }
        }
        if ["$ref", "$dynamicRef", "$recursiveRef"]
            .iter()
            .any(|k| m.contains_key(*k))
        {
            self.resource_of.insert(node, resource);
        }
        resource
    }

    /// The possible targets of reference `r` written in `from` (empty when it leaves the
    /// document; `None` when there are more than [`MAX_REF_CANDIDATES`]).
    fn resolve(&self, r: &str, from: &'a Value) -> Option<Vec<&'a Value>> {
        let (base, fragment) = r.split_once('#').unwrap_or((r, ""));
        let roots: Vec<&'a Value> = if base.is_empty() {
            let mut roots = vec![self.root];
            if let Some(res) = self.resource_of.get(&(from as *const Value))
                && !std::ptr::eq(*res, self.root)
            {
                roots.push(res);
            }
            roots
        } else {
            let base = base.trim_end_matches('/');
            let same_name = self
                .ids
                .get(last_segment(base))
                .map_or(&[][..], Vec::as_slice);
            if same_name.len() > MAX_REF_CANDIDATES {
                return None;
            }
            same_name
                .iter()
                .filter(|(id, _)| !id.is_empty() && (id.ends_with(base) || base.ends_with(id)))
                .map(|(_, n)| *n)
                .collect()
        };
        let targets: Vec<&'a Value> = if fragment.is_empty() {
            roots
        } else if fragment.starts_with('/') {
            let pointer = percent_decode(fragment);
            roots
                .into_iter()
                .filter_map(|r| r.pointer(&pointer))
                .collect()
        } else {
            let named = self.anchors.get(fragment).map_or(&[][..], Vec::as_slice);
            if named.len() > MAX_REF_CANDIDATES {
                return None;
            }
            named.to_vec()
        };
        (targets.len() <= MAX_REF_CANDIDATES).then_some(targets)
    }
}

/// The part of a URI after its last `/`.
fn last_segment(uri: &str) -> &str {
    uri.rsplit('/').next().unwrap_or(uri)
}

/// Decodes `%XX` escapes (URI fragments carry JSON Pointers percent-encoded).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
pub(crate) mod tests;
