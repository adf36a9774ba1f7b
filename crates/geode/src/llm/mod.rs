//! One LLM call: the request and response shapes, the adapter trait, the registry, routing,
//! and the adapters.
//!
//! | file | job |
//! |---|---|
//! | [`request`] | `AdapterCallRequest`, `Message`, `ToolSpec`, `AdapterResponse`, `Usage`, `StopReason` |
//! | [`adapter`] | the `Adapter` trait, `CallCx`, `AdapterError` |
//! | [`registry`] | every adapter's capabilities as data (the README's wiring table) |
//! | [`routing`] | which adapter serves a call; the `require` policy |
//! | [`subprocess`] | spawn with a deadline, kill the whole process group, bounded capture |
//! | [`adapters`] | one file per adapter |

//! | [`fallback`] | a configured chain of adapters taking over on retryable failures |
//! | [`http`], [`sse`] | the shared HTTP client with retry and backoff; the SSE reader |
//! | [`credentials`] | keys and credential files, redacted everywhere |
//! | [`wire`] | one module per wire family: Responses, Messages, Chat |

pub mod adapter;
pub mod adapters;
pub mod build;
pub mod credentials;
pub mod fallback;
pub mod http;
pub mod registry;
pub mod request;
pub mod routing;
#[cfg(feature = "testing")]
pub mod scripted;
pub mod sse;
pub mod subprocess;
pub mod wire;
