//! `Schema`: a caller's JSON Schema prepared once and reused by every call that asks for it.
//! A type's schema (pydantic's, for a model, dataclass, `TypedDict` or `list[...]`) gets the
//! strict-friendly rewrites a Rust type's gets ([`TypedSchema::from_generated`], each named in the
//! ledger); a dict the caller wrote is taken as it is.

use crate::outcome::config_error;
use geode::ResponseSchema;
use geode::TypedSchema;
use pyo3::prelude::*;
use std::sync::Arc;

/// A prepared response schema.
#[pyclass(frozen, module = "geode._native", name = "Schema")]
pub struct NativeSchema {
    pub typed: Arc<TypedSchema>,
}

#[pymethods]
impl NativeSchema {
    /// `schema_json`: the schema as JSON text; `generated`: whether a type's schema (rewritten,
    /// wrapped when its root is not an object) rather than one the caller wrote.
    #[new]
    fn new(py: Python<'_>, schema_json: &str, generated: bool) -> PyResult<Self> {
        let value: serde_json::Value = serde_json::from_str(schema_json)
            .map_err(|e| config_error(py, &format!("the schema is not JSON: {e}")))?;
        let typed = if generated {
            TypedSchema::from_generated(value)
        } else {
            ResponseSchema::from_value(value).map(TypedSchema::raw)
        }
        .map_err(|e| config_error(py, &format!("unusable response schema: {e}")))?;
        Ok(Self {
            typed: Arc::new(typed),
        })
    }

    /// The schema as sent (after the rewrites), as JSON text.
    #[getter]
    fn sent_json(&self) -> String {
        self.typed.schema.as_value().to_string()
    }

    /// Whether the root was wrapped as `{"value": ROOT}` (answers come back unwrapped).
    #[getter]
    fn wrapped(&self) -> bool {
        self.typed.wrapped
    }
}
