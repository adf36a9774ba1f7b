//! The process exit code of a finished request (`geode run`, `geode worker`), decided here so
//! the binary and the tests that check it share one rule.
//!
//! | result | code |
//! |---|---|
//! | success (a valid answer) | [`VALID`] 0 |
//! | no attempt ran (bad request, routing or schema refused before any call) | [`USAGE`] 2 |
//! | the last attempt failed with a `config` or `unsupported` adapter error | [`USAGE`] 2 |
//! | the answer failed its check after the retry, or the run was cancelled | [`INVALID`] 1 |
//! | any other adapter error (auth, rate limit, server, transport, timeout, ...) | [`PROVIDER`] 3 |

use crate::protocol::WorkerResult;
use crate::vocab::ErrorKind;

/// A valid answer.
pub const VALID: u8 = 0;
/// An invalid answer after the retry (or a cancelled run).
pub const INVALID: u8 = 1;
/// A usage or configuration error.
pub const USAGE: u8 = 2;
/// A provider or transport failure.
pub const PROVIDER: u8 = 3;

/// The exit code for an adapter error kind (`AdapterError::kind`); `None` means the run ended
/// without an adapter error (the answer itself failed).
pub fn for_error_kind(kind: Option<ErrorKind>) -> u8 {
    match kind {
        Some(ErrorKind::Config | ErrorKind::Unsupported) => USAGE,
        Some(ErrorKind::Cancelled) | None => INVALID,
        Some(_) => PROVIDER,
    }
}

/// The exit code for a finished request (the table in the module docs).
pub fn for_result(result: &WorkerResult) -> u8 {
    if result.success {
        return VALID;
    }
    match result.ledger.attempts.last() {
        None => USAGE,
        Some(attempt) => for_error_kind(attempt.error_kind),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_the_table() {
        let ok = WorkerResult {
            success: true,
            ..WorkerResult::default()
        };
        assert_eq!(for_result(&ok), VALID);
        assert_eq!(for_result(&WorkerResult::failed("t", "bad line")), USAGE);
        for kind in ErrorKind::ALL {
            let want = match kind {
                ErrorKind::Config | ErrorKind::Unsupported => USAGE,
                ErrorKind::Cancelled => INVALID,
                _ => PROVIDER,
            };
            assert_eq!(for_error_kind(Some(kind)), want, "{kind}");
        }
        assert_eq!(for_error_kind(None), INVALID);
        assert_eq!(for_error_kind(Some(ErrorKind::Auth)), PROVIDER);
    }
}
