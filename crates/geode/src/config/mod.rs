//! The config file: `geode.toml` in the working directory, else `~/.config/geode/config.toml`.
//!
//! Precedence: flags > environment > config file > built-in defaults. The file holds the
//! default adapter, a model and base URL per adapter, the fallback chain, timeouts and limits,
//! and for the CLI adapters (`claude-cli`, `codex-cli`) the extra parent variables the CLI may
//! see (`pass_env`: names only, never values). Unknown keys and unknown adapter names are
//! errors; a syntax error names the line and column; a `pass_env` entry that is not a variable
//! name, or `pass_env` on an adapter that runs no CLI, is an error that names the entry by
//! position only (a pasted value is never echoed).
//!
//! Hostile files are refused, not half-read: a `geode.toml` that is there but is not a regular
//! file (a directory, a FIFO, a device, a dangling or looping symlink) or is larger than
//! [`MAX_CONFIG_BYTES`] is an error, never skipped for the defaults; a value of the wrong type
//! is named by its key and position, not echoed (a key pasted in the wrong place stays
//! unseen), and every message passes the secret scrubber; `[timeouts] request_s`, each
//! `[adapters.NAME] model` and `base_url` are checked when the file is loaded.
//!
//! The working directory's file may not send a credential to a host it chose until the user
//! trusted it as it is ([`trust`]); the user's own file is theirs.
//!
//! What the file says ([`Config`]) and what the process runs with ([`Settings`]) are two types:
//! the file is read once, and [`Config::settings`] turns it, with the environment variables
//! that override it, into the plain settings the core takes (adapters, routing, cache,
//! limits). Nothing below this module reads the file.
//!
//! | file | job |
//! |---|---|
//! | `file` | the file's shape, and the checks made when it is parsed |
//! | `load` | finding the file, and reading a hostile one safely |
//! | `settings` | the file and the environment resolved into [`Settings`] |
//! | [`trust`] | which project files the user trusted to send credentials where they say |
//! | [`contracts`] | named contracts (`[contracts.NAME]`): a schema, a prompt with typed inputs, a route |
//!
//! ```toml
//! default_adapter = "openai-payg"
//! fallback = ["openai-payg", "anthropic-payg"]
//! repair = false                       # the declared repair tier (schema::repair); off unless asked
//!
//! [timeouts]
//! request_s = 120
//!
//! [limits]
//! max_response_bytes = 16777216  # or GEODE_MAX_RESPONSE_BYTES; default 16 MiB
//!
//! [adapters.openai-payg]
//! model = "gpt-5.5"
//! base_url = "http://127.0.0.1:8080"
//!
//! [adapters.codex-cli]
//! pass_env = ["MY_GATEWAY_TOKEN"]
//!
//! [providers.router]                   # an adapter without code (llm::registry::providers)
//! wire = "chat"
//! base_url = "https://openrouter.ai/api/v1"
//! key_env = "OPENROUTER_API_KEY"
//! model = "openai/gpt-5.5"
//! schema = "json_schema"
//!
//! [cache]                              # the response cache (crate::cache); --cache wins
//! dir = ".geode-cache"                 # or url = "redis://127.0.0.1:6379/team"
//! ttl = "7d"                           # or seconds; default: no bound
//!
//! [gateway]                            # geode gateway: the least guarantee of every request
//! require = "wired"
//!
//! [gateway.store]                      # stored responses (store, previous_response_id)
//! max_age = "30d"                      # dir = "..." or url = "redis://..."; enabled = false
//!
//! [gateway.models.fast]                # `"model": "fast"` routes here
//! adapter = "openai-payg"
//! model = "gpt-5-mini"
//! fallback = ["anthropic-payg"]
//! ```

pub mod contracts;
mod error;
mod file;
mod load;
mod settings;
pub mod trust;

pub use error::ConfigError;
pub use file::{
    AdapterConfig, CacheConfig, CacheTtl, Config, GatewayConfig, GatewayStoreConfig, Limits,
    ModelAlias, Timeouts,
};
pub use load::MAX_CONFIG_BYTES;
pub use settings::{MAX_RESPONSE_BYTES_ENV, Settings};

#[cfg(test)]
mod tests;
