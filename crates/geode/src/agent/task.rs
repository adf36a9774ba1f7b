//! The worker's own language: a typed [`Task`] in, `Result<`[`Answer`]`, `[`RunError`]`>` out.
//!
//! The process protocol ([`crate::protocol`]) reads GEODE's request shape
//! and converts it into a `Task` at the edge; [`crate::Client`] builds a `Task` directly. Nothing
//! inside the worker reads a string to learn what happened: a failed run is a [`RunError`]
//! variant that keeps its typed source.

use crate::ledger::GuaranteeLedger;
use crate::llm::call::AdapterError;
use crate::llm::request::{Message, ToolChoice, ToolSpec, ToolUse};
use crate::media::{Media, PartRecord};
use crate::schema::SchemaError;
use crate::schema::formats::FormatMode;
use crate::schema::validate::Validation;
use crate::schema::{ResponseSchema, TextConstraint};
use crate::vocab::TerminationReason;
use crate::vocab::{Require, Usage};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// What a run that produced no text reports (GEODE's wording).
pub(crate) const NO_RESPONSE: &str = "No response from sub-agent";

/// Where a task runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Route {
    /// The configured default adapter (else the first configured one) and its default model.
    #[default]
    Default,
    /// The adapter that serves this model name.
    Model(String),
    /// A named adapter, with its configured model unless one is given.
    Adapter {
        /// The registry name (`openai-payg`, `local`, a `[providers.NAME]`, ...).
        name: String,
        /// The model, when not the adapter's default.
        model: Option<String>,
    },
}

impl Route {
    /// The adapter this route names, if any.
    pub fn adapter(&self) -> Option<&str> {
        match self {
            Self::Adapter { name, .. } => Some(name),
            _ => None,
        }
    }

    /// The model this route names ("" when the adapter's default applies).
    pub fn model(&self) -> &str {
        match self {
            Self::Model(m) | Self::Adapter { model: Some(m), .. } => m,
            _ => "",
        }
    }
}

/// What shape the answer must have.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Output {
    /// Free text: nothing is checked.
    #[default]
    Text,
    /// A JSON value matching this schema.
    Schema(ResponseSchema),
    /// Text meeting a choice, regex or grammar constraint.
    Constraint(TextConstraint),
}

impl Output {
    /// The schema, when the answer is JSON.
    pub fn schema(&self) -> Option<&ResponseSchema> {
        match self {
            Self::Schema(s) => Some(s),
            _ => None,
        }
    }

    /// The text constraint, when there is one.
    pub fn constraint(&self) -> Option<&TextConstraint> {
        match self {
            Self::Constraint(c) => Some(c),
            _ => None,
        }
    }
}

/// How much a task may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budgets {
    /// The hard wall-clock limit of the whole task; the one retry runs only when the first
    /// attempt took under half of it.
    pub timeout: Duration,
    /// The agent loop's own time budget, per attempt.
    pub time_budget: Option<Duration>,
    /// Output tokens per call.
    pub max_tokens: u32,
    /// LLM rounds per attempt (0 = unlimited).
    pub max_rounds: u32,
    /// Extended-thinking tokens (0 = off).
    pub thinking: u32,
}

impl Budgets {
    /// A limit given in seconds (a flag, a file, a request field), as a duration a deadline can
    /// be made from: at most 10^9 s (about 31 years), so that `now + limit` cannot overflow.
    /// The caller has refused what is not a positive, finite number.
    pub fn seconds(s: f64) -> Duration {
        Duration::from_secs_f64(s.clamp(0.0, 1e9))
    }
}

impl Default for Budgets {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(600),
            time_budget: None,
            max_tokens: 32768,
            max_rounds: 0,
            thinking: 0,
        }
    }
}

/// One task for the worker.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// The user turn.
    pub prompt: String,
    /// Images and documents the user turn shows the model, before its text.
    pub parts: Vec<Media>,
    /// Earlier turns of the conversation, before the prompt (a gateway's chat history).
    pub history: Vec<Message>,
    /// The system prompt ("" = none).
    pub system: String,
    /// Where it runs.
    pub route: Route,
    /// Adapters to try when the routed one fails: `None` takes the configuration's chain (and
    /// only when the route names no adapter); `Some` applies always.
    pub fallback: Option<Vec<String>>,
    /// What the answer must be.
    pub output: Output,
    /// The guarantee the route must give, checked before any call.
    pub require: Require,
    /// Which check decides the retry and success.
    pub validation: Validation,
    /// Whether an answer that fails its check may be read by the declared repair tier
    /// ([`crate::schema::repair`]); off unless asked.
    pub repair: bool,
    /// Whether the environment's response cache ([`crate::cache`]) may answer this task and
    /// keep its answer; on by default, and without effect when the environment has no cache.
    pub cache: bool,
    /// Whose answers the cache keeps for this task: entries kept under one scope never answer
    /// another (the gateway scopes by inbound key, so one tenant never reads another's answer).
    /// `None`: the one shared scope.
    pub cache_scope: Option<String>,
    /// How full validation treats `format`.
    pub formats: FormatMode,
    /// Time, token and round limits.
    pub budgets: Budgets,
    /// Reasoning effort, for adapters that take one.
    pub effort: crate::vocab::Effort,
    /// Sampling temperature (`None`: the provider's default).
    pub temperature: Option<f32>,
    /// Tools the caller runs: offered to the model beside the worker's own; a turn whose calls
    /// to them are valid ends with those calls ([`Answer::tool_calls`]) for the caller to run.
    pub tools: Vec<ToolSpec>,
    /// How the model may use the tools.
    pub tool_choice: ToolChoice,
}

impl Task {
    /// What the ledger keeps of every image and document the task sends: the earlier turns'
    /// first, then the user turn's.
    pub fn part_records(&self) -> Vec<PartRecord> {
        let earlier = self
            .history
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(crate::llm::request::ContentBlock::part_record);
        earlier
            .chain(self.parts.iter().map(Media::record))
            .collect()
    }

    /// A free-text task with the default route, budgets and policy.
    pub fn new(prompt: impl Into<String>) -> Self {
        Self {
            prompt: prompt.into(),
            parts: Vec::new(),
            history: Vec::new(),
            system: String::new(),
            route: Route::Default,
            fallback: None,
            output: Output::Text,
            require: Require::BestEffort,
            validation: Validation::Full,
            repair: false,
            cache: true,
            cache_scope: None,
            formats: FormatMode::Assert,
            budgets: Budgets::default(),
            effort: crate::vocab::Effort::High,
            temperature: None,
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
        }
    }
}

/// A finished run: the last answer, its checked value and what happened.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The last answer's text.
    pub text: String,
    /// The JSON value read from it, when one was asked for and could be read.
    pub value: Option<Value>,
    /// The calls to the caller's tools ([`Task::tools`]) the turn ended in, each with arguments
    /// valid against the tool's schema; when there are any, the termination is
    /// `caller_tool_calls` and no final answer was checked yet.
    pub tool_calls: Vec<ToolUse>,
    /// How the last attempt ended.
    pub termination: TerminationReason,
    /// Usage over all attempts.
    pub usage: Usage,
    /// Wall time of the whole task.
    pub elapsed: Duration,
    /// The guarantee ledger.
    pub ledger: GuaranteeLedger,
}

impl Answer {
    /// An answer with nothing in it but the ledger: what a task refused before any call has.
    pub(crate) fn empty(ledger: GuaranteeLedger) -> Self {
        Self {
            text: String::new(),
            value: None,
            tool_calls: Vec::new(),
            termination: TerminationReason::Unknown,
            usage: Usage::default(),
            elapsed: Duration::ZERO,
            ledger,
        }
    }
}

/// Why a task could not be given an adapter ([`crate::agent::resolve`]). All are configuration errors (exit 2).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResolveError {
    /// No adapter can serve the request (unknown name, or `require` removed every candidate).
    #[error(transparent)]
    Routing(#[from] crate::llm::routing::RoutingError),
    /// The schema breaks the chosen adapter's provider limits.
    #[error(
        "schema refused before the call: {adapter}: {}",
        crate::schema::preflight::violations_text(violations)
    )]
    Preflight {
        /// The chosen adapter.
        adapter: String,
        /// Every limit broken.
        violations: Vec<crate::schema::preflight::LimitViolation>,
    },
    /// The adapter could not be built (missing key, credential file, bad setting).
    #[error(transparent)]
    Build(#[from] crate::llm::call::AdapterError),
}

/// Why a task gave no answer. `Display` is one line, scrubbed of secrets; every variant that
/// ran keeps the last (possibly empty) answer and its ledger.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The task cannot run on this route, found before any call: `require` is not met, or a
    /// text constraint does not compile ([`Refusal`] says which).
    #[error("{reason}")]
    Refused {
        /// Which refusal.
        why: Refusal,
        /// Why, in words.
        reason: String,
        /// The ledger (adapter and model only).
        last: Box<Answer>,
    },
    /// No adapter could be given to the task: unknown name, `require` removed every
    /// candidate, provider limits, a missing key.
    #[error(transparent)]
    Route(#[from] ResolveError),
    /// The response schema does not compile.
    #[error("unusable response_schema: {source}")]
    Schema {
        /// The compiler's error.
        #[source]
        source: SchemaError,
        /// The ledger (adapter and model only).
        last: Box<Answer>,
    },
    /// A tool of the task cannot be offered: two share a name, or a schema does not compile.
    #[error("unusable tools: {source}")]
    Tools {
        /// The registry's error.
        #[source]
        source: crate::agent::tools::ToolRegistryError,
        /// The ledger (adapter and model only).
        last: Box<Answer>,
    },
    /// The last adapter call failed.
    #[error("{message}")]
    Adapter {
        /// The error as the run reports it (the loop may say more than the adapter).
        message: String,
        /// The adapter's error.
        #[source]
        source: Arc<AdapterError>,
        /// What the run had.
        last: Box<Answer>,
    },
    /// The answer was cut at the output token limit, and no retry could give a whole one.
    #[error("{message}")]
    Truncated {
        /// What failed.
        message: String,
        /// The cut answer.
        last: Box<Answer>,
    },
    /// The model refused to answer.
    #[error("{message}")]
    ModelRefused {
        /// What failed.
        message: String,
        /// What the run had.
        last: Box<Answer>,
    },
    /// The answer still failed its check after the retry (or the retry was not allowed).
    #[error("{message}")]
    Invalid {
        /// What failed.
        message: String,
        /// The failed answer.
        last: Box<Answer>,
    },
    /// The run ended without an answer for a reason that is neither the answer's fault nor the
    /// provider's: no text came back, or the loop stopped (rounds, time budget).
    #[error("{message}")]
    Ended {
        /// Why.
        message: String,
        /// What the run had.
        last: Box<Answer>,
    },
}

impl RunError {
    /// The last answer and its ledger (`None` for a routing failure, which ran nothing).
    pub fn last(&self) -> Option<&Answer> {
        match self {
            Self::Refused { last, .. }
            | Self::Schema { last, .. }
            | Self::Tools { last, .. }
            | Self::Adapter { last, .. }
            | Self::Truncated { last, .. }
            | Self::ModelRefused { last, .. }
            | Self::Invalid { last, .. }
            | Self::Ended { last, .. } => Some(last),
            Self::Route(_) => None,
        }
    }

    /// What this failure asks of whoever ran the task: the one rule behind the process exit
    /// codes ([`crate::protocol::exit`]), a batch's summary and the client's errors.
    ///
    /// | failure | class |
    /// |---|---|
    /// | refused, unroutable, a schema or tools that do not compile | [`Failure::Usage`] |
    /// | an adapter error of a configuration kind (`config`, `unsupported`) | [`Failure::Usage`] |
    /// | an invalid, truncated or refused answer, a run that ended without one, a cancelled call | [`Failure::Invalid`] |
    /// | any other adapter error (auth, rate limit, server, transport, timeout, ...) | [`Failure::Provider`] |
    pub fn failure(&self) -> Failure {
        use crate::vocab::ErrorKind;
        match self {
            Self::Refused { .. } | Self::Route(_) | Self::Schema { .. } | Self::Tools { .. } => {
                Failure::Usage
            }
            Self::Adapter { source, .. } => match source.kind() {
                ErrorKind::Config | ErrorKind::Unsupported => Failure::Usage,
                ErrorKind::Cancelled => Failure::Invalid,
                _ => Failure::Provider,
            },
            Self::Truncated { .. }
            | Self::ModelRefused { .. }
            | Self::Invalid { .. }
            | Self::Ended { .. } => Failure::Invalid,
        }
    }
}

/// Which refusal stopped a task before any call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// The route's mode for this output is below the task's `require`.
    RequireUnmet,
    /// The text constraint does not compile.
    UnusableConstraint,
    /// The route cannot take the task's images or documents, or they break its limits.
    InputsNotTaken,
}

/// The three classes of failure: what the caller must change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// The request, its route or the configuration must change (exit 2).
    Usage,
    /// The answer did not hold (exit 1).
    Invalid,
    /// The provider or the transport failed (exit 3).
    Provider,
}
