//! The OpenAI strict-compatibility check, with reasons.
//!
//! In: any JSON value (normally a [`super::ResponseSchema`]'s value). Out: a [`StrictVerdict`],
//! `compatible` plus one [`StrictReason`] (JSON Pointer + [`StrictRule`]) per broken rule. Pure,
//! no IO, iterative (a 10,000-deep schema does not touch the call stack), linear in the schema size.
//!
//! Two predicates live here:
//!
//! * [`is_reference_strict`] is the contract's predicate exactly as GEODE implements it
//!   (docs/reference.md#the-strict-compatibility-rule), quirks included. It exists as the
//!   conformance baseline.
//! * [`check_strict`] is the predicate geode uses. It applies the same rules and also looks where
//!   GEODE does not, because the server does:
//!
//! | where | GEODE | `check_strict` |
//! |---|---|---|
//! | `type:"object"` needs `additionalProperties:false` and `properties` keys == `required` set | yes | yes |
//! | `items` (a schema), each `anyOf`/`oneOf`/`allOf` branch | yes | yes |
//! | local `$ref` (`#`, `#/$defs/X`, `#/definitions/X`, any `#/pointer`) | not followed | followed, each target once (cycle-safe) |
//! | a `$ref` that does not resolve, or is not local | ignored | a reason |
//! | `prefixItems` members | not inspected | inspected |
//! | `additionalProperties` when it is a schema | not inspected | inspected (the object holding it still fails) |
//! | `not` | not inspected | inspected |
//! | `properties` that is neither an object nor null | crash or ignored (Python quirks) | a reason |
//! | `required` that is not an array of strings | Python set semantics (a string is a set of characters) | a reason |
//! | a root that is not `type:"object"`, or is an `anyOf` | not checked | not checked; a reason in [`check_openai_wire`] |
//! | `default` anywhere | not checked | not checked; a reason in [`check_openai_wire`] |
//!
//! The last two rows are OpenAI's own rules for strict mode ("Supported schemas" in the
//! Structured Outputs guide, platform.openai.com, read 2026-11-30: the root must be an object
//! and not `anyOf`; the API answers 400 "'default' is not permitted"). The wire does not send a
//! schema that breaks them as it is: [`super::subset::openai_strict`] wraps such a root under
//! `value` and removes `default` (and the other keywords OpenAI refuses), then applies
//! [`check_strict`] to that copy; [`check_openai_wire`] names the rules on the caller's schema.
//!
//! Both keep GEODE's choices on the rest: `type` is compared as the exact string
//! `"object"` (a type list such as `["object","null"]` is not checked), `properties` are only
//! checked on `type:"object"` schemas, tuple-form `items` (an array) is not inspected, and property
//! types, enums, formats and numeric/string constraints are never examined.

use super::tape::{Tape, TapeError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashSet;

mod doc;
mod scan;
pub(crate) use doc::Doc;

/// The rule a [`StrictReason`] says was broken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum StrictRule {
    /// A `type:"object"` schema whose `additionalProperties` is not exactly `false`.
    AdditionalPropertiesNotFalse,
    /// Properties that are not listed in `required`.
    PropertiesNotRequired {
        /// The property names, in schema order.
        keys: Vec<String>,
    },
    /// Names in `required` that are not properties.
    RequiredNotInProperties {
        /// The names, in `required` order, without duplicates.
        keys: Vec<String>,
    },
    /// `properties` is neither an object nor null.
    PropertiesNotAnObject,
    /// `required` is neither an array of strings nor null.
    RequiredNotStrings,
    /// A local `$ref` whose target does not exist.
    UnresolvedRef {
        /// The reference as written.
        reference: String,
    },
    /// A `$ref` that is not a local fragment (`#…`); strict mode cannot follow it.
    NonLocalRef {
        /// The reference as written.
        reference: String,
    },
    /// The root is not a `type:"object"` schema, or it is an `anyOf` (OpenAI's strict mode
    /// takes neither; a non-object root is sent non-strict).
    RootNotObject,
    /// A keyword OpenAI's strict mode refuses (`default`).
    KeywordNotPermitted {
        /// The keyword.
        keyword: String,
    },
}

impl std::fmt::Display for StrictRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::AdditionalPropertiesNotFalse => {
                f.write_str("additionalProperties must be false on an object")
            }
            Self::PropertiesNotRequired { keys } => {
                write!(
                    f,
                    "every property must be required; not in required: {}",
                    keys.join(", ")
                )
            }
            Self::RequiredNotInProperties { keys } => {
                write!(
                    f,
                    "required names that are not properties: {}",
                    keys.join(", ")
                )
            }
            Self::PropertiesNotAnObject => f.write_str("properties must be an object"),
            Self::RequiredNotStrings => f.write_str("required must be an array of strings"),
            Self::UnresolvedRef { reference } => write!(f, "$ref {reference} does not resolve"),
            Self::NonLocalRef { reference } => {
                write!(f, "$ref {reference} is not local to the schema")
            }
            Self::RootNotObject => f.write_str("the root must be an object schema, not anyOf"),
            Self::KeywordNotPermitted { keyword } => {
                write!(f, "{keyword} is not permitted in strict mode")
            }
        }
    }
}

/// One reason a schema is not strict-compatible.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StrictReason {
    /// JSON Pointer into the schema (`""` is the root).
    pub pointer: String,
    /// The rule broken.
    pub rule: StrictRule,
}

impl std::fmt::Display for StrictReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = super::shown_pointer(&self.pointer);
        write!(f, "{at}: {}", self.rule)
    }
}

/// The verdict of [`check_strict`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StrictVerdict {
    /// True when OpenAI strict mode can take the schema as it is.
    pub compatible: bool,
    /// Why not, when not (in schema order).
    pub reasons: Vec<StrictReason>,
}

/// Checks a schema against OpenAI's strict-mode rules: the contract's predicate plus `$ref`,
/// `prefixItems`, schema-valued `additionalProperties` and `not` (see the module table).
///
/// ```
/// use geode::schema::strict::check_strict;
/// let v = serde_json::json!({"type":"object","properties":{"a":{"type":"string"}}});
/// let verdict = check_strict(&v);
/// assert!(!verdict.compatible);
/// assert_eq!(verdict.reasons.len(), 2); // additionalProperties, and "a" not required
/// ```
pub fn check_strict(schema: &Value) -> StrictVerdict {
    verdict(schema, false)
}

/// What OpenAI's strict mode takes on the wire (`openai-payg`, `codex-oauth`): [`check_strict`]
/// plus the server's own rules that the contract's predicate leaves out (the last two rows of
/// the module table: an object root, no `default`), on the schema as it is. The wire rewrites such
/// a schema first ([`super::subset::openai_strict`]: root wrapped, `default` removed), and the
/// registry's mode and the Responses body's `strict` flag come from that plan.
///
/// ```
/// use geode::schema::strict::{check_openai_wire, check_strict};
/// let array = serde_json::json!({"type": "array", "items": {"type": "integer"}});
/// assert!(check_strict(&array).compatible); // the contract's predicate
/// assert!(!check_openai_wire(&array).compatible); // the provider's
/// ```
pub fn check_openai_wire(schema: &Value) -> StrictVerdict {
    verdict(schema, true)
}

/// A first walk records nothing and stops at the first broken rule, so a compatible schema (the
/// common case) is decided without building a pointer; only a schema that breaks a rule is
/// walked again to say where and why.
fn verdict<'a, D: Doc<'a>>(schema: D, server_rules: bool) -> StrictVerdict {
    let first = walk(schema, server_rules, false);
    if first.compatible {
        return first;
    }
    walk(schema, server_rules, true)
}

/// [`check_strict`] of a schema's JSON text, without building a `Value`: the verdict
/// `check_strict` gives the parsed schema, or why the text is not JSON.
///
/// A compatible schema is usually settled in one pass over the text (`strict_scan.rs`: a
/// certifier that answers "compatible" only where the walk would, and hands back what it cannot
/// settle: `$ref`s, escaped keys, repeated rule keywords, required names in another order). The
/// rest, and every incompatible schema (whose reasons need pointers), are read as a [`Tape`] and
/// walked.
///
/// ```
/// use geode::schema::strict::check_strict_text;
/// let text = r#"{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}"#;
/// assert!(check_strict_text(text).unwrap().compatible);
/// assert!(!check_strict_text(r#"{"type":"object"}"#).unwrap().compatible);
/// assert!(check_strict_text("{").is_err());
/// ```
pub fn check_strict_text(text: &str) -> Result<StrictVerdict, TapeError> {
    // Most schemas are settled in the one pass; the rest (and every incompatible one, whose
    // reasons need pointers) are walked.
    if let scan::Certified::Compatible = scan::certify(text)? {
        return Ok(StrictVerdict {
            compatible: true,
            reasons: Vec::new(),
        });
    }
    let tape = Tape::parse(text)?;
    if tape.has_duplicate_keys() {
        // A repeated key is read as serde_json reads it: the last value wins.
        return Ok(check_strict(&tape.root().to_value()));
    }
    Ok(verdict(tape.root(), false))
}

/// One walk over `schema`; with `record` false it stops at the first broken rule and its
/// verdict has no reasons.
fn walk<'a, D: Doc<'a>>(schema: D, server_rules: bool, record: bool) -> StrictVerdict {
    let mut w = Walk {
        root: schema,
        paths: if record {
            vec![(NO_PARENT, Tok::Root)]
        } else {
            Vec::new()
        },
        reasons: Vec::new(),
        broken: false,
        record,
        visited_refs: HashSet::new(),
        server_rules,
    };
    if server_rules {
        let root_is_object = schema.is_object()
            && schema.get("type").is_some_and(|t| t.str_is("object"))
            && schema.get("anyOf").is_none();
        if !root_is_object {
            w.reason(0, StrictRule::RootNotObject);
        }
    }
    // Children are pushed in document order, then their run is reversed so they pop in order.
    let mut stack: Vec<(D, usize)> = Vec::with_capacity(16);
    stack.push((schema, 0));
    while let Some((node, at)) = stack.pop() {
        if w.broken && !w.record {
            break;
        }
        if !node.is_object() {
            continue;
        }
        let first_child = stack.len();
        w.visit(node, at, &mut stack);
        stack[first_child..].reverse();
    }
    StrictVerdict {
        compatible: !w.broken,
        reasons: w.reasons,
    }
}

/// No parent: the root, or a `$ref` target (whose pointer is stored whole).
const NO_PARENT: usize = usize::MAX;

/// One step of a JSON Pointer, kept unescaped until a reason needs the text.
enum Tok<'a> {
    /// The root (empty pointer).
    Root,
    /// `/keyword`.
    Key(Cow<'a, str>),
    /// `/keyword/name`, for `properties`.
    Pair(&'static str, Cow<'a, str>),
    /// `/keyword/index`, for schema arrays.
    Index(Cow<'a, str>, usize),
    /// A whole pointer (in JSON Pointer form), for `$ref` targets.
    Whole(String),
}

/// The state of one [`check_strict`] run. Pointers are an arena of (parent, step) so that no
/// string is built unless a reason is reported.
struct Walk<'a, D> {
    root: D,
    /// The pointer arena (empty when not `record`ing).
    paths: Vec<(usize, Tok<'a>)>,
    reasons: Vec<StrictReason>,
    /// A rule is broken (when not `record`ing, the walk stops there).
    broken: bool,
    /// Record the pointer and rule of every broken rule.
    record: bool,
    visited_refs: HashSet<String>,
    /// Also apply the provider's rules ([`check_openai_wire`]).
    server_rules: bool,
}

impl<'a, D: Doc<'a>> Walk<'a, D> {
    /// The JSON Pointer of arena entry `at`.
    fn pointer(&self, mut at: usize) -> String {
        let mut steps: Vec<&Tok<'a>> = Vec::new();
        while at != NO_PARENT {
            let (parent, tok) = &self.paths[at];
            steps.push(tok);
            at = *parent;
        }
        let mut out = String::new();
        for tok in steps.into_iter().rev() {
            match tok {
                Tok::Root => {}
                Tok::Key(k) => out = child(&out, &[k]),
                Tok::Pair(k, n) => out = child(&out, &[k, n]),
                Tok::Index(k, i) => out = child(&out, &[k, &i.to_string()]),
                Tok::Whole(p) => out.push_str(p),
            }
        }
        out
    }

    fn reason(&mut self, at: usize, rule: StrictRule) {
        self.broken = true;
        if self.record {
            let pointer = self.pointer(at);
            self.reasons.push(StrictReason { pointer, rule });
        }
    }

    /// The arena entry of a child step (nothing is stored when not `record`ing).
    #[inline(always)]
    fn add(&mut self, parent: usize, tok: Tok<'a>) -> usize {
        if !self.record {
            return 0;
        }
        self.paths.push((parent, tok));
        self.paths.len() - 1
    }

    /// Checks one schema object and pushes its subschemas (in document order) onto `children`.
    fn visit(&mut self, m: D, at: usize, children: &mut Vec<(D, usize)>) {
        let rules = ObjectRules::of(m);
        let is_object = rules.type_.is_some_and(|t| t.str_is("object"));
        if is_object {
            self.check_object(&rules, at);
        }
        if self.server_rules && rules.default {
            let keyword = "default".to_owned();
            self.reason(at, StrictRule::KeywordNotPermitted { keyword });
        }
        for (k, v) in m.members() {
            match k.as_ref() {
                "properties" if is_object => {
                    children.reserve(v.len());
                    for (name, sub) in v.members() {
                        let p = self.add(at, Tok::Pair("properties", name));
                        children.push((sub, p));
                    }
                }
                "items" | "additionalProperties" | "not" if v.is_object() => {
                    let p = self.add(at, Tok::Key(k));
                    children.push((v, p));
                }
                "prefixItems" | "anyOf" | "oneOf" | "allOf" => {
                    for (i, sub) in v.elements().into_iter().flatten().enumerate() {
                        let p = self.add(at, Tok::Index(k.clone(), i));
                        children.push((sub, p));
                    }
                }
                "$ref" => {
                    if let Some(reference) = v.as_str() {
                        self.follow(&reference, at, children);
                    }
                }
                _ => {}
            }
        }
    }

    /// Follows a `$ref` (each target once) or reports why it cannot be followed.
    fn follow(&mut self, reference: &str, at: usize, children: &mut Vec<(D, usize)>) {
        match resolve_local_ref(self.root, reference) {
            RefTarget::Found { value, pointer } => {
                if !self.visited_refs.contains(&pointer) {
                    self.visited_refs.insert(pointer.clone());
                    // Percent-decoded, still in JSON Pointer (`~1`) form.
                    let p = self.add(NO_PARENT, Tok::Whole(pointer));
                    children.push((value, p));
                }
            }
            RefTarget::Missing => {
                let p = self.add(at, Tok::Key(Cow::Borrowed("$ref")));
                self.reason(
                    p,
                    StrictRule::UnresolvedRef {
                        reference: reference.to_owned(),
                    },
                );
            }
            RefTarget::NotLocal => {
                let p = self.add(at, Tok::Key(Cow::Borrowed("$ref")));
                self.reason(
                    p,
                    StrictRule::NonLocalRef {
                        reference: reference.to_owned(),
                    },
                );
            }
        }
    }

    /// The object rules for one `type:"object"` schema.
    fn check_object(&mut self, m: &ObjectRules<D>, at: usize) {
        if !m.additional_properties.is_some_and(D::is_false) {
            self.reason(at, StrictRule::AdditionalPropertiesNotFalse);
        }
        let props = match m.properties {
            Some(p) if p.is_object() => Some(p),
            None => None,
            Some(p) if p.is_null() => None,
            Some(_) => {
                self.reason(at, StrictRule::PropertiesNotAnObject);
                None
            }
        };
        let required = match m.required {
            None => None,
            Some(r) if r.is_null() => None,
            Some(r) if r.elements().is_some_and(|mut e| e.all(D::is_string)) => Some(r),
            Some(_) => {
                // The name comparison would only repeat this reason.
                self.reason(at, StrictRule::RequiredNotStrings);
                return;
            }
        };
        let names = |r: Option<D>| r.and_then(D::elements).into_iter().flatten();
        let keys = |p: Option<D>| p.map(D::members).into_iter().flatten().map(|(k, _)| k);
        // Fast path: `required` lists the properties in order (what generators emit).
        let (n_required, n_props) = (required.map_or(0, D::len), props.map_or(0, D::len));
        if n_required == n_props && names(required).zip(keys(props)).all(|(r, k)| r.str_is(&k)) {
            return;
        }
        let mut seen = HashSet::new();
        let required: Vec<Cow<'a, str>> = names(required)
            .filter_map(D::as_str)
            .filter(|k| seen.insert(k.clone()))
            .collect();
        let not_required: Vec<String> = keys(props)
            .filter(|k| !seen.contains(k))
            .map(Cow::into_owned)
            .collect();
        if !not_required.is_empty() {
            self.reason(at, StrictRule::PropertiesNotRequired { keys: not_required });
        }
        let extra: Vec<String> = required
            .into_iter()
            .filter(|k| props.and_then(|p| p.get(k)).is_none())
            .map(Cow::into_owned)
            .collect();
        if !extra.is_empty() {
            self.reason(at, StrictRule::RequiredNotInProperties { keys: extra });
        }
    }
}

/// The keywords of one schema object the rules read, found in one pass over its members (the
/// last of a repeated key, as serde_json keeps it).
struct ObjectRules<D> {
    type_: Option<D>,
    additional_properties: Option<D>,
    properties: Option<D>,
    required: Option<D>,
    default: bool,
}

impl<'a, D: Doc<'a>> ObjectRules<D> {
    fn of(m: D) -> Self {
        let mut rules = Self {
            type_: None,
            additional_properties: None,
            properties: None,
            required: None,
            default: false,
        };
        for (k, v) in m.members() {
            match k.as_ref() {
                "type" => rules.type_ = Some(v),
                "additionalProperties" => rules.additional_properties = Some(v),
                "properties" => rules.properties = Some(v),
                "required" => rules.required = Some(v),
                "default" => rules.default = true,
                _ => {}
            }
        }
        rules
    }
}

/// Where a `$ref` points.
pub(crate) enum RefTarget<D> {
    /// A local target: the value and its normalised (decoded) JSON Pointer.
    Found {
        /// The target schema.
        value: D,
        /// Its JSON Pointer in the root (`""` is the root).
        pointer: String,
    },
    /// A local fragment that does not resolve (or an anchor-style fragment).
    Missing,
    /// Not a `#…` fragment.
    NotLocal,
}

/// Resolves a `$ref` against the root schema. Only `#` and `#/json/pointer` (percent-decoded)
/// fragments resolve; anchors (`#name`) count as missing.
pub(crate) fn resolve_local_ref<'a, D: Doc<'a>>(root: D, reference: &str) -> RefTarget<D> {
    let Some(fragment) = reference.strip_prefix('#') else {
        return RefTarget::NotLocal;
    };
    let Some(pointer) = percent_decode(fragment) else {
        return RefTarget::Missing;
    };
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return RefTarget::Missing;
    }
    match root.pointer(&pointer) {
        Some(value) => RefTarget::Found { value, pointer },
        None => RefTarget::Missing,
    }
}

/// Decodes `%XX` escapes of a URI fragment; `None` when the result is not UTF-8 or an escape is bad.
fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_owned());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Appends reference tokens to a JSON Pointer, escaping `~` and `/`.
pub(crate) fn child(ptr: &str, tokens: &[&str]) -> String {
    let mut out =
        String::with_capacity(ptr.len() + tokens.iter().map(|t| t.len() + 1).sum::<usize>());
    out.push_str(ptr);
    for t in tokens {
        out.push('/');
        if t.contains(['~', '/']) {
            out.push_str(&t.replace('~', "~0").replace('/', "~1"));
        } else {
            out.push_str(t);
        }
    }
    out
}

mod reference;
pub use reference::is_reference_strict;

#[cfg(test)]
mod tests;
