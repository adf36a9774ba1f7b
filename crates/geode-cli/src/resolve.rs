//! Turning a WorkerRequest (or `geode run` flags) into a worker environment: the library's
//! [`geode::client::resolve::Resolver`] over the process environment, with `local` added.

use geode::agent::worker::{WorkerEnv, WorkerRequest};
use geode::client::resolve::{ResolveError, Resolver};
use geode::config::Config;
use geode::llm::adapter::{Adapter, AdapterError};
use geode::llm::registry::ProcessEnv;
use std::sync::Arc;

pub(crate) use geode::client::resolve::limit_violations;

/// Builds one adapter by registry name, with settings from the config and environment.
fn build_adapter(name: &str, cfg: &Config) -> Result<Arc<dyn Adapter>, AdapterError> {
    match name {
        "local" => Ok(Arc::new(geode_local::LocalAdapter::shared())),
        other => geode::llm::build::build(other, cfg, &ProcessEnv),
    }
}

/// Resolves the environment for `req` from the config and the process environment.
pub(crate) fn resolve(req: &mut WorkerRequest, cfg: &Config) -> Result<WorkerEnv, ResolveError> {
    let build = |name: &str| build_adapter(name, cfg);
    Resolver {
        cfg,
        env: &ProcessEnv,
        build: &build,
        fallback: None,
    }
    .resolve(req)
}
