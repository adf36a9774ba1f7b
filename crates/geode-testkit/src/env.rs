//! A described machine: environment variables from a map; files from the real file system, or
//! only those described ([`MapEnv::described`]); executables on `PATH` only as described. Lets a
//! test build or route to any adapter with `geode::llm::build::build` / `routing::route`
//! without touching the process environment (which tests cannot change safely).

use geode::llm::registry::Environment;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Variables from a map; files on disk or described; executables as described.
#[derive(Debug, Clone, Default)]
pub struct MapEnv {
    vars: BTreeMap<String, String>,
    /// `None`: files are looked up on disk; else only these exist.
    files: Option<BTreeSet<PathBuf>>,
    bins: BTreeSet<String>,
}

impl MapEnv {
    /// An empty machine whose files are the real ones.
    pub fn new() -> Self {
        Self::default()
    }

    /// A machine with `HOME=/home/u`, each of `vars` set, and no file but those added later.
    pub fn described(vars: &[&str]) -> Self {
        let mut env = Self {
            files: Some(BTreeSet::new()),
            ..Self::default()
        };
        env.set_var("HOME", "/home/u");
        for v in vars {
            env.set_var(v, "set");
        }
        env
    }

    /// Sets a variable.
    pub fn set(mut self, name: &str, value: impl Into<String>) -> Self {
        self.set_var(name, value);
        self
    }

    /// Sets a variable in place.
    pub fn set_var(&mut self, name: &str, value: impl Into<String>) {
        self.vars.insert(name.to_owned(), value.into());
    }

    /// Removes a variable.
    pub fn unset(&mut self, name: &str) {
        self.vars.remove(name);
    }

    /// Describes a file as existing (the machine then sees only described files).
    pub fn add_file(&mut self, path: &str) {
        self.files
            .get_or_insert_with(BTreeSet::new)
            .insert(path.into());
    }

    /// Removes every described file (the machine then has none).
    pub fn clear_files(&mut self) {
        self.files = Some(BTreeSet::new());
    }

    /// Puts an executable on `PATH`.
    pub fn add_bin(&mut self, name: &str) {
        self.bins.insert(name.to_owned());
    }
}

impl Environment for MapEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).filter(|v| !v.is_empty()).cloned()
    }
    fn file_exists(&self, path: &Path) -> bool {
        match &self.files {
            Some(files) => files.contains(path),
            None => path.is_file(),
        }
    }
    fn on_path(&self, name: &str) -> bool {
        self.bins.contains(name)
    }
}
