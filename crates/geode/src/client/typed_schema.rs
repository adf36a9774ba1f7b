//! A Rust type's response schema: generated once per type by schemars (JSON Schema 2020-12),
//! made as strict-friendly as the type allows, and wrapped when its root is not an object.
//!
//! | rewrite | when | ledger |
//! |---|---|---|
//! | `additionalProperties: false` | an object schema that leaves it open (and has no `$ref`/`allOf`/`anyOf`/`oneOf` beside its `properties`) | transform |
//! | property added to `required` | the property is optional and its schema admits `null` (`Option<T>`): the answer says `null` | transform |
//! | `format` removed | schemars' integer/float formats (`uint32`, `double`, ...), which no provider knows; the range stays as `minimum`/`maximum` | transform |
//! | root wrapped as `{"value": ROOT}` | the root is not an object (`Vec<T>`, a string enum, a tagged enum, a newtype of a scalar) | transform |
//! | nothing (schema stays non-strict) | a map field (`additionalProperties` is a schema), an optional property that cannot be `null` (`#[serde(default)]`; the OpenAI wires then send it required and nullable on their copy, [`crate::schema::nullable`]) | residual naming why |
//!
//! Local `$ref`s into the root (`#`, `#/properties/...`) are re-pointed under `/properties/value`
//! when the root is wrapped; `$defs` stay at the root.

use crate::schema::ResponseSchema;
use crate::vocab::Transform;
use serde_json::{Map, Value, json};
use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::schema::root::WRAP_KEY;

/// A type's schema as sent, with what was changed to get there.
#[derive(Debug, Clone)]
pub struct TypedSchema {
    /// The schema the answer is asked for and validated against (wrapped when needed).
    pub schema: ResponseSchema,
    /// The type's own schema after the strict rewrites, before any wrapping (its root is the
    /// type's root).
    pub inner: Value,
    /// Whether the root was wrapped as `{"value": ROOT}`.
    pub wrapped: bool,
    /// Each rewrite, for the ledger.
    pub transforms: Vec<Transform>,
    /// Why the schema stays non-strict, for the ledger (empty when strict-compatible).
    pub residuals: Vec<String>,
}

impl TypedSchema {
    /// The schema of `T`, generated on first use and cached by type.
    pub fn of<T: schemars::JsonSchema + 'static>() -> Result<Arc<Self>, crate::schema::SchemaError>
    {
        static CACHE: OnceLock<Mutex<HashMap<TypeId, Arc<TypedSchema>>>> = OnceLock::new();
        let cache = CACHE.get_or_init(Default::default);
        if let Some(hit) = cache
            .lock()
            .ok()
            .and_then(|c| c.get(&TypeId::of::<T>()).cloned())
        {
            return Ok(hit);
        }
        let generated: Value = schemars::schema_for!(T).into();
        let built = Arc::new(Self::from_generated(generated)?);
        if let Ok(mut c) = cache.lock() {
            c.insert(TypeId::of::<T>(), built.clone());
        }
        Ok(built)
    }

    /// A caller's schema taken as it is: no rewrites, no wrapping.
    pub fn raw(schema: ResponseSchema) -> Self {
        Self {
            inner: schema.as_value().clone(),
            schema,
            wrapped: false,
            transforms: Vec::new(),
            residuals: Vec::new(),
        }
    }

    /// The rewrites of this module applied to a generated schema.
    pub fn from_generated(mut root: Value) -> Result<Self, crate::schema::SchemaError> {
        let mut transforms = Vec::new();
        let mut residuals = Vec::new();
        tighten(&mut root, "", &mut transforms, &mut residuals);
        let inner = root.clone();
        let wrapped = root.get("type").and_then(Value::as_str) != Some("object");
        if wrapped {
            root = wrap(root);
            transforms.push(Transform {
                pointer: String::new(),
                action: format!(
                    "wrapped the non-object root as {{\"{WRAP_KEY}\": ROOT}} (the answer must be a JSON object); unwrapped before deserializing"
                ),
            });
        }
        let schema = ResponseSchema::from_value(root)?;
        Ok(Self {
            schema,
            inner,
            wrapped,
            transforms,
            residuals,
        })
    }

    /// The type's value inside an answer object (the object itself when not wrapped).
    pub fn unwrap_answer(&self, answer: Value) -> Value {
        match answer {
            Value::Object(mut m) if self.wrapped => m.remove(WRAP_KEY).unwrap_or(Value::Null),
            other => other,
        }
    }

    /// The JSON Pointer prefix of the type's value inside the answer (`/value` when wrapped).
    pub fn root_pointer(&self) -> &'static str {
        if self.wrapped { "/value" } else { "" }
    }
}

/// `{"type":"object","properties":{"value":ROOT},"required":["value"],"additionalProperties":false}`,
/// with `$defs`, `$schema` and `title` kept at the root and root refs re-pointed.
fn wrap(mut root: Value) -> Value {
    let mut outer = Map::new();
    if let Value::Object(m) = &mut root {
        for key in ["$schema", "title", "$defs", "definitions"] {
            if let Some(v) = m.remove(key) {
                outer.insert(key.to_owned(), v);
            }
        }
    }
    repoint_root_refs(&mut root);
    outer.insert("type".into(), json!("object"));
    outer.insert("properties".into(), json!({ WRAP_KEY: root }));
    outer.insert("required".into(), json!([WRAP_KEY]));
    outer.insert("additionalProperties".into(), json!(false));
    Value::Object(outer)
}

/// `#` and `#/...` refs that do not point into `$defs`/`definitions` now live under
/// `/properties/value`.
fn repoint_root_refs(node: &mut Value) {
    match node {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("$ref")
                && (r == "#"
                    || (r.starts_with("#/")
                        && !r.starts_with("#/$defs/")
                        && !r.starts_with("#/definitions/")))
            {
                *r = format!("#/properties/{WRAP_KEY}{}", &r[1..]);
            }
            m.values_mut().for_each(repoint_root_refs);
        }
        Value::Array(a) => a.iter_mut().for_each(repoint_root_refs),
        _ => {}
    }
}

const NUMERIC_FORMATS: [&str; 14] = [
    "int", "int8", "int16", "int32", "int64", "int128", "uint", "uint8", "uint16", "uint32",
    "uint64", "uint128", "float", "double",
];

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Whether a schema accepts `null`.
fn admits_null(schema: &Value) -> bool {
    let has_null_type = match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => false,
    };
    has_null_type
        || schema.get("const") == Some(&Value::Null)
        || ["anyOf", "oneOf"].iter().any(|k| {
            schema
                .get(*k)
                .and_then(Value::as_array)
                .is_some_and(|bs| bs.iter().any(admits_null))
        })
}

fn is_object_schema(m: &Map<String, Value>) -> bool {
    match m.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        _ => false,
    }
}

/// The strict rewrites on one subschema and everything below it.
fn tighten(
    node: &mut Value,
    at: &str,
    transforms: &mut Vec<Transform>,
    residuals: &mut Vec<String>,
) {
    let Value::Object(m) = node else { return };
    if let Some(Value::String(f)) = m.get("format")
        && NUMERIC_FORMATS.contains(&f.as_str())
    {
        let action = format!("removed format {f} (no provider knows it; the range stays)");
        m.remove("format");
        transforms.push(Transform {
            pointer: at.to_owned(),
            action,
        });
    }
    if is_object_schema(m) {
        tighten_object(m, at, transforms, residuals);
    }
    for (key, value) in m.iter_mut() {
        let here = format!("{at}/{}", escape(key));
        match key.as_str() {
            "properties" | "$defs" | "definitions" | "patternProperties" => {
                if let Value::Object(children) = value {
                    for (name, child) in children.iter_mut() {
                        tighten(
                            child,
                            &format!("{here}/{}", escape(name)),
                            transforms,
                            residuals,
                        );
                    }
                }
            }
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                if let Value::Array(children) = value {
                    for (i, child) in children.iter_mut().enumerate() {
                        tighten(child, &format!("{here}/{i}"), transforms, residuals);
                    }
                }
            }
            "items" | "additionalProperties" | "not" | "contains" => {
                tighten(value, &here, transforms, residuals);
            }
            _ => {}
        }
    }
}

fn tighten_object(
    m: &mut Map<String, Value>,
    at: &str,
    transforms: &mut Vec<Transform>,
    residuals: &mut Vec<String>,
) {
    let combined = ["$ref", "allOf", "anyOf", "oneOf"]
        .iter()
        .any(|k| m.contains_key(*k));
    match m.get("additionalProperties") {
        None | Some(Value::Bool(true)) if combined => residuals.push(format!(
            "{at}: object combined with $ref/allOf/anyOf/oneOf left open (additionalProperties:false would refuse the combined properties); the schema is not strict"
        )),
        None | Some(Value::Bool(true)) => {
            m.insert("additionalProperties".into(), Value::Bool(false));
            transforms.push(Transform {
                pointer: at.to_owned(),
                action: "set additionalProperties:false (strict wires require it)".to_owned(),
            });
        }
        Some(Value::Object(_)) => residuals.push(format!(
            "{at}: a map (additionalProperties is a schema) cannot be strict; its entries are validated locally"
        )),
        _ => {}
    }
    let Some(Value::Object(props)) = m.get("properties") else {
        return;
    };
    let required: Vec<String> = m
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|k| k.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let mut added = Vec::new();
    for (name, schema) in props {
        if required.contains(name) {
            continue;
        }
        if admits_null(schema) {
            added.push(name.clone());
        } else {
            residuals.push(format!(
                "{at}/properties/{}: optional but cannot be null (a serde default), so it cannot be required; the schema is not strict",
                escape(name)
            ));
        }
    }
    if added.is_empty() {
        return;
    }
    let list = m
        .entry("required")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(list) = list {
        for name in added {
            transforms.push(Transform {
                pointer: format!("{at}/properties/{}", escape(&name)),
                action: "made the optional property required and nullable (strict wires require every property; the answer says null)".to_owned(),
            });
            list.push(Value::String(name));
        }
    }
}
