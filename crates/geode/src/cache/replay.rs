//! A hit, told as one: the stored value validated again against this request's schema, the
//! original ledger marked `replayed` with when it was made, and no token counted twice.

use super::entry::CacheEntry;
use crate::agent::task::{Answer, Task};
use crate::schema::ResponseSchema;
use crate::schema::validate::CompiledSchema;
use crate::vocab::Usage;
use std::time::Duration;

/// Why a stored value was not replayed (a miss).
#[derive(Debug, thiserror::Error)]
pub enum NotReplayed {
    /// The schema does not compile (the run itself will say why).
    #[error("the schema does not compile: {0}")]
    Schema(#[source] crate::schema::SchemaError),
    /// The stored value fails this request's schema.
    #[error("the stored value is not valid against this request's schema ({0} errors)")]
    Invalid(u64),
}

/// The answer `entry` gives to `task`, whose schema is `schema`; `elapsed` is the lookup's time.
pub fn replay(
    entry: CacheEntry,
    task: &Task,
    schema: &ResponseSchema,
    elapsed: Duration,
) -> Result<Answer, NotReplayed> {
    let compiled =
        CompiledSchema::compile_cached(schema, task.formats).map_err(NotReplayed::Schema)?;
    let report = compiled.validate(&entry.value);
    if !report.is_empty() {
        return Err(NotReplayed::Invalid(report.total()));
    }
    let cached_at = entry.created_at();
    let mut ledger = entry.ledger;
    for attempt in &mut ledger.attempts {
        attempt.usage = Usage::default();
    }
    ledger.replayed = true;
    ledger.cached_at = Some(cached_at);
    ledger.original_usage = Some(entry.usage);
    Ok(Answer {
        text: entry.text,
        value: Some(entry.value),
        tool_calls: Vec::new(),
        termination: entry.termination,
        usage: Usage::default(),
        elapsed,
        ledger,
    })
}
