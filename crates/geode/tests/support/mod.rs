//! Shared support of the integration tests: bounded runs, the `Decision` fixture, a described
//! machine ([`env::MapEnv`]) to build adapters from, leak probes ([`leaks`]) and fake vendor
//! CLIs ([`fake_cli`]). Each test crate includes it with `mod support;` (or a `#[path]`).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod env;
pub mod fake_cli;
pub mod leaks;
pub mod load;

use geode::schema::ResponseSchema;
use serde_json::{Value, json};
use std::time::Duration;

/// The bound on one test body: far above any healthy run, low enough that a hang fails.
pub const TEST_BOUND: Duration = Duration::from_secs(20);

/// Runs `fut`, failing the test when it takes longer than [`TEST_BOUND`].
pub async fn bounded<T>(fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(TEST_BOUND, fut)
        .await
        .expect("test exceeded its 20 s bound")
}

/// The `Decision` schema every suite uses: a strict object with an enum and a string.
pub fn decision() -> Value {
    json!({"title": "Decision", "type": "object",
           "properties": {"decision": {"type": "string", "enum": ["accept", "reject"]},
                          "reason": {"type": "string", "minLength": 3}},
           "required": ["decision", "reason"], "additionalProperties": false})
}

/// [`decision`] as a [`ResponseSchema`].
pub fn decision_schema() -> ResponseSchema {
    ResponseSchema::from_value(decision()).unwrap()
}

/// An answer that satisfies [`decision`].
pub fn decision_answer(reason: &str) -> Value {
    json!({"decision": "accept", "reason": reason})
}
