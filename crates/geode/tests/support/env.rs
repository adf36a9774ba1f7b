//! A described machine: environment variables from a map, files from the real file system.
//! Lets a test build any adapter with `geode::llm::build::build` without touching the
//! process environment (which tests cannot change safely).

use geode::llm::registry::Environment;
use std::collections::BTreeMap;
use std::path::Path;

/// Variables from a map; files are looked up on disk; nothing is on `PATH`.
#[derive(Debug, Clone, Default)]
pub struct MapEnv {
    vars: BTreeMap<String, String>,
}

impl MapEnv {
    /// An empty machine.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets a variable.
    pub fn set(mut self, name: &str, value: impl Into<String>) -> Self {
        self.vars.insert(name.to_owned(), value.into());
        self
    }
}

impl Environment for MapEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).filter(|v| !v.is_empty()).cloned()
    }
    fn file_exists(&self, path: &Path) -> bool {
        path.is_file()
    }
    fn on_path(&self, _name: &str) -> bool {
        false
    }
}
