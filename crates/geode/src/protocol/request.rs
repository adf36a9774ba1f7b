//! The worker's input as the process protocol has it: the [`WorkerRequest`] with GEODE's
//! fields and defaults (docs/reference.md#workerrequest), how it is read, and its conversion into a
//! typed [`Task`] ([`WorkerRequest::task`]).
//!
//! The worker's stdin may hold anything. [`parse_request`] turns bytes into a request or a typed
//! [`WorkerError`] (empty, too large, not UTF-8, not JSON, more than one value, not an object, no
//! `task_id`, a bad field); [`request_task_id`] recovers the task id for the failed result
//! (`"unknown"` when none can be read, as GEODE does). [`WorkerRequest::task`] refuses a
//! request that cannot run (a non-positive or non-finite `timeout_s`, a constraint that does not
//! compile, a schema and a text constraint at once) before anything is sent.

use crate::agent::task::{Budgets, Output, Route, Task};
use crate::media::{Media, MediaError, MediaKind};
use crate::schema::formats::FormatMode;
use crate::schema::validate::Validation;
use crate::schema::{ConstraintError, ResponseSchema, TextConstraint};
use crate::vocab::Require;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// One task for a worker. Field names and defaults ([`WorkerRequest::default`], for every
/// field but `task_id`, which [`parse_request`] requires) are GEODE's; geode's additions
/// (`validation`, `require`, `adapter`, `text_constraint`, `max_rounds`, `formats`, `repair`,
/// `cache`) are omitted from JSON when they hold their defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkerRequest {
    /// The task id (required by [`parse_request`]).
    pub task_id: String,
    /// The task type, e.g. `analyze`.
    pub task_type: String,
    /// The prompt text.
    pub description: String,
    /// Parameters appended to the prompt as JSON.
    pub args: Map<String, Value>,
    /// Tools the task may not use.
    pub denied_tools: Vec<String>,
    /// The model ("" inherits the default).
    pub model: String,
    /// The provider ("" infers it from the model).
    pub provider: String,
    /// Output token limit per call.
    pub subagent_max_tokens: u32,
    /// The hard wall-clock limit in seconds; the retry gate is at 50% of it.
    pub timeout_s: f64,
    /// The loop's time budget in seconds (0 = none).
    pub time_budget_s: f64,
    /// Extended-thinking budget.
    pub thinking_budget: u32,
    /// Reasoning effort.
    pub effort: String,
    /// Isolation mode (carried, unused).
    pub isolation: String,
    /// Agent name (carried).
    pub agent_name: String,
    /// The agent's system prompt.
    pub agent_system_prompt: String,
    /// Toolkit name (carried).
    pub toolkit: String,
    /// Parent session key (carried).
    pub parent_session_key: String,
    /// Parent session id (carried).
    pub parent_session_id: String,
    /// Adapter source: `payg`, `subscription`, `adapter`, or an adapter name ("" = infer).
    pub source: String,
    /// Tools the task may use (empty = all).
    pub agent_allowed_tools: Vec<String>,
    /// The schema of the final answer.
    pub response_schema: Option<ResponseSchema>,
    /// Emit activity events (carried).
    pub emit_activity: bool,
    /// Resume a session (carried).
    pub resume: bool,
    /// geode: which check decides the retry and success.
    #[serde(skip_serializing_if = "is_default")]
    pub validation: Validation,
    /// geode: the guarantee the caller requires of the adapter.
    #[serde(skip_serializing_if = "is_default")]
    pub require: Require,
    /// geode: an explicit adapter name ("" = route).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub adapter: String,
    /// geode: a choice/regex/grammar constraint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_constraint: Option<TextConstraint>,
    /// geode: maximum LLM rounds per attempt (0 = unlimited).
    #[serde(skip_serializing_if = "is_default")]
    pub max_rounds: u32,
    /// geode: how full validation treats `format`: `assert` (default) or `annotate`.
    #[serde(skip_serializing_if = "is_default")]
    pub formats: FormatMode,
    /// geode: let the declared repair tier read an answer that fails its check (default off).
    #[serde(skip_serializing_if = "is_default")]
    pub repair: bool,
    /// geode: `false` keeps this task away from the worker's response cache (no replay, nothing
    /// kept); absent or `true` uses it when the worker has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<bool>,
    /// geode: images and documents the prompt shows the model, each `{"image": WHERE}` or
    /// `{"document": WHERE}`, where is a file path, an `https` URL or a `data:` URL; the
    /// ledger records each (kind, type, size, SHA-256).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<PartRef>,
    /// Fields geode does not know; ignored, and named in the ledger.
    #[serde(flatten, skip_serializing)]
    pub unknown: Map<String, Value>,
}

/// One of `parts`: an image or a document, and where it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum PartRef {
    /// An image: its bytes must be PNG, JPEG, GIF or WebP.
    Image(String),
    /// A document: a PDF or plain text (or, by URL, what the provider reads).
    Document(String),
}

impl PartRef {
    /// The part: a `data:` URL decoded, an `https` URL passed on as it is, anything else read
    /// as a file path (relative to the working directory). Its kind must match its bytes.
    pub fn load(&self) -> Result<Media, MediaError> {
        let (kind, place) = match self {
            Self::Image(p) => (MediaKind::Image, p.as_str()),
            Self::Document(p) => (MediaKind::Document, p.as_str()),
        };
        let lower = place.trim_start().to_ascii_lowercase();
        let part = if lower.starts_with("data:") {
            Media::from_data_url(place.trim(), None)?
        } else if lower.contains("://") {
            return Media::from_url(place.trim(), kind);
        } else {
            Media::from_path(std::path::Path::new(place))?
        };
        part.expect(kind, place)
    }
}

impl WorkerRequest {
    /// A request with GEODE's defaults.
    pub fn new(task_id: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            task_id: task_id.into(),
            description: description.into(),
            ..Self::default()
        }
    }

    /// The prompt: the description plus `Parameters: <args JSON>` when args are given.
    pub fn prompt(&self) -> String {
        if self.args.is_empty() {
            self.description.clone()
        } else {
            format!(
                "{}\n\nParameters: {}",
                self.description,
                Value::Object(self.args.clone())
            )
        }
    }
}

impl Default for WorkerRequest {
    fn default() -> Self {
        Self {
            task_id: String::new(),
            task_type: String::new(),
            description: String::new(),
            args: Map::new(),
            denied_tools: Vec::new(),
            model: String::new(),
            provider: String::new(),
            subagent_max_tokens: 32768,
            timeout_s: 600.0,
            time_budget_s: 0.0,
            thinking_budget: 0,
            effort: "high".to_owned(),
            isolation: String::new(),
            agent_name: String::new(),
            agent_system_prompt: String::new(),
            toolkit: String::new(),
            parent_session_key: String::new(),
            parent_session_id: String::new(),
            source: String::new(),
            agent_allowed_tools: Vec::new(),
            response_schema: None,
            emit_activity: false,
            resume: false,
            validation: Validation::Full,
            require: Require::BestEffort,
            adapter: String::new(),
            text_constraint: None,
            max_rounds: 0,
            formats: FormatMode::Assert,
            repair: false,
            cache: None,
            parts: Vec::new(),
            unknown: Map::new(),
        }
    }
}

/// The largest request [`parse_request`] reads (64 MiB): a bound on memory for hostile stdin.
pub const MAX_REQUEST_BYTES: usize = 64 << 20;

/// Longest [`WorkerError::BadField`] message, in characters (longer ones are cut with `…`).
pub const MAX_FIELD_ERROR_CHARS: usize = 300;

/// The task id of a failed result when the request gave none that could be read.
pub const UNKNOWN_TASK_ID: &str = "unknown";

/// Why a request could not be read or cannot run.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorkerError {
    /// Nothing on stdin.
    #[error("empty request: expected one WorkerRequest JSON line on stdin")]
    EmptyInput,
    /// More than [`MAX_REQUEST_BYTES`].
    #[error("request is larger than {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The bytes are not UTF-8.
    #[error("request is not valid UTF-8 (invalid byte at offset {offset})")]
    InvalidUtf8 {
        /// The offset of the first invalid byte.
        offset: usize,
    },
    /// The line is not JSON.
    #[error("request is not valid JSON: {0}")]
    InvalidJson(String),
    /// Something follows the request (a second line, a second value).
    #[error(
        "expected exactly one WorkerRequest, but more input follows it at line {line}, column {column}"
    )]
    TrailingInput {
        /// 1-based line where the extra input starts.
        line: usize,
        /// 1-based column where the extra input starts.
        column: usize,
    },
    /// The JSON is not an object.
    #[error("request must be a JSON object")]
    NotAnObject,
    /// `task_id` is missing.
    #[error("request has no task_id")]
    MissingTaskId,
    /// A field has the wrong type or value.
    #[error("bad request field: {0}")]
    BadField(String),
    /// `timeout_s` is not a positive, finite number of seconds.
    #[error("timeout_s must be a positive, finite number of seconds, got {0}")]
    InvalidTimeout(String),
    /// The `text_constraint` does not compile.
    #[error("unusable text_constraint: {0}")]
    Constraint(#[from] ConstraintError),
    /// Both a `response_schema` and a `text_constraint`: an answer is JSON or constrained text,
    /// not both.
    #[error("a request takes a response_schema or a text_constraint, not both")]
    SchemaAndConstraint,
    /// A part in `parts` cannot be read (the message names it by path or kind, never by its
    /// content).
    #[error("parts[{index}]: {message}")]
    Part {
        /// Its place in `parts`.
        index: usize,
        /// Why.
        message: String,
    },
}

impl WorkerRequest {
    /// The typed task this request describes, or why it cannot run (refused before anything is
    /// sent): a `timeout_s` that is not a positive, finite number of seconds, a
    /// `text_constraint` that does not compile, or a schema and a constraint at once.
    ///
    /// The route is `adapter` when given, else `source` when it names an adapter, else the
    /// model's adapter, else the default. `provider` and the other carried fields do not change
    /// the task ([`Self::ignored_fields`]).
    pub fn task(&self) -> Result<Task, WorkerError> {
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0) {
            return Err(WorkerError::InvalidTimeout(self.timeout_s.to_string()));
        }
        let output = match (&self.response_schema, &self.text_constraint) {
            (Some(_), Some(_)) => return Err(WorkerError::SchemaAndConstraint),
            (Some(s), None) => Output::Schema(s.clone()),
            (None, Some(c)) => {
                c.validate()?;
                Output::Constraint(c.clone())
            }
            (None, None) => Output::Text,
        };
        let named = if !self.adapter.is_empty() {
            Some(self.adapter.clone())
        } else {
            crate::llm::registry::spec(&self.source).map(|s| s.name.to_owned())
        };
        let model = (!self.model.is_empty()).then(|| self.model.clone());
        let route = match (named, model) {
            (Some(name), model) => Route::Adapter { name, model },
            (None, Some(m)) => Route::Model(m),
            (None, None) => Route::Default,
        };
        let parts = self
            .parts
            .iter()
            .enumerate()
            .map(|(index, p)| {
                p.load().map_err(|e| WorkerError::Part {
                    index,
                    message: e.to_string(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Task {
            prompt: self.prompt(),
            parts,
            history: Vec::new(),
            system: self.agent_system_prompt.clone(),
            route,
            fallback: None,
            output,
            require: self.require,
            validation: self.validation,
            repair: self.repair,
            cache: self.cache.unwrap_or(true),
            cache_scope: None,
            formats: self.formats,
            budgets: Budgets {
                timeout: Budgets::seconds(self.timeout_s),
                time_budget: (self.time_budget_s > 0.0)
                    .then(|| Budgets::seconds(self.time_budget_s)),
                max_tokens: self.subagent_max_tokens,
                max_rounds: self.max_rounds,
                thinking: self.thinking_budget,
            },
            effort: crate::vocab::Effort::from_label(&self.effort),
            temperature: None,
            tools: Vec::new(),
            tool_choice: Default::default(),
        })
    }

    /// Refuses a request that cannot run ([`Self::task`]).
    pub fn check(&self) -> Result<(), WorkerError> {
        self.task().map(drop)
    }

    /// The GEODE fields this request sets that geode carries but does not act on; the
    /// ledger names them.
    pub fn ignored_fields(&self) -> Vec<String> {
        let d = Self::default();
        [
            ("task_type", self.task_type != d.task_type),
            ("denied_tools", self.denied_tools != d.denied_tools),
            ("provider", self.provider != d.provider),
            (
                "source",
                !self.source.is_empty() && crate::llm::registry::spec(&self.source).is_none(),
            ),
            ("isolation", self.isolation != d.isolation),
            ("agent_name", self.agent_name != d.agent_name),
            ("toolkit", self.toolkit != d.toolkit),
            (
                "parent_session_key",
                self.parent_session_key != d.parent_session_key,
            ),
            (
                "parent_session_id",
                self.parent_session_id != d.parent_session_id,
            ),
            (
                "agent_allowed_tools",
                self.agent_allowed_tools != d.agent_allowed_tools,
            ),
            ("emit_activity", self.emit_activity != d.emit_activity),
            ("resume", self.resume != d.resume),
        ]
        .into_iter()
        .filter(|(_, set)| *set)
        .map(|(name, _)| name.to_owned())
        .collect()
    }
}

/// The first JSON value of `text` and the byte offset just after it (`None`: no value at all).
fn first_value(text: &str) -> Option<Result<(Value, usize), serde_json::Error>> {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let first = values.next()?;
    Some(first.map(|v| (v, values.byte_offset())))
}

/// Parses the worker's whole input: exactly one JSON object (one line, or pretty-printed),
/// surrounded by nothing but whitespace, then [`WorkerRequest::check`].
///
/// ```
/// use geode::protocol::{parse_request, WorkerError};
/// assert!(parse_request(b"{\"task_id\":\"t\"}\n").is_ok());
/// assert_eq!(parse_request(b"  \n"), Err(WorkerError::EmptyInput));
/// assert!(matches!(parse_request(b"\xff\xfe"), Err(WorkerError::InvalidUtf8 { offset: 0 })));
/// assert!(matches!(
///     parse_request(b"{\"task_id\":\"a\"}\n{\"task_id\":\"b\"}\n"),
///     Err(WorkerError::TrailingInput { line: 2, .. })
/// ));
/// ```
pub fn parse_request(input: &[u8]) -> Result<WorkerRequest, WorkerError> {
    if input.len() > MAX_REQUEST_BYTES {
        return Err(WorkerError::TooLarge {
            limit: MAX_REQUEST_BYTES,
        });
    }
    let text = std::str::from_utf8(input).map_err(|e| WorkerError::InvalidUtf8 {
        offset: e.valid_up_to(),
    })?;
    let (value, end) = first_value(text)
        .ok_or(WorkerError::EmptyInput)?
        .map_err(|e| WorkerError::InvalidJson(e.to_string()))?;
    let rest = &text[end..];
    if let Some(skip) = rest.find(|c: char| !c.is_whitespace()) {
        let at = &text[..end + skip];
        let line = at.matches('\n').count() + 1;
        let column = at.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        return Err(WorkerError::TrailingInput { line, column });
    }
    let Some(obj) = value.as_object() else {
        return Err(WorkerError::NotAnObject);
    };
    if !obj.contains_key("task_id") {
        return Err(WorkerError::MissingTaskId);
    }
    let req: WorkerRequest = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = if path == "." {
            inner.to_string()
        } else {
            format!("{path}: {inner}")
        };
        // serde quotes the offending value ("invalid type: string \"…\""): a 50 MB string in
        // a wrongly typed field must not become a 50 MB error line, result or summary.
        WorkerError::BadField(crate::secret::clip(&message, MAX_FIELD_ERROR_CHARS))
    })?;
    req.check()?;
    Ok(req)
}

/// Parses one request line (see [`parse_request`]).
pub fn parse_request_line(line: &str) -> Result<WorkerRequest, WorkerError> {
    parse_request(line.as_bytes())
}

/// The `task_id` string of the first JSON value in `input`, for the result of a request that
/// could not be parsed; [`UNKNOWN_TASK_ID`] when there is none.
pub fn request_task_id(input: &[u8]) -> String {
    std::str::from_utf8(input)
        .ok()
        .filter(|_| input.len() <= MAX_REQUEST_BYTES)
        .and_then(|text| first_value(text)?.ok())
        .and_then(|(v, _)| v.get("task_id")?.as_str().map(str::to_owned))
        .unwrap_or_else(|| UNKNOWN_TASK_ID.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::TextConstraint;

    /// An input and what its error must look like.
    type Case = (&'static [u8], fn(&WorkerError) -> bool);

    #[test]
    fn every_kind_of_bad_input_is_a_typed_error() {
        let cases: [Case; 8] = [
            (b"", |e| *e == WorkerError::EmptyInput),
            (b"\x00\x01\xff", |e| {
                matches!(e, WorkerError::InvalidUtf8 { offset: 2 })
            }),
            (b"{\"task_id\":\"t\xc3\x28\"}", |e| {
                matches!(e, WorkerError::InvalidUtf8 { offset: 13 })
            }),
            (b"[{\"task_id\":\"t\"}]", |e| *e == WorkerError::NotAnObject),
            (b"{nope", |e| matches!(e, WorkerError::InvalidJson(_))),
            (b"{\"task_id\":\"a\"} {\"task_id\":\"b\"}", |e| {
                matches!(
                    e,
                    WorkerError::TrailingInput {
                        line: 1,
                        column: 17
                    }
                )
            }),
            (b"{\"task_id\":\"t\",\"timeout_s\":-5}", |e| {
                *e == WorkerError::InvalidTimeout("-5".into())
            }),
            (
                b"{\"task_id\":\"t\",\"text_constraint\":{\"kind\":\"regex\",\"value\":\"(\"}}",
                |e| matches!(e, WorkerError::Constraint(_)),
            ),
        ];
        for (input, ok) in cases {
            let err = parse_request(input).unwrap_err();
            assert!(ok(&err), "{:?}: {err:?}", String::from_utf8_lossy(input));
        }
        let pretty = b"{\n  \"task_id\": \"p\"\n}\n\n";
        assert_eq!(parse_request(pretty).unwrap().task_id, "p");
    }

    #[test]
    fn formats_defaults_to_assert_and_takes_annotate() {
        assert_eq!(
            parse_request(b"{\"task_id\":\"t\"}").unwrap().formats,
            FormatMode::Assert
        );
        let req = parse_request(b"{\"task_id\":\"t\",\"formats\":\"annotate\"}").unwrap();
        assert_eq!(req.formats, FormatMode::Annotate);
        assert!(matches!(
            parse_request(b"{\"task_id\":\"t\",\"formats\":\"strict\"}"),
            Err(WorkerError::BadField(_))
        ));
        let line = serde_json::to_string(&WorkerRequest::new("t", "x")).unwrap();
        assert!(!line.contains("formats"), "the default is omitted: {line}");
    }

    #[test]
    fn the_task_id_is_recovered_when_it_can_be_read() {
        assert_eq!(
            request_task_id(b"{\"task_id\":\"t-1\",\"timeout_s\":0}"),
            "t-1"
        );
        assert_eq!(
            request_task_id(b"{\"task_id\":\"a\"}\n{\"task_id\":\"b\"}"),
            "a"
        );
        for input in [&b""[..], b"\xff", b"[1]", b"{\"task_id\":7}", b"{nope"] {
            assert_eq!(request_task_id(input), UNKNOWN_TASK_ID);
        }
    }

    #[test]
    fn check_refuses_non_positive_and_non_finite_timeouts() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let req = WorkerRequest {
                timeout_s: bad,
                ..WorkerRequest::new("t", "x")
            };
            assert!(
                matches!(req.check(), Err(WorkerError::InvalidTimeout(_))),
                "{bad}"
            );
        }
        let mut req = WorkerRequest::new("t", "x");
        req.timeout_s = 0.001;
        assert_eq!(req.check(), Ok(()));
        req.text_constraint = Some(TextConstraint::Grammar("start: ((".into()));
        assert!(matches!(req.check(), Err(WorkerError::Constraint(_))));
    }
}
