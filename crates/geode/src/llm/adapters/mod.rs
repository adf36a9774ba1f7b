//! One file per adapter: endpoint, auth, how the schema goes on the wire, capabilities.

pub mod claude_cli;
pub mod cli_common;
pub mod codex_cli;
