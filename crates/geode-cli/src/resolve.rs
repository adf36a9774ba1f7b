//! Turning a WorkerRequest (or `geode run` flags) into a worker environment: the library's
//! [`geode::agent::resolve::Resolver`] over the process environment, with `local` added (served
//! by the `geode-engine` process).

use geode::agent::resolve::Resolver;
use geode::agent::worker::WorkerEnv;
use geode::config::Settings;
use geode::llm::adapter::Adapter;
use geode::llm::call::AdapterError;
use geode::llm::engine::EngineProcess;
use geode::llm::registry::{ProcessEnv, WireFamily};
use geode::llm::settings::AdapterSettings;
use geode::protocol::{PrepareError, WorkerRequest};
use std::sync::Arc;

pub(crate) use geode::agent::resolve::limit_violations;

/// Builds one adapter by registry name, with its settings and the process environment.
fn build_adapter(name: &str, settings: &AdapterSettings) -> Result<Arc<dyn Adapter>, AdapterError> {
    match settings.spec(name).map(|s| s.wire_family) {
        // The engine runs in its own process (`geode-engine`): this binary does not link it.
        Some(WireFamily::Local) => Ok(local_engine(name)),
        _ => geode::llm::build::build(name, settings, &ProcessEnv),
    }
}

/// The one `local` adapter of this process: its engine process (and loaded model) serves every
/// local call of a `run`, `batch` or `serve`.
pub(crate) fn local_engine(name: &str) -> Arc<dyn Adapter> {
    static ENGINE: std::sync::OnceLock<Arc<dyn Adapter>> = std::sync::OnceLock::new();
    ENGINE
        .get_or_init(|| {
            Arc::new(EngineProcess::new(
                name,
                EngineProcess::default_program(&ProcessEnv),
            ))
        })
        .clone()
}

/// Resolves the environment for `req` from the settings and the process environment, filling
/// `req.model` when routing chose it.
pub(crate) fn resolve(
    req: &mut WorkerRequest,
    settings: &Settings,
) -> Result<WorkerEnv, PrepareError> {
    let mut task = req.task()?;
    let build = |name: &str| build_adapter(name, &settings.routing.adapters);
    let env = Resolver {
        settings: &settings.routing,
        env: &ProcessEnv,
        build: &build,
        fallback: None,
    }
    .resolve(&mut task)?;
    req.model = task.route.model().to_owned();
    Ok(env)
}
