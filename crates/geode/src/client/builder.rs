//! [`ClientBuilder`]: a [`Client`] from the configuration and environment (as the CLI builds its
//! adapters), from explicit settings, or around an adapter the caller already has.

use super::{CallSettings, Client, Configured, Error, Inner, Source};
use crate::config::{Config, Settings};
use crate::llm::adapter::Adapter;
use crate::llm::registry::{Environment, ProcessEnv};
use crate::vocab::Require;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Makes an adapter by registry name for the client (e.g. `local`, which lives in
/// `geode-local`).
pub type AdapterFactory = Arc<dyn Fn() -> Arc<dyn Adapter> + Send + Sync>;

/// Settings for a [`Client`]; every one is optional.
///
/// Without [`Self::adapter_instance`], adapters are built like the CLI builds them: routing from
/// the model name, `require` and the configured default; base URLs and models from `geode.toml`
/// ([`Config::load`] from the current directory unless [`Self::config`] or [`Self::settings`]
/// is given); credentials
/// from the environment ([`ProcessEnv`] unless [`Self::environment`] is given). Each adapter is
/// built once and reused by every call of the client and its clones.
#[derive(Default)]
pub struct ClientBuilder {
    adapter: Option<String>,
    instance: Option<Arc<dyn Adapter>>,
    factories: HashMap<String, AdapterFactory>,
    model: Option<String>,
    require: Require,
    timeout: Option<Duration>,
    fallback: Option<Vec<String>>,
    config: Option<Config>,
    settings: Option<Settings>,
    env: Option<Arc<dyn Environment + Send + Sync>>,
    max_tokens: Option<u32>,
    temperature: Option<f32>,
    system: Option<String>,
    repair: Option<bool>,
    response_cache: Option<Option<crate::cache::Cache>>,
}

impl ClientBuilder {
    /// Serve every call with this registry adapter (`openai-payg`, `local`, ...).
    pub fn adapter(mut self, name: impl Into<String>) -> Self {
        self.adapter = Some(name.into());
        self
    }

    /// Serve every call with this adapter, already built (a loaded local model, a scripted
    /// adapter in tests). Routing, configuration and fallback are then not used; `require` is
    /// still checked against its wire mode before each call.
    pub fn adapter_instance(mut self, adapter: Arc<dyn Adapter>) -> Self {
        self.instance = Some(adapter);
        self
    }

    /// Build the adapter `name` with `factory` instead of the library's builder (how
    /// `geode-local` provides `local`).
    pub fn adapter_factory(
        mut self,
        name: impl Into<String>,
        factory: impl Fn() -> Arc<dyn Adapter> + Send + Sync + 'static,
    ) -> Self {
        self.factories.insert(name.into(), Arc::new(factory));
        self
    }

    /// The model ("" or unset: the configured or registry default of the routed adapter).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The guarantee every call requires; unmet is an [`Error::Config`] before any request.
    pub fn require(mut self, require: Require) -> Self {
        self.require = require;
        self
    }

    /// The hard limit of one call, retry included (the retry runs only in the first half).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Adapters that take over, in order, on retryable failures (replaces the config's
    /// `fallback`, and applies even when [`Self::adapter`] names the adapter).
    pub fn fallback<I, S>(mut self, adapters: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.fallback = Some(adapters.into_iter().map(Into::into).collect());
        self
    }

    /// Use this configuration instead of loading `geode.toml`; it is resolved with the
    /// environment when the client is built.
    pub fn config(mut self, config: Config) -> Self {
        self.config = Some(config);
        self
    }

    /// Use these settings, already resolved ([`Config::settings`]): how a process that has read
    /// its configuration once (the gateway, the CLI) hands it on. Wins over [`Self::config`].
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = Some(settings);
        self
    }

    /// Read variables and files through this environment instead of the process's.
    pub fn environment(mut self, env: impl Environment + Send + Sync + 'static) -> Self {
        self.env = Some(Arc::new(env));
        self
    }

    /// Output tokens per model call.
    pub fn max_tokens(mut self, tokens: u32) -> Self {
        self.max_tokens = Some(tokens);
        self
    }

    /// The sampling temperature of every call (default: the provider's; the local engine's is
    /// 0.7, and 0 decodes greedily). Must be a finite number ≥ 0, else [`Self::build`] fails.
    /// Reasoning models take none: the wire leaves it out.
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// A system prompt for every call.
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// Let the declared repair tier read an answer that fails its check
    /// ([`crate::schema::repair`]): fences, quotes, trailing commas, a string where a number
    /// is due, ... each named in the ledger's `repairs`. Never on a cut-off answer, and never
    /// accepted when [`Self::require`] is `Wired` or `Enforced`. Default: `repair` in
    /// `geode.toml` (off).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use geode::Client;
    /// use geode::llm::{request::AdapterResponse, scripted::ScriptedAdapter};
    /// use std::sync::Arc;
    ///
    /// #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    /// struct Count { n: u32 }
    ///
    /// let sloppy = || ScriptedAdapter::new(vec![Ok(AdapterResponse::text("{'n': '3',}"))]);
    /// let client = |repair| {
    ///     Client::builder()
    ///         .config(geode::config::Config::default())
    ///         .adapter_instance(Arc::new(sloppy()))
    ///         .repair(repair)
    ///         .build()
    /// };
    /// let count = client(true)?.extract::<Count>("How many?").await?;
    /// assert_eq!(count.value.n, 3);
    /// let kinds: Vec<&str> = count.ledger.repairs.iter().map(|r| r.kind.as_str()).collect();
    /// assert_eq!(kinds, ["single_quotes", "trailing_commas", "string_to_number"]);
    /// // Off (the default): the same answer is retried once, then invalid.
    /// assert!(client(false)?.extract::<Count>("How many?").await.is_err());
    /// # Ok::<(), geode::Error>(()) }).unwrap();
    /// ```
    pub fn repair(mut self, repair: bool) -> Self {
        self.repair = Some(repair);
        self
    }

    /// Keep every validated answer in `cache` and replay it, with no request, when the same
    /// call comes again ([`crate::cache`]): the ledger then says `replayed` and when the
    /// answer was made, and no new token is counted. `None` turns off a cache `geode.toml`
    /// sets. Default: `[cache]` in `geode.toml` (none).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use geode::Client;
    /// use geode::cache::{Cache, CacheLocation};
    /// use geode::llm::{request::AdapterResponse, scripted::ScriptedAdapter};
    /// use std::sync::Arc;
    ///
    /// #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    /// struct Count { n: u32 }
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// // Sealed with a key of this process alone (`Cache::open` uses the user's).
    /// let seal = geode::cache::seal::SealKey::ephemeral();
    /// let cache = Cache::open_sealed(&CacheLocation::Dir(dir.path().into()), None, seal)?;
    /// let adapter = Arc::new(ScriptedAdapter::new(vec![Ok(AdapterResponse::text(r#"{"n": 3}"#))]));
    /// let client = Client::builder()
    ///     .config(geode::config::Config::default())
    ///     .adapter_instance(adapter.clone())
    ///     .cache(Some(cache))
    ///     .build()?;
    /// let first = client.extract::<Count>("How many?").await?;
    /// let again = client.extract::<Count>("How many?").await?;
    /// assert_eq!((first.value.n, again.value.n), (3, 3));
    /// assert_eq!(adapter.requests().len(), 1); // the second made no request
    /// assert!(again.ledger.replayed && !first.ledger.replayed);
    /// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
    /// ```
    pub fn cache(mut self, cache: Option<crate::cache::Cache>) -> Self {
        self.response_cache = Some(cache);
        self
    }

    /// The client. Fails only when the configuration cannot be loaded or the response budget
    /// in it or the environment is malformed; adapters are built on first use.
    pub fn build(self) -> Result<Client, Error> {
        let name = self.adapter.clone().unwrap_or_default();
        let model = self.model.clone().unwrap_or_default();
        let env: Arc<dyn Environment + Send + Sync> = self.env.unwrap_or(Arc::new(ProcessEnv));
        let config_error = |e: &dyn std::fmt::Display| Error::config(e.to_string(), &name, &model);
        let settings = match (self.settings, self.config) {
            (Some(s), _) => s,
            (None, Some(c)) => c.settings(env.as_ref()).map_err(|e| config_error(&e))?,
            (None, None) => {
                let cwd = std::env::current_dir().map_err(|e| {
                    Error::config(format!("no current directory: {e}"), &name, &model)
                })?;
                Config::load(&cwd, env.as_ref())
                    .and_then(|c| c.settings(env.as_ref()))
                    .map_err(|e| config_error(&e))?
            }
        };
        if let Some(t) = self.temperature {
            super::call_settings::check_temperature(t)
                .map_err(|message| Error::config(message, &name, &model))?;
        }
        let contracts = (!settings.contracts.is_empty()).then(|| Arc::new(settings.clone()));
        let Settings {
            routing,
            repair: configured_repair,
            cache: configured_cache,
            ..
        } = settings;
        let max_response_bytes = routing.max_response_bytes;
        let repair = self.repair.unwrap_or(configured_repair);
        let response_cache = match self.response_cache {
            Some(chosen) => chosen,
            None => configured_cache
                .map(|c| c.open(env.as_ref()))
                .transpose()
                .map_err(|e| config_error(&e))?,
        };
        let source = match self.instance {
            Some(adapter) => Source::Instance {
                adapter,
                max_response_bytes,
            },
            None => Source::Configured(Box::new(Configured {
                routing,
                env,
                fallback: self.fallback,
                factories: self.factories,
                cache: Mutex::new(HashMap::new()),
            })),
        };
        Ok(Client {
            inner: Arc::new(Inner {
                source: Arc::new(source),
                settings: CallSettings {
                    adapter: self.adapter,
                    model: Some(model),
                    require: Some(self.require),
                    timeout: self.timeout,
                    max_tokens: self.max_tokens,
                    temperature: self.temperature,
                    system: self.system,
                    repair: Some(repair),
                    cache: None,
                },
                response_cache,
                contracts,
            }),
        })
    }
}
