//! The CLI's integration tests, in one binary: each module drives the built `geode` binary as a
//! user would.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

mod cli;
mod conformance_responses;
mod e2e_any_root;
mod e2e_batch;
mod e2e_budgets;
mod e2e_cache;
mod e2e_cli_adapters;
mod e2e_gateway;
mod e2e_gateway_contract;
mod e2e_gateway_inputs;
mod e2e_gateway_sdk;
mod e2e_gateway_store;
mod e2e_gateway_tools;
mod e2e_http;
mod e2e_inputs;
mod e2e_local_engine;
mod e2e_local_schemas;
mod e2e_mcp;
mod e2e_mcp_sdk;
mod e2e_policy;
mod e2e_progress;
mod e2e_providers;
mod e2e_queue;
mod e2e_repair;
mod e2e_secrets;
mod e2e_stream;
mod hardening;
mod hostile_batch;
mod hostile_cache;
mod hostile_config;
mod hostile_gateway;
mod hostile_local;
mod hostile_probe;
mod hostile_queue;
mod link_order;
mod support;
