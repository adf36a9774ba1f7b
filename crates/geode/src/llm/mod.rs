//! One LLM call: the request and response shapes, the adapter trait, the registry, routing,
//! and the adapters.
//!
//! The shape: a registry row ([`registry::AdapterSpec`]) describes an adapter completely;
//! [`build::build`] turns a row into an adapter (the generic
//! `adapters::http_adapter::HttpAdapter` for every HTTP row, a subprocess adapter for the
//! CLI rows); the HTTP adapter hands the JSON to the row's wire family (`wire::family::Wire`)
//! and the bytes to the transport (`http`).
//!
//! | file | job |
//! |---|---|
//! | [`request`] | `AdapterCallRequest`, `Message`, `ToolSpec`, `AdapterResponse` |
//! | [`adapter`] | the `Adapter` trait (`spec()` gives an adapter's row) |
//! | [`call`] | `CallCx` (cancellation, deadline, budget, text sink) and `AdapterError` |
//! | [`registry`] | every adapter as data: the rows are the adapters (and the README's wiring table) |
//! | [`settings`] | what building an adapter needs beyond its row: models, base URLs, `pass_env`, the defined providers |
//! | [`build`] | an adapter from its row, its settings and the environment |
//! | [`routing`] | which adapter serves a call; the `require` policy |
//! | [`engine`] | an adapter served by another process over JSON lines (the binary's `local`, `geode-engine`) |
//! | [`fallback`] | a configured chain of adapters taking over on retryable failures |
//!
//! Internal, hidden from these docs (public only for geode's own tests, fuzz targets and benches):
//!
//! | file | job |
//! |---|---|
//! | `adapters` | the generic HTTP adapter, the two subscription logins, the CLI adapters |
//! | `wire` | the `Wire` trait and its three families: Responses, Messages, Chat |
//! | `http`, `sse` | the provider-neutral HTTP client with retry and backoff; the SSE reader |
//! | `credentials` | keys and credential files, redacted everywhere |
//! | `subprocess` | spawn with a deadline, kill the whole process group, bounded capture |
//!
//! Where things go: a new HTTP provider on an existing wire → a row in `registry/rows.rs`; a
//! new wire family → a module under `wire/` implementing `wire::family::Wire`; where a
//! schema goes on the Anthropic wire → `wire/messages/placement.rs`.

pub mod adapter;
#[doc(hidden)]
pub mod adapters;
pub mod build;
pub mod call;
#[doc(hidden)]
pub mod credentials;
pub mod engine;
pub mod fallback;
#[doc(hidden)]
pub mod http;
pub mod registry;
pub mod request;
pub mod routing;
#[cfg(any(test, feature = "testing"))]
pub mod scripted;
pub mod settings;
#[doc(hidden)]
pub mod sse;
#[doc(hidden)]
pub mod subprocess;
#[doc(hidden)]
pub mod wire;
