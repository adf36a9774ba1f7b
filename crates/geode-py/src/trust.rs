//! `python -m geode trust-config [PATH]`: trusts a project's `geode.toml` as it is now, as
//! `geode config trust` does, for Python users without the CLI (`geode::config::trust`).

use crate::outcome::config_error;
use geode::Config;
use geode::ProcessEnv;
use pyo3::prelude::*;
use std::path::PathBuf;

/// Trusts the file; gives the trust list's path. A file that is not a usable config, or a list
/// that cannot be written, raises `ConfigError`.
#[pyfunction]
pub fn trust_config(py: Python<'_>, path: PathBuf) -> PyResult<PathBuf> {
    Config::trust_file(&path, &ProcessEnv).map_err(|e| config_error(py, &e.to_string()))
}
