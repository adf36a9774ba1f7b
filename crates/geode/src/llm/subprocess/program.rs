//! Finding the program to run: a path that must be an executable file, or a bare name looked up
//! on `PATH`, with a `GEODE_*_BIN` variable taking precedence for the vendor CLIs.

use super::SubprocessError;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Finds the program for a vendor CLI: the variable `env_var` (a path, or a bare name looked up
/// on `PATH`) when set and non-empty, else `default_name` on `PATH`.
pub fn resolve_program(env_var: &str, default_name: &str) -> Result<PathBuf, SubprocessError> {
    match std::env::var_os(env_var) {
        Some(v) if !v.is_empty() => locate(Path::new(&v))
            .map_err(|looked| not_found(Path::new(&v), format!("from {env_var}; {looked}"))),
        _ => locate(Path::new(default_name)).map_err(|looked| {
            not_found(
                Path::new(default_name),
                format!("{looked}; set {env_var} to its path"),
            )
        }),
    }
}

pub(super) fn not_found(program: &Path, looked: String) -> SubprocessError {
    SubprocessError::NotFound {
        program: program.display().to_string(),
        looked,
    }
}

/// Resolves a path (must be an executable file) or a bare name (searched on `PATH`).
pub(super) fn locate(program: &Path) -> Result<PathBuf, String> {
    if program.as_os_str().as_bytes().contains(&b'/') {
        return if is_executable(program) {
            Ok(program.to_owned())
        } else {
            Err("no executable file at that path".to_owned())
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
        .ok_or_else(|| "not on PATH".to_owned())
}

fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
