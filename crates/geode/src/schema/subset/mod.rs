//! Each provider's schema subset as data, and the one rewrite per wire that fits a schema into it.
//!
//! In: the caller's [`ResponseSchema`] (never modified). Out: a [`WirePlan`]: the mode, the copy
//! that goes on the wire, whether its root was wrapped, one ledger [`Transform`] per rewrite, the
//! [`Residual`]s checked locally, and why a weaker mode was used when it was. The registry's mode
//! ([`crate::llm::registry::SchemaRoute::plan`]), the wire bodies and `geode schema check
//! --adapter` all call the functions here, so the mode the ledger reports and the body sent cannot
//! disagree. A schema outside a subset is rewritten for the wire or sent in the next weaker mode
//! with the reason; it is never sent as-is with a claim the provider would not honour.
//!
//! ## OpenAI strict (`openai-payg`, `codex-oauth`; `codex-cli` forwards its schema the same way)
//!
//! Source: "Structured model outputs → Supported schemas",
//! <https://platform.openai.com/docs/guides/structured-outputs#supported-schemas>, read with the
//! search tool on 2026-11-30 ([`OPENAI_STRICT`]); `default` from API replies
//! ("'default' is not permitted", docs/wire.md#openai-responses-api).
//!
//! | rule (doc) | geode, for the wire |
//! |---|---|
//! | "the root level object of a schema must be an object, and not use anyOf" | a root that is not `type:"object"`, or is an `anyOf`, is wrapped: `{"type":"object","properties":{"value":ROOT},"required":["value"],"additionalProperties":false}` (`$defs` moved up, `$ref`s kept resolving); the answer's `value` is validated |
//! | (same) a root with no `type` that admits only objects (`{"properties":…}`) | `type:"object"` added |
//! | "not yet supported: allOf, not, dependentRequired, dependentSchemas, if, then, else" | removed, checked locally (residual) |
//! | string `format` only date-time, time, date, duration, email, hostname, ipv4, ipv6, uuid | another format removed, checked locally |
//! | `default` ("'default' is not permitted") | removed (an annotation: nothing to check) |
//! | `additionalProperties:false` on every object, every property required | not rewritable without changing the meaning: the caller's schema goes as a `strict:false` hint (root rewrite only), the reasons named |
//! | limits (5,000 properties, 10 levels, 1,000 enum values, 120,000 characters) | refused before the call ([`super::preflight::Preflight`]) |
//!
//! ## Anthropic native structured outputs (`anthropic-payg`, `anthropic-oauth`)
//!
//! Source: "Structured outputs → JSON Schema limitations",
//! <https://platform.claude.com/docs/en/build-with-claude/structured-outputs> (mirrored in
//! thevibeworks/claude-code-docs), read with the search tool on 2026-11-30 ([`ANTHROPIC_NATIVE`]).
//! "All basic types: object, array, string, integer, number, boolean, null" at any place: **no
//! root rule**, so an array root goes native unwrapped. The keyword rules are the projection's
//! table in [`super::projection`] (numeric and string constraints removed and checked locally,
//! `minItems` 0/1 only, the ten formats, simple patterns, `additionalProperties` forced to false;
//! recursion and external `$ref` not rewritable: the next weaker mode, a forced output tool).
//!
//! | placement | root rule | geode |
//! |---|---|---|
//! | `output_config.format` | none | the projection; outside it → a forced tool (the reason is the projection's) |
//! | forced output tool `input_schema` (and the claude CLI's `StructuredOutput` tool) | `type:"object"` ([`ANTHROPIC_TOOL`]) | a typeless object root gets `type:"object"`; any other root is wrapped as above |
//!
//! ## GLM `json_object` (`glm-payg`, `glm-coding-plan`)
//!
//! Source: "Structured Output", <https://docs.z.ai/guides/capabilities/struct-output>, read with
//! the search tool on 2026-11-30 ([`JSON_OBJECT`]): `response_format` takes only `text` and
//! `json_object`; the schema travels in the system prompt. JSON mode returns a JSON **object**, so
//! a root that admits no object is wrapped (the prompt shows the wrapped schema); no keyword is
//! removed (a prompt can hold every keyword, and nothing is enforced).

use super::ResponseSchema;
use super::nullable::NullPlan;
use super::projection::Residual;
use super::root::{AnswerRoot, wrap_root};
use super::strict::{check_strict, child};
use crate::vocab::{StructuredOutputMode, Transform};
use serde::Serialize;
use serde_json::{Map, Value};

/// What a wire requires of the schema's root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RootRule {
    /// Any root.
    Any,
    /// A root schema with `type:"object"` and no `anyOf` (OpenAI strict).
    ObjectNotAnyOf,
    /// A root schema with `type:"object"` (a tool's `input_schema`).
    ObjectType,
    /// An answer that is a JSON object (JSON mode); the schema's form does not matter.
    ObjectValue,
}

/// One provider subset, as documented: what the wire takes and where that was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WireSubset {
    /// The subset's name, in words.
    pub name: &'static str,
    /// The documentation page.
    pub source: &'static str,
    /// When it was read.
    pub read_on: &'static str,
    /// The root rule.
    pub root: RootRule,
    /// Constraint keywords the wire refuses: removed from the copy, checked locally.
    pub removed: &'static [&'static str],
    /// Annotation keywords the wire refuses: removed, nothing to check.
    pub removed_annotations: &'static [&'static str],
    /// The string formats the wire takes (`None`: any); others are removed and checked locally.
    pub formats: Option<&'static [&'static str]>,
}

impl WireSubset {
    /// A wire whose only rule is its root's: no keyword removed, any format (the schema goes
    /// whole, [`object_root`]), read on the same day as the other tables.
    const fn root_only(name: &'static str, source: &'static str, root: RootRule) -> Self {
        Self {
            name,
            source,
            read_on: "2026-11-30",
            root,
            removed: &[],
            removed_annotations: &[],
            formats: None,
        }
    }
}

/// OpenAI strict mode (`text.format` json_schema with `strict:true`).
pub const OPENAI_STRICT: WireSubset = WireSubset {
    name: "OpenAI strict",
    source: "https://platform.openai.com/docs/guides/structured-outputs#supported-schemas",
    read_on: "2026-11-30",
    root: RootRule::ObjectNotAnyOf,
    removed: &[
        "allOf",
        "not",
        "dependentRequired",
        "dependentSchemas",
        "if",
        "then",
        "else",
    ],
    removed_annotations: &["default"],
    formats: Some(&super::projection::STRICT_FORMATS),
};

/// Anthropic native structured outputs (`output_config.format`); the keyword rules are
/// [`super::projection::AnthropicPolicy`].
pub const ANTHROPIC_NATIVE: WireSubset = WireSubset {
    name: "Anthropic native structured outputs",
    source: "https://platform.claude.com/docs/en/build-with-claude/structured-outputs#json-schema-limitations",
    read_on: "2026-11-30",
    root: RootRule::Any,
    removed: super::projection::AnthropicPolicy::REMOVED,
    removed_annotations: &[],
    formats: Some(super::projection::AnthropicPolicy::FORMATS),
};

/// An Anthropic tool's `input_schema` (the forced output tool; the claude CLI's
/// `StructuredOutput` tool, validated by the CLI).
pub const ANTHROPIC_TOOL: WireSubset = WireSubset::root_only(
    "Anthropic tool input_schema",
    "https://platform.claude.com/docs/en/agents-and-tools/tool-use/implement-tool-use",
    RootRule::ObjectType,
);

/// JSON mode (`response_format: json_object`, the schema in the prompt), as Zhipu GLM documents
/// it; every Chat server's JSON mode is held to the same rule.
pub const JSON_OBJECT: WireSubset = WireSubset::root_only(
    "JSON mode (json_object)",
    "https://docs.z.ai/guides/capabilities/struct-output",
    RootRule::ObjectValue,
);

/// Every subset table, for `geode schema check` and the docs.
pub const SUBSETS: &[WireSubset] = &[OPENAI_STRICT, ANTHROPIC_NATIVE, ANTHROPIC_TOOL, JSON_OBJECT];

/// How a schema goes on one wire: the one answer the mode decision, the body and
/// `geode schema check --adapter` share.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WirePlan {
    /// The mode the ledger reports.
    pub mode: StructuredOutputMode,
    /// The schema copy on the wire (`None` when nothing goes, or only a prompt does).
    pub wire: Option<Value>,
    /// True when the root was wrapped under `value`: the answer's `value` is the caller's answer.
    pub wrapped: bool,
    /// Every rewrite of the caller's schema, for the ledger.
    pub transforms: Vec<Transform>,
    /// Constraints left off the wire, checked locally.
    pub residuals: Vec<Residual>,
    /// Why the wire's strongest mode was not used (empty when it was).
    pub weaker_because: Vec<String>,
    /// Properties made required and nullable for the wire ([`super::nullable`]): a `null` there
    /// in the answer is read as the property left out.
    pub absent_nulls: NullPlan,
}

impl WirePlan {
    /// No schema: nothing on the wire.
    pub fn none() -> Self {
        Self::identity(StructuredOutputMode::None, None)
    }

    /// `mode` with the caller's schema unchanged (or nothing).
    pub fn identity(mode: StructuredOutputMode, schema: Option<&ResponseSchema>) -> Self {
        Self {
            mode,
            wire: schema.map(|s| s.as_value().clone()),
            wrapped: false,
            transforms: Vec::new(),
            residuals: Vec::new(),
            weaker_because: Vec::new(),
            absent_nulls: NullPlan::default(),
        }
    }

    /// The wire copy as a schema (it is always an object); the caller's when nothing changed.
    pub fn wire_schema(&self, caller: &ResponseSchema) -> ResponseSchema {
        match &self.wire {
            Some(v) if v != caller.as_value() => {
                ResponseSchema::from_value(v.clone()).unwrap_or_else(|_| caller.clone())
            }
            _ => caller.clone(),
        }
    }
}

/// The rewrite of the root for `rule`, on `wire` (whose pointers are the caller's).
/// Returns whether the root was wrapped.
fn fit_root(
    wire: &mut Value,
    caller: &ResponseSchema,
    subset: &WireSubset,
    transforms: &mut Vec<Transform>,
) -> bool {
    let Value::Object(m) = &*wire else {
        return false;
    };
    let typed_object = m.get("type").and_then(Value::as_str) == Some("object");
    let keep = match subset.root {
        RootRule::Any => true,
        RootRule::ObjectNotAnyOf => typed_object && !m.contains_key("anyOf"),
        RootRule::ObjectType => typed_object,
        RootRule::ObjectValue => AnswerRoot::asked(caller).is_object(),
    };
    if keep {
        return false;
    }
    const COMBINATORS: &[&str] = &[
        "type", "anyOf", "oneOf", "allOf", "$ref", "enum", "const", "not", "if",
    ];
    if AnswerRoot::asked(caller).is_object() && !COMBINATORS.iter().any(|k| m.contains_key(*k)) {
        if let Value::Object(m) = wire {
            m.insert("type".into(), Value::String("object".into()));
        }
        transforms.push(Transform {
            pointer: String::new(),
            action: format!(
                "added type object at the root ({} requires an object root)",
                subset.name
            ),
        });
        return false;
    }
    *wire = wrap_root(wire);
    transforms.push(Transform {
        pointer: String::new(),
        action: format!(
            "wrapped the root as {{\"value\": …}} ({} requires an object root; the answer's value is validated)",
            subset.name
        ),
    });
    true
}

/// Removes the keywords `subset` refuses, everywhere in `wire` (pointers are the caller's).
fn strip_keywords(
    wire: &mut Value,
    subset: &WireSubset,
    transforms: &mut Vec<Transform>,
    residuals: &mut Vec<Residual>,
) {
    let mut stack: Vec<(String, &mut Value)> = vec![(String::new(), wire)];
    while let Some((ptr, node)) = stack.pop() {
        let Value::Object(m) = node else { continue };
        strip_node(m, &ptr, subset, transforms, residuals);
        let mut children = Vec::new();
        for (k, v) in m {
            match (k.as_str(), v) {
                (
                    "properties" | "patternProperties" | "$defs" | "definitions"
                    | "dependentSchemas",
                    Value::Object(o),
                ) => {
                    for (name, sub) in o.iter_mut() {
                        children.push((child(&ptr, &[k, name]), sub));
                    }
                }
                ("anyOf" | "oneOf" | "prefixItems" | "items", Value::Array(a)) => {
                    for (i, sub) in a.iter_mut().enumerate() {
                        children.push((child(&ptr, &[k, &i.to_string()]), sub));
                    }
                }
                (
                    "items"
                    | "additionalProperties"
                    | "additionalItems"
                    | "contains"
                    | "propertyNames"
                    | "unevaluatedItems"
                    | "unevaluatedProperties",
                    v @ Value::Object(_),
                ) => children.push((child(&ptr, &[k]), v)),
                _ => {}
            }
        }
        children.reverse();
        stack.extend(children);
    }
}

/// Strips one subschema object.
fn strip_node(
    m: &mut Map<String, Value>,
    ptr: &str,
    subset: &WireSubset,
    transforms: &mut Vec<Transform>,
    residuals: &mut Vec<Residual>,
) {
    // One ledger line per removed keyword; a constraint (`Some` value) is also checked locally.
    let mut removed = |keyword: &str, what: String, constraint: Option<Value>| {
        transforms.push(Transform {
            pointer: ptr.to_owned(),
            action: format!("removed keyword {what}"),
        });
        if let Some(value) = constraint {
            residuals.push(Residual {
                pointer: ptr.to_owned(),
                keyword: keyword.to_owned(),
                value,
            });
        }
    };
    let name = subset.name;
    for &k in subset.removed {
        if let Some(value) = m.shift_remove(k) {
            let what = format!("{k} (not in the {name} subset; checked locally)");
            removed(k, what, Some(value));
        }
    }
    for &k in subset.removed_annotations {
        if m.shift_remove(k).is_some() {
            let what = format!("{k} (not permitted by {name}; an annotation, nothing to check)");
            removed(k, what, None);
        }
    }
    if let Some(formats) = subset.formats
        && m.get("format")
            .is_some_and(|f| f.as_str().is_none_or(|f| !formats.contains(&f)))
        && let Some(value) = m.shift_remove("format")
    {
        let what = format!("format {value} (not a {name} format; checked locally)");
        removed("format", what, Some(value));
    }
}

/// OpenAI strict ([`OPENAI_STRICT`]): `strict` with the copy rewritten into the subset when the
/// rewritten copy passes [`check_strict`]; else `hint` with the caller's schema (root rewritten
/// only, since OpenAI takes no other root at all) and the reasons.
///
/// ```
/// use geode::schema::{ResponseSchema, subset::openai_strict};
/// use geode::vocab::StructuredOutputMode;
/// let s = ResponseSchema::from_json_str(r#"{"type":"array","items":{"type":"integer"}}"#).unwrap();
/// let plan = openai_strict(&s);
/// assert_eq!(plan.mode, StructuredOutputMode::Strict);
/// assert!(plan.wrapped);
/// assert_eq!(plan.wire.unwrap()["properties"]["value"]["type"], "array");
/// ```
pub fn openai_strict(schema: &ResponseSchema) -> WirePlan {
    // An answer of any type cannot be written in strict's subset, where every schema is typed:
    // wrapped as `{"value": {}}` it would be refused by the provider, so it goes as a hint.
    if AnswerRoot::asked(schema) == AnswerRoot::Any {
        return WirePlan {
            weaker_because: vec![
                "OpenAI strict: the root constrains no type (any JSON value passes it), and strict needs every schema typed".to_owned(),
            ],
            ..object_root(schema, &OPENAI_STRICT, StructuredOutputMode::Hint)
        };
    }
    let mut transforms = Vec::new();
    let mut residuals = Vec::new();
    let mut wire = schema.as_value().clone();
    strip_keywords(&mut wire, &OPENAI_STRICT, &mut transforms, &mut residuals);
    let absent_nulls = super::nullable::require_optionals(&mut wire, &mut transforms);
    let wrapped = fit_root(&mut wire, schema, &OPENAI_STRICT, &mut transforms);
    let verdict = check_strict(&wire);
    if verdict.compatible {
        return WirePlan {
            mode: StructuredOutputMode::Strict,
            wire: Some(wire),
            wrapped,
            transforms,
            residuals,
            weaker_because: Vec::new(),
            absent_nulls,
        };
    }
    WirePlan {
        weaker_because: verdict
            .reasons
            .iter()
            .map(|r| format!("OpenAI strict: {r}"))
            .collect(),
        ..object_root(schema, &OPENAI_STRICT, StructuredOutputMode::Hint)
    }
}

/// A wire whose only rule is the root's (`subset.root`): the caller's schema, the root rewritten
/// when needed, in `mode`.
///
/// ```
/// use geode::schema::{ResponseSchema, subset::{object_root, JSON_OBJECT}};
/// use geode::vocab::StructuredOutputMode;
/// let s = ResponseSchema::from_json_str(r#"{"enum":["a","b"]}"#).unwrap();
/// let plan = object_root(&s, &JSON_OBJECT, StructuredOutputMode::JsonMode);
/// assert!(plan.wrapped);
/// let obj = ResponseSchema::from_json_str(r#"{"type":"object"}"#).unwrap();
/// assert!(!object_root(&obj, &JSON_OBJECT, StructuredOutputMode::JsonMode).wrapped);
/// ```
pub fn object_root(
    schema: &ResponseSchema,
    subset: &WireSubset,
    mode: StructuredOutputMode,
) -> WirePlan {
    let mut transforms = Vec::new();
    let mut wire = schema.as_value().clone();
    let wrapped = fit_root(&mut wire, schema, subset, &mut transforms);
    WirePlan {
        mode,
        wire: Some(wire),
        wrapped,
        transforms,
        residuals: Vec::new(),
        weaker_because: Vec::new(),
        absent_nulls: NullPlan::default(),
    }
}

#[cfg(test)]
mod tests;
