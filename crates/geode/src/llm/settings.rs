//! What building an adapter needs to know beyond its row: the providers a configuration defined,
//! and per adapter a model, a base URL and the variables a CLI may see. Plain data, made once
//! per process from the config file ([`crate::config::Config::settings`]) or by hand (tests,
//! embedders), so that `llm` never reads a config file.
//!
//! Precedence where these meet the environment: a flag > the adapter's `GEODE_*_BASE_URL` > the
//! vendor SDK's own variable (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`) > this setting > the
//! registry's default ([`AdapterSettings::endpoint_url`]).

use crate::llm::registry::{ADAPTERS, AdapterSpec, Environment, spec};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One adapter's settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AdapterSetting {
    /// The model used when none is named.
    pub model: Option<String>,
    /// The base URL (for HTTP adapters).
    pub base_url: Option<String>,
    /// CLI adapters: parent environment variables the CLI may see besides its row's own list.
    /// Names only.
    pub pass_env: Vec<String>,
}

/// Every adapter's settings, and the rows of the providers defined beside them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AdapterSettings {
    /// Per-adapter settings, keyed by adapter name.
    pub adapters: BTreeMap<String, AdapterSetting>,
    /// Rows of providers defined by configuration (`[providers.NAME]`), in name order.
    pub providers: Vec<&'static AdapterSpec>,
    /// The file the settings came from, named in errors about a base URL.
    pub source: Option<PathBuf>,
}

impl AdapterSettings {
    /// Settings for one adapter `name` (tests, embedders).
    pub fn with(mut self, name: &str, setting: AdapterSetting) -> Self {
        self.adapters.insert(name.to_owned(), setting);
        self
    }

    /// The row of the adapter `name`: a built-in one, else a defined provider.
    pub fn spec(&self, name: &str) -> Option<&'static AdapterSpec> {
        spec(name).or_else(|| self.providers.iter().copied().find(|r| r.name == name))
    }

    /// Every adapter known: the built-in rows, then the defined providers.
    pub fn all(&self) -> impl Iterator<Item = &'static AdapterSpec> + '_ {
        ADAPTERS.iter().chain(self.providers.iter().copied())
    }

    /// The `pass_env` names of `adapter` (empty when none are set).
    pub fn pass_env(&self, adapter: &str) -> &[String] {
        self.adapters
            .get(adapter)
            .map_or(&[], |a| a.pass_env.as_slice())
    }

    /// The model for `adapter`: `flag` > its setting > the registry default.
    pub fn model(&self, adapter: &str, flag: Option<&str>) -> String {
        flag.filter(|m| !m.is_empty())
            .map(str::to_owned)
            .or_else(|| self.adapters.get(adapter).and_then(|a| a.model.clone()))
            .or_else(|| self.spec(adapter).map(|s| s.default_model.to_owned()))
            .unwrap_or_default()
    }

    /// The model-call URL for `adapter` (an HTTP row): `{base}{path}` where the base is `flag` >
    /// its `GEODE_*_BASE_URL` > the vendor SDK's variable, read as the SDK reads it
    /// (`OPENAI_BASE_URL=http://h/v1` posts to `http://h/v1/responses`) > its setting > the
    /// registry default. `None` when the row has no endpoint, or no base URL at all
    /// (`openai-compatible` has no default server).
    pub fn endpoint_url(
        &self,
        adapter: &str,
        flag: Option<&str>,
        env: &dyn Environment,
    ) -> Option<String> {
        let e = self.spec(adapter)?.endpoint?;
        let join = crate::llm::http::join_url;
        let geode_base = flag.map(str::to_owned).or_else(|| env.var(e.base_env));
        if let Some(base) = geode_base {
            return Some(join(&base, e.path));
        }
        if let Some(sdk) = e.sdk_base
            && let Some(base) = env.var(sdk.env)
        {
            return Some(join(&base, sdk.path));
        }
        let base = self
            .adapters
            .get(adapter)
            .and_then(|a| a.base_url.clone())
            .unwrap_or_else(|| e.default_base.to_owned());
        (!base.trim().is_empty()).then(|| join(&base, e.path))
    }

    /// Where [`Self::endpoint_url`] (without a flag) takes `adapter`'s base URL from, in words
    /// for an error that names it: the `GEODE_*_BASE_URL` variable, the SDK's variable, the
    /// file's `base_url`, or the registry's default.
    pub fn base_url_source(&self, adapter: &str, env: &dyn Environment) -> String {
        let Some(e) = self.spec(adapter).and_then(|s| s.endpoint) else {
            return "the base URL".to_owned();
        };
        if env.var(e.base_env).is_some() {
            return e.base_env.to_owned();
        }
        if let Some(sdk) = e.sdk_base
            && env.var(sdk.env).is_some()
        {
            return sdk.env.to_owned();
        }
        match (
            &self.source,
            self.adapters.get(adapter).and_then(|a| a.base_url.as_ref()),
        ) {
            (Some(path), Some(_)) => {
                format!("[adapters.{adapter}] base_url of {}", path.display())
            }
            (None, Some(_)) => format!("the base_url set for {adapter}"),
            _ => format!("the default base URL of {adapter}"),
        }
    }
}
