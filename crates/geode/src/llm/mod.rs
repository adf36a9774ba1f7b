//! One LLM call: the request and response shapes, the adapter trait, and the adapters.

pub mod adapter;
pub mod adapters;
pub mod credentials;
pub mod http;
pub mod request;
#[cfg(feature = "testing")]
pub mod scripted;
pub mod sse;
pub mod wire;
