//! The value types every layer speaks in: how a schema reached the wire, what was rewritten,
//! usage and stop reasons, and what kind of failure a call ended with.
//!
//! They live here, below [`crate::schema`], [`crate::llm`], [`crate::agent`] and
//! [`crate::ledger`], so that each of those can use them without importing another (the layers
//! point one way: `agent → llm → schema → vocab`, and `ledger → schema, vocab`).
//!
//! | type | what it names |
//! |---|---|
//! | [`StructuredOutputMode`], [`Require`] | how a schema reached the model; the guarantee a caller asks for (each parsed by `FromStr`, [`UnknownName`] when not one of them) |
//! | [`Transform`] | one rewrite of the caller's schema for a wire |
//! | [`Effort`] | how hard a reasoning model should think |
//! | [`Usage`], [`StopReason`], [`TerminationReason`] | token counts; why the model stopped; how a loop run ended |
//! | [`AdapterTry`] | one adapter tried by a fallback chain or routing |
//! | [`ErrorKind`], [`RetryClass`] | what kind of failure ended a call, and whether another try could help |
//! | [`parse_duration`], [`DurationError`] | a duration as people type it (`3600`, `90s`, `1h`) |

mod effort;
mod termination;

pub use effort::Effort;
pub use termination::TerminationReason;

use serde::{Deserialize, Serialize};

/// How a schema reaches the model, strongest first. The names are the ones `geode adapters` prints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StructuredOutputMode {
    /// The engine masks tokens so the output cannot leave the constraint (local llguidance).
    Constrained,
    /// The provider enforces the schema (OpenAI strict, Anthropic native `output_config.format`).
    Strict,
    /// The schema reaches the provider, which is asked but not bound to follow it.
    Hint,
    /// A forced output tool whose `input_schema` is the schema.
    Tool,
    /// A CLI validates the answer against the schema and reports the structured result.
    CliValidated,
    /// The schema is passed as a CLI flag; the CLI's enforcement is not verified.
    CliFlag,
    /// The provider guarantees JSON syntax only; the schema travels in the prompt.
    JsonMode,
    /// The schema travels only in the prompt.
    Prompt,
    /// Nothing reaches the wire.
    #[default]
    None,
}

impl StructuredOutputMode {
    /// All modes, strongest first.
    pub const ALL: [StructuredOutputMode; 9] = [
        Self::Constrained,
        Self::Strict,
        Self::Hint,
        Self::Tool,
        Self::CliValidated,
        Self::CliFlag,
        Self::JsonMode,
        Self::Prompt,
        Self::None,
    ];

    /// The kebab-case name used on the CLI, in the README and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Constrained => "constrained",
            Self::Strict => "strict",
            Self::Hint => "hint",
            Self::Tool => "tool",
            Self::CliValidated => "cli-validated",
            Self::CliFlag => "cli-flag",
            Self::JsonMode => "json-mode",
            Self::Prompt => "prompt",
            Self::None => "none",
        }
    }

    /// The guarantee level this mode reaches (see [`Require`]).
    pub fn level(self) -> Require {
        match self {
            Self::Constrained | Self::Strict => Require::Enforced,
            Self::Hint | Self::Tool | Self::CliValidated | Self::CliFlag => Require::Wired,
            Self::JsonMode | Self::Prompt | Self::None => Require::BestEffort,
        }
    }
}

impl std::fmt::Display for StructuredOutputMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for StructuredOutputMode {
    type Err = UnknownName;

    /// The kebab-case name, as [`Self::as_str`] writes it.
    fn from_str(text: &str) -> Result<Self, UnknownName> {
        by_name(&Self::ALL, Self::as_str, "structured-output mode", text)
    }
}

/// A name that is not one of a vocabulary's (a `require`, a mode): says what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {given:?}: expected one of {}", expected.join(", "))]
pub struct UnknownName {
    /// What kind of name.
    pub what: &'static str,
    /// What was given (cut to 64 characters: it may be a pasted secret or a huge header).
    pub given: String,
    /// The names there are.
    pub expected: Vec<&'static str>,
}

/// The one of `all` whose name (`name`) is `text`, or an [`UnknownName`] listing them: every
/// vocabulary's `FromStr`.
fn by_name<T: Copy>(
    all: &[T],
    name: fn(T) -> &'static str,
    what: &'static str,
    text: &str,
) -> Result<T, UnknownName> {
    all.iter()
        .copied()
        .find(|v| name(*v) == text)
        .ok_or_else(|| UnknownName {
            what,
            given: text.chars().take(64).collect(),
            expected: all.iter().map(|v| name(*v)).collect(),
        })
}

/// What a caller requires of the structured-output path. Ordered: `BestEffort < Wired < Enforced`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Require {
    /// Anything, including JSON mode and prompt-only.
    #[default]
    BestEffort,
    /// The schema itself reaches the provider in a form it acts on.
    Wired,
    /// The provider or engine constrains decoding to this schema.
    Enforced,
}

impl Require {
    /// Every level, weakest first.
    pub const ALL: [Require; 3] = [Self::BestEffort, Self::Wired, Self::Enforced];

    /// The kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BestEffort => "best-effort",
            Self::Wired => "wired",
            Self::Enforced => "enforced",
        }
    }
}

impl std::fmt::Display for Require {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Require {
    type Err = UnknownName;

    /// The kebab-case name (`best-effort`, `wired`, `enforced`): the one parse of a `require`
    /// for flags, keyword arguments, headers and files alike.
    ///
    /// ```
    /// use geode::vocab::Require;
    /// assert_eq!("wired".parse::<Require>().unwrap(), Require::Wired);
    /// assert!("strict".parse::<Require>().unwrap_err().to_string().contains("best-effort"));
    /// ```
    fn from_str(text: &str) -> Result<Self, UnknownName> {
        by_name(&Self::ALL, Self::as_str, "require", text)
    }
}

/// One rewrite of the caller's schema (or request) on the way to a provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transform {
    /// JSON Pointer into the caller's schema.
    pub pointer: String,
    /// What was done, e.g. `removed keyword minLength (checked locally)`.
    pub action: String,
}

/// Token usage of one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens (reasoning included where the provider counts it so).
    pub output_tokens: u64,
    /// Prompt tokens served from a cache.
    pub cached_input_tokens: u64,
    /// Cost in USD when the provider reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

impl Usage {
    /// Input, output and cached input tokens, for tests to compare at once.
    #[cfg(test)]
    pub(crate) fn token_counts(&self) -> (u64, u64, u64) {
        (
            self.input_tokens,
            self.output_tokens,
            self.cached_input_tokens,
        )
    }

    /// Adds another call's usage to this one.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    }
}

/// Why the model stopped. Unlike GEODE, refusals and truncation are not collapsed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// A natural end of the answer.
    #[default]
    EndTurn,
    /// The model asked for tool calls.
    ToolUse,
    /// The output token limit cut the answer.
    MaxTokens,
    /// The model refused.
    Refusal,
    /// A stop sequence ended the answer.
    StopSequence,
    /// A provider safety filter ended the answer.
    ContentFilter,
}

/// One adapter tried for a call (more than one when a fallback chain took over).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdapterTry {
    /// The adapter name.
    pub adapter: String,
    /// `ok`, or the error that made the chain move on.
    pub outcome: String,
    /// The model this link was asked for, when it differs from the caller's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// Whether an error is worth another try (same adapter after backoff, or a fallback adapter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetryClass {
    /// A transient fault: rate limit, 5xx, connection reset, truncated stream.
    Retryable,
    /// Retrying the same request cannot help: auth, bad request, schema rejection, config.
    Fatal,
}

/// What kind of failure ended an adapter call: one variant per
/// [`crate::llm::call::AdapterError`] variant. It travels from the adapter through the
/// loop's result, the worker's retry decision and the ledger to the process exit code, and is
/// serialised as the snake_case names the ledger has always used (`rate_limited`, ...).
///
/// ```
/// use geode::vocab::{ErrorKind, RetryClass};
///
/// assert_eq!(ErrorKind::RateLimited.as_str(), "rate_limited");
/// assert_eq!(ErrorKind::RateLimited.retry_class(), RetryClass::Retryable);
/// assert_eq!(serde_json::to_string(&ErrorKind::SchemaRejected).unwrap(), r#""schema_rejected""#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// The adapter is not configured (a missing key, credential file or binary).
    Config,
    /// The provider refused the credentials.
    Auth,
    /// The provider rate-limited the call.
    RateLimited,
    /// The provider rejected the schema.
    SchemaRejected,
    /// Any other refused request.
    BadRequest,
    /// The provider failed (5xx).
    Server,
    /// The connection failed or was reset.
    Transport,
    /// A stream or process ended before its terminal event.
    Truncated,
    /// The provider's answer could not be understood.
    Protocol,
    /// The provider or CLI reported a failure of the run itself.
    RunFailed,
    /// The request cannot be served by this adapter.
    Unsupported,
    /// The provider sent more than the call's response budget.
    ResponseTooLarge,
    /// The deadline passed.
    Timeout,
    /// The caller cancelled.
    Cancelled,
}

impl ErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [ErrorKind; 14] = [
        Self::Config,
        Self::Auth,
        Self::RateLimited,
        Self::SchemaRejected,
        Self::BadRequest,
        Self::Server,
        Self::Transport,
        Self::Truncated,
        Self::Protocol,
        Self::RunFailed,
        Self::Unsupported,
        Self::ResponseTooLarge,
        Self::Timeout,
        Self::Cancelled,
    ];

    /// The snake_case name used in ledgers and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Config => "config",
            Self::Auth => "auth",
            Self::RateLimited => "rate_limited",
            Self::SchemaRejected => "schema_rejected",
            Self::BadRequest => "bad_request",
            Self::Server => "server",
            Self::Transport => "transport",
            Self::Truncated => "truncated",
            Self::Protocol => "protocol",
            Self::RunFailed => "run_failed",
            Self::Unsupported => "unsupported",
            Self::ResponseTooLarge => "response_too_large",
            Self::Timeout => "timeout",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether the same request could succeed on another try: only transient faults (rate
    /// limits, 5xx, transport failures, truncated streams) are retryable.
    pub fn retry_class(self) -> RetryClass {
        match self {
            Self::RateLimited | Self::Server | Self::Transport | Self::Truncated => {
                RetryClass::Retryable
            }
            _ => RetryClass::Fatal,
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_kinds_serialise_as_their_names_and_round_trip() {
        for kind in ErrorKind::ALL {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
            assert_eq!(serde_json::from_str::<ErrorKind>(&json).unwrap(), kind);
            assert_eq!(kind.to_string(), kind.as_str());
        }
    }

    #[test]
    fn only_transient_kinds_are_retryable() {
        let retryable: Vec<ErrorKind> = ErrorKind::ALL
            .into_iter()
            .filter(|k| k.retry_class() == RetryClass::Retryable)
            .collect();
        assert_eq!(
            retryable,
            [
                ErrorKind::RateLimited,
                ErrorKind::Server,
                ErrorKind::Transport,
                ErrorKind::Truncated
            ]
        );
    }
}

/// A duration that is not a positive number of seconds or a duration text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?}: {why} (seconds, or a duration such as 90s, 30m, 1h, 7d)")]
pub struct DurationError {
    /// What was given.
    pub text: String,
    /// What is wrong.
    pub why: String,
}

/// A duration as given on the command line or in `geode.toml` (a cache TTL, a timeout): whole or
/// decimal seconds (`3600`), or a duration text (`90s`, `30m`, `1h`, `7d`). Zero, negative and
/// not-a-number are refused.
///
/// ```
/// use geode::vocab::parse_duration;
/// use std::time::Duration;
/// assert_eq!(parse_duration("3600").unwrap(), Duration::from_secs(3600));
/// assert_eq!(parse_duration("1h 30m").unwrap(), Duration::from_secs(5400));
/// assert!(parse_duration("0").is_err() && parse_duration("soon").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<std::time::Duration, DurationError> {
    let bad = |why: String| DurationError {
        text: text.to_owned(),
        why,
    };
    let t = text.trim();
    let d = match t.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 => std::time::Duration::from_secs_f64(s.min(1e12)),
        Ok(_) => return Err(bad("must be positive".to_owned())),
        Err(_) => humantime::parse_duration(t).map_err(|e| bad(e.to_string()))?,
    };
    if d.is_zero() {
        return Err(bad("must be positive".to_owned()));
    }
    Ok(d)
}
