//! Answer validation: GEODE's shallow check and full JSON Schema validation.
//!
//! In: the caller's original [`ResponseSchema`] and an answer (text or parsed value). Out: typed
//! verdicts, never a panic.
//!
//! | function | checks | cost |
//! |---|---|---|
//! | [`shallow_check`] | GEODE's worker check on text: last balanced object + top-level `required` keys | one scan + one syntax-only parse |
//! | [`missing_required_keys`] | the same key check on an already parsed value | O(required) |
//! | [`CompiledSchema::validate`] | full JSON Schema (2020-12 unless `$schema` says otherwise), formats included | one evaluation; the first [`MAX_REPORTED_ERRORS`] errors are kept, the rest counted |
//!
//! Hostile schemas are refused before compilation with a typed [`SchemaError`]:
//!
//! | schema | result |
//! |---|---|
//! | nests more than [`MAX_SCHEMA_DEPTH`] (128) JSON levels | [`SchemaError::TooDeep`] (checked iteratively, so 10,000 levels are fine to refuse) |
//! | more than [`MAX_SCHEMA_NODES`] (1,000,000) JSON nodes | [`SchemaError::TooLarge`] (200,000 properties compile) |
//! | more than [`MAX_SCHEMA_COST`] subschema evaluations per answer location ([`super::cost`]), e.g. `$defs` chaining `anyOf`/`allOf` of two `$ref`s 20 levels deep | [`SchemaError::TooExpensive`], before the validator is built |
//! | a remote or file `$ref` | [`SchemaError::Uncompilable`]: nothing is ever fetched or read, whatever crate features are on |
//! | a `$ref` cycle (`{"$ref":"#"}`, a→b→a) | compiles; the validator detects the cycle |
//! | an invalid keyword value (`{"type": 5}`) | [`SchemaError::Uncompilable`] with the pointer of the bad value |
//!
//! `format` is asserted by default (the 2020-12 default treats it as an annotation): providers
//! enforce formats, and the Anthropic projection leaves some to this local check; see
//! [`super::formats`] for annotation-only mode and unknown names. `pattern` follows ECMA-262
//! with a backtracking bound ([`MAX_REGEX_BACKTRACK`]). Each draft validates by its own rules
//! (`$schema`; 2020-12 without one). Answers nested deeper
//! than [`MAX_INSTANCE_DEPTH`] get one `depth` issue instead of being walked, and answers whose
//! check could take too long one `budget` issue (see [`CompiledSchema::validate`]).

use super::formats::FormatMode;
use super::resources::{NoRetrieve, SchemaResources};
use super::tape::Tape;
use super::tape_json::TapeJson;
use super::{ResponseSchema, SchemaError};
use jsonschema::json::{Json, SerdeJson};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Deepest JSON nesting of a schema that [`CompiledSchema::compile`] accepts.
pub const MAX_SCHEMA_DEPTH: usize = 128;
/// Most JSON nodes (objects, arrays, scalars) a schema may have.
pub const MAX_SCHEMA_NODES: usize = 1_000_000;
/// Deepest answer [`CompiledSchema::validate`] walks (serde_json's own parse limit).
pub const MAX_INSTANCE_DEPTH: usize = 128;
/// Most subschema checks one answer location may need ([`super::cost::schema_cost`]). Typical
/// schemas need under 20; the costliest of 9,557 real-world schemas (JSONSchemaBench, JSON
/// Schema Store's service and Cloudify schemas: unions of 125–238 `$ref`s) need 11,000–18,000.
/// A `$ref` chain of two-way applicators reaches the limit at 15 levels.
pub const MAX_SCHEMA_COST: u64 = 100_000;
/// Most subschema checks one validation may need (schema cost × answer nodes), about a second
/// of the validator's yes/no check.
pub const MAX_VALIDATION_WORK: u64 = 40_000_000;
/// Most subschema checks for which the errors of an invalid answer are listed (collecting
/// errors costs about a hundred times the yes/no check).
pub const MAX_LISTING_WORK: u64 = 400_000;
/// Most errors [`CompiledSchema::validate`] lists; the rest are counted in
/// [`ValidationReport::more_errors`].
pub const MAX_REPORTED_ERRORS: usize = 100;
/// Errors past the listed ones are counted up to this many (then counting stops, and
/// [`ValidationReport::more_errors`] is a lower bound).
pub const MAX_COUNTED_ERRORS: u64 = 100_000;
/// Longest message kept in a [`ValidationIssue`], in characters.
const MAX_MESSAGE_CHARS: usize = 300;
/// Most issues [`render_issues`] lists before summarising the rest.
const MAX_RENDERED_ISSUES: usize = 20;

/// Which check the worker applies to an answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Validation {
    /// Full JSON Schema validation against the original schema (geode's default).
    #[default]
    Full,
    /// GEODE's shallow check: a top-level object with every `required` key.
    RequiredKeys,
}

/// One validation error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationIssue {
    /// JSON Pointer into the answer (`""` is the root).
    pub instance_path: String,
    /// JSON Pointer into the schema, to the failing keyword.
    pub schema_path: String,
    /// The keyword that failed (`enum`, `required`, `type`, ...).
    pub keyword: String,
    /// The validator's message (shortened when the offending value is large).
    pub message: String,
    /// For `enum`/`const`, the allowed values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Vec<Value>>,
}

/// The result of [`CompiledSchema::validate`]: the first errors and how many more there were.
///
/// Derefs to the listed issues, so `report.is_empty()` means valid; [`Self::total`] counts
/// every error found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ValidationReport {
    /// The first [`MAX_REPORTED_ERRORS`] errors, in the validator's order.
    pub issues: Vec<ValidationIssue>,
    /// Errors found beyond `issues` (counting stops at [`MAX_COUNTED_ERRORS`]).
    pub more_errors: u64,
}

impl ValidationReport {
    /// Every error found: the listed ones plus [`Self::more_errors`].
    pub fn total(&self) -> u64 {
        (self.issues.len() as u64).saturating_add(self.more_errors)
    }
}

impl std::ops::Deref for ValidationReport {
    type Target = [ValidationIssue];
    fn deref(&self) -> &[ValidationIssue] {
        &self.issues
    }
}

/// A schema compiled for full validation, of answers held as `F`: a `serde_json::Value` (the
/// default), or a [`Tape`] (`CompiledSchema<TapeJson>`, which reads the answer's text in place).
pub struct CompiledSchema<F: Json = SerdeJson> {
    validator: jsonschema::Validator<F>,
    /// [`super::cost::schema_cost`] of the schema.
    cost: u64,
    /// How `format` is treated.
    formats: FormatMode,
    /// Format names in the schema that are not checked (see [`super::formats`]).
    unchecked_formats: Vec<String>,
}

/// Distinct compiled schemas [`CompiledSchema::compile_cached`] keeps.
pub const MAX_CACHED_SCHEMAS: usize = 256;
/// The longest schema text [`CompiledSchema::compile_cached`] keeps (bounding the cache's memory).
pub const MAX_CACHED_SCHEMA_BYTES: usize = 64 << 10;

/// Most backtracking steps one `pattern` match may take (the `fancy-regex` engine's limit; only
/// patterns with lookaround or backreferences backtrack). Past it the match is an error, so the
/// answer is reported invalid with a `pattern` issue instead of hanging.
pub const MAX_REGEX_BACKTRACK: usize = 100_000;

impl<F: Json> std::fmt::Debug for CompiledSchema<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledSchema").finish_non_exhaustive()
    }
}

impl CompiledSchema {
    /// Compiles a schema: [`check_depth_and_size`] and [`check_cost`] first, then the
    /// `jsonschema` crate with external resolution refused and format validation on.
    ///
    /// ```
    /// use geode::schema::{ResponseSchema, validate::CompiledSchema};
    /// let s = ResponseSchema::from_json_str(r#"{"type":"object","required":["a"]}"#).unwrap();
    /// let c = CompiledSchema::compile(&s).unwrap();
    /// assert!(c.validate(&serde_json::json!({"a": 1})).is_empty());
    /// assert_eq!(c.validate(&serde_json::json!({})).issues[0].keyword, "required");
    /// ```
    pub fn compile(schema: &ResponseSchema) -> Result<Self, SchemaError> {
        Self::compile_with(schema, FormatMode::Assert)
    }

    /// [`Self::compile`] with a choice of [`FormatMode`]. Patterns (`pattern`,
    /// `patternProperties`) follow ECMA-262, as JSON Schema says (nested classes such as
    /// `[[a-z]]`, `\d` inside a class, lookaround); a match that backtracks past
    /// [`MAX_REGEX_BACKTRACK`] steps fails instead of hanging.
    pub fn compile_with(schema: &ResponseSchema, formats: FormatMode) -> Result<Self, SchemaError> {
        Self::compile_in(schema, formats, None)
    }

    /// [`Self::compile_with`] through this process's cache, keyed by the schema's text and the
    /// format mode: a gateway, a batch or a queue worker compiles each distinct schema once
    /// instead of once per task. Failures and schemas longer than [`MAX_CACHED_SCHEMA_BYTES`]
    /// are not cached; the cache is emptied when it holds [`MAX_CACHED_SCHEMAS`].
    pub fn compile_cached(
        schema: &ResponseSchema,
        formats: FormatMode,
    ) -> Result<std::sync::Arc<Self>, SchemaError> {
        type Cache = std::sync::Mutex<
            std::collections::HashMap<(String, FormatMode), std::sync::Arc<CompiledSchema>>,
        >;
        static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
        let cache = CACHE.get_or_init(Cache::default);
        let key = (schema.as_value().to_string(), formats);
        if key.0.len() > MAX_CACHED_SCHEMA_BYTES {
            return Self::compile_with(schema, formats).map(std::sync::Arc::new);
        }
        if let Some(hit) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(hit.clone());
        }
        let compiled = std::sync::Arc::new(Self::compile_with(schema, formats)?);
        let mut held = cache.lock().unwrap_or_else(|p| p.into_inner());
        if held.len() >= MAX_CACHED_SCHEMAS {
            held.clear();
        }
        held.insert(key, compiled.clone());
        Ok(compiled)
    }

    /// [`Self::compile_with`], with documents that `$ref`s may name by URI given up front
    /// ([`SchemaResources`]; still nothing is fetched).
    pub fn compile_in(
        schema: &ResponseSchema,
        formats: FormatMode,
        resources: Option<&SchemaResources>,
    ) -> Result<Self, SchemaError> {
        Self::build(schema, formats, resources)
    }

    /// True when the instance is valid (faster than [`Self::validate`] when it is). An answer
    /// over the depth limit or [`MAX_VALIDATION_WORK`] is not valid.
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.work(instance).is_ok() && self.validator.is_valid(instance)
    }

    /// Validates an instance; empty when valid. The validator's fast yes/no check runs first;
    /// for an invalid answer the first [`MAX_REPORTED_ERRORS`] errors are listed in the
    /// validator's order and the rest only counted (errors are produced lazily).
    ///
    /// Budgets, each reported as one issue instead of the errors: an answer nested deeper than
    /// [`MAX_INSTANCE_DEPTH`] (`depth`), one whose check could take more than
    /// [`MAX_VALIDATION_WORK`] subschema checks (`budget`, not checked), and an invalid one
    /// whose errors could take more than [`MAX_LISTING_WORK`] checks to list (`budget`).
    pub fn validate(&self, instance: &Value) -> ValidationReport {
        self.report(instance, self.work(instance))
    }

    /// The most subschema checks validating `instance` can take (schema cost × answer nodes),
    /// or the issue when the answer is too deep or the work over [`MAX_VALIDATION_WORK`].
    fn work(&self, instance: &Value) -> Result<u64, ValidationIssue> {
        let nodes = count_nodes(instance, MAX_INSTANCE_DEPTH).map_err(|depth| ValidationIssue {
            instance_path: String::new(),
            schema_path: String::new(),
            keyword: "depth".to_owned(),
            message: format!(
                "the answer nests {depth} levels deep; the limit is {MAX_INSTANCE_DEPTH}"
            ),
            allowed: None,
        })?;
        self.work_for(nodes)
    }
}

impl CompiledSchema<TapeJson> {
    /// [`CompiledSchema::validate`] of an answer held as a [`Tape`]: the same report, read from
    /// the text in place (no `Value` is built; a tape is never deeper than the depth limit).
    /// A tape whose objects repeat a key is read as serde_json reads it (the last value wins),
    /// through a tape of its de-duplicated text.
    ///
    /// ```
    /// use geode::schema::{ResponseSchema, formats::FormatMode, tape::Tape};
    /// use geode::schema::validate::CompiledSchema;
    /// use geode::schema::tape_json::TapeJson;
    /// let s = ResponseSchema::from_json_str(r#"{"type":"object","required":["a"]}"#).unwrap();
    /// let c = CompiledSchema::<TapeJson>::build(&s, FormatMode::Assert, None).unwrap();
    /// assert!(c.validate(&Tape::parse(r#"{"a": 1}"#).unwrap()).is_empty());
    /// assert_eq!(c.validate(&Tape::parse("{}").unwrap()).issues[0].keyword, "required");
    /// ```
    pub fn validate(&self, tape: &Tape<'_>) -> ValidationReport {
        if tape.has_duplicate_keys() {
            let text = tape.root().to_value().to_string();
            return match Tape::parse(&text) {
                Ok(deduplicated) => self.validate(&deduplicated),
                Err(e) => budget_issue(e.to_string()).into(),
            };
        }
        self.report(tape.root(), self.work_for(tape.values()))
    }
}

impl<F: Json> CompiledSchema<F> {
    /// Compiles a schema for answers held as `F` ([`CompiledSchema::compile_in`] is this for
    /// `serde_json::Value`): [`check_depth_and_size`] and [`check_cost`] first, then the
    /// `jsonschema` crate with external resolution refused.
    pub fn build(
        schema: &ResponseSchema,
        formats: FormatMode,
        resources: Option<&SchemaResources>,
    ) -> Result<Self, SchemaError> {
        check_depth_and_size(schema.as_value())?;
        let cost = check_cost(schema.as_value())?;
        let mut options = jsonschema::options_for::<F>()
            .with_retriever(NoRetrieve)
            .with_pattern_options(
                jsonschema::PatternOptions::fancy_regex().backtrack_limit(MAX_REGEX_BACKTRACK),
            );
        if let Some(r) = resources {
            options = options.with_registry(r.registry());
        }
        let (options, unchecked_formats) =
            super::formats::apply(options, schema.as_value(), formats);
        options
            .build(&compile_copy::compile_copy(schema.as_value()))
            .map(|validator| Self {
                validator,
                cost,
                formats,
                unchecked_formats,
            })
            .map_err(|e| {
                let pointer = e.instance_path().to_string();
                let message = too_big_pattern(schema.as_value(), &pointer).map_or_else(
                    || e.to_string(),
                    |p| format!("pattern {p:?} is too large for the regex engine: its compiled form is over the engine's size limit (counted repetitions such as {{1000000}} are expanded)"),
                );
                SchemaError::Uncompilable {
                    message: shorten(message),
                    pointer,
                }
            })
    }

    /// How `format` is treated.
    pub fn formats(&self) -> FormatMode {
        self.formats
    }

    /// The `format` names of the schema that are not checked: unknown names, and every name
    /// under [`FormatMode::Annotate`]. Sorted, each once.
    pub fn unchecked_formats(&self) -> &[String] {
        &self.unchecked_formats
    }

    /// The report for one answer node, `work` being its [`Self::work_for`].
    fn report<'a>(
        &'a self,
        instance: F::Node<'a>,
        work: Result<u64, ValidationIssue>,
    ) -> ValidationReport {
        let work = match work {
            Ok(work) => work,
            Err(issue) => return issue.into(),
        };
        if self.validator.is_valid(instance.clone()) {
            return ValidationReport::default();
        }
        if work > MAX_LISTING_WORK {
            return budget_issue(format!(
                "the answer does not match the schema; its errors are not listed: that could take {work} subschema checks (schema cost {} × answer size), over the limit of {MAX_LISTING_WORK}",
                self.cost
            ))
            .into();
        }
        let mut errors = self.validator.iter_errors(instance);
        let issues = errors
            .by_ref()
            .take(MAX_REPORTED_ERRORS)
            .map(issue)
            .collect();
        let more = errors.take(MAX_COUNTED_ERRORS as usize).count();
        ValidationReport {
            issues,
            more_errors: more as u64,
        }
    }

    /// The most subschema checks validating an answer of `nodes` values can take (schema cost ×
    /// nodes), or the `budget` issue when that is over [`MAX_VALIDATION_WORK`].
    fn work_for(&self, nodes: u64) -> Result<u64, ValidationIssue> {
        let work = self.cost.saturating_mul(nodes);
        if work > MAX_VALIDATION_WORK {
            return Err(budget_issue(format!(
                "the answer was not checked: that could take {work} subschema checks (schema cost {} × {nodes} answer values), over the limit of {MAX_VALIDATION_WORK}",
                self.cost
            )));
        }
        Ok(work)
    }
}

impl From<ValidationIssue> for ValidationReport {
    fn from(issue: ValidationIssue) -> Self {
        Self {
            issues: vec![issue],
            more_errors: 0,
        }
    }
}

/// The pattern at `pointer` (a `pattern`, or a name of a `patternProperties`) that the regex
/// engine refuses for its size alone, so that the error says so instead of calling valid ECMA
/// syntax "not a regex".
fn too_big_pattern(schema: &Value, pointer: &str) -> Option<String> {
    let (parent, last) = pointer.rsplit_once('/')?;
    let pattern = if parent.ends_with("/patternProperties") || parent == "patternProperties" {
        last.replace("~1", "/").replace("~0", "~")
    } else {
        schema.pointer(pointer)?.as_str()?.to_owned()
    };
    matches!(
        regex::Regex::new(&super::pattern::to_rust_syntax(&pattern)),
        Err(regex::Error::CompiledTooBig(_))
    )
    .then_some(pattern)
}

/// One root-level issue with the keyword `budget`.
fn budget_issue(message: String) -> ValidationIssue {
    ValidationIssue {
        instance_path: String::new(),
        schema_path: String::new(),
        keyword: "budget".to_owned(),
        message,
        allowed: None,
    }
}

/// Turns one `jsonschema` error into a [`ValidationIssue`].
fn issue(e: jsonschema::ValidationError<'_>) -> ValidationIssue {
    use jsonschema::error::ValidationErrorKind as K;
    let allowed = match e.kind() {
        K::Enum { options } => Some(match options.as_ref() {
            Value::Array(values) => values.clone(),
            other => vec![other.clone()],
        }),
        K::Constant { expected_value } => Some(vec![expected_value.as_ref().clone()]),
        _ => None,
    };
    let full = e.to_string();
    let message = if full.chars().count() > MAX_MESSAGE_CHARS {
        shorten(e.masked().to_string())
    } else {
        full
    };
    ValidationIssue {
        instance_path: e.instance_path().to_string(),
        schema_path: e.schema_path().to_string(),
        keyword: e.kind().keyword().to_owned(),
        message,
        allowed,
    }
}

/// Cuts a message to [`MAX_MESSAGE_CHARS`] characters, marking the cut.
fn shorten(message: String) -> String {
    match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &message[..cut]),
        None => message,
    }
}

/// Refuses schemas deeper than [`MAX_SCHEMA_DEPTH`] or larger than [`MAX_SCHEMA_NODES`], without
/// recursion (it stops at the first limit crossed).
pub fn check_depth_and_size(schema: &Value) -> Result<(), SchemaError> {
    let mut nodes = 0usize;
    let mut stack: Vec<(&Value, usize)> = vec![(schema, 1)];
    while let Some((v, depth)) = stack.pop() {
        nodes += 1;
        if nodes > MAX_SCHEMA_NODES {
            return Err(SchemaError::TooLarge {
                nodes,
                limit: MAX_SCHEMA_NODES,
            });
        }
        if depth > MAX_SCHEMA_DEPTH {
            return Err(SchemaError::TooDeep {
                depth,
                limit: MAX_SCHEMA_DEPTH,
            });
        }
        match v {
            Value::Object(m) => stack.extend(m.values().map(|c| (c, depth + 1))),
            Value::Array(a) => stack.extend(a.iter().map(|c| (c, depth + 1))),
            _ => {}
        }
    }
    Ok(())
}

/// Refuses schemas whose [`super::cost::schema_cost`] is over [`MAX_SCHEMA_COST`] (validating
/// them could take seconds and gigabytes for a one-key answer); returns the cost otherwise.
pub fn check_cost(schema: &Value) -> Result<u64, SchemaError> {
    let estimate = super::cost::schema_cost(schema);
    if estimate > MAX_SCHEMA_COST {
        return Err(SchemaError::TooExpensive {
            estimate,
            budget: MAX_SCHEMA_COST,
        });
    }
    Ok(estimate)
}

/// The number of JSON values in `v`, or `Err(depth)` when it nests deeper than `limit` (the
/// first depth found past it).
fn count_nodes(v: &Value, limit: usize) -> Result<u64, usize> {
    let mut nodes: u64 = 0;
    let mut stack: Vec<(&Value, usize)> = vec![(v, 1)];
    while let Some((v, depth)) = stack.pop() {
        nodes += 1;
        if depth > limit {
            return Err(depth);
        }
        match v {
            Value::Object(m) => stack.extend(m.values().map(|c| (c, depth + 1))),
            Value::Array(a) => stack.extend(a.iter().map(|c| (c, depth + 1))),
            _ => {}
        }
    }
    Ok(nodes)
}

/// The required keys of `schema` absent from the top-level object `answer`. `required` applies
/// to objects only: an answer of another type (the root of an array schema) misses none. Only
/// presence counts; `null` values are present.
pub fn missing_required_keys(schema: &ResponseSchema, answer: &Value) -> Vec<String> {
    let Some(obj) = answer.as_object() else {
        return Vec::new();
    };
    schema
        .required_keys()
        .into_iter()
        .filter(|k| !obj.contains_key(*k))
        .map(str::to_owned)
        .collect()
}

/// A short human list of issues, one line each: `/path: message (allowed: "a", "b")`. The root
/// is shown as `/`. At most 20 lines, then `… and N more` (the unlisted issues plus
/// `more_errors`, the errors not even collected). Used in retry feedback.
pub fn render_issues(issues: &[ValidationIssue], more_errors: u64) -> String {
    let mut lines: Vec<String> = issues
        .iter()
        .take(MAX_RENDERED_ISSUES)
        .map(|i| {
            let path = super::shown_pointer(&i.instance_path);
            let mut line = format!("{path}: {}", i.message);
            if let Some(allowed) = &i.allowed {
                let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
                line.push_str(&format!(" (allowed: {})", list.join(", ")));
            }
            line
        })
        .collect();
    let unlisted = issues.len().saturating_sub(MAX_RENDERED_ISSUES) as u64 + more_errors;
    if unlisted > 0 {
        lines.push(format!("… and {unlisted} more"));
    }
    lines.join("\n")
}

mod compile_copy;

mod shallow;
pub use shallow::{ShallowCheck, shallow_check};

#[cfg(test)]
mod tests;

#[cfg(test)]
mod budget_tests;

#[cfg(test)]
mod dialect_tests;
