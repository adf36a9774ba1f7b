//! The adapters. Every HTTP row of the registry is served by one generic adapter built from
//! the row; only the subscription logins and the CLIs have code of their own.
//!
//! | file | job |
//! |---|---|
//! | [`http_adapter`] | [`http_adapter::HttpAdapter`]: `openai-payg`, `codex-oauth`, `anthropic-payg`, `anthropic-oauth`, `glm-payg`, `glm-coding-plan`, `openai-compatible`, from their [`crate::llm::registry`] rows |
//! | [`compat_probe`] | `openai-compatible`'s probe: does the server enforce `json_schema` (strict), ignore it (hint) or refuse it (json-mode)? |
//! | [`codex_login`] | `codex-oauth`'s token source: `auth.json`, refresh, `chatgpt-account-id` / `originator` / `session-id` |
//! | [`claude_login`] | `anthropic-oauth`'s token source: `CLAUDE_CODE_OAUTH_TOKEN` or the credentials file, identity block, `anthropic-beta` |
//! | [`claude_cli`], [`codex_cli`], [`cli_common`], [`codex_config`] | the CLI adapters (`claude -p`, `codex exec`) |
//! | [`claude_partial`] | `claude-cli`'s answer deltas from `--include-partial-messages` lines, for streaming |
//!
//! A new HTTP provider on an existing wire family is a new registry row only
//! (`llm/registry/rows.rs`); a new wire family is a module under [`crate::llm::wire`]
//! implementing [`crate::llm::wire::family::Wire`], plus a [`crate::llm::registry::WireFamily`]
//! variant mapped in [`http_adapter::wire_for`].

pub mod claude_cli;
pub mod claude_login;
pub mod claude_partial;
pub mod cli_common;
pub mod codex_cli;
pub mod codex_config;
pub mod codex_login;
pub mod compat_probe;
pub mod http_adapter;

/// A random UUID v4 string (per-call session ids), from the std hasher's random keys.
pub(crate) fn uuid_v4() -> String {
    use std::hash::{BuildHasher, Hasher};
    let word = |salt: u64| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(salt);
        h.finish()
    };
    let (a, b) = (word(1), word(2));
    let a = (a & 0xffff_ffff_ffff_0fff) | 0x0000_0000_0000_4000;
    let b = (b & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_have_the_v4_shape_and_differ() {
        let (a, b) = (uuid_v4(), uuid_v4());
        assert_ne!(a, b);
        let parts: Vec<&str> = a.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            vec![8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('4'), "{a}");
        assert!(matches!(&parts[3][..1], "8" | "9" | "a" | "b"), "{a}");
    }
}
