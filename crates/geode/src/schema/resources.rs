//! Documents that a schema's `$ref`s may name by URI, given up front.
//!
//! geode never fetches a schema (see [`super::validate`]). A caller that has the documents a
//! schema refers to (`{"$ref": "http://example.com/item.json"}`) hands them over here, keyed by
//! URI, and [`super::validate::CompiledSchema::compile_in`] resolves references against them; a
//! URI that is not among them stays an [`SchemaError::Uncompilable`].

use super::SchemaError;
use jsonschema::{Registry, Resource};
use serde_json::Value;

/// Schema documents by URI, indexed once and shared by every compile that uses them.
pub struct SchemaResources {
    registry: Registry<'static>,
}

impl std::fmt::Debug for SchemaResources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaResources").finish_non_exhaustive()
    }
}

impl SchemaResources {
    /// Indexes `(uri, document)` pairs. A bad URI, or a document that refers to one that is
    /// neither here nor a known meta-schema, is [`SchemaError::Uncompilable`].
    ///
    /// ```
    /// use geode::schema::{ResponseSchema, resources::SchemaResources, validate::CompiledSchema};
    /// use geode::schema::formats::FormatMode;
    /// use serde_json::json;
    /// let docs = SchemaResources::new([("http://example.com/int.json".to_owned(), json!({"type": "integer"}))]).unwrap();
    /// let s = ResponseSchema::from_value(json!({"items": {"$ref": "http://example.com/int.json"}})).unwrap();
    /// let c = CompiledSchema::compile_in(&s, FormatMode::Assert, Some(&docs)).unwrap();
    /// assert!(!c.validate(&json!(["x"])).is_empty());
    /// assert!(CompiledSchema::compile(&s).is_err(), "nothing is fetched");
    /// ```
    pub fn new(docs: impl IntoIterator<Item = (String, Value)>) -> Result<Self, SchemaError> {
        let bad = |e: jsonschema::ReferencingError| SchemaError::Uncompilable {
            message: e.to_string(),
            pointer: String::new(),
        };
        let registry = Registry::new()
            .retriever(NoRetrieve)
            .extend(
                docs.into_iter()
                    .map(|(uri, doc)| (uri, Resource::from_contents(doc))),
            )
            .map_err(bad)?
            .prepare()
            .map_err(bad)?;
        Ok(Self { registry })
    }

    /// The indexed documents, for the validator.
    pub(crate) fn registry(&self) -> &Registry<'static> {
        &self.registry
    }
}

/// Refuses every external resource: remote and file `$ref`s become compile errors, never IO.
pub(crate) struct NoRetrieve;

impl jsonschema::Retrieve for NoRetrieve {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("geode never fetches external schemas ({uri})").into())
    }
}
