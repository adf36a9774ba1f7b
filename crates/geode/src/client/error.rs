//! [`Error`]: why a [`crate::Client`] call did not give a value. Every variant carries the
//! ledger of what happened (empty apart from adapter and model when nothing was sent).

use crate::agent::task::{Failure, Refusal, ResolveError, RunError};
use crate::ledger::{CheckFailure, GuaranteeLedger, WorkerCheck};
use crate::llm::routing::{RejectionKind, RoutingError};
use crate::protocol::exit;
use crate::schema::validate::ValidationIssue;
use crate::vocab::ErrorKind;
use std::sync::Arc;

/// A failed client call. `Display` is one line; provider text has passed through
/// [`crate::secret::scrub`] (the worker scrubs every string of its result).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The request could not run here: configuration, routing, `require` unmet, a schema or
    /// constraint refused before any call, an adapter error of kind `config`/`unsupported`
    /// (exit code 2 in the CLI).
    #[error("configuration: {message}")]
    Config {
        /// What is wrong.
        message: String,
        /// What happened (no attempts when refused before any call).
        ledger: Box<GuaranteeLedger>,
        /// The typed error behind it, when there is one (routing, the schema, the tools, the
        /// adapter's construction).
        #[source]
        source: Option<Cause>,
    },
    /// `require` cannot be met on this route, found before any token was spent: the fixed
    /// adapter's mode for the schema is below it, or routing removed every candidate (exit code
    /// 2 in the CLI).
    #[error("not enforceable: {message}")]
    NotEnforceable {
        /// Why, naming the adapter's mode and the requirement.
        message: String,
        /// Adapter and model only: nothing was sent.
        ledger: Box<GuaranteeLedger>,
    },
    /// No route can take the call's images or documents (or they break its limits), found
    /// before any request (exit code 2 in the CLI). Nothing is dropped to answer from the text.
    #[error("inputs not taken: {message}")]
    InputsNotTaken {
        /// Which route cannot take what, and why.
        message: String,
        /// Adapter and model: nothing was sent.
        ledger: Box<GuaranteeLedger>,
    },
    /// The model refused to answer (a refusal stop, or a refusal in place of the answer; exit
    /// code 1).
    #[error("the model refused: {message}")]
    Refused {
        /// What the run reported.
        message: String,
        /// What happened.
        ledger: Box<GuaranteeLedger>,
    },
    /// The answer was cut at the output token limit; it is never repaired into a value (exit
    /// code 1).
    #[error("the answer was cut at the token limit: {message}")]
    Truncated {
        /// What the run reported.
        message: String,
        /// What happened.
        ledger: Box<GuaranteeLedger>,
    },
    /// The provider or transport failed (auth, rate limit, server, timeout, ...; exit code 3).
    #[error("provider failure ({}): {message}", kind.as_str())]
    Provider {
        /// The adapter error's kind (`AdapterError::kind`).
        kind: ErrorKind,
        /// The error.
        message: String,
        /// What happened.
        ledger: Box<GuaranteeLedger>,
        /// The adapter's error.
        #[source]
        source: Cause,
    },
    /// The answer still failed its check after the retry (exit code 1).
    #[error("invalid answer after the retry: {}", summary(.errors))]
    Invalid {
        /// The validation errors of the last answer (one synthetic issue with keyword
        /// `answer` when no JSON value could be read from it at all).
        errors: Vec<ValidationIssue>,
        /// What happened.
        ledger: Box<GuaranteeLedger>,
    },
    /// The answer matched the schema but not the Rust type (a schema the type's `JsonSchema`
    /// describes more loosely than its `Deserialize` reads).
    #[error("answer does not deserialize into {type_name}: {message}")]
    Deserialize {
        /// The Rust type.
        type_name: &'static str,
        /// serde's message.
        message: String,
        /// What happened.
        ledger: Box<GuaranteeLedger>,
    },
    /// The run was cancelled, or ended without an answer for a reason that is not the
    /// answer's fault nor the provider's (an intended ending such as `input_blocked`).
    #[error("run ended without an answer: {message}")]
    Ended {
        /// Why.
        message: String,
        /// What happened.
        ledger: Box<GuaranteeLedger>,
        /// The adapter's error, for a cancelled call.
        #[source]
        source: Option<Cause>,
    },
}

/// The typed error behind an [`Error`], shared (an `Error` is `Clone`). It derefs to the error
/// itself, so `Error::source()` gives the adapter's or routing's own error, which downcasts to its
/// type.
#[derive(Debug, Clone)]
pub struct Cause(Arc<dyn std::error::Error + Send + Sync + 'static>);

impl Cause {
    fn new(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(Arc::new(e))
    }
}

impl std::ops::Deref for Cause {
    type Target = dyn std::error::Error + Send + Sync + 'static;

    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

/// An empty ledger naming the route of a call that never ran.
fn named_ledger(adapter: &str, model: &str) -> GuaranteeLedger {
    GuaranteeLedger {
        adapter: adapter.to_owned(),
        model: model.to_owned(),
        ..GuaranteeLedger::default()
    }
}

fn summary(errors: &[ValidationIssue]) -> String {
    match errors.first() {
        None => "no details".to_owned(),
        Some(first) if errors.len() == 1 => {
            format!("{} at {:?}", first.message, first.instance_path)
        }
        Some(first) => format!(
            "{} at {:?} (and {} more)",
            first.message,
            first.instance_path,
            errors.len() - 1
        ),
    }
}

impl Error {
    /// The ledger of what happened.
    pub fn ledger(&self) -> &GuaranteeLedger {
        match self {
            Self::Config { ledger, .. }
            | Self::NotEnforceable { ledger, .. }
            | Self::InputsNotTaken { ledger, .. }
            | Self::Refused { ledger, .. }
            | Self::Truncated { ledger, .. }
            | Self::Provider { ledger, .. }
            | Self::Invalid { ledger, .. }
            | Self::Deserialize { ledger, .. }
            | Self::Ended { ledger, .. } => ledger,
        }
    }

    /// The class of this failure, as [`RunError::failure`] gives it for the run behind it (a
    /// value that does not deserialize is an invalid answer).
    pub fn failure(&self) -> Failure {
        match self {
            Self::Config { .. } | Self::NotEnforceable { .. } | Self::InputsNotTaken { .. } => {
                Failure::Usage
            }
            Self::Provider { .. } => Failure::Provider,
            Self::Invalid { .. }
            | Self::Refused { .. }
            | Self::Truncated { .. }
            | Self::Deserialize { .. }
            | Self::Ended { .. } => Failure::Invalid,
        }
    }

    /// The CLI's exit code for this error (see [`crate::protocol::exit`]).
    pub fn exit_code(&self) -> u8 {
        exit::code(self.failure())
    }

    /// A configuration error with an empty ledger naming `adapter` and `model`.
    pub(crate) fn config(message: impl Into<String>, adapter: &str, model: &str) -> Self {
        Self::Config {
            message: crate::secret::scrub(&message.into()),
            ledger: Box::new(named_ledger(adapter, model)),
            source: None,
        }
    }

    /// The error of a failed run, by its variant: `require` unmet before any call is
    /// [`Self::NotEnforceable`]; unroutable, an unusable text constraint, and adapter errors of
    /// a configuration kind, [`Self::Config`]; a cancelled call [`Self::Ended`]; other adapter
    /// errors [`Self::Provider`]; an answer cut at the token limit [`Self::Truncated`], a
    /// refusal [`Self::Refused`], any other answer that failed its check [`Self::Invalid`].
    /// `adapter` and `model` name the route of a task that never ran.
    pub(crate) fn from_run(e: RunError, adapter: &str, model: &str) -> Self {
        let message = crate::secret::scrub(&e.to_string());
        let failure = e.failure();
        let ledger = |last: Box<crate::agent::task::Answer>| Box::new(last.ledger);
        match e {
            RunError::Route(ResolveError::Routing(RoutingError::NoCandidate {
                reasons, ..
            })) if reasons
                .iter()
                .any(|r| r.kind == RejectionKind::InputsNotTaken) =>
            {
                Self::InputsNotTaken {
                    message,
                    ledger: Box::new(named_ledger(adapter, model)),
                }
            }
            RunError::Route(ResolveError::Routing(RoutingError::NoCandidate { .. })) => {
                Self::NotEnforceable {
                    message,
                    ledger: Box::new(named_ledger(adapter, model)),
                }
            }
            RunError::Route(route) => Self::Config {
                message,
                ledger: Box::new(named_ledger(adapter, model)),
                source: Some(Cause::new(route)),
            },
            RunError::Refused {
                why: Refusal::RequireUnmet,
                last,
                ..
            } => Self::NotEnforceable {
                message,
                ledger: ledger(last),
            },
            RunError::Refused {
                why: Refusal::InputsNotTaken,
                last,
                ..
            } => Self::InputsNotTaken {
                message,
                ledger: ledger(last),
            },
            RunError::Refused { last, .. } => Self::Config {
                message,
                ledger: ledger(last),
                source: None,
            },
            RunError::Truncated { last, .. } => Self::Truncated {
                message,
                ledger: ledger(last),
            },
            RunError::ModelRefused { last, .. } => Self::Refused {
                message,
                ledger: ledger(last),
            },
            RunError::Schema { source, last } => Self::Config {
                message,
                ledger: ledger(last),
                source: Some(Cause::new(source)),
            },
            RunError::Tools { source, last } => Self::Config {
                message,
                ledger: ledger(last),
                source: Some(Cause::new(source)),
            },
            RunError::Adapter { source, last, .. } => {
                let (ledger, kind) = (ledger(last), source.kind());
                let source = Cause(source);
                match failure {
                    Failure::Usage => Self::Config {
                        message,
                        ledger,
                        source: Some(source),
                    },
                    Failure::Invalid => Self::Ended {
                        message,
                        ledger,
                        source: Some(source),
                    },
                    Failure::Provider => Self::Provider {
                        kind,
                        message,
                        ledger,
                        source,
                    },
                }
            }
            RunError::Invalid { last, .. } => Self::Invalid {
                errors: issues(&last.ledger, &message),
                ledger: ledger(last),
            },
            RunError::Ended { last, .. } => Self::Ended {
                message,
                ledger: ledger(last),
                source: None,
            },
        }
    }
}

/// The validation issues of the final answer, or one issue naming the check that failed.
fn issues(ledger: &GuaranteeLedger, message: &str) -> Vec<ValidationIssue> {
    if let Some(v) = &ledger.full_validation
        && !v.errors.is_empty()
    {
        return v.errors.clone();
    }
    let (keyword, detail) = match &ledger.worker_check {
        WorkerCheck::Fail {
            reason: CheckFailure::MissingKeys { keys },
        } => (
            "required",
            format!("missing required keys: {}", keys.join(", ")),
        ),
        WorkerCheck::Fail {
            reason: CheckFailure::ConstraintUnmet { constraint },
        } => (
            "constraint",
            format!("the answer does not meet the {constraint}"),
        ),
        _ => ("answer", message.to_owned()),
    };
    vec![ValidationIssue {
        instance_path: String::new(),
        schema_path: String::new(),
        keyword: keyword.to_owned(),
        message: detail,
        allowed: None,
    }]
}
