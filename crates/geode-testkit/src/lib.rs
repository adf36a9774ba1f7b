//! Shared support of the integration tests: bounded runs, the fixtures ([`fixtures`]: among
//! them the Decision schema of the contract of GEODE, the reference Python system,
//! docs/reference.md), error-kind checks ([`assert_kind`]), a described machine ([`env::MapEnv`]) to build adapters from, the
//! HTTP adapters on fakes ([`http`]), real-CLI rigs ([`cli_rig`]), leak probes ([`leaks`]) and
//! fake vendor CLIs ([`fake_cli`]), the loopback-only network namespace the real CLIs run in
//! ([`cli`]), the fault matrix's table and judgement ([`fault_matrix`]) and a child with a given
//! standard input ([`stdin`]). A dev-dependency of every crate's tests and benches, so each
//! helper exists once.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)] // test support may panic

pub mod built;
pub mod cli;
pub mod cli_rig;
pub mod env;
pub mod fake_cli;
pub mod fault_matrix;
pub mod fixtures;
pub mod http;
pub mod leaks;
pub mod load;
pub mod stdin;

pub use fixtures::*;
use geode::llm::call::AdapterError;
use std::time::Duration;

/// The bound on one test body: far above any healthy run, low enough that a hang fails.
pub const TEST_BOUND: Duration = Duration::from_secs(20);

/// Runs `fut`, failing the test when it takes longer than [`TEST_BOUND`].
pub async fn bounded<T>(fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(TEST_BOUND, fut)
        .await
        .expect("test exceeded its 20 s bound")
}

/// The error of `result`, failing the test when it is `Ok`.
#[track_caller]
pub fn expect_err<T>(result: Result<T, AdapterError>) -> AdapterError {
    match result {
        Ok(_) => panic!("expected an error, got a {}", std::any::type_name::<T>()),
        Err(e) => e,
    }
}

/// Fails the test unless `err` is of kind `kind`.
#[track_caller]
pub fn assert_kind(err: &AdapterError, kind: geode::vocab::ErrorKind) {
    assert_eq!(err.kind(), kind, "{err}");
}
