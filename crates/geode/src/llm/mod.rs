//! One LLM call: the request and response shapes, the adapter trait, and the adapters.

pub mod adapter;
pub mod adapters;
pub mod request;
#[cfg(feature = "testing")]
pub mod scripted;
pub mod wire;
