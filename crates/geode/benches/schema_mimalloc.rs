//! The `schema` benchmarks (`benches/support/schema_groups.rs`) with mimalloc as the global
//! allocator, beside the system allocator's run (the `geode` binary keeps the system
//! allocator for a lean worker, docs/benchmarks.md#a-lean-worker); group names start with
//! `mimalloc_`. Building a `serde_json::Value` (loading a schema, parsing an answer for full
//! validation) and compiling a validator are allocation-bound, so these rows are the ones the
//! allocator moves: `cargo bench -p geode --bench schema_mimalloc`.

use criterion::{criterion_group, criterion_main};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Group names of this run start with this.
const GROUP_PREFIX: &str = "mimalloc_";

#[path = "support/schema_groups.rs"]
mod groups;
use groups::{extraction, full, schema_check, shallow, strict};

criterion_group!(benches, extraction, shallow, full, strict, schema_check);
criterion_main!(benches);
