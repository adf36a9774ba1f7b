//! Wire families: provider JSON shapes, built and parsed without IO.

pub mod chat;
pub mod messages;
pub mod schema_prompt;

