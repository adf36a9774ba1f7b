//! Schema benchmarks: extraction, the worker's shallow check, full validation and the strict check.
//!
//! Compare with GEODE's figures (docs/benchmarks.md: extract 13–17 MB/s, shallow check 13–16 MB/s,
//! strict check 1.44 µs / 91 µs / 20 µs / 2.94 ms). Sample sizes are small so the whole file runs
//! in about a minute: `cargo bench -p geode --bench schema`.

use criterion::{criterion_group, criterion_main};

/// This run's group names are the plain ones.
const GROUP_PREFIX: &str = "";

#[path = "support/schema_groups.rs"]
mod groups;
use groups::{extraction, full, schema_check, shallow, strict};

criterion_group!(benches, extraction, shallow, full, strict, schema_check);
criterion_main!(benches);
