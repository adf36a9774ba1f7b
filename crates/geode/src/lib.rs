//! geode: one structured-output contract across LLM providers, with an honest guarantee ledger.
//!
//! A caller attaches one JSON Schema, [`schema::ResponseSchema`], to an agent loop or to one call.
//! It travels `SubTask → WorkerRequest → AgenticLoop → AdapterCallRequest → adapter`; each adapter
//! puts it on its own wire; the worker checks the answer and retries once with feedback; and every
//! result carries a [`ledger::GuaranteeLedger`] saying which layer guaranteed what. The contract
//! is that of GEODE, the reference Python system (docs/reference.md), which geode reimplements.
//!
//! Inside, the worker speaks a typed language: an [`Task`] in (a route, the schema or
//! text constraint, `require`, budgets as `Duration`s), `Result<`[`Answer`]`,
//! `[`RunError`]`>` out. GEODE's JSON shapes (`WorkerRequest`,
//! `WorkerResult`) live only at the process edge, in [`protocol`].
//!
//! | module | job |
//! |---|---|
//! | [`schema`] | the contract: the schema type, strict check, extraction, validation, dialects |
//! | [`media`] | what a prompt holds beside text: images and documents, their type read from the bytes, what each route takes |
//! | [`llm`] | one call: request/response, the adapter trait, wires, adapters, registry, routing |
//! | [`agent`] | many calls: the typed task, the worker and its retry, the loop, tools, subtasks, the process protocol |
//! | [`batch`] | many tasks from JSONL: resume, whole-line results, pacing, the summary |
//! | [`cache`] | the response cache: validated answers kept under a hash of the request, replayed with the original ledger marked `replayed` |
//! | [`ledger`] | the guarantee ledger |
//! | [`vocab`] | value types every layer shares: modes, transforms, usage, stop reasons, error kinds |
//! | [`secret`] | the `Secret` type and the one scrubber every outgoing string passes through |
//! | (root) | the Rust API: [`Client`], [`ClientBuilder`], [`Error`], typed outputs ([`Extracted`]), streaming partial values ([`StreamEvent`]) |
//!
//! ## From Rust: your own types back
//!
//! [`Client::extract`] asks for any `T: JsonSchema + Deserialize`: the schema is generated once
//! per type, made strict-friendly (every rewrite named in the ledger), checked with one retry,
//! and deserialized. [`Client::from_env`] builds adapters as `geode run` does; here a scripted
//! adapter stands in for a provider:
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use geode::Client;
//! use geode::llm::{request::AdapterResponse, scripted::ScriptedAdapter};
//! use std::sync::Arc;
//!
//! /// A review decision.
//! #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
//! struct Review {
//!     /// Whether to merge.
//!     accept: bool,
//!     /// Why, in one sentence.
//!     reason: String,
//!     /// Lines to look at again, if any.
//!     lines: Option<Vec<u32>>,
//! }
//!
//! let answer = r#"{"accept": false, "reason": "breaks the build", "lines": [12]}"#;
//! let adapter = ScriptedAdapter::new(vec![Ok(AdapterResponse::text(answer))]);
//! let client = Client::builder()
//!     .config(geode::config::Config::default())
//!     .adapter_instance(Arc::new(adapter))
//!     .build()?;
//! let review = client.extract::<Review>("Review this diff: ...").await?;
//! assert!(!review.value.accept);
//! assert_eq!(review.value.lines, Some(vec![12]));
//! // `lines` is optional: strict wires need it required and nullable, and the ledger says so.
//! assert!(review.ledger.transforms.iter().any(|t| t.pointer == "/properties/lines"));
//! # Ok::<(), geode::Error>(()) }).unwrap();
//! ```
//!
//! [`Client::stream`] shows the value as it arrives: partial values with the JSON Pointers of
//! the parts already closed, each closed list element validated on its own, then the final
//! value validated in full:
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use futures::StreamExt;
//! use geode::{Client, StreamEvent};
//! use geode::llm::{request::AdapterResponse, scripted::ScriptedAdapter};
//! use std::sync::Arc;
//!
//! #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
//! struct Finding { line: u32, note: String }
//!
//! #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
//! struct Report { title: String, findings: Vec<Finding> }
//!
//! let answer = r#"{"title": "lint", "findings": [{"line": 3, "note": "unused"}, {"line": 9, "note": "shadowed"}]}"#;
//! // `streaming(4)`: the answer arrives in 4-byte deltas, as from an SSE wire.
//! let adapter = ScriptedAdapter::new(vec![Ok(AdapterResponse::text(answer))]).streaming(4);
//! let client = Client::builder()
//!     .config(geode::config::Config::default())
//!     .adapter_instance(Arc::new(adapter))
//!     .build()?;
//! let mut events = client.stream::<Report>("Lint this file");
//! let mut items = Vec::new();
//! while let Some(event) = events.next().await {
//!     match event? {
//!         StreamEvent::Partial { value, complete, guarantee } => {
//!             // Closed parts never change: here, the title once its string closed.
//!             if complete.iter().any(|p| p == "/title") {
//!                 assert_eq!(value["title"], "lint");
//!             }
//!         }
//!         StreamEvent::Item { index, value } => items.push((index, value["line"].clone())),
//!         StreamEvent::Retry { reason } => println!("retrying: {reason}"),
//!         StreamEvent::Final(report) => assert_eq!(report.value.findings.len(), 2),
//!     }
//! }
//! assert_eq!(items, [(0, serde_json::json!(3)), (1, serde_json::json!(9))]);
//! # Ok::<(), geode::Error>(()) }).unwrap();
//! ```

pub mod agent;
pub mod batch;
pub mod cache;
mod client;
pub mod config;
pub mod digest;
pub mod ledger;
pub mod llm;
pub mod media;
pub mod protocol;
#[cfg(feature = "redis")]
pub mod redis;
pub mod schema;
pub mod secret;
pub mod vocab;

pub use agent::conversation::{Conversation, Prompt};
// The facade: the language of `Client::run_task` (a task in, an answer or a run error out, and
// what they hold), so that the gateway, the CLI and the Python binding speak it from the root.
pub use agent::conversation::ConversationError;
pub use agent::task::{
    Answer, Budgets, Failure, Output, Refusal, ResolveError, Route, RunError, Task,
};
pub use agent::tools::ToolRegistryError;
pub use cache::Cache;
/// Not the API: the incremental JSON reader behind streaming, public for geode's benches.
#[doc(hidden)]
pub use client::partial_json;
pub use client::{
    AdapterFactory, CallSettings, Cause, Client, ClientBuilder, Error, Extracted, ItemSource,
    PartialGuarantee, StreamEvent, TextAnswer, TypedSchema, stream_task,
};
pub use config::{Config, Settings};
pub use ledger::GuaranteeLedger;
pub use llm::adapter::Adapter;
pub use llm::call::TextSink;
pub use llm::registry::{Environment, ProcessEnv};
pub use llm::request::{ToolChoice, ToolSpec, ToolUse};
pub use llm::routing::RoutingError;
pub use schema::ResponseSchema;
/// The schemars version geode derives schemas with (`#[derive(geode::schemars::JsonSchema)]`).
pub use schemars;
pub use vocab::{ErrorKind, Require, StructuredOutputMode};

/// The README's Rust example, compiled with the doctests so that it cannot drift from the API.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
