//! Turning a WorkerRequest (or `geode run` flags) into a worker environment: config, routing,
//! the `require` policy, preflight, the adapter itself and the fallback chain.

use geode::agent::worker::{WorkerEnv, WorkerRequest};
use geode::config::Config;
use geode::ledger::Require;
use geode::llm::adapter::{Adapter, AdapterError};
use geode::llm::fallback::FallbackAdapter;
use geode::llm::registry::{AdapterSpec, Environment, ProcessEnv, spec};
use geode::llm::routing::{RouteRequest, route};
use geode::schema::dialect::LimitViolation;
use geode::schema::{ResponseSchema, TextConstraint};
use std::sync::Arc;

/// Why a request could not be given an adapter. All are configuration errors (exit 2).
#[derive(Debug)]
pub(crate) enum ResolveError {
    Routing(String),
    Preflight(String),
    Build(String),
}

impl std::error::Error for ResolveError {}

impl std::fmt::Display for ResolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Routing(m) => write!(f, "{m}"),
            Self::Preflight(m) => write!(f, "schema refused before the call: {m}"),
            Self::Build(m) => write!(f, "{m}"),
        }
    }
}

/// The provider limits `schema` breaks on `spec`'s dialect: the verdict `run` applies before
/// the call and `schema check` reports (empty when the adapter takes the schema).
pub(crate) fn limit_violations(schema: &ResponseSchema, spec: &AdapterSpec) -> Vec<LimitViolation> {
    geode::schema::dialect::preflight(schema, spec.dialect)
        .err()
        .unwrap_or_default()
}

/// The violations as one line: `limit: found, at most max (at pointer); ...`.
pub(crate) fn violations_text(violations: &[LimitViolation]) -> String {
    violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The guarantee level a text constraint gets on this adapter (only a constraining engine
/// enforces one; see `TextConstraint::mode_on`).
fn text_constraint_level(spec: &AdapterSpec) -> Require {
    TextConstraint::mode_on(spec.mode_for(Some(&ResponseSchema::default()), false)).level()
}

/// Builds one adapter by registry name, with settings from the config and environment.
pub(crate) fn build_adapter(
    name: &str,
    cfg: &Config,
    env: &dyn Environment,
) -> Result<Arc<dyn Adapter>, AdapterError> {
    match name {
        "local" => Ok(Arc::new(geode_local::LocalAdapter::shared())),
        other => geode::llm::build::build(other, cfg, env),
    }
}

/// Resolves the environment for `req`: the routed adapter (plus the configured fallback chain
/// when the adapter was not named explicitly), with `req.model` filled from the config when empty.
pub(crate) fn resolve(req: &mut WorkerRequest, cfg: &Config) -> Result<WorkerEnv, ResolveError> {
    let env = ProcessEnv;
    let explicit = if !req.adapter.is_empty() {
        Some(req.adapter.clone())
    } else if spec(&req.source).is_some() {
        Some(req.source.clone())
    } else {
        None
    };
    let schema = req.response_schema.clone();
    let routed = route(
        &RouteRequest {
            adapter: explicit.as_deref(),
            model: &req.model,
            require: req.require,
            schema: schema.as_ref(),
            thinking: req.thinking_budget > 0,
            default_adapter: cfg.default_adapter.as_deref(),
        },
        &env,
    )
    .map_err(|e| ResolveError::Routing(e.to_string()))?;
    let name = routed.spec.name;
    if let Some(s) = &schema {
        let violations = limit_violations(s, routed.spec);
        if !violations.is_empty() {
            return Err(ResolveError::Preflight(format!(
                "{name}: {}",
                violations_text(&violations)
            )));
        }
    }
    if req.model.is_empty() {
        req.model = cfg.model(name, None);
    }
    let primary = build_adapter(name, cfg, &env).map_err(|e| ResolveError::Build(e.to_string()))?;
    let mut chain: Vec<(Arc<dyn Adapter>, Option<String>)> = vec![(primary, None)];
    if explicit.is_none() {
        for fb in cfg.fallback.iter().filter(|n| n.as_str() != name) {
            let Some(s) = spec(fb) else { continue };
            let meets = (schema.is_none()
                || s.mode_for(schema.as_ref(), false).level() >= req.require)
                && (req.text_constraint.is_none() || text_constraint_level(s) >= req.require);
            if meets
                && s.is_configured(&env)
                && let Ok(a) = build_adapter(fb, cfg, &env)
            {
                // Another family cannot serve this model name: that link uses its own model.
                let model = (s.family != routed.spec.family).then(|| cfg.model(fb, None));
                chain.push((a, model));
            }
        }
    }
    let adapter: Arc<dyn Adapter> = if chain.len() == 1 {
        chain.remove(0).0
    } else {
        Arc::new(
            FallbackAdapter::with_models(chain)
                .ok_or_else(|| ResolveError::Build("empty chain".into()))?,
        )
    };
    let mut worker_env = WorkerEnv::new(adapter);
    worker_env.max_response_bytes = cfg
        .max_response_bytes(&env)
        .map_err(|e| ResolveError::Build(e.to_string()))?;
    Ok(worker_env)
}
