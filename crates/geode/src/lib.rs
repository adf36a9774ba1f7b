//! geode: one structured-output contract across LLM providers, with an honest guarantee ledger.
//!
//! A caller attaches one JSON Schema, [`schema::ResponseSchema`], to an agent loop or to one call.
//! It travels `SubTask → WorkerRequest → AgenticLoop → AdapterCallRequest → adapter`; each adapter
//! puts it on its own wire; the worker checks the answer and retries once with feedback; and every
//! result carries a [`ledger::GuaranteeLedger`] saying which layer guaranteed what.
//!
//! | module | job |
//! |---|---|
//! | [`schema`] | the contract: the schema type, strict check, extraction, validation, dialects |
//! | [`llm`] | one call: request/response, the adapter trait, wires, adapters, registry, routing |
//! | [`agent`] | many calls: the loop, tools, the worker and its retry, subtasks |
//! | [`ledger`] | the guarantee ledger |
//! | [`secret`] | the `Secret` type and the one scrubber every outgoing string passes through |
//! | [`client`] | the Rust API: [`Client`], typed outputs, streaming partial values |

pub mod agent;
pub mod client;
pub mod config;
pub mod ledger;
pub mod llm;
pub mod schema;
pub mod secret;

pub use client::{Client, Error, Extracted, StreamEvent};
