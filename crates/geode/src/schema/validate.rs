//! Answer validation (STUB: to be completed).

use super::{ResponseSchema, SchemaError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Which check the worker applies to an answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Validation {
    /// Full JSON Schema validation against the original schema (geode's default).
    #[default]
    Full,
    /// The reference's shallow check: a top-level object with every `required` key.
    RequiredKeys,
}

/// One validation error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationIssue {
    /// JSON Pointer into the answer.
    pub instance_path: String,
    /// JSON Pointer into the schema.
    pub schema_path: String,
    /// The keyword that failed (`enum`, `required`, `type`, ...).
    pub keyword: String,
    /// The validator's message.
    pub message: String,
    /// For `enum`/`const`, the allowed values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Vec<Value>>,
}

/// A schema compiled for full validation.
pub struct CompiledSchema {
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledSchema").finish_non_exhaustive()
    }
}

impl CompiledSchema {
    /// Compiles a schema (remote `$ref` resolution off).
    pub fn compile(schema: &ResponseSchema) -> Result<Self, SchemaError> {
        jsonschema::validator_for(schema.as_value())
            .map(|validator| Self { validator })
            .map_err(|e| SchemaError::Uncompilable {
                message: e.to_string(),
                pointer: String::new(),
            })
    }

    /// Validates an instance; empty when valid.
    pub fn validate(&self, instance: &Value) -> Vec<ValidationIssue> {
        self.validator
            .iter_errors(instance)
            .map(|e| ValidationIssue {
                instance_path: e.instance_path().to_string(),
                schema_path: e.schema_path().to_string(),
                keyword: String::new(),
                message: e.to_string(),
                allowed: None,
            })
            .collect()
    }
}

/// The required keys of `schema` absent from the top-level object `answer`.
pub fn missing_required_keys(schema: &ResponseSchema, answer: &Value) -> Vec<String> {
    let obj = answer.as_object();
    schema
        .required_keys()
        .into_iter()
        .filter(|k| obj.is_none_or(|o| !o.contains_key(*k)))
        .map(str::to_owned)
        .collect()
}

/// One line per issue: `/path: message (allowed: "a", "b")`.
pub fn render_issues(issues: &[ValidationIssue]) -> String {
    issues
        .iter()
        .map(|i| {
            let path = if i.instance_path.is_empty() {
                "/"
            } else {
                &i.instance_path
            };
            match &i.allowed {
                Some(a) => format!(
                    "{path}: {} (allowed: {})",
                    i.message,
                    a.iter()
                        .map(Value::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => format!("{path}: {}", i.message),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}
