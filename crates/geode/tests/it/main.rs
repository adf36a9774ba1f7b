//! geode's integration tests, in one binary (one link) with a module per area. Two suites run
//! alone, because they count the process's open descriptors and children, which tests running
//! beside them would change: `tests/fault_matrix` and `tests/faults_load.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

mod agent_loop;
mod capabilities;
mod cli_claude;
mod cli_codex;
mod client_cli;
mod client_http;
mod compat_llama_server;
mod fuzz_replay;
mod http_adapters;
mod http_chat;
mod http_compat;
mod http_messages;
mod http_responses;
mod layers;
mod readme;
mod real_shapes;
mod repair_corpus;
mod response_budget;
mod routing;
mod subprocess;
mod subtask;
mod task;
mod wire_snapshots;
mod worker;
