//! Building an adapter by registry name, with its settings ([`AdapterSettings`]) and the
//! environment.
//!
//! Every HTTP row becomes an [`HttpAdapter`] (its row says everything: wire family, endpoint,
//! auth, default model); the CLI rows become their subprocess adapters with their `pass_env`
//! names. Base URLs follow [`AdapterSettings::endpoint_url`]: flags > `GEODE_*_BASE_URL` >
//! the vendor SDK's variable (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`) > the settings > the
//! registry default. Credentials come from the environment or credential files only, never
//! from settings. Every variable (keys, tokens, `CODEX_HOME`, `CLAUDE_CONFIG_DIR`,
//! `HOME`, the token service URL) is read through the given [`Environment`], so a caller (or a
//! test) can build any adapter from a described machine. The `local` adapter lives in the
//! `geode-local` crate; callers that link it (the CLI) build it themselves.

use crate::llm::adapter::Adapter;
use crate::llm::adapters::claude_cli::{ClaudeCliAdapter, ClaudeCliConfig};
use crate::llm::adapters::cli_common::{CliOptions, CliRow};
use crate::llm::adapters::codex_cli::{CodexCliAdapter, CodexCliConfig};
use crate::llm::adapters::http_adapter::HttpAdapter;
use crate::llm::call::AdapterError;
use crate::llm::registry::{CliTool, Environment, WireFamily};
use crate::llm::settings::AdapterSettings;
use std::sync::Arc;

/// Builds the adapter `name` (any registry adapter but `local`, or a provider of `settings`).
pub fn build(
    name: &str,
    settings: &AdapterSettings,
    env: &dyn Environment,
) -> Result<Arc<dyn Adapter>, AdapterError> {
    let config_err = |message: String| AdapterError::Config {
        adapter: name.to_owned(),
        message,
    };
    let spec = settings
        .spec(name)
        .ok_or_else(|| config_err(format!("unknown adapter {name:?}")))?;
    Ok(match spec.wire_family {
        WireFamily::Responses(_) | WireFamily::Messages | WireFamily::Chat(_) => {
            Arc::new(HttpAdapter::from_spec(spec, settings, env)?)
        }
        WireFamily::Cli(cli) => {
            let row = CliRow::of(spec)
                .ok_or_else(|| config_err(format!("adapter {name:?} names no binary")))?;
            // The CLI's options as the machine describes them: its binary and the variables it may see.
            let options = CliOptions::with_timeout(cli.timeout).described_by(
                env,
                &row,
                settings.pass_env(name),
            );
            match cli.tool {
                CliTool::Claude => Arc::new(ClaudeCliAdapter::new(ClaudeCliConfig {
                    cli: options,
                    ..ClaudeCliConfig::default()
                })),
                CliTool::Codex => Arc::new(CodexCliAdapter::new(CodexCliConfig {
                    cli: options,
                    ..CodexCliConfig::default()
                })),
            }
        }
        WireFamily::Local => {
            return Err(config_err(format!(
                "adapter {name:?} is not built by the library (link its crate)"
            )));
        }
    })
}

/// Builds the HTTP adapter `name` as its concrete type, so a caller can change its HTTP client
/// ([`HttpAdapter::with_http`]) or default model before use.
pub fn build_http(
    name: &str,
    settings: &AdapterSettings,
    env: &dyn Environment,
) -> Result<HttpAdapter, AdapterError> {
    let spec = settings.spec(name).ok_or_else(|| AdapterError::Config {
        adapter: name.to_owned(),
        message: format!("unknown adapter {name:?}"),
    })?;
    HttpAdapter::from_spec(spec, settings, env)
}
