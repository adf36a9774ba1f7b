//! `format`: asserted by default, annotation-only on request, unknown names reported.
//!
//! | case | [`FormatMode::Assert`] (default) | [`FormatMode::Annotate`] |
//! |---|---|---|
//! | a format the schema's draft defines (`date-time`, `email`, `uuid` in 2020-12, ...) | checked | not checked, listed as unchecked |
//! | a format of [`KNOWN_FORMATS`] the schema's draft predates (`uuid`, `duration` or `iri` in a draft-04 schema) | checked by the 2020-12 rule | not checked, listed |
//! | a name no draft defines (`phone`, `int32`) | not checked, listed as unchecked (never an error) | not checked, listed |
//!
//! The worker's ledger carries the mode used and the unchecked names
//! ([`crate::ledger::GuaranteeLedger`] `formats`, `unchecked_formats`).

use super::projection::subschemas;
use jsonschema::{Draft, ValidationOptions};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;

/// How `format` is treated by full validation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FormatMode {
    /// Every format the validator knows is checked (geode's default: providers in strict mode
    /// enforce formats, and the local check must not be weaker than the wire).
    #[default]
    Assert,
    /// Formats are annotations only (the JSON Schema 2020-12 default).
    Annotate,
}

impl FormatMode {
    /// The kebab-case name (`assert`, `annotate`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Assert => "assert",
            Self::Annotate => "annotate",
        }
    }
}

impl std::fmt::Display for FormatMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every format the validator checks under draft 2020-12.
pub const KNOWN_FORMATS: &[&str] = &[
    "date",
    "date-time",
    "duration",
    "email",
    "hostname",
    "idn-email",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "iri",
    "iri-reference",
    "json-pointer",
    "regex",
    "relative-json-pointer",
    "time",
    "uri",
    "uri-reference",
    "uri-template",
    "uuid",
];

/// The formats a draft defines itself (the rest of [`KNOWN_FORMATS`] came later).
fn defined_in(draft: Draft, format: &str) -> bool {
    let since = match format {
        "json-pointer" | "uri-reference" | "uri-template" => Draft::Draft6,
        "idn-hostname" | "iri" | "iri-reference" | "relative-json-pointer" => Draft::Draft7,
        "uuid" | "duration" => Draft::Draft201909,
        _ => Draft::Draft4,
    };
    draft >= since
}

/// The draft a schema declares with `$schema` (2020-12 without one; `Unknown` for a meta-schema
/// the validator does not know).
pub fn draft_of(schema: &Value) -> Draft {
    Draft::default().detect(schema)
}

/// Every string `format` keyword value in a schema, sorted, each once (iterative walk over the
/// subschemas, so a property named `format` is not taken for the keyword).
pub fn formats_in(schema: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![schema];
    while let Some(node) = stack.pop() {
        let Value::Object(m) = node else { continue };
        if let Some(Value::String(f)) = m.get("format") {
            out.insert(f.clone());
        }
        stack.extend(subschemas(m).into_iter().map(|(_, v, _)| v));
    }
    out
}

/// The validator options for a mode, and the format names that stay unchecked under it.
///
/// In [`FormatMode::Assert`], a format of [`KNOWN_FORMATS`] that the schema's draft predates is
/// registered as a custom check that applies the 2020-12 rule.
pub(crate) fn apply<'i, R, F: jsonschema::json::Json>(
    options: ValidationOptions<'i, R, F>,
    schema: &Value,
    mode: FormatMode,
) -> (ValidationOptions<'i, R, F>, Vec<String>) {
    let used = formats_in(schema);
    if mode == FormatMode::Annotate {
        return (
            options.should_validate_formats(false),
            used.into_iter().collect(),
        );
    }
    let draft = draft_of(schema);
    let mut options = options
        .should_validate_formats(true)
        .should_ignore_unknown_formats(true);
    let mut unchecked = Vec::new();
    for f in used {
        if !KNOWN_FORMATS.contains(&f.as_str()) {
            unchecked.push(f);
        } else if draft != Draft::Unknown && !defined_in(draft, &f) {
            match later_rule(&f) {
                Some(check) => options = options.with_format(f, check),
                None => unchecked.push(f),
            }
        }
    }
    (options, unchecked)
}

/// The 2020-12 check of one known format, as a custom format function.
fn later_rule(format: &str) -> Option<impl Fn(&str) -> bool + Send + Sync + 'static> {
    let validator = jsonschema::options()
        .with_draft(Draft::Draft202012)
        .should_validate_formats(true)
        .build(&serde_json::json!({ "format": format }))
        .ok()?;
    Some(move |s: &str| validator.is_valid(&Value::String(s.to_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn formats_are_collected_from_subschemas_only() {
        let s = json!({
            "properties": {
                "format": {"type": "string", "format": "uuid"},
                "when": {"anyOf": [{"format": "date"}, {"format": "phone"}]}
            },
            "const": {"format": "not-a-keyword"}
        });
        let found: Vec<String> = formats_in(&s).into_iter().collect();
        assert_eq!(found, ["date", "phone", "uuid"]);
    }

    #[test]
    fn drafts_are_detected_and_default_to_2020_12() {
        assert_eq!(draft_of(&json!({})), Draft::Draft202012);
        assert_eq!(
            draft_of(&json!({"$schema": "http://json-schema.org/draft-04/schema#"})),
            Draft::Draft4
        );
        assert!(defined_in(Draft::Draft7, "iri") && !defined_in(Draft::Draft6, "iri"));
        assert!(!defined_in(Draft::Draft7, "uuid"));
        assert_eq!(FormatMode::default().as_str(), "assert");
    }
}
