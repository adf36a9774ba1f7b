//! Settings one call lays over its client's ([`Client::with`]): another model, a stronger or
//! weaker `require`, a budget, a temperature, a system prompt. The derived client shares the
//! adapters its parent built (connections, a loaded local model) and the response cache.

use super::{Client, Error};
use crate::vocab::Require;
use std::sync::Arc;
use std::time::Duration;

/// What a call changes of its client's settings; a `None` keeps the client's.
///
/// ```
/// # fn demo(client: &geode::Client) -> Result<(), geode::Error> {
/// use geode::CallSettings;
/// let careful = client.with(CallSettings {
///     model: Some("gpt-5".into()),
///     require: Some(geode::vocab::Require::Enforced),
///     ..CallSettings::default()
/// })?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallSettings {
    /// The model (on a routed client, `ADAPTER/MODEL` or a model as for the builder's `model`).
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
}

impl Client {
    /// This client with `settings` laid over its own. Cheap (one allocation): the adapters,
    /// their connections, a loaded local model and the response cache are shared with `self`.
    /// A temperature that is not a finite number ≥ 0 is refused, as at build time.
    pub fn with(&self, settings: CallSettings) -> Result<Client, Error> {
        let mut inner = (*self.inner).clone();
        if let Some(t) = settings.temperature {
            check_temperature(t)
                .map_err(|m| Error::config(m, self.adapter_name(), &inner.model))?;
            inner.temperature = Some(t);
        }
        if let Some(model) = settings.model {
            inner.model = model;
        }
        inner.require = settings.require.unwrap_or(inner.require);
        inner.timeout = settings.timeout.or(inner.timeout);
        inner.max_tokens = settings.max_tokens.or(inner.max_tokens);
        inner.system = settings.system.or(inner.system);
        Ok(Client {
            inner: Arc::new(inner),
        })
    }

    fn adapter_name(&self) -> &str {
        self.inner.adapter.as_deref().unwrap_or_default()
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
