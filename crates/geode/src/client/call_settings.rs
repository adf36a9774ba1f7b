//! [`CallSettings`]: the one overrides type. What a caller changes of a task's settings (the
//! adapter, the model, `require`, a budget, a temperature, a system prompt, repair, the cache),
//! filled alike by a client's builder and [`Client::with`], `geode run`'s flags, the Python
//! package's keyword arguments and the gateway's headers, and laid over a task by one rule
//! ([`CallSettings::over`], [`CallSettings::apply`]): a setting given wins, one left `None`
//! keeps what is under it.

use super::{Client, Error};
use crate::agent::task::{Route, Task};
use crate::vocab::Require;
use std::sync::Arc;
use std::time::Duration;

/// What a call changes of the settings under it; a `None` keeps them.
///
/// ```
/// # fn demo(client: &geode::Client) -> Result<(), geode::Error> {
/// use geode::CallSettings;
/// let careful = client.with(CallSettings {
///     model: Some("gpt-5".into()),
///     require: Some(geode::Require::Enforced),
///     ..CallSettings::default()
/// })?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallSettings {
    /// The adapter (a registry name or a defined provider).
    pub adapter: Option<String>,
    /// The model (on a routed client, `ADAPTER/MODEL` or a model as for the builder's `model`);
    /// `""` is none.
    pub model: Option<String>,
    /// The guarantee the route must give, checked before any token.
    pub require: Option<Require>,
    /// The whole call, retry included.
    pub timeout: Option<Duration>,
    /// The output token budget of each attempt.
    pub max_tokens: Option<u32>,
    /// The sampling temperature: a finite number ≥ 0.
    pub temperature: Option<f32>,
    /// The system prompt (a conversation's system turns still replace it).
    pub system: Option<String>,
    /// Whether the declared repair tier may read an answer that fails its check.
    pub repair: Option<bool>,
    /// Whether the response cache may answer and keep the answer.
    pub cache: Option<bool>,
}

impl CallSettings {
    /// `self` laid over `under`: each setting given here wins.
    pub fn over(self, under: CallSettings) -> CallSettings {
        CallSettings {
            adapter: self.adapter.or(under.adapter),
            model: self.model.or(under.model),
            require: self.require.or(under.require),
            timeout: self.timeout.or(under.timeout),
            max_tokens: self.max_tokens.or(under.max_tokens),
            temperature: self.temperature.or(under.temperature),
            system: self.system.or(under.system),
            repair: self.repair.or(under.repair),
            cache: self.cache.or(under.cache),
        }
    }

    /// Lays these settings into `task`: each one given replaces the task's. An adapter with a
    /// model routes to both; a model alone keeps an adapter the task names, else routes by the
    /// model.
    pub fn apply(&self, task: &mut Task) {
        let model = self.model.clone().filter(|m| !m.is_empty());
        match (&self.adapter, model) {
            (Some(name), model) => {
                task.route = Route::Adapter {
                    name: name.clone(),
                    model,
                }
            }
            (None, Some(m)) => {
                task.route = match task.route.adapter() {
                    Some(name) => Route::Adapter {
                        name: name.to_owned(),
                        model: Some(m),
                    },
                    None => Route::Model(m),
                }
            }
            (None, None) => {}
        }
        let CallSettings {
            adapter: _,
            model: _,
            require,
            timeout,
            max_tokens,
            temperature,
            system,
            repair,
            cache,
        } = self;
        if let Some(r) = require {
            task.require = *r;
        }
        if let Some(t) = timeout {
            task.budgets.timeout = *t;
        }
        if let Some(m) = max_tokens {
            task.budgets.max_tokens = *m;
        }
        if let Some(t) = temperature {
            task.temperature = Some(*t);
        }
        if let Some(s) = system {
            task.system = s.clone();
        }
        if let Some(r) = repair {
            task.repair = *r;
        }
        if let Some(c) = cache {
            task.cache = *c;
        }
    }
}

impl Client {
    /// This client with `settings` laid over its own ([`CallSettings::over`]). Cheap (one
    /// allocation): the adapters, their connections, a loaded local model and the response
    /// cache are shared with `self`. A temperature that is not a finite number ≥ 0 is refused,
    /// as at build time.
    pub fn with(&self, settings: CallSettings) -> Result<Client, Error> {
        if let Some(t) = settings.temperature {
            check_temperature(t)
                .map_err(|m| Error::config(m, self.adapter_name(), self.model_name()))?;
        }
        let mut inner = (*self.inner).clone();
        inner.settings = settings.over(inner.settings);
        Ok(Client {
            inner: Arc::new(inner),
        })
    }

    pub(super) fn adapter_name(&self) -> &str {
        self.inner.settings.adapter.as_deref().unwrap_or_default()
    }

    pub(super) fn model_name(&self) -> &str {
        self.inner.settings.model.as_deref().unwrap_or_default()
    }
}

/// A temperature is a finite number ≥ 0.
pub(super) fn check_temperature(t: f32) -> Result<(), String> {
    if t.is_finite() && t >= 0.0 {
        Ok(())
    } else {
        Err(format!("temperature {t}: expected a finite number ≥ 0"))
    }
}
