//! The process exit code of a finished task (`geode run`, `run --stream`, `worker`, `batch`,
//! `serve`), from the one typed rule [`RunError::failure`]:
//!
//! | result | code |
//! |---|---|
//! | success (a valid answer) | [`VALID`] 0 |
//! | [`Failure::Usage`]: refused before any call, unroutable, a bad schema or tools, an adapter error of a configuration kind | [`USAGE`] 2 |
//! | [`Failure::Invalid`]: the answer failed its check after the retry, was cut or refused, the run ended without one, or was cancelled | [`INVALID`] 1 |
//! | [`Failure::Provider`]: any other adapter error (auth, rate limit, server, transport, timeout, ...) | [`PROVIDER`] 3 |

use crate::agent::task::{Answer, Failure, RunError};
use crate::protocol::WorkerResult;

/// A valid answer.
pub const VALID: u8 = 0;
/// An invalid answer after the retry (or a cancelled run).
pub const INVALID: u8 = 1;
/// A usage or configuration error.
pub const USAGE: u8 = 2;
/// A provider or transport failure.
pub const PROVIDER: u8 = 3;

/// The exit code of a failure class.
pub fn code(failure: Failure) -> u8 {
    match failure {
        Failure::Usage => USAGE,
        Failure::Invalid => INVALID,
        Failure::Provider => PROVIDER,
    }
}

/// The exit code of a typed run.
pub fn for_run(run: &Result<Answer, RunError>) -> u8 {
    match run {
        Ok(_) => VALID,
        Err(e) => code(e.failure()),
    }
}

/// The exit code of a finished request, from the failure it carries (a failed result that
/// names none, written by hand or by an older geode, is a usage error).
pub fn for_result(result: &WorkerResult) -> u8 {
    if result.success {
        return VALID;
    }
    code(result.failure.unwrap_or(Failure::Usage))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::task::Refusal;
    use crate::ledger::GuaranteeLedger;
    use crate::llm::call::AdapterError;
    use std::sync::Arc;

    fn last() -> Box<Answer> {
        Box::new(Answer::empty(GuaranteeLedger::default()))
    }

    fn adapter(source: AdapterError) -> Result<Answer, RunError> {
        Err(RunError::Adapter {
            message: source.to_string(),
            source: Arc::new(source),
            last: last(),
        })
    }

    #[test]
    fn codes_follow_the_table() {
        let ok = WorkerResult {
            success: true,
            ..WorkerResult::default()
        };
        assert_eq!(for_result(&ok), VALID);
        assert_eq!(for_result(&WorkerResult::failed("t", "bad line")), USAGE);
        let refused = Err(RunError::Refused {
            why: Refusal::RequireUnmet,
            reason: "require".into(),
            last: last(),
        });
        assert_eq!(for_run(&refused), USAGE);
        let message = String::new;
        for (run, want) in [
            (
                Err(RunError::Truncated {
                    message: message(),
                    last: last(),
                }),
                INVALID,
            ),
            (
                Err(RunError::ModelRefused {
                    message: message(),
                    last: last(),
                }),
                INVALID,
            ),
            (
                Err(RunError::Invalid {
                    message: message(),
                    last: last(),
                }),
                INVALID,
            ),
            (
                Err(RunError::Ended {
                    message: message(),
                    last: last(),
                }),
                INVALID,
            ),
        ] {
            assert_eq!(for_run(&run), want);
        }
        let name = || "a".to_owned();
        let config = AdapterError::Config {
            adapter: name(),
            message: message(),
        };
        assert_eq!(for_run(&adapter(config)), USAGE);
        assert_eq!(
            for_run(&adapter(AdapterError::Cancelled { adapter: name() })),
            INVALID
        );
        assert_eq!(
            for_run(&adapter(AdapterError::Timeout { adapter: name() })),
            PROVIDER
        );
    }

    #[test]
    fn a_result_carries_its_failure_across_the_process_edge() {
        let run = Err(RunError::Invalid {
            message: "bad".into(),
            last: last(),
        });
        let code = for_run(&run);
        let line = WorkerResult::from_run("t", run).to_json_line().unwrap();
        let read: WorkerResult = serde_json::from_str(&line).unwrap();
        assert_eq!(read.failure, Some(Failure::Invalid));
        assert_eq!(for_result(&read), code);
    }
}
