//! Constraints beyond JSON Schema: one of N strings, a regular expression, a Lark grammar.
//!
//! GEODE has none of these. geode carries them beside `response_schema`:
//! the local engine enforces them while decoding; hosted adapters that cannot enforce them
//! check the final text locally and the ledger says so.
//!
//! Every constraint is compiled before the first request ([`TextConstraint::validate`]): an
//! empty choice, a regular expression that does not compile or a grammar that is not valid Lark
//! is a typed [`ConstraintError`], never a model answer blamed for failing it. Grammars are
//! compiled by llguidance (the local engine's own compiler) against a byte-level tokenizer, so
//! the check needs no model.

use crate::vocab::StructuredOutputMode;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

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

/// Why a [`TextConstraint`] cannot be used. Found before any request is sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConstraintError {
    /// A choice with no option can never be met.
    #[error("choice constraint has no options")]
    EmptyChoice,
    /// The regular expression does not compile.
    #[error("regex constraint {pattern:?} does not compile: {message}")]
    InvalidRegex {
        /// The pattern as given.
        pattern: String,
        /// The regex compiler's reason.
        message: String,
    },
    /// The grammar is not valid Lark (llguidance dialect).
    #[error("grammar constraint is not valid Lark: {message}")]
    InvalidGrammar {
        /// llguidance's reason.
        message: String,
    },
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

    /// Compiles the constraint without using it: `Ok` when it can be enforced and checked.
    ///
    /// ```
    /// use geode::schema::{ConstraintError, TextConstraint};
    /// assert!(TextConstraint::Regex("[a-z]+".into()).validate().is_ok());
    /// assert!(matches!(
    ///     TextConstraint::Regex("[a-".into()).validate(),
    ///     Err(ConstraintError::InvalidRegex { .. })
    /// ));
    /// assert!(TextConstraint::Grammar("start: \"yes\" | \"no\"\n".into()).validate().is_ok());
    /// assert!(TextConstraint::Grammar("start: ((".into()).validate().is_err());
    /// assert_eq!(TextConstraint::Choice(vec![]).validate(), Err(ConstraintError::EmptyChoice));
    /// ```
    pub fn validate(&self) -> Result<(), ConstraintError> {
        match self {
            Self::Choice(options) if options.is_empty() => Err(ConstraintError::EmptyChoice),
            Self::Choice(_) => Ok(()),
            Self::Regex(pattern) => whole_match_regex(pattern).map(drop),
            Self::Grammar(lark) => check_lark(lark),
        }
    }

    /// Whether the local check after the answer can judge this constraint (a grammar cannot).
    pub fn checkable_locally(&self) -> bool {
        !matches!(self, Self::Grammar(_))
    }

    /// How this constraint reaches the model on an adapter whose mode for a schema is
    /// `schema_mode`: only an engine that constrains decoding enforces it; every other adapter
    /// puts nothing of it on the wire ([`StructuredOutputMode::None`]).
    pub fn mode_on(schema_mode: StructuredOutputMode) -> StructuredOutputMode {
        match schema_mode {
            StructuredOutputMode::Constrained => StructuredOutputMode::Constrained,
            _ => StructuredOutputMode::None,
        }
    }
}

/// The regular expression `pattern` anchored at both ends, as the local check applies it.
/// A pattern that does not compile is a [`ConstraintError::InvalidRegex`] whose message is the
/// compiler's reason for the pattern as given (not for the anchored form).
pub fn whole_match_regex(pattern: &str) -> Result<regex::Regex, ConstraintError> {
    let invalid = |e: regex::Error| ConstraintError::InvalidRegex {
        pattern: pattern.to_owned(),
        message: one_line(&e.to_string()),
    };
    regex::Regex::new(pattern).map_err(invalid)?;
    regex::Regex::new(&format!("^(?:{pattern})$")).map_err(invalid)
}

/// A compiler's multi-line message as one line. The regex crate writes the pattern, a caret
/// line and `error: <reason>` (the reason is kept); llguidance writes the reason first, then
/// the source line with a caret (the first line is kept).
fn one_line(message: &str) -> String {
    let mut lines = message.lines().map(str::trim).filter(|l| !l.is_empty());
    match message
        .lines()
        .find_map(|l| l.trim().strip_prefix("error: "))
    {
        Some(reason) => reason.to_owned(),
        None => lines.next().unwrap_or_default().to_owned(),
    }
}

/// Compiles a Lark grammar with llguidance against a single-byte tokenizer (no model needed).
fn check_lark(lark: &str) -> Result<(), ConstraintError> {
    use llguidance::api::TopLevelGrammar;
    use llguidance::{Matcher, ParserFactory};
    static FACTORY: OnceLock<Result<ParserFactory, String>> = OnceLock::new();
    let invalid = |message: String| ConstraintError::InvalidGrammar {
        message: one_line(&message),
    };
    let factory = FACTORY
        .get_or_init(|| {
            let env = llguidance::toktrie::ApproximateTokEnv::single_byte_env();
            let mut factory = ParserFactory::new_simple(&env).map_err(|e| format!("{e:#}"))?;
            factory.quiet();
            Ok(factory)
        })
        .as_ref()
        .map_err(|e| invalid(format!("the grammar compiler could not start: {e}")))?;
    let parser = factory
        .create_parser(TopLevelGrammar::from_lark(lark.to_owned()))
        .map_err(|e| invalid(format!("{e:#}")))?;
    match Matcher::new(Ok(parser)).get_error() {
        Some(message) => Err(invalid(message)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regex_errors_name_the_pattern_and_the_reason_on_one_line() {
        let err = TextConstraint::Regex("[a-".into()).validate().unwrap_err();
        let text = err.to_string();
        assert!(text.contains("\"[a-\""), "{text}");
        assert!(!text.contains('\n'), "{text}");
        assert!(text.contains("unclosed character class"), "{text}");
    }

    #[test]
    fn the_anchored_regex_matches_the_whole_text_only() {
        let re = whole_match_regex("a|b").unwrap();
        assert!(re.is_match("a") && re.is_match("b"));
        assert!(!re.is_match("ab") && !re.is_match("xa"));
    }

    #[test]
    fn grammars_are_compiled_and_bad_ones_refused_with_the_reason() {
        assert!(
            TextConstraint::Grammar("start: item+\nitem: /[a-z]+/ \",\"\n".into())
                .validate()
                .is_ok()
        );
        for bad in [
            "start: ((",
            "this is not lark",
            "start: undefined_rule\n",
            "",
        ] {
            match TextConstraint::Grammar(bad.into()).validate() {
                Err(ConstraintError::InvalidGrammar { message }) => {
                    assert!(!message.is_empty() && !message.contains('\n'), "{message}")
                }
                other => panic!("{bad:?}: expected InvalidGrammar, got {other:?}"),
            }
        }
    }

    #[test]
    fn only_a_constraining_engine_enforces_text_constraints() {
        assert_eq!(
            TextConstraint::mode_on(StructuredOutputMode::Constrained),
            StructuredOutputMode::Constrained
        );
        for m in [
            StructuredOutputMode::Strict,
            StructuredOutputMode::Hint,
            StructuredOutputMode::JsonMode,
        ] {
            assert_eq!(TextConstraint::mode_on(m), StructuredOutputMode::None);
        }
    }
}
