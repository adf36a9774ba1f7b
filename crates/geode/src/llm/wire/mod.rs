//! Wire families: sans-IO request builders and reply folders, one module per provider JSON
//! family. They know JSON shapes, never auth, endpoints or IO (docs/architecture.md#layers).
//!
//! | module | job |
//! |---|---|
//! | [`family`] | the [`family::Wire`] trait (build, delivery, fold, schema-rejection judge) and [`family::exchange`], the one POST-and-fold driver |
//! | [`responses`] | OpenAI Responses (`openai-payg`, `codex-oauth`): `text.format` json_schema |
//! | [`messages`] | Anthropic Messages (both Anthropic adapters): `output_config.format`, else a forced output tool, else the prompt (`messages/placement.rs`) |
//! | [`chat`] | Chat Completions (both GLM adapters): `json_object` + the schema in the system prompt |
//! | [`parse_error`] | [`parse_error::ParseError`], the one parse-error type of every family |
//! | [`schema_prompt`] | the schema rendered into a system prompt (Chat, Messages `prompt` mode) |
//!
//! Every body is written from `Serialize` structs (`benches/wire.rs` measured the former hand
//! writer of Responses bodies: 13 µs against 21 µs through serde, inside a 300 µs loopback call).
//!
//! A new family implements [`family::Wire`] and gets a `registry::WireFamily` variant mapped in
//! `adapters::http_adapter::wire_for`.

pub mod chat;
pub mod family;
pub mod messages;
pub mod parse_error;
pub mod responses;
pub mod schema_prompt;
