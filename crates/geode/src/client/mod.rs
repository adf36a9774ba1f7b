//! The Rust API: a [`Client`] that gives a caller its own type back, streams partial values with
//! per-field guarantees, and carries the guarantee ledger of every call.
//!
//! | file | job |
//! |---|---|
//! | [`builder`] | [`ClientBuilder`]: from configuration and environment, or around an adapter |
//! | [`call_settings`] | [`Client::with`]: one call's model, `require`, budgets, sampling, system prompt |
//! | [`extract`] | `extract::<T>()`, `extract_json`, `choose`, `matches`, `grammar`, `run` |
//! | [`typed_schema`] | a Rust type's schema: generated once, made strict-friendly, wrapped if needed |
//! | [`partial_json`] | the incremental tolerant JSON parser behind streaming |
//! | [`stream`] | `stream::<T>()`: partial values, list items, the retry, the final value |
//! | [`error`] | [`Error`]: every variant carries the ledger |
//!
//! Every call builds a typed [`crate::agent::task::Task`] and runs it through the worker
//! ([`crate::agent::worker::run_task`]), so the one retry with feedback and the ledger behave
//! exactly as for `geode run`; a failed run's [`crate::agent::task::RunError`] becomes an
//! [`Error`] by its variant.

mod builder;
mod call_settings;
mod error;
mod extract;
pub mod partial_json;
mod stream;
mod typed_schema;

pub use builder::{AdapterFactory, ClientBuilder};
pub use call_settings::CallSettings;
pub use error::{Cause, Error};
pub use stream::{ItemSource, PartialGuarantee, StreamEvent, stream_task};
pub use typed_schema::TypedSchema;

use crate::agent::conversation::Prompt;
use crate::agent::resolve::{Resolver, RoutingSettings};
use crate::agent::task::{Answer, RunError, Task};
use crate::agent::worker::WorkerEnv;
use crate::cache::Cache;
use crate::ledger::GuaranteeLedger;
use crate::llm::adapter::Adapter;
use crate::llm::call::AdapterError;
use crate::llm::registry::Environment;
use crate::schema::ResponseSchema;
use crate::vocab::{Require, StructuredOutputMode};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A value the model gave, checked, with the account of how it was obtained.
#[derive(Debug, Clone, PartialEq)]
pub struct Extracted<T> {
    /// The value.
    pub value: T,
    /// Which adapter served it, how the schema went on the wire, what was rewritten, every
    /// attempt and the retry decision.
    pub ledger: GuaranteeLedger,
}

/// The answer of a text-shaped call ([`Client::choose`], [`Client::matches`],
/// [`Client::grammar`]): the trimmed text, or why there is none.
pub type TextAnswer = Result<Extracted<String>, Error>;

/// A handle for structured calls. Cheap to clone (one `Arc`), `Send + Sync`; clones share the
/// adapters they build (connections, a loaded local model).
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("adapter", &self.inner.settings.adapter)
            .field("model", &self.inner.settings.model)
            .field("require", &self.inner.settings.require)
            .finish_non_exhaustive()
    }
}

/// The settings are per client; the source (the adapters it has built) is shared by the
/// clients [`Client::with`] derives.
#[derive(Clone)]
struct Inner {
    source: Arc<Source>,
    /// The client's own settings, laid into every task it makes.
    settings: CallSettings,
    /// The response cache every call consults ([`crate::cache`]).
    response_cache: Option<crate::cache::Cache>,
    /// The configuration's settings when it defines contracts ([`Client::contract`]).
    contracts: Option<Arc<crate::config::Settings>>,
}

enum Source {
    Instance {
        adapter: Arc<dyn Adapter>,
        max_response_bytes: u64,
    },
    Configured(Box<Configured>),
}

/// Adapters built on demand from configuration and environment, each once.
struct Configured {
    routing: RoutingSettings,
    env: Arc<dyn Environment + Send + Sync>,
    fallback: Option<Vec<String>>,
    factories: HashMap<String, AdapterFactory>,
    cache: Mutex<HashMap<String, Arc<dyn Adapter>>>,
}

impl Client {
    /// Settings for a client.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// A client configured as the CLI is: `geode.toml` (current directory, else
    /// `~/.config/geode/config.toml`), credentials and base URLs from the environment, routing
    /// and the configured fallback chain. `local` needs `geode-local` (see `geode_local::client_builder`).
    pub fn from_env() -> Result<Self, Error> {
        Self::builder().build()
    }

    /// A task carrying this client's settings.
    pub(crate) fn task(&self, prompt: Prompt) -> Task {
        let mut task = Task::new(String::new());
        self.inner.settings.apply(&mut task);
        prompt.lay_into(&mut task);
        task
    }

    /// The worker environment for `task` (filling its model when routing chose it).
    pub(crate) fn worker_env(&self, task: &mut Task) -> Result<WorkerEnv, Error> {
        self.resolve(task).map_err(|e| {
            let adapter = task.route.adapter().unwrap_or_default();
            Error::from_run(e, adapter, task.route.model())
        })
    }

    /// [`Self::worker_env`] with the failure still typed: refused (`require` unmet on a fixed
    /// adapter) or unroutable.
    fn resolve(&self, task: &mut Task) -> Result<WorkerEnv, RunError> {
        match self.inner.source.as_ref() {
            Source::Instance {
                adapter,
                max_response_bytes,
            } => {
                if let Some(schema) = task.output.schema() {
                    let mode = adapter.wire_mode(Some(schema));
                    if mode.level() < task.require {
                        return Err(RunError::Refused {
                            why: crate::agent::task::Refusal::RequireUnmet,
                            reason: unmet(adapter.name(), mode, task.require),
                            last: Box::new(Answer::empty(GuaranteeLedger {
                                adapter: adapter.name().to_owned(),
                                model: task.route.model().to_owned(),
                                ..GuaranteeLedger::default()
                            })),
                        });
                    }
                }
                let mut env = WorkerEnv::new(adapter.clone());
                env.max_response_bytes = *max_response_bytes;
                env.store = self.inner.response_cache.as_ref().map(Cache::as_store);
                Ok(env)
            }
            Source::Configured(c) => {
                let Configured {
                    routing,
                    env,
                    fallback,
                    factories,
                    cache,
                } = c.as_ref();
                let build = |name: &str| -> Result<Arc<dyn Adapter>, AdapterError> {
                    if let Some(hit) = cache.lock().ok().and_then(|c| c.get(name).cloned()) {
                        return Ok(hit);
                    }
                    let built = match factories.get(name) {
                        Some(make) => make(),
                        None => crate::llm::build::build(name, &routing.adapters, env.as_ref())?,
                    };
                    if let Ok(mut c) = cache.lock() {
                        c.insert(name.to_owned(), built.clone());
                    }
                    Ok(built)
                };
                Resolver {
                    settings: routing,
                    env: env.as_ref(),
                    build: &build,
                    fallback: fallback.as_deref(),
                }
                .resolve(task)
                .map(|mut env| {
                    env.store = self.inner.response_cache.as_ref().map(Cache::as_store);
                    env
                })
                .map_err(RunError::Route)
            }
        }
    }

    /// Runs a task the caller built (its own route, output, policy, history), on this
    /// client's adapters (built once, shared by every call). The failure stays a typed
    /// [`RunError`], for servers that map each kind to their own answer (the gateway, `geode
    /// run`); `tune` sees the task as routed (its model filled) and may add observers to the
    /// environment (a text sink for streaming, a progress line).
    pub async fn run_task(
        &self,
        mut task: Task,
        tune: impl FnOnce(&Task, &mut WorkerEnv),
    ) -> Result<Answer, RunError> {
        let mut env = self.resolve(&mut task)?;
        tune(&task, &mut env);
        crate::agent::worker::run_task(&task, &env).await
    }

    /// A task carrying this client's settings (adapter, model, `require`, `repair`, budgets,
    /// system prompt), to adjust and hand to [`Self::run_task`].
    pub fn new_task(&self, prompt: impl Into<Prompt>) -> Task {
        self.task(prompt.into())
    }

    /// The mode the client's fixed adapter would use for `schema` (`None` when adapters are
    /// routed per call).
    pub fn wire_mode(&self, schema: &ResponseSchema) -> Option<StructuredOutputMode> {
        match self.inner.source.as_ref() {
            Source::Instance { adapter, .. } => Some(adapter.wire_mode(Some(schema))),
            Source::Configured(_) => None,
        }
    }
}

fn unmet(adapter: &str, mode: StructuredOutputMode, require: Require) -> String {
    format!(
        "require={}: {adapter}'s mode for this schema is {mode} ({}), below it",
        require.as_str(),
        mode.level().as_str()
    )
}

#[cfg(test)]
mod tests;
