//! Fake LLM provider servers on 127.0.0.1, for tests, benchmarks and demos.
//!
//! Each [`FakeServer`] is a real HTTP/1.1 server on an ephemeral loopback port that speaks one
//! provider protocol ([`Kind`]): the OpenAI Responses API, the ChatGPT/Codex backend, the
//! Anthropic Messages API, or GLM-style Chat Completions: the protocols the adapters of GEODE,
//! the reference Python system (docs/reference.md), speak. It records every request
//! ([`RecordedRequest`], secrets masked) and answers model calls from a [`Script`] of
//! [`Reply`] steps: normal answers (text, JSON, tool call, refusal, max tokens) in the exact
//! wire shape of the provider (JSON or SSE, as docs/wire.md describes them and as the real `codex`
//! and `claude` CLIs accepted them), provider-shaped HTTP errors, and faults
//! (connection reset, stream cut, slow body, hang, a hang or reset mid-body, an endless body,
//! garbage, an HTML page, a provider error inside a 200 answer).
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use geode_fakes::{FakeServer, Kind, Reply, Script};
//! let server = FakeServer::start(
//!     Kind::Responses,
//!     Script::new([Reply::rate_limited(1), Reply::text("{\"ok\":true}")]),
//! )
//! .await?;
//! // Point a client at server.base_url() ("http://127.0.0.1:PORT"), then inspect:
//! let seen = server.requests();
//! # drop(seen);
//! server.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! The `geode-fakes` binary serves one fake from the command line
//! (`geode-fakes serve --kind responses --port 18080 --script script.json`).

pub mod chat;
pub mod chatgpt;
mod deliver;
mod faults;
mod instance;
mod kind;
pub mod llama_server;
pub mod messages;
mod plan;
pub mod record;
pub mod responses;
pub mod script;
pub mod server;
mod sse;
pub mod tls;

pub use kind::{Kind, UnknownKind};
pub use record::RecordedRequest;
pub use script::{Reply, Script, ScriptError, TokenUsage};
pub use server::{FakeServer, FakeServerBuilder, SchemaSupport};
pub use tls::{TlsError, TlsIdentity};
