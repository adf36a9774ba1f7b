//! The file's shape: every table and key `geode.toml` may hold, and the checks made when it is
//! parsed (unknown names, bad values, a secret never echoed).

use super::ConfigError;
use crate::llm::registry::{AdapterSpec, Billing, ProviderConfig, is_env_name, spec};
use crate::vocab::Require;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::num::{NonZeroU64, NonZeroUsize};
use std::path::PathBuf;

/// Per-adapter settings.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdapterConfig {
    /// The model used when none is named.
    pub model: Option<String>,
    /// The base URL (for HTTP adapters).
    pub base_url: Option<String>,
    /// CLI adapters: parent environment variables the CLI may see besides its adapter's own
    /// list (e.g. a key its configuration reads). Names only.
    #[serde(default)]
    pub pass_env: Vec<String>,
}

/// Timeouts.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timeouts {
    /// The worker's hard limit per request, in seconds (the WorkerRequest's `timeout_s`).
    pub request_s: Option<f64>,
}

/// Budgets on what a provider may send back.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// The most bytes of one response: an HTTP body, an SSE stream, a CLI's stdout, and the
    /// answer text folded from them (default [`crate::llm::call::DEFAULT_MAX_RESPONSE_BYTES`], 16 MiB).
    pub max_response_bytes: Option<NonZeroU64>,
}

/// `geode gateway`'s settings (`[gateway]`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GatewayConfig {
    /// The least guarantee every request gets; a request may raise it, never lower it.
    pub require: Require,
    /// Names clients may send as `model`, each for a route (`[gateway.models.NAME]`).
    pub models: BTreeMap<String, ModelAlias>,
    /// Where and for how long stored responses are kept (`[gateway.store]`).
    pub store: GatewayStoreConfig,
}

/// The gateway's stored responses (`[gateway.store]`): what the Responses API's `store`,
/// `previous_response_id` and `GET /v1/responses/{id}` read. On unless `enabled = false`; the
/// gateway resolves the defaults (a directory under the user's cache, 30 days, 10,000 entries).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GatewayStoreConfig {
    /// Whether responses are stored at all.
    pub enabled: bool,
    /// The directory of the embedded store (relative: from the working directory).
    pub dir: Option<PathBuf>,
    /// A Redis URL shared by gateways: `redis://[USER:PASSWORD@]HOST:PORT/NAME`.
    pub url: Option<String>,
    /// The largest age of a stored response: seconds, or a duration text (`"30d"`).
    pub max_age: Option<CacheTtl>,
    /// The most responses kept (embedded store); the oldest go first.
    pub max_entries: Option<NonZeroUsize>,
    /// The most bytes of stored responses (embedded store); one response may take a sixteenth.
    pub max_bytes: Option<NonZeroU64>,
}

impl Default for GatewayStoreConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            dir: None,
            url: None,
            max_age: None,
            max_entries: None,
            max_bytes: None,
        }
    }
}

impl GatewayStoreConfig {
    /// The key and the reason of the first bad value, if any.
    fn check(&self) -> Result<(), (String, String)> {
        let key = |k: &str| format!("[gateway.store] {k}");
        if self.dir.is_some() && self.url.is_some() {
            return Err((
                "[gateway.store]".to_owned(),
                "give `dir` (this machine) or `url` (Redis), not both".to_owned(),
            ));
        }
        if let Some(url) = &self.url
            && !url.starts_with("redis://")
        {
            return Err((
                key("url"),
                "must be redis://HOST:PORT/NAME (a directory goes in `dir`)".to_owned(),
            ));
        }
        if let Some(Err(e)) = self.max_age.as_ref().map(CacheTtl::duration) {
            return Err((key("max_age"), e.to_string()));
        }
        Ok(())
    }
}

/// The response cache (`[cache]`, [`crate::cache`]): `dir` or `url`, and a TTL. The command
/// line's `--cache` and `--cache-ttl` win over it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    /// A directory on this machine (relative: from the working directory).
    pub dir: Option<PathBuf>,
    /// A Redis URL shared by machines: `redis://[USER:PASSWORD@]HOST:PORT[/NAME]`.
    pub url: Option<String>,
    /// The largest age of an entry that may answer: seconds, or a duration text (`"1h"`).
    pub ttl: Option<CacheTtl>,
}

/// `ttl = 3600` or `ttl = "1h"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum CacheTtl {
    /// Whole seconds.
    Seconds(u64),
    /// A duration text ([`crate::vocab::parse_duration`]).
    Text(String),
}

impl CacheTtl {
    /// The duration, refused when not positive.
    pub fn duration(&self) -> Result<std::time::Duration, crate::vocab::DurationError> {
        match self {
            Self::Seconds(s) => crate::vocab::parse_duration(&s.to_string()),
            Self::Text(t) => crate::vocab::parse_duration(t),
        }
    }
}

/// A `model` name of the gateway that stands for a route.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelAlias {
    /// The adapter (a registry name or a `[providers.NAME]`).
    pub adapter: String,
    /// The model ("" or absent: the adapter's default).
    #[serde(default)]
    pub model: String,
    /// Adapters tried in order when this one fails with a retryable error.
    #[serde(default)]
    pub fallback: Vec<String>,
}

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// The adapter used when no adapter or model is named.
    pub default_adapter: Option<String>,
    /// Adapters tried in order on retryable provider failures.
    pub fallback: Vec<String>,
    /// Let the declared repair tier ([`crate::schema::repair`]) read answers that fail their
    /// check, for `geode run`, `batch`, `worker`, the gateway and [`crate::Client::from_env`]
    /// (each can also ask for it alone; `geode validate` reads no config, only `--repair`).
    /// Off by default.
    pub repair: bool,
    /// Timeouts.
    pub timeouts: Timeouts,
    /// Limits.
    pub limits: Limits,
    /// Per-adapter settings, keyed by adapter name.
    pub adapters: BTreeMap<String, AdapterConfig>,
    /// Providers defined here (`[providers.NAME]`), keyed by name.
    pub providers: BTreeMap<String, ProviderConfig>,
    /// The gateway's policy and model aliases.
    pub gateway: GatewayConfig,
    /// The response cache, when one is set.
    pub cache: CacheConfig,
    /// Named contracts (`[contracts.NAME]`, [`super::contracts`]), keyed by name.
    pub contracts: BTreeMap<String, super::contracts::ContractConfig>,
    /// The contracts, checked (schemas read and compiled, templates parsed).
    #[serde(skip)]
    pub(super) checked_contracts: std::sync::Arc<BTreeMap<String, super::contracts::Contract>>,
    /// The providers' rows, checked ([`Self::spec`] finds them).
    #[serde(skip)]
    pub(super) rows: Vec<&'static AdapterSpec>,
    /// The file this came from, if any.
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

impl Config {
    /// Parses config text; `path` names the source in errors.
    pub fn parse(text: &str, path: &str) -> Result<Self, ConfigError> {
        let mut cfg: Config = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map(|s| line_col(text, s.start)).unwrap_or((0, 0));
            ConfigError::Invalid {
                path: path.to_owned(),
                line,
                column,
                message: crate::secret::scrub(&without_strings(e.message())),
            }
        })?;
        cfg.rows = cfg
            .providers
            .iter()
            .map(|(name, table)| table.spec(name))
            .collect::<Result<_, _>>()
            .map_err(|problem| ConfigError::Provider {
                path: path.to_owned(),
                problem,
            })?;
        let unknown = |name: &str, field| ConfigError::UnknownAdapter {
            path: path.to_owned(),
            name: name.to_owned(),
            field,
        };
        if let Some(d) = &cfg.default_adapter
            && cfg.spec(d).is_none()
        {
            return Err(unknown(d, "default_adapter"));
        }
        if let Some(bad) = cfg.fallback.iter().find(|n| cfg.spec(n).is_none()) {
            return Err(unknown(bad, "fallback"));
        }
        if let Some(bad) = cfg.adapters.keys().find(|n| cfg.spec(n).is_none()) {
            return Err(unknown(bad, "[adapters]"));
        }
        if let Some(bad) = cfg
            .gateway
            .models
            .values()
            .flat_map(|a| std::iter::once(&a.adapter).chain(&a.fallback))
            .find(|n| cfg.spec(n).is_none())
        {
            return Err(unknown(bad, "[gateway.models]"));
        }
        let setting = |key: String, message: String| ConfigError::Setting {
            path: path.to_owned(),
            key,
            message,
        };
        if let Some(s) = cfg.timeouts.request_s
            && !(s.is_finite() && s > 0.0)
        {
            return Err(setting(
                "[timeouts] request_s".to_owned(),
                format!("timeout_s must be a positive, finite number of seconds, got {s}"),
            ));
        }
        if cfg.cache.dir.is_some() && cfg.cache.url.is_some() {
            return Err(setting(
                "[cache]".to_owned(),
                "give `dir` (this machine) or `url` (Redis), not both".to_owned(),
            ));
        }
        if let Some(url) = &cfg.cache.url
            && !url.starts_with("redis://")
        {
            return Err(setting(
                "[cache] url".to_owned(),
                "must be redis://HOST:PORT[/NAME] (a directory goes in `dir`)".to_owned(),
            ));
        }
        if let Some(Err(e)) = cfg.cache.ttl.as_ref().map(CacheTtl::duration) {
            return Err(setting("[cache] ttl".to_owned(), e.to_string()));
        }
        cfg.gateway
            .store
            .check()
            .map_err(|(key, message)| setting(key, message))?;
        for (name, adapter) in &cfg.adapters {
            if adapter.model.as_ref().is_some_and(|m| m.trim().is_empty()) {
                return Err(setting(
                    format!("[adapters.{name}] model"),
                    "is empty: name a model, or leave the key out for the default".to_owned(),
                ));
            }
            if let Some(base) = &adapter.base_url {
                crate::llm::registry::check_base_url(base)
                    .map_err(|m| setting(format!("[adapters.{name}] base_url"), m))?;
            }
        }
        for (name, adapter) in &cfg.adapters {
            check_pass_env(cfg.spec(name), &adapter.pass_env).map_err(|message| {
                ConfigError::PassEnv {
                    path: path.to_owned(),
                    adapter: name.clone(),
                    message,
                }
            })?;
        }
        cfg.checked_contracts = std::sync::Arc::new(super::contracts::check_all(&cfg, path)?);
        cfg.source = Some(PathBuf::from(path));
        Ok(cfg)
    }

    /// The row of the adapter `name`: a built-in one, else a provider defined in this file.
    pub fn spec(&self, name: &str) -> Option<&'static AdapterSpec> {
        spec(name).or_else(|| self.rows.iter().copied().find(|r| r.name == name))
    }
}

/// `message` (a TOML or serde error) with each quoted string value taken out: `invalid type:
/// string "sk-...", expected f64` becomes `invalid type: a string, expected f64`. The line
/// and column already point at the value, and a secret pasted in the wrong place must not be
/// echoed.
pub(super) fn without_strings(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("string \"") {
        out.push_str(&rest[..at]);
        out.push_str("a string");
        let value = &rest[at + "string \"".len()..];
        let mut escaped = false;
        let end = value.char_indices().find_map(|(i, c)| match c {
            '\\' if !escaped => {
                escaped = true;
                None
            }
            '"' if !escaped => Some(i + 1),
            _ => {
                escaped = false;
                None
            }
        });
        rest = end.map_or("", |e| &value[e..]);
    }
    out.push_str(rest);
    out
}

/// Why `names` cannot be the `pass_env` of `adapter`, if it cannot.
fn check_pass_env(adapter: Option<&AdapterSpec>, names: &[String]) -> Result<(), String> {
    if names.is_empty() {
        return Ok(());
    }
    if adapter.is_none_or(|s| s.billing != Billing::Cli) {
        return Err(
            "only the CLI adapters (claude-cli, codex-cli) run a process to pass \
             variables to"
                .to_owned(),
        );
    }
    match names.iter().position(|n| !is_env_name(n)) {
        Some(i) => Err(format!(
            "entry {} is not a variable name (letters, digits and _, not starting with a digit; \
             give names, never values)",
            i + 1
        )),
        None => Ok(()),
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    (line, column)
}
