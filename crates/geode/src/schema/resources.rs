//! Documents that a schema's `$ref`s may name by URI, given up front.
//!
//! geode never fetches a schema (see [`super::validate`]). A caller that has the documents a
//! schema refers to (`{"$ref": "http://example.com/item.json"}`) hands them over here, keyed by
//! URI, and [`super::validate::CompiledSchema::compile_in`] resolves references against them; a
//! URI that is not among them stays an [`SchemaError::Uncompilable`].

use super::SchemaError;
use jsonschema::{Registry, Resource};
use serde_json::Value;
use std::path::Path;

/// Schema documents by URI, indexed once and shared by every compile that uses them.
pub struct SchemaResources {
    registry: Registry<'static>,
    skipped: Vec<Skipped>,
}

/// A document left out of the index, and why: one that names a meta-schema neither known nor
/// among the documents cannot be indexed, and would otherwise make every compile fail, even of
/// schemas that never refer to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The document's URI.
    pub uri: String,
    /// The meta-schema it names.
    pub meta_schema: String,
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
        let docs: Vec<(String, Value)> = docs.into_iter().collect();
        let given: std::collections::HashSet<&str> = docs.iter().map(|(u, _)| u.as_str()).collect();
        let mut skipped = Vec::new();
        let mut kept = Vec::new();
        for (uri, doc) in &docs {
            match unknown_meta_schema(doc) {
                Some(meta) if !given.contains(meta.trim_end_matches('#')) => {
                    skipped.push(Skipped {
                        uri: uri.clone(),
                        meta_schema: meta.to_owned(),
                    })
                }
                _ => kept.push((uri.clone(), Resource::from_contents(doc.clone()))),
            }
        }
        let registry = Registry::new()
            .retriever(NoRetrieve)
            .extend(kept)
            .map_err(bad)?
            .prepare()
            .map_err(bad)?;
        Ok(Self { registry, skipped })
    }

    /// The documents left out, and why ([`Skipped`]).
    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// Every `*.json` file under `dir` (subfolders too, symbolic links not followed), keyed by
    /// `base` joined with its path relative to `dir` (`http://example.com/schemas/` and
    /// `item/v1.json` give `http://example.com/schemas/item/v1.json`), in path order. This is
    /// how `geode validate --resources DIR` hands a folder of schemas over.
    ///
    /// ```
    /// use geode::schema::resources::SchemaResources;
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::create_dir(dir.path().join("sub")).unwrap();
    /// std::fs::write(dir.path().join("sub/int.json"), r#"{"type":"integer"}"#).unwrap();
    /// let docs = SchemaResources::read_dir(dir.path(), "http://x.test/").unwrap();
    /// assert_eq!(docs[0].0, "http://x.test/sub/int.json");
    /// ```
    pub fn read_dir(dir: &Path, base: &str) -> Result<Vec<(String, Value)>, SchemaError> {
        let io = |path: &Path, e: std::io::Error| SchemaError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).map_err(|e| io(&d, e))? {
                let entry = entry.map_err(|e| io(&d, e))?;
                let path = entry.path();
                let kind = entry.file_type().map_err(|e| io(&path, e))?;
                if kind.is_dir() {
                    stack.push(path);
                } else if kind.is_file() && path.extension().is_some_and(|e| e == "json") {
                    let text = std::fs::read_to_string(&path).map_err(|e| io(&path, e))?;
                    let doc = serde_json::from_str(&text).map_err(|e| SchemaError::Io {
                        path: path.display().to_string(),
                        message: format!("not JSON: {e}"),
                    })?;
                    let rel = path.strip_prefix(dir).unwrap_or(&path);
                    let rel: Vec<String> = rel
                        .components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect();
                    out.push((format!("{base}{}", rel.join("/")), doc));
                }
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// [`Self::read_dir`], indexed.
    pub fn from_dir(dir: &Path, base: &str) -> Result<Self, SchemaError> {
        Self::new(Self::read_dir(dir, base)?)
    }

    /// The indexed documents, for the validator.
    pub(crate) fn registry(&self) -> &Registry<'static> {
        &self.registry
    }
}

/// The `$schema` of `doc` when it names no draft geode knows.
fn unknown_meta_schema(doc: &Value) -> Option<&str> {
    let meta = doc.get("$schema")?.as_str()?;
    (jsonschema::Draft::default().detect(doc) == jsonschema::Draft::Unknown).then_some(meta)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::ResponseSchema;
    use crate::schema::formats::FormatMode;
    use crate::schema::validate::CompiledSchema;
    use serde_json::json;

    #[test]
    fn a_document_of_an_unknown_meta_schema_is_left_out_not_fatal() {
        let docs = SchemaResources::new([
            (
                "http://x.test/int.json".to_owned(),
                json!({"type": "integer"}),
            ),
            (
                "http://x.test/odd.json".to_owned(),
                json!({"$schema": "http://x.test/my-meta", "type": "string"}),
            ),
        ])
        .unwrap();
        assert_eq!(
            docs.skipped(),
            [Skipped {
                uri: "http://x.test/odd.json".to_owned(),
                meta_schema: "http://x.test/my-meta".to_owned(),
            }]
        );
        let s = ResponseSchema::from_value(json!({"items": {"$ref": "http://x.test/int.json"}}))
            .unwrap();
        let c = CompiledSchema::compile_in(&s, FormatMode::Assert, Some(&docs)).unwrap();
        assert!(c.validate(&json!([1])).is_empty());
        assert!(!c.validate(&json!(["x"])).is_empty());
    }
}
