//! The file and the environment resolved, once per process, into the plain settings the core
//! takes. Every environment variable that overrides the file is read here.

use super::{AdapterConfig, Config, ConfigError, GatewayConfig};
use crate::agent::resolve::RoutingSettings;
use crate::agent::task::Budgets;
use crate::cache::{CacheLocation, CacheSettings};
use crate::llm::call::DEFAULT_MAX_RESPONSE_BYTES;
use crate::llm::registry::Environment;
use crate::llm::settings::{AdapterSetting, AdapterSettings};
use std::num::NonZeroU64;
use std::time::Duration;

/// The variable that overrides `[limits] max_response_bytes`.
pub const MAX_RESPONSE_BYTES_ENV: &str = "GEODE_MAX_RESPONSE_BYTES";

/// What a process runs with: the config file resolved with the environment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    /// How tasks are routed to adapters.
    pub routing: RoutingSettings,
    /// Whether the declared repair tier reads answers that fail their check.
    pub repair: bool,
    /// The worker's hard limit per request (`[timeouts] request_s`).
    pub request_timeout: Option<Duration>,
    /// The response cache `[cache]` names, if any.
    pub cache: Option<CacheSettings>,
    /// `geode gateway`'s policy and model aliases.
    pub gateway: GatewayConfig,
    /// The named contracts, checked (`[contracts.NAME]`, [`super::contracts`]).
    pub contracts: std::sync::Arc<std::collections::BTreeMap<String, super::contracts::Contract>>,
}

impl Config {
    /// The adapters' settings this file gives: per adapter a model, a base URL and `pass_env`,
    /// and the rows of the providers it defines.
    pub fn adapter_settings(&self) -> AdapterSettings {
        let setting = |a: &AdapterConfig| AdapterSetting {
            model: a.model.clone(),
            base_url: a.base_url.clone(),
            pass_env: a.pass_env.clone(),
        };
        AdapterSettings {
            adapters: self
                .adapters
                .iter()
                .map(|(name, a)| (name.clone(), setting(a)))
                .collect(),
            providers: self.rows.clone(),
            source: self.source.clone(),
        }
    }

    /// This file resolved with `env`: [`MAX_RESPONSE_BYTES_ENV`] > `[limits]
    /// max_response_bytes` > [`DEFAULT_MAX_RESPONSE_BYTES`]. A variable that is not a positive
    /// integer is an error, and so is a `[cache] ttl` that is not a positive duration.
    pub fn settings(&self, env: &dyn Environment) -> Result<Settings, ConfigError> {
        let cache = match (&self.cache.dir, &self.cache.url) {
            (Some(dir), _) => Some(CacheLocation::Dir(dir.clone())),
            (None, Some(url)) => {
                Some(CacheLocation::parse(url).map_err(|e| ConfigError::Setting {
                    path: self.source_name(),
                    key: "[cache] url".to_owned(),
                    message: e.to_string(),
                })?)
            }
            (None, None) => None,
        };
        let ttl = self
            .cache
            .ttl
            .as_ref()
            .map(|t| t.duration())
            .transpose()
            .map_err(|e| ConfigError::Setting {
                path: self.source_name(),
                key: "[cache] ttl".to_owned(),
                message: e.to_string(),
            })?;
        Ok(Settings {
            routing: RoutingSettings {
                adapters: self.adapter_settings(),
                default_adapter: self.default_adapter.clone(),
                fallback: self.fallback.clone(),
                max_response_bytes: max_response_bytes(self, env)?,
            },
            repair: self.repair,
            request_timeout: self.timeouts.request_s.map(Budgets::seconds),
            cache: cache.map(|location| CacheSettings { location, ttl }),
            gateway: self.gateway.clone(),
            contracts: self.checked_contracts.clone(),
        })
    }

    fn source_name(&self) -> String {
        self.source
            .as_ref()
            .map_or_else(|| "geode.toml".to_owned(), |p| p.display().to_string())
    }
}

fn max_response_bytes(cfg: &Config, env: &dyn Environment) -> Result<u64, ConfigError> {
    if let Some(v) = env.var(MAX_RESPONSE_BYTES_ENV) {
        return v
            .trim()
            .parse::<NonZeroU64>()
            .map(NonZeroU64::get)
            // The value is not shown: a key pasted into the wrong variable stays unseen.
            .map_err(|e| ConfigError::BadEnv {
                name: MAX_RESPONSE_BYTES_ENV,
                message: format!("not a positive number of bytes ({e})"),
            });
    }
    Ok(cfg
        .limits
        .max_response_bytes
        .map_or(DEFAULT_MAX_RESPONSE_BYTES, NonZeroU64::get))
}
