//! [`OverlayEnv`]: the variables a Python caller hands the client (`env={...}`), read before the
//! process environment, so a program can point one client at a provider without touching
//! `os.environ`.

use geode::{Environment, ProcessEnv};
use std::collections::HashMap;
use std::path::Path;

/// Given variables first, then the process's. Empty values count as unset, as for the process.
#[derive(Clone)]
pub struct OverlayEnv {
    vars: HashMap<String, String>,
}

impl OverlayEnv {
    pub fn new(vars: HashMap<String, String>) -> Self {
        Self { vars }
    }

    /// The given variables that set up the local engine (`GEODE_LOCAL_MODEL`, `_THREADS`,
    /// `_SLOTS`...): the engine is its own process, so they go into its environment.
    pub fn engine_vars(&self) -> impl Iterator<Item = (String, String)> + '_ {
        self.vars
            .iter()
            .filter(|(k, _)| k.starts_with("GEODE_LOCAL_"))
            .map(|(k, v)| (k.clone(), v.clone()))
    }
}

impl Environment for OverlayEnv {
    fn var(&self, name: &str) -> Option<String> {
        match self.vars.get(name) {
            Some(v) if v.is_empty() => None,
            Some(v) => Some(v.clone()),
            None => ProcessEnv.var(name),
        }
    }

    fn file_exists(&self, path: &Path) -> bool {
        ProcessEnv.file_exists(path)
    }

    fn on_path(&self, name: &str) -> bool {
        ProcessEnv.on_path(name)
    }
}
