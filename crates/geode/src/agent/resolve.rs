//! Turning a [`Task`]'s route into a [`WorkerEnv`] from the routing settings and the environment:
//! routing, the `require` policy, the dialect preflight, the adapter itself and the fallback
//! chain. The settings are plain data, resolved once per process at the edge
//! ([`crate::config::Config::settings`]); nothing here reads a file or a variable of its own.
//!
//! One rule for the CLI (`geode run`, `geode worker`) and for [`crate::Client`]. Adapters are
//! obtained through a caller-given builder, so the CLI can add `local` (which lives in
//! `geode-local`) and the client can hand out adapters it already built (reusing connections).

use crate::agent::task::{ResolveError, Route, Task};
use crate::agent::worker::WorkerEnv;
use crate::llm::adapter::Adapter;
use crate::llm::call::AdapterError;
use crate::llm::call::DEFAULT_MAX_RESPONSE_BYTES;
use crate::llm::fallback::FallbackAdapter;
use crate::llm::registry::{AdapterSpec, Environment};
use crate::llm::routing::{RouteRequest, route};
use crate::llm::settings::AdapterSettings;
use crate::schema::preflight::{LimitViolation, Preflight};
use crate::schema::{ResponseSchema, TextConstraint};
use crate::vocab::Require;
use std::sync::Arc;

/// Builds one adapter by registry name.
pub type AdapterBuilder<'a> =
    dyn Fn(&str) -> Result<Arc<dyn Adapter>, AdapterError> + Send + Sync + 'a;

/// How tasks are routed: the adapters' settings, the default adapter, the fallback chain and
/// the response budget every adapter is held to.
#[derive(Debug, Clone, PartialEq)]
pub struct RoutingSettings {
    /// Every adapter's settings, and the defined providers' rows.
    pub adapters: AdapterSettings,
    /// The adapter used when a task names none (else routing picks the first configured).
    pub default_adapter: Option<String>,
    /// Adapters tried in order on retryable provider failures, when the task names no adapter.
    pub fallback: Vec<String>,
    /// The most bytes of one response ([`DEFAULT_MAX_RESPONSE_BYTES`] unless set).
    pub max_response_bytes: u64,
}

impl Default for RoutingSettings {
    fn default() -> Self {
        Self {
            adapters: AdapterSettings::default(),
            default_adapter: None,
            fallback: Vec::new(),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }
}

/// What a resolution reads: the routing settings, the environment, how adapters are built, and
/// an optional fallback list that replaces the settings'.
pub struct Resolver<'a> {
    /// The routing settings.
    pub settings: &'a RoutingSettings,
    /// The environment variables and files.
    pub env: &'a dyn Environment,
    /// Builds an adapter by name (e.g. [`crate::llm::build::build`] plus `local`).
    pub build: &'a AdapterBuilder<'a>,
    /// A fallback chain that replaces `settings.fallback` and applies even when the adapter is
    /// named explicitly (the client builder's `.fallback([...])`).
    pub fallback: Option<&'a [String]>,
}

/// The provider limits `schema` breaks on `spec`'s schema route: the verdict applied before
/// the call (empty when the adapter takes the schema).
pub fn limit_violations(schema: &ResponseSchema, spec: &AdapterSpec) -> Vec<LimitViolation> {
    spec.schema_route
        .limit_violations(&Preflight::new(schema))
        .to_vec()
}

/// The guarantee level a text constraint gets on this adapter (only a constraining engine
/// enforces one; see `TextConstraint::mode_on`).
fn text_constraint_level(spec: &AdapterSpec) -> Require {
    TextConstraint::mode_on(spec.schema_route.mode(Some(&ResponseSchema::default()))).level()
}

impl Resolver<'_> {
    /// Resolves the environment for `task`: the routed adapter (plus the fallback chain when
    /// the route names no adapter, or always when [`Self::fallback`] or the task's own
    /// `fallback` is given), with the route's model filled from the settings when it has none.
    pub fn resolve(&self, task: &mut Task) -> Result<WorkerEnv, ResolveError> {
        let (settings, env) = (self.settings, self.env);
        let adapters = &settings.adapters;
        let explicit = task.route.adapter().map(str::to_owned);
        let schema = task.output.schema().cloned();
        let parts = task.part_records();
        let routed = route(
            &RouteRequest {
                adapter: explicit.as_deref(),
                model: task.route.model(),
                require: task.require,
                schema: schema.as_ref(),
                thinking: task.budgets.thinking > 0,
                default_adapter: settings.default_adapter.as_deref(),
                providers: &adapters.providers,
                parts: &parts,
            },
            env,
        )?;
        let name = routed.spec.name;
        if let Some(s) = &schema {
            let violations = limit_violations(s, routed.spec);
            if !violations.is_empty() {
                return Err(ResolveError::Preflight {
                    adapter: name.to_owned(),
                    violations,
                });
            }
        }
        if task.route.model().is_empty() {
            task.route = Route::Adapter {
                name: name.to_owned(),
                model: Some(adapters.model(name, None)),
            };
        }
        let primary = (self.build)(name)?;
        let mut chain: Vec<(Arc<dyn Adapter>, Option<String>)> = vec![(primary, None)];
        let fallback = match (task.fallback.as_deref().or(self.fallback), &explicit) {
            (Some(list), _) => list,
            (None, None) => settings.fallback.as_slice(),
            (None, Some(_)) => &[],
        };
        for fb in fallback.iter().filter(|n| n.as_str() != name) {
            let Some(s) = adapters.spec(fb) else { continue };
            let takes = s
                .inputs
                .for_model(&adapters.model(fb, None))
                .check(&parts)
                .is_ok();
            let meets = takes
                && (schema.is_none()
                    || s.schema_route.mode(schema.as_ref()).level() >= task.require)
                && (task.output.constraint().is_none() || text_constraint_level(s) >= task.require);
            if meets
                && s.is_configured(env)
                && let Ok(a) = (self.build)(fb)
            {
                // Another family cannot serve this model name: that link uses its own model.
                let model = (s.family != routed.spec.family).then(|| adapters.model(fb, None));
                chain.push((a, model));
            }
        }
        let adapter: Arc<dyn Adapter> = if chain.len() == 1 {
            chain.remove(0).0
        } else {
            // Never empty: the primary is its first link.
            let links = chain.len();
            Arc::new(
                FallbackAdapter::with_models(chain).ok_or_else(|| AdapterError::Config {
                    adapter: name.to_owned(),
                    message: format!("a fallback chain of {links} adapters"),
                })?,
            )
        };
        let mut worker_env = WorkerEnv::new(adapter);
        worker_env.max_response_bytes = settings.max_response_bytes;
        Ok(worker_env)
    }
}
