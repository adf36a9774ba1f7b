//! Wire families: sans-IO request builders and response folders, one file per provider JSON
//! family. They know JSON shapes, never auth, endpoints or IO (`style.md` §6.1-2).

pub mod chat;
pub mod family;
pub mod json;
pub mod messages;
pub mod responses;
pub mod schema_prompt;
