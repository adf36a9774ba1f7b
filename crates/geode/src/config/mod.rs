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
//! [gateway.models.fast]                # `"model": "fast"` routes here
//! adapter = "openai-payg"
//! model = "gpt-5-mini"
//! fallback = ["anthropic-payg"]
//! ```

pub mod trust;

use crate::llm::adapters::cli_common::is_env_name;
use crate::llm::call::DEFAULT_MAX_RESPONSE_BYTES;
use crate::llm::registry::{
    ADAPTERS, AdapterSpec, Billing, Environment, ProviderConfig, ProviderError, spec,
};
use crate::vocab::Require;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};

/// The variable that overrides `[limits] max_response_bytes`.
pub const MAX_RESPONSE_BYTES_ENV: &str = "GEODE_MAX_RESPONSE_BYTES";

/// The largest config file read (1 MiB): a config is a few tables; a larger file (a symlink to
/// a log, a paste gone wrong) is refused before it is read whole.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

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
    /// answer text folded from them (default [`DEFAULT_MAX_RESPONSE_BYTES`], 16 MiB).
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
    /// A duration text ([`crate::cache::parse_ttl`]).
    Text(String),
}

impl CacheTtl {
    /// The duration, refused when not positive.
    pub fn duration(&self) -> Result<std::time::Duration, crate::cache::CacheError> {
        match self {
            Self::Seconds(s) => crate::cache::parse_ttl(&s.to_string()),
            Self::Text(t) => crate::cache::parse_ttl(t),
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
    /// The providers' rows, checked ([`Self::spec`] finds them).
    #[serde(skip)]
    rows: Vec<&'static AdapterSpec>,
    /// The file this came from, if any.
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

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
    /// A project's `geode.toml` (the working directory's) would send a credential to a host it
    /// chose, and the user has not trusted it as it is ([`trust`]).
    #[error(
        "{path} sends credentials to hosts it names ({}); if you trust this file, run `geode config \
         trust` (or `python -m geode trust-config`) beside it (it is trusted as it is now: a \
         change asks again), or move these settings to ~/.config/geode/config.toml or the \
         environment",
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
        cfg.source = Some(PathBuf::from(path));
        Ok(cfg)
    }

    /// The row of the adapter `name`: a built-in one, else a provider defined in this file.
    pub fn spec(&self, name: &str) -> Option<&'static AdapterSpec> {
        spec(name).or_else(|| self.rows.iter().copied().find(|r| r.name == name))
    }

    /// The providers defined in this file, in name order.
    pub fn providers(&self) -> &[&'static AdapterSpec] {
        &self.rows
    }

    /// Every adapter this configuration knows: the built-in rows, then its providers.
    pub fn adapters(&self) -> impl Iterator<Item = &'static AdapterSpec> + '_ {
        ADAPTERS.iter().chain(self.rows.iter().copied())
    }

    /// The `pass_env` names of `adapter` (empty when none are configured).
    pub fn pass_env(&self, adapter: &str) -> &[String] {
        self.adapters
            .get(adapter)
            .map_or(&[], |a| a.pass_env.as_slice())
    }

    /// Loads `geode.toml` from `cwd`, else `~/.config/geode/config.toml`, else the defaults.
    /// The working directory's file may not send a credential to a host it chose unless the
    /// user trusted it ([`trust`]).
    pub fn load(cwd: &Path, env: &dyn Environment) -> Result<Self, ConfigError> {
        let project = cwd.join("geode.toml");
        let mut candidates = vec![project.clone()];
        if let Some(home) = env.var("HOME") {
            candidates.push(PathBuf::from(home).join(".config/geode/config.toml"));
        }
        for path in candidates {
            // Anything at the path (a symlink included, even a dangling one) is the config: a
            // directory or a loop there is an error, not a reason to run on the defaults.
            if env.file_exists(&path) || path.symlink_metadata().is_ok() {
                let text = read_config(&path)?;
                let cfg = Self::parse(&text, &path.display().to_string())?;
                if path == project {
                    check_trust(&cfg, &path, &text, env)?;
                }
                return Ok(cfg);
            }
        }
        Ok(Self::default())
    }

    /// Trusts the config file at `path` as it is now (`geode config trust`): it must be a
    /// usable config. Gives the trust list's path.
    pub fn trust_file(path: &Path, env: &dyn Environment) -> Result<PathBuf, ConfigError> {
        let text = read_config(path)?;
        Self::parse(&text, &path.display().to_string())?;
        let list = trust::TrustList::locate(env).ok_or_else(|| ConfigError::Io {
            path: path.display().to_string(),
            message: "neither XDG_CONFIG_HOME nor HOME is set: nowhere to keep the trust"
                .to_owned(),
        })?;
        list.trust(path, &text).map_err(|e| ConfigError::Io {
            path: e.path.clone(),
            message: e.source.to_string(),
        })?;
        Ok(list.path().to_path_buf())
    }

    /// The model-call URL for `adapter` (an HTTP row): `{base}{path}` where the base is
    /// `flag` > its `GEODE_*_BASE_URL` > this file's `base_url` > the registry default; the
    /// vendor SDK's own variable (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`) comes after the
    /// `GEODE_*` one and is read as the SDK reads it (`OPENAI_BASE_URL=http://h/v1` posts to
    /// `http://h/v1/responses`). `None` when the row has no endpoint, or no base URL at all
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
    /// for an error that names it: the `GEODE_*_BASE_URL` variable, the SDK's variable, this
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
            _ => format!("the default base URL of {adapter}"),
        }
    }

    /// The model for `adapter`: `flag` > this file > the registry default.
    pub fn model(&self, adapter: &str, flag: Option<&str>) -> String {
        flag.filter(|m| !m.is_empty())
            .map(str::to_owned)
            .or_else(|| self.adapters.get(adapter).and_then(|a| a.model.clone()))
            .or_else(|| self.spec(adapter).map(|s| s.default_model.to_owned()))
            .unwrap_or_default()
    }

    /// The response budget: [`MAX_RESPONSE_BYTES_ENV`] > `[limits] max_response_bytes` >
    /// [`DEFAULT_MAX_RESPONSE_BYTES`]. A variable that is not a positive integer is an error.
    pub fn max_response_bytes(&self, env: &dyn Environment) -> Result<u64, ConfigError> {
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
        Ok(self
            .limits
            .max_response_bytes
            .map_or(DEFAULT_MAX_RESPONSE_BYTES, NonZeroU64::get))
    }
}

/// The text of the config file at `path`: a regular file (symlinks followed) of at most
/// [`MAX_CONFIG_BYTES`], valid UTF-8. A FIFO or a device is refused before it is opened (a
/// read would block or never end).
/// Refuses a project file that would send a credential to a host it chose, unless trusted.
fn check_trust(
    cfg: &Config,
    path: &Path,
    text: &str,
    env: &dyn Environment,
) -> Result<(), ConfigError> {
    let settings = trust::credential_redirects(cfg);
    let trusted = || trust::TrustList::locate(env).is_some_and(|l| l.trusts(path, text));
    if settings.is_empty() || trusted() {
        return Ok(());
    }
    Err(ConfigError::Untrusted {
        path: path.display().to_string(),
        settings,
    })
}

fn read_config(path: &Path) -> Result<String, ConfigError> {
    use std::io::Read;
    let io = |message: String| ConfigError::Io {
        path: path.display().to_string(),
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| io(e.to_string()))?;
    if !meta.is_file() {
        return Err(io("not a regular file".to_owned()));
    }
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(io(format!(
            "{} bytes, more than the {MAX_CONFIG_BYTES} a config may have",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| io(e.to_string()))?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > MAX_CONFIG_BYTES {
        return Err(io(format!(
            "more than the {MAX_CONFIG_BYTES} bytes a config may have"
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        io(format!(
            "not valid UTF-8 (at byte {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// `message` (a TOML or serde error) with each quoted string value taken out: `invalid type:
/// string "sk-...", expected f64` becomes `invalid type: a string, expected f64`. The line
/// and column already point at the value, and a secret pasted in the wrong place must not be
/// echoed.
fn without_strings(message: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_file_parses() {
        let c = Config::parse(
            "default_adapter = \"glm-payg\"\nfallback = [\"openai-payg\", \"glm-payg\"]\n[timeouts]\nrequest_s = 30\n[adapters.openai-payg]\nmodel = \"gpt-5.5\"\nbase_url = \"http://127.0.0.1:1\"\n",
            "geode.toml",
        )
        .unwrap();
        assert_eq!(c.default_adapter.as_deref(), Some("glm-payg"));
        assert_eq!(c.fallback.len(), 2);
        assert_eq!(c.timeouts.request_s, Some(30.0));
        assert_eq!(c.model("openai-payg", None), "gpt-5.5");
        assert_eq!(c.model("openai-payg", Some("o3")), "o3");
    }

    #[test]
    fn repair_is_off_unless_the_file_asks_and_must_be_a_boolean() {
        assert!(!Config::default().repair);
        assert!(!Config::parse("", "geode.toml").unwrap().repair);
        assert!(
            Config::parse("repair = true\n", "geode.toml")
                .unwrap()
                .repair
        );
        let bad = Config::parse("repair = \"yes\"\n", "geode.toml").unwrap_err();
        assert!(bad.to_string().contains("line 1"), "{bad}");
    }

    #[test]
    fn the_gateway_table_holds_a_policy_and_aliases_and_refuses_what_it_does_not_know() {
        let c = Config::parse(
            "[gateway]\nrequire = \"wired\"\n[gateway.models.fast]\nadapter = \"openai-payg\"\nmodel = \"gpt-5-mini\"\nfallback = [\"glm-payg\"]\n",
            "geode.toml",
        )
        .unwrap();
        assert_eq!(c.gateway.require, Require::Wired);
        let fast = &c.gateway.models["fast"];
        assert_eq!(
            (fast.adapter.as_str(), fast.model.as_str()),
            ("openai-payg", "gpt-5-mini")
        );
        assert_eq!(fast.fallback, ["glm-payg"]);
        for (text, needle) in [
            (
                "[gateway.models.x]\nadapter = \"nope\"\n",
                "[gateway.models]",
            ),
            (
                "[gateway.models.x]\nadapter = \"local\"\nfallback = [\"nope\"]\n",
                "nope",
            ),
            ("[gateway]\nrequire = \"strict\"\n", "strict"),
            ("[gateway]\nlisten = \"0.0.0.0:1\"\n", "listen"),
            ("[gateway.models.x]\nmodel = \"m\"\n", "adapter"),
        ] {
            let err = Config::parse(text, "geode.toml").unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn a_syntax_error_names_the_line() {
        let err =
            Config::parse("fallback = []\n\ndefault_adapter = = 3\n", "geode.toml").unwrap_err();
        match err {
            ConfigError::Invalid { line, .. } => assert_eq!(line, 3),
            other => panic!("{other}"),
        }
        let err = Config::parse("colour = \"blue\"\n", "geode.toml").unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
    }

    struct Vars(Vec<(&'static str, &'static str)>);

    impl Environment for Vars {
        fn var(&self, name: &str) -> Option<String> {
            self.0
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
        fn file_exists(&self, _: &Path) -> bool {
            false
        }
        fn on_path(&self, _: &str) -> bool {
            false
        }
    }

    #[test]
    fn max_response_bytes_is_env_then_file_then_sixteen_mib() {
        let none = Vars(vec![]);
        let env = Vars(vec![(MAX_RESPONSE_BYTES_ENV, " 2048 ")]);
        let default = Config::default();
        assert_eq!(default.max_response_bytes(&none).unwrap(), 16 * 1024 * 1024);
        let file = Config::parse("[limits]\nmax_response_bytes = 4096\n", "g.toml").unwrap();
        assert_eq!(file.max_response_bytes(&none).unwrap(), 4096);
        assert_eq!(file.max_response_bytes(&env).unwrap(), 2048);
    }

    #[test]
    fn a_zero_or_non_numeric_response_budget_is_refused() {
        let err = Config::parse("[limits]\nmax_response_bytes = 0\n", "g.toml").unwrap_err();
        assert!(matches!(err, ConfigError::Invalid { line: 2, .. }), "{err}");
        let err = Config::parse("[limits]\nmax_response_bytes = -5\n", "g.toml").unwrap_err();
        assert!(matches!(err, ConfigError::Invalid { line: 2, .. }), "{err}");
        for bad in ["0", "lots", "-1", "1.5"] {
            let env = Vars(vec![(MAX_RESPONSE_BYTES_ENV, bad)]);
            let err = Config::default().max_response_bytes(&env).unwrap_err();
            assert!(err.to_string().contains(MAX_RESPONSE_BYTES_ENV), "{err}");
        }
    }

    #[test]
    fn pass_env_names_variables_for_a_cli_adapter() {
        let c = Config::parse(
            "[adapters.codex-cli]\npass_env = [\"MY_KEY\", \"_OTHER2\"]\n[adapters.claude-cli]\nmodel = \"m\"\n",
            "geode.toml",
        )
        .unwrap();
        assert_eq!(c.pass_env("codex-cli"), ["MY_KEY", "_OTHER2"]);
        assert!(c.pass_env("claude-cli").is_empty());
        assert!(c.pass_env("openai-payg").is_empty());
    }

    #[test]
    fn a_pass_env_value_or_a_non_cli_adapter_is_refused_without_echoing_it() {
        let err = Config::parse(
            "[adapters.claude-cli]\npass_env = [\"OK\", \"ANTHROPIC_API_KEY=sk-ant-secret\"]\n",
            "geode.toml",
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, ConfigError::PassEnv { .. }), "{err:?}");
        assert!(
            text.contains("entry 2") && text.contains("claude-cli"),
            "{text}"
        );
        assert!(!text.contains("sk-ant-secret"), "{text}");
        assert!(!format!("{err:?}").contains("sk-ant-secret"));
        for bad in ["\"\"", "\"1X\"", "\"A B\""] {
            let toml = format!("[adapters.codex-cli]\npass_env = [{bad}]\n");
            assert!(Config::parse(&toml, "g.toml").is_err(), "{bad}");
        }
        let err =
            Config::parse("[adapters.openai-payg]\npass_env = [\"X\"]\n", "g.toml").unwrap_err();
        assert!(err.to_string().contains("only the CLI adapters"), "{err}");
        let err = Config::parse("[adapters.codex-cli]\npass_env = \"X\"\n", "g.toml").unwrap_err();
        assert!(matches!(err, ConfigError::Invalid { line: 2, .. }), "{err}");
    }

    #[test]
    fn a_wrong_type_never_echoes_a_string_value() {
        let err = Config::parse("[timeouts]\nrequest_s = \"sk-pasted-\\\"key\"\n", "g.toml")
            .unwrap_err()
            .to_string();
        assert!(!err.contains("sk-pasted"), "{err}");
        assert!(err.contains("line 2") && err.contains("a string"), "{err}");
        assert_eq!(
            without_strings(r#"invalid type: string "a\"b", expected f64; string "c""#),
            "invalid type: a string, expected f64; a string"
        );
    }

    #[test]
    fn bad_settings_name_their_key() {
        for (text, key) in [
            ("[timeouts]\nrequest_s = nan\n", "[timeouts] request_s"),
            ("[timeouts]\nrequest_s = -inf\n", "[timeouts] request_s"),
            (
                "[adapters.glm-payg]\nmodel = \" \"\n",
                "[adapters.glm-payg] model",
            ),
            (
                "[adapters.glm-payg]\nbase_url = \"not a url\"\n",
                "[adapters.glm-payg] base_url",
            ),
            (
                "[adapters.glm-payg]\nbase_url = \"http://u:pw-secret@h/v1\"\n",
                "[adapters.glm-payg] base_url",
            ),
        ] {
            let err = Config::parse(text, "g.toml").unwrap_err();
            assert!(
                matches!(err, ConfigError::Setting { .. }),
                "{text}: {err:?}"
            );
            let err = err.to_string();
            assert!(err.contains(key), "{text}: {err}");
            assert!(!err.contains("pw-secret"), "{err}");
        }
    }

    #[test]
    fn unknown_adapters_are_refused() {
        let err =
            Config::parse("fallback = [\"openai-payg\", \"gpt-chat\"]", "g.toml").unwrap_err();
        assert!(err.to_string().contains("gpt-chat"), "{err}");
    }
}
