//! Building an adapter by registry name, with settings from the config file and environment.
//!
//! Base URLs follow the precedence flags > environment (`GEODE_*_BASE_URL`) > config file >
//! the registry default. Credentials come from the environment or credential files only, never
//! from the config file. Every variable (keys, tokens, `CODEX_HOME`, `CLAUDE_CONFIG_DIR`,
//! `HOME`, the token service URL) is read through the given [`Environment`], so a caller (or a
//! test) can build any adapter from a described machine. The CLI adapters get the config file's
//! `pass_env` names. The `local` adapter lives in the `geode-local` crate; callers that link it
//! (the CLI) build it themselves.

use crate::config::Config;
use crate::llm::adapter::{Adapter, AdapterError};
use crate::llm::adapters::anthropic_oauth::{self, AnthropicOauth};
use crate::llm::adapters::anthropic_payg::{self, AnthropicPayg};
use crate::llm::adapters::claude_cli::{ClaudeCliAdapter, ClaudeCliConfig};
use crate::llm::adapters::codex_cli::{CodexCliAdapter, CodexCliConfig};
use crate::llm::adapters::codex_oauth::{self, CodexOauth, CodexOauthSettings};
use crate::llm::adapters::glm_coding_plan::{self, GlmCodingPlan};
use crate::llm::adapters::glm_payg::{self, GlmPayg};
use crate::llm::adapters::openai_payg::{self, OpenAiPayg, OpenAiPaygSettings};
use crate::llm::credentials::{CodexAuthFile, Secret, var_in};
use crate::llm::registry::{Environment, spec};
use std::path::PathBuf;
use std::sync::Arc;

/// Builds the adapter `name` (any registry adapter but `local`).
pub fn build(
    name: &str,
    cfg: &Config,
    env: &dyn Environment,
) -> Result<Arc<dyn Adapter>, AdapterError> {
    let config_err = |message: String| AdapterError::Config {
        adapter: name.to_owned(),
        message,
    };
    if spec(name).is_none() {
        return Err(config_err(format!("unknown adapter {name:?}")));
    }
    let base = || {
        cfg.base_url(name, None, env)
            .ok_or_else(|| config_err("no base URL".to_owned()))
    };
    let var = |key: &str| var_in(env, key);
    let secret = |key: &str| {
        var(key)
            .map(Secret::new)
            .ok_or_else(|| config_err(format!("environment variable {key} is not set")))
    };
    Ok(match name {
        "openai-payg" => Arc::new(OpenAiPayg::new(OpenAiPaygSettings {
            base_url: base()?,
            api_key: secret(openai_payg::API_KEY_ENV)?,
        })?),
        "codex-oauth" => {
            let auth_file = CodexAuthFile::locate(name, env)?;
            if !env.file_exists(auth_file.path()) {
                return Err(config_err(format!(
                    "codex auth file {} not found (set CODEX_HOME or run `codex login`)",
                    auth_file.path().display()
                )));
            }
            Arc::new(CodexOauth::new(CodexOauthSettings {
                base_url: base()?,
                auth_url: var(codex_oauth::AUTH_URL_ENV)
                    .unwrap_or_else(|| codex_oauth::DEFAULT_AUTH_URL.to_owned()),
                auth_file,
            })?)
        }
        "anthropic-payg" => Arc::new(AnthropicPayg::new(
            base()?,
            secret(anthropic_payg::KEY_ENV)?,
        )?),
        "anthropic-oauth" => {
            if let Some(token) = var(anthropic_oauth::TOKEN_ENV) {
                Arc::new(AnthropicOauth::new(base()?, Secret::new(token))?)
            } else {
                let path = var(anthropic_oauth::CONFIG_DIR_ENV)
                    .map(PathBuf::from)
                    .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".claude")))
                    .map(|dir| dir.join(".credentials.json"))
                    .ok_or_else(|| {
                        config_err(format!(
                            "{} is not set and HOME is unknown",
                            anthropic_oauth::TOKEN_ENV
                        ))
                    })?;
                Arc::new(AnthropicOauth::with_credentials_file(base()?, path)?)
            }
        }
        "glm-payg" => Arc::new(GlmPayg::new(base()?, secret(glm_payg::KEY_ENV)?)?),
        "glm-coding-plan" => Arc::new(GlmCodingPlan::new(
            base()?,
            secret(glm_coding_plan::KEY_ENV)?,
        )?),
        "claude-cli" => {
            let mut config = ClaudeCliConfig::default();
            config.cli.allow_env = cfg.pass_env(name).to_vec();
            Arc::new(ClaudeCliAdapter::new(config))
        }
        "codex-cli" => {
            let mut config = CodexCliConfig::default();
            config.cli.allow_env = cfg.pass_env(name).to_vec();
            Arc::new(CodexCliAdapter::new(config))
        }
        other => {
            return Err(config_err(format!(
                "adapter {other:?} is not built by the library (link its crate)"
            )));
        }
    })
}
