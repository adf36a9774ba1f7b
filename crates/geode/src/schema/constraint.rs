//! Constraints beyond JSON Schema: one of N strings, a regular expression, a Lark grammar.
//!
//! The reference system has none of these. geode carries them beside `response_schema`:
//! the local engine enforces them while decoding; hosted adapters that cannot enforce them
//! check the final text locally and the ledger says so.

use serde::{Deserialize, Serialize};

/// A constraint on the final answer's text that is not a JSON Schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TextConstraint {
    /// The answer is exactly one of these strings.
    Choice(Vec<String>),
    /// The whole answer matches this regular expression.
    Regex(String),
    /// The answer is derivable from this Lark grammar (llguidance syntax).
    Grammar(String),
}

impl TextConstraint {
    /// A short name for the ledger: `choice`, `regex` or `grammar`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Choice(_) => "choice",
            Self::Regex(_) => "regex",
            Self::Grammar(_) => "grammar",
        }
    }
}
