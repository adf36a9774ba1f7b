//! Optional properties on OpenAI's strict wire: required and nullable there, a `null` in the
//! answer read as the property left out.
//!
//! OpenAI's strict mode takes no optional property (every key of `properties` must be in
//! `required`) and no open object; its guide says to emulate an optional property with a union
//! with `null` ("Structured Outputs", Supported schemas, platform.openai.com, read 2026-12-01).
//! So [`super::subset::openai_strict`] rewrites the wire copy of the schema, and the worker undoes
//! it on the answer before validating against the caller's schema ([`absent_nulls`]):
//!
//! | in the caller's schema | on the wire | in the answer |
//! |---|---|---|
//! | a property not in `required` | in `required`; `type: T` → `type: [T, "null"]` (and `null` added to an `enum`), an `anyOf` with a `{"type": "null"}` branch as it is, any other schema → `anyOf: [S, {"type": "null"}]` | the key removed when its value is `null` |
//! | an object with `properties` and no `additionalProperties` (or `true`) | `additionalProperties: false` (a narrowing: no answer it admits is outside the caller's schema) | – |
//!
//! Objects are reached from the root through `properties`, `items`, local `$ref`s (`#`,
//! `#/$defs/X`, `#/definitions/X`, any `#/json/pointer`) and the one non-null branch of an
//! `anyOf`/`oneOf` whose other branches are all `{"type": "null"}` (pydantic's and schemars'
//! `Optional[Model]` / `Option<T>`), to a nesting of [`MAX_DEPTH`] `properties`/`items` steps. A
//! `$ref` or such `anyOf` is followed only where nothing but annotations (`description`, `title`,
//! ...) stands beside it, so that the answer there is checked against the target alone. Each
//! target is rewritten once however often it is used, and is one node of the undo plan
//! ([`NullPlan`]), which is a graph: a recursive model is a cycle in it, and the answer (which is
//! finite) is walked along it. A `$ref` that does not resolve, or to a non-object, is left alone.
//! (`allOf` never gets here: this wire removes it and checks it locally.)
//!
//! Not followed, and so left as they are (the strict check then names what is not strict and the
//! schema goes as a hint, as without this rewrite): an `anyOf`/`oneOf` with two or more non-null
//! branches (a `null` in the answer could not be told apart from a branch that takes `null` and
//! requires the key), a `$ref` with constraining keywords beside it, anything deeper than the
//! limit (a place at the limit still links to a target rewritten nearer the root). When a target reached through a followed `$ref` is also used by a `$ref` that is not
//! followed, no `$ref` is followed at all (the unfollowed use would see the rewrite and get no
//! undo). A `null` the model gives for a property whose own schema allows `null` is read as left
//! out too (both are valid for the caller). Each rewrite is named in the ledger's `transforms`,
//! with its pointer in the caller's schema (a rewritten `$defs` entry's: `/$defs/Name/...`).

use super::strict::{RefTarget, child, resolve_local_ref};
use crate::vocab::Transform;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

/// How deep the rewrite goes (nesting of `properties`/`items`); deeper optional properties are
/// left to the strict check's verdict.
pub const MAX_DEPTH: usize = 32;

/// Most `$ref`/`anyOf` hops from one place to the object schema it stands for.
const MAX_ALIAS_HOPS: usize = 32;

/// Keywords that may stand beside a followed `$ref` or `anyOf`: they constrain nothing.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "$comment",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$schema",
    "$id",
    "$defs",
    "definitions",
];

/// How to undo [`require_optionals`] on an answer: a graph of the rewritten schema's objects and
/// arrays, node 0 standing for the answer's root. Empty when nothing was made nullable.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NullPlan {
    /// The nodes; [`NullNode::properties`] and [`NullNode::items`] are indexes into it.
    pub nodes: Vec<NullNode>,
}

/// One object or array schema of the wire (a `$defs` entry used in many places is one node).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NullNode {
    /// Keys made required and nullable here: removed from the answer's object when `null`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drop_if_null: Vec<String>,
    /// The node of the value under each key (only keys that lead to a key to drop).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub properties: BTreeMap<String, usize>,
    /// The node of every item of the answer's array.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<usize>,
}

impl NullPlan {
    /// True when no `null` is ever removed.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// Rewrites `wire` (the caller's schema, keywords already stripped) as the module table says;
/// returns the plan that undoes it on an answer. Pointers in the transforms are the caller's.
///
/// ```
/// use geode::schema::nullable::{absent_nulls, require_optionals};
/// let mut wire = serde_json::json!({"type": "object",
///     "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a"]});
/// let mut transforms = Vec::new();
/// let plan = require_optionals(&mut wire, &mut transforms);
/// assert_eq!(wire["required"], serde_json::json!(["a", "b"]));
/// assert_eq!(wire["properties"]["b"]["type"], serde_json::json!(["integer", "null"]));
/// let mut answer = serde_json::json!({"a": "x", "b": null});
/// absent_nulls(&mut answer, &plan);
/// assert_eq!(answer, serde_json::json!({"a": "x"}));
/// ```
pub fn require_optionals(wire: &mut Value, transforms: &mut Vec<Transform>) -> NullPlan {
    let mut walk = Walk::run(wire, true);
    if !walk.followed_refs_at.is_empty() && walk.unfollowed_use_of_an_edited_target() {
        walk = Walk::run(wire, false);
    }
    let Walk { nodes, edits, .. } = walk;
    for edit in &edits {
        name(edit, transforms);
    }
    let mut edits = edits;
    // Deepest first: wrapping a property in `anyOf` moves what is under it.
    edits.sort_by_key(|e| std::cmp::Reverse(e.pointer.matches('/').count()));
    for edit in &edits {
        apply(wire, edit);
    }
    prune(nodes)
}

/// What to change in one object schema of the wire.
struct ObjectEdit {
    /// The object's pointer (in the caller's schema).
    pointer: String,
    /// Add `additionalProperties: false`.
    close: bool,
    /// Keys to make required and nullable, in property order.
    nullable: Vec<String>,
}

/// The read-only pass: which objects to change, and the undo graph (before pruning).
struct Walk<'a> {
    root: &'a Value,
    follow_refs: bool,
    nodes: Vec<NullNode>,
    node_at: HashMap<String, usize>,
    queue: VecDeque<(String, usize, usize)>,
    edits: Vec<ObjectEdit>,
    /// The places whose `$ref` was followed, by address (the schema is not changed during the
    /// walk; an address is only compared, never read through).
    followed_refs_at: HashSet<*const Map<String, Value>>,
}

impl<'a> Walk<'a> {
    fn run(root: &'a Value, follow_refs: bool) -> Self {
        let mut w = Self {
            root,
            follow_refs,
            nodes: Vec::new(),
            node_at: HashMap::new(),
            queue: VecDeque::new(),
            edits: Vec::new(),
            followed_refs_at: HashSet::new(),
        };
        // Breadth first, so that a shared target is walked from its shallowest use.
        w.node_for(String::new(), 0);
        while let Some((pointer, depth, node)) = w.queue.pop_front() {
            w.visit(&pointer, depth, node);
        }
        w
    }

    /// The node of the object schema the place at `pointer` stands for (queued when new, which a
    /// place [`MAX_DEPTH`] deep does not do: it only links to a node that exists); `None` when it
    /// stands for none (a `$ref` that does not resolve, a cycle of `$ref`s, ...).
    fn node_for(&mut self, mut pointer: String, depth: usize) -> Option<usize> {
        let root = self.root;
        let mut refs_followed = Vec::new();
        let mut hops = 0;
        loop {
            let m = root.pointer(&pointer)?.as_object()?;
            let Some((next, is_ref)) = self.alias_target(m, &pointer) else {
                break;
            };
            hops += 1;
            if hops > MAX_ALIAS_HOPS {
                return None;
            }
            if is_ref {
                refs_followed.push(std::ptr::from_ref(m));
            }
            pointer = next?;
        }
        let n = match self.node_at.get(&pointer) {
            Some(&n) => n,
            None if depth >= MAX_DEPTH => return None,
            None => {
                let n = self.nodes.len();
                self.nodes.push(NullNode::default());
                self.node_at.insert(pointer.clone(), n);
                self.queue.push_back((pointer, depth, n));
                n
            }
        };
        // Only a `$ref` whose place is linked to its target's node counts as followed.
        self.followed_refs_at.extend(refs_followed);
        Some(n)
    }

    /// Where the place `m` (at `pointer`) stands for another, and whether through a `$ref`:
    /// `None` when it does not (it is walked itself); the target is `None` when it does not
    /// resolve.
    fn alias_target(
        &self,
        m: &Map<String, Value>,
        pointer: &str,
    ) -> Option<(Option<String>, bool)> {
        let mut inner = None;
        for (k, v) in m {
            let target = match (k.as_str(), v) {
                ("$ref", Value::String(r)) if self.follow_refs => {
                    match resolve_local_ref(self.root, r) {
                        RefTarget::Found { pointer, .. } => Some(pointer),
                        RefTarget::Missing | RefTarget::NotLocal => None,
                    }
                }
                ("anyOf" | "oneOf", Value::Array(branches)) => {
                    let mut others = branches
                        .iter()
                        .enumerate()
                        .filter(|(_, b)| !is_null_type(b));
                    match (others.next(), others.next()) {
                        (Some((i, _)), None) => Some(child(pointer, &[k, &i.to_string()])),
                        _ => return None,
                    }
                }
                _ if ANNOTATIONS.contains(&k.as_str()) => continue,
                _ => return None,
            };
            if inner.is_some() {
                return None;
            }
            inner = Some((target, k == "$ref"));
        }
        inner
    }

    /// Walks one object or array schema: records its edit and its node's edges.
    fn visit(&mut self, pointer: &str, depth: usize, node: usize) {
        let root = self.root;
        let Some(m) = root.pointer(pointer).and_then(Value::as_object) else {
            return;
        };
        if m.get("type").and_then(Value::as_str) == Some("object")
            && let Some(Value::Object(props)) = m.get("properties")
        {
            self.visit_object(m, props, pointer, depth, node);
        }
        if let Some(items) = m.get("items")
            && may_lead_to_objects(items)
            && let Some(n) = self.node_for(child(pointer, &["items"]), depth + 1)
        {
            self.nodes[node].items = Some(n);
        }
    }

    fn visit_object(
        &mut self,
        m: &Map<String, Value>,
        props: &Map<String, Value>,
        pointer: &str,
        depth: usize,
        node: usize,
    ) {
        let mut edit = ObjectEdit {
            pointer: pointer.to_owned(),
            close: matches!(
                m.get("additionalProperties"),
                None | Some(Value::Bool(true))
            ),
            nullable: Vec::new(),
        };
        let required: HashSet<&str> = match m.get("required") {
            None | Some(Value::Null) => HashSet::new(),
            Some(Value::Array(r)) if r.iter().all(Value::is_string) => {
                r.iter().filter_map(Value::as_str).collect()
            }
            // Not an array of names: left for the strict check to name.
            Some(_) => {
                self.edits.push(edit);
                return;
            }
        };
        for (key, sub) in props {
            if may_lead_to_objects(sub)
                && let Some(n) = self.node_for(child(pointer, &["properties", key]), depth + 1)
            {
                self.nodes[node].properties.insert(key.clone(), n);
            }
            if !required.contains(key.as_str()) {
                edit.nullable.push(key.clone());
                self.nodes[node].drop_if_null.push(key.clone());
            }
        }
        if edit.close || !edit.nullable.is_empty() {
            self.edits.push(edit);
        }
    }

    /// True when a `$ref` this walk did not follow points at (or above) a place it changes.
    fn unfollowed_use_of_an_edited_target(&self) -> bool {
        let mut edited: Vec<&str> = self.edits.iter().map(|e| e.pointer.as_str()).collect();
        edited.sort_unstable();
        let changes_under = |target: &str| {
            let from = edited.partition_point(|e| *e < target);
            edited[from..]
                .iter()
                .take_while(|e| e.starts_with(target))
                .any(|e| e.len() == target.len() || e[target.len()..].starts_with('/'))
        };
        let mut stack: Vec<&Value> = vec![self.root];
        while let Some(v) = stack.pop() {
            match v {
                Value::Object(m) => {
                    if let Some(Value::String(r)) = m.get("$ref")
                        && !self.followed_refs_at.contains(&std::ptr::from_ref(m))
                        && let RefTarget::Found { pointer, .. } = resolve_local_ref(self.root, r)
                        && changes_under(&pointer)
                    {
                        return true;
                    }
                    stack.extend(m.values());
                }
                Value::Array(a) => stack.extend(a),
                _ => {}
            }
        }
        false
    }
}

/// False for a schema that can hold no object or array schema to walk (`{"type": "string"}`,
/// most properties of a wide object): it gets no node, and its pointer is never built.
fn may_lead_to_objects(schema: &Value) -> bool {
    schema.as_object().is_some_and(|m| {
        ["properties", "items", "$ref", "anyOf", "oneOf"]
            .iter()
            .any(|k| m.contains_key(*k))
    })
}

/// `{"type": "null"}`.
fn is_null_type(schema: &Value) -> bool {
    schema.as_object().is_some_and(|m| {
        m.get("type").and_then(Value::as_str) == Some("null")
            && m.keys()
                .all(|k| k == "type" || ANNOTATIONS.contains(&k.as_str()))
    })
}

/// Names one edit in `transforms`.
fn name(edit: &ObjectEdit, transforms: &mut Vec<Transform>) {
    if edit.close {
        transforms.push(Transform {
            pointer: edit.pointer.clone(),
            action: "additionalProperties: false for OpenAI strict (closed to undeclared \
                     properties)"
                .into(),
        });
    }
    for key in &edit.nullable {
        transforms.push(Transform {
            pointer: child(&edit.pointer, &["properties", key]),
            action: "required and nullable for OpenAI strict (a null answer is read as the \
                     property left out)"
                .into(),
        });
    }
}

/// Applies one edit to the wire copy.
fn apply(wire: &mut Value, edit: &ObjectEdit) {
    let Some(Value::Object(m)) = wire.pointer_mut(&edit.pointer) else {
        return;
    };
    if edit.close {
        m.insert("additionalProperties".into(), Value::Bool(false));
    }
    if edit.nullable.is_empty() {
        return;
    }
    if let Some(Value::Object(props)) = m.get_mut("properties") {
        for key in &edit.nullable {
            if let Some(sub) = props.get_mut(key) {
                make_nullable(sub);
            }
        }
    }
    let added = edit.nullable.iter().map(|k| Value::String(k.clone()));
    match m.get_mut("required") {
        Some(Value::Array(required)) => required.extend(added),
        _ => {
            m.insert("required".into(), Value::Array(added.collect()));
        }
    }
}

/// `schema` admitting `null` as well.
fn make_nullable(schema: &mut Value) {
    if let Value::Object(m) = schema
        && !m.contains_key("const")
    {
        if let Some(Value::Array(branches)) = m.get("anyOf")
            && branches.iter().any(is_null_type)
        {
            return;
        }
        let typed = match m.get_mut("type") {
            Some(Value::String(t)) if t != "null" => {
                let t = std::mem::take(t);
                m.insert("type".into(), json!([t, "null"]));
                true
            }
            Some(Value::Array(types)) => {
                if !types.iter().any(|t| t == "null") {
                    types.push(json!("null"));
                }
                true
            }
            _ => false,
        };
        if typed {
            if let Some(Value::Array(options)) = m.get_mut("enum")
                && !options.contains(&Value::Null)
            {
                options.push(Value::Null);
            }
            return;
        }
    }
    let inner = std::mem::take(schema);
    *schema = json!({"anyOf": [inner, {"type": "null"}]});
}

/// Keeps the nodes from which a key to drop can be reached (node 0 first), renumbered; an empty
/// plan when node 0 is not one of them.
fn prune(nodes: Vec<NullNode>) -> NullPlan {
    let mut parents: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        for &c in n.properties.values().chain(n.items.iter()) {
            parents[c].push(i);
        }
    }
    let mut useful: Vec<bool> = nodes.iter().map(|n| !n.drop_if_null.is_empty()).collect();
    let mut stack: Vec<usize> = (0..nodes.len()).filter(|&i| useful[i]).collect();
    while let Some(i) = stack.pop() {
        for &p in &parents[i] {
            if !useful[p] {
                useful[p] = true;
                stack.push(p);
            }
        }
    }
    if !useful.first().copied().unwrap_or(false) {
        return NullPlan::default();
    }
    let mut new_index = vec![usize::MAX; nodes.len()];
    let mut kept = 0;
    for (i, &u) in useful.iter().enumerate() {
        if u {
            new_index[i] = kept;
            kept += 1;
        }
    }
    let nodes = nodes
        .into_iter()
        .zip(&useful)
        .filter(|(_, u)| **u)
        .map(|(mut n, _)| {
            n.properties.retain(|_, c| useful[*c]);
            n.properties.values_mut().for_each(|c| *c = new_index[*c]);
            n.items = n.items.filter(|c| useful[*c]).map(|c| new_index[c]);
            n
        })
        .collect();
    NullPlan { nodes }
}

/// Removes from `answer` each property whose value is `null` where `plan` says the wire made it
/// required and nullable (undoes [`require_optionals`] on an answer). Walks the answer, so a
/// recursive plan ends where the answer does.
pub fn absent_nulls(answer: &mut Value, plan: &NullPlan) {
    if plan.is_empty() {
        return;
    }
    let mut stack: Vec<(&mut Value, usize)> = vec![(answer, 0)];
    while let Some((value, n)) = stack.pop() {
        let Some(node) = plan.nodes.get(n) else {
            continue;
        };
        match value {
            Value::Object(m) => {
                for key in &node.drop_if_null {
                    if m.get(key) == Some(&Value::Null) {
                        m.shift_remove(key);
                    }
                }
                if !node.properties.is_empty() {
                    for (key, v) in m.iter_mut() {
                        if let Some(&c) = node.properties.get(key) {
                            stack.push((v, c));
                        }
                    }
                }
            }
            Value::Array(items) => {
                if let Some(c) = node.items {
                    stack.extend(items.iter_mut().map(|v| (v, c)));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
