//! Finding the config file, and reading it safely when it is hostile: a path that is not a
//! regular file, too large, not UTF-8, or a project file that is not trusted.

use super::{Config, ConfigError, trust};
use crate::llm::registry::Environment;
use std::path::{Path, PathBuf};

/// The largest config file read (1 MiB): a config is a few tables; a larger file (a symlink to
/// a log, a paste gone wrong) is refused before it is read whole.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

impl Config {
    /// Loads `geode.toml` from `cwd`, else `~/.config/geode/config.toml`, else the defaults.
    /// The working directory's file may not send a credential to a host it chose, nor choose
    /// where cached answers come from, unless the user trusted it ([`trust`]).
    pub fn load(cwd: &Path, env: &dyn Environment) -> Result<Self, ConfigError> {
        let project = cwd.join("geode.toml");
        let mut candidates = vec![project.clone()];
        if let Some(home) = env.var("HOME") {
            candidates.push(PathBuf::from(home).join(".config/geode/config.toml"));
        }
        for path in candidates {
            // Anything at the path (a symlink included, even a dangling one) is the config: a
            // directory or a loop there is an error, not a reason to run on the defaults.
            if env.file_exists(&path) || path.symlink_metadata().is_ok() {
                let text = read_config(&path)?;
                let cfg = Self::parse(&text, &path.display().to_string())?;
                if path == project {
                    check_trust(&cfg, &path, &text, env)?;
                }
                return Ok(cfg);
            }
        }
        Ok(Self::default())
    }

    /// Trusts the config file at `path` as it is now (`geode config trust`): it must be a
    /// usable config. Gives the trust list's path.
    pub fn trust_file(path: &Path, env: &dyn Environment) -> Result<PathBuf, ConfigError> {
        let text = read_config(path)?;
        Self::parse(&text, &path.display().to_string())?;
        let list = trust::TrustList::locate(env).ok_or_else(|| ConfigError::Io {
            path: path.display().to_string(),
            message: "neither XDG_CONFIG_HOME nor HOME is set: nowhere to keep the trust"
                .to_owned(),
        })?;
        list.trust(path, &text).map_err(|e| ConfigError::Io {
            path: e.path.clone(),
            message: e.source.to_string(),
        })?;
        Ok(list.path().to_path_buf())
    }
}

/// Refuses a project file that chooses what only a trusted file may ([`trust::untrusted_choices`]).
fn check_trust(
    cfg: &Config,
    path: &Path,
    text: &str,
    env: &dyn Environment,
) -> Result<(), ConfigError> {
    let settings = trust::untrusted_choices(cfg);
    let trusted = || trust::TrustList::locate(env).is_some_and(|l| l.trusts(path, text));
    if settings.is_empty() || trusted() {
        return Ok(());
    }
    Err(ConfigError::Untrusted {
        path: path.display().to_string(),
        settings,
    })
}

/// The text of the config file at `path`: a regular file (symlinks followed) of at most
/// [`MAX_CONFIG_BYTES`], valid UTF-8. A FIFO or a device is refused before it is opened (a
/// read would block or never end).
fn read_config(path: &Path) -> Result<String, ConfigError> {
    use std::io::Read;
    let io = |message: String| ConfigError::Io {
        path: path.display().to_string(),
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| io(e.to_string()))?;
    if !meta.is_file() {
        return Err(io("not a regular file".to_owned()));
    }
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(io(format!(
            "{} bytes, more than the {MAX_CONFIG_BYTES} a config may have",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| io(e.to_string()))?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > MAX_CONFIG_BYTES {
        return Err(io(format!(
            "more than the {MAX_CONFIG_BYTES} bytes a config may have"
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        io(format!(
            "not valid UTF-8 (at byte {})",
            e.utf8_error().valid_up_to()
        ))
    })
}
