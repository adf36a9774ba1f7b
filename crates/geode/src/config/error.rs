//! Why a config file cannot be used.

use crate::llm::registry::ProviderError;

/// A config file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config {path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The OS message.
        message: String,
    },
    /// The file is not valid (syntax, unknown key, wrong type).
    #[error("bad config {path} at line {line}, column {column}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// An environment variable that overrides a setting has a bad value.
    #[error("bad environment variable {name}: {message}")]
    BadEnv {
        /// The variable.
        name: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The file names an adapter that does not exist.
    #[error("bad config {path}: unknown adapter {name:?} in {field}")]
    UnknownAdapter {
        /// The file.
        path: String,
        /// The bad name.
        name: String,
        /// Where it appeared.
        field: &'static str,
    },
    /// A `[providers.NAME]` table that cannot be used; names the key, never a secret.
    #[error("bad config {path}: {problem}")]
    Provider {
        /// The file.
        path: String,
        /// The provider, the key and why.
        problem: ProviderError,
    },
    /// A setting whose value cannot be used (`[timeouts] request_s`, `[adapters.NAME] model`
    /// or `base_url`). The message never holds the value when it may be a secret.
    #[error("bad config {path}: {key}: {message}")]
    Setting {
        /// The file.
        path: String,
        /// The key, e.g. `[adapters.openai-payg] base_url`.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// A project's `geode.toml` (the working directory's) chooses what only a trusted file may
    /// (where credentials go, where cached answers come from, where the gateway keeps stored
    /// responses), and the user has not trusted it as it is ([`trust`]).
    #[error(
        "{path} chooses what only a trusted file may ({}: where credentials go, where cached \
         answers come from or where stored responses are kept); if you trust this file, run \
         `geode config trust` (or `python -m geode trust-config`) beside it (it is trusted as it \
         is now: a change asks again), or move these settings to ~/.config/geode/config.toml or \
         the environment",
        settings.join(", ")
    )]
    Untrusted {
        /// The file.
        path: String,
        /// The settings, as keys (`[adapters.openai-payg] base_url`).
        settings: Vec<String>,
    },
    /// A `pass_env` that cannot be used. The message names entries by position, never by text.
    #[error("bad config {path}: [adapters.{adapter}] pass_env: {message}")]
    PassEnv {
        /// The file.
        path: String,
        /// The adapter whose table holds it.
        adapter: String,
        /// What is wrong.
        message: String,
    },
}
