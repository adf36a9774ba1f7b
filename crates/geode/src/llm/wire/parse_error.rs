//! [`ParseError`]: the one way a reply fails to become an answer, for every wire family.
//! [`ParseError::into_adapter_error`] gives the typed [`AdapterError`]; only a provider's own
//! error (an `error` event, an error object in the body) needs the family's vocabulary, which
//! the family passes as a [`ProviderErrors`] mapping.

use crate::llm::call::{AdapterError, DEFAULT_MAX_RESPONSE_BYTES};

/// The most characters of a provider message kept in an error.
const MESSAGE_LIMIT: usize = 300;

/// Maps a provider's error kind and message to the adapter error (`adapter`, `kind`,
/// `message`, the message already one line).
pub type ProviderErrors = fn(String, &str, String) -> AdapterError;

/// A reply that could not become an answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The reply body is not the expected JSON.
    #[error("reply is not the expected JSON: {message}")]
    NotJson {
        /// The decoder's message.
        message: String,
    },
    /// A known event or block failed to decode.
    #[error("corrupt {what}: {message}")]
    Corrupt {
        /// The event or block kind.
        what: String,
        /// The decoder's message.
        message: String,
    },
    /// The reply ended before its terminal event or the end of its JSON.
    #[error("reply ended before {missing}")]
    Truncated {
        /// What never came.
        missing: &'static str,
    },
    /// The folded text and tool input passed the fold's budget.
    #[error("answer larger than {limit} bytes")]
    TooLarge {
        /// The budget in bytes.
        limit: u64,
    },
    /// The provider reported an error (an `error` event or an error object).
    #[error("provider error {kind}: {message}")]
    Provider {
        /// The provider's error type or code, e.g. `overloaded_error`, `1214`.
        kind: String,
        /// The provider's message.
        message: String,
    },
}

impl ParseError {
    /// A provider-reported failure (for tests).
    #[cfg(test)]
    pub(crate) fn provider(kind: &str, message: &str) -> Self {
        Self::Provider {
            kind: kind.into(),
            message: message.into(),
        }
    }

    /// The typed adapter error: truncation is `Truncated` (retryable), a budget overrun
    /// `ResponseTooLarge`, undecodable JSON `Protocol`, and a provider error whatever the
    /// family's `provider` mapping says.
    pub fn into_adapter_error(self, adapter: &str, provider: ProviderErrors) -> AdapterError {
        let adapter = adapter.to_owned();
        match self {
            Self::Truncated { .. } => AdapterError::Truncated {
                adapter,
                message: self.to_string(),
            },
            Self::NotJson { message } => AdapterError::Protocol { adapter, message },
            Self::TooLarge { limit } => AdapterError::ResponseTooLarge { adapter, limit },
            Self::Corrupt { .. } => AdapterError::Protocol {
                adapter,
                message: self.to_string(),
            },
            Self::Provider { kind, message } => provider(adapter, &kind, one_line(&message)),
        }
    }
}

/// What a stream fold may keep (answer text, tool input): past the budget, a reply is
/// [`ParseError::TooLarge`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextBudget {
    held: u64,
    limit: u64,
}

/// The default budget: [`DEFAULT_MAX_RESPONSE_BYTES`].
impl Default for TextBudget {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_RESPONSE_BYTES)
    }
}

impl TextBudget {
    /// A budget of `limit` bytes, none held yet.
    pub fn new(limit: u64) -> Self {
        Self { held: 0, limit }
    }

    /// Counts `more` bytes about to be kept; past the limit that is [`ParseError::TooLarge`].
    pub fn hold(&mut self, more: usize) -> Result<(), ParseError> {
        self.held = self.held.saturating_add(more as u64);
        if self.held > self.limit {
            return Err(ParseError::TooLarge { limit: self.limit });
        }
        Ok(())
    }
}

/// Decodes a whole JSON reply: a body cut short is [`ParseError::Truncated`], any other
/// failure [`ParseError::NotJson`].
pub fn from_json<T: serde::de::DeserializeOwned>(body: &str) -> Result<T, ParseError> {
    serde_json::from_str(body).map_err(|e| {
        if e.is_eof() {
            ParseError::Truncated {
                missing: "the end of the JSON body",
            }
        } else {
            ParseError::NotJson {
                message: e.to_string(),
            }
        }
    })
}

/// A provider message made one line and cut to `MESSAGE_LIMIT` (300) characters.
pub fn one_line(message: &str) -> String {
    let flat: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MESSAGE_LIMIT)
        .collect();
    flat.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::{ErrorKind, RetryClass};

    fn fatal(adapter: String, kind: &str, message: String) -> AdapterError {
        AdapterError::RunFailed {
            adapter,
            kind: one_line(kind),
            message,
        }
    }

    #[test]
    fn every_variant_maps_to_a_typed_error_naming_the_adapter() {
        let e = ParseError::Truncated { missing: "x" }.into_adapter_error("a", fatal);
        assert_eq!(
            (e.kind(), e.retry_class()),
            (ErrorKind::Truncated, RetryClass::Retryable)
        );
        assert!(e.to_string().starts_with("a: "), "{e}");
        let e = ParseError::TooLarge { limit: 9 }.into_adapter_error("a", fatal);
        assert_eq!(e.kind(), ErrorKind::ResponseTooLarge);
        let e = ParseError::NotJson {
            message: "m".into(),
        }
        .into_adapter_error("a", fatal);
        assert_eq!(e.kind(), ErrorKind::Protocol);
        let e = ParseError::Provider {
            kind: "k".into(),
            message: "m\nn".into(),
        }
        .into_adapter_error("a", fatal);
        assert_eq!(e.kind(), ErrorKind::RunFailed);
        assert!(!e.to_string().contains('\n'), "{e}");
    }

    #[test]
    fn a_budget_holds_up_to_its_limit() {
        let mut b = TextBudget::new(4);
        assert_eq!(b.hold(3), Ok(()));
        assert_eq!(b.hold(1), Ok(()));
        assert_eq!(b.hold(1), Err(ParseError::TooLarge { limit: 4 }));
        assert_eq!(
            TextBudget::new(0).hold(usize::MAX),
            Err(ParseError::TooLarge { limit: 0 })
        );
    }

    #[test]
    fn one_line_flattens_and_cuts() {
        assert_eq!(one_line("a\nb\tc"), "a b c");
        assert_eq!(one_line(&"x".repeat(1000)).len(), MESSAGE_LIMIT);
    }
}
