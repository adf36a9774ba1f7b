//! geode-local's integration tests on the real model, in one binary. The `local` column of the
//! fault matrix counts the process's descriptors and children, so it runs alone
//! (`tests/fault_matrix_local.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

mod client_local;
mod common;
mod real_model;
mod slots;
mod tool_calls;
