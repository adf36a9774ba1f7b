//! Where the store is and how much it keeps: the settings `[gateway.store]` resolves into,
//! with the defaults (a directory under the user's cache, 30 days, 10,000 entries, 256 MiB).

use super::StoreError;
use geode::Environment;
use geode::config::GatewayStoreConfig;
use std::path::PathBuf;
use std::time::Duration;

/// How long a response is kept unless configured: OpenAI keeps stored responses 30 days.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(30 * 24 * 3600);

/// How many responses the embedded store keeps unless configured.
pub const DEFAULT_MAX_ENTRIES: usize = 10_000;

/// How many bytes of responses the embedded store keeps unless configured: 256 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 256 << 20;

/// Where entries live.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// Nowhere: nothing is stored, nothing is found.
    Off,
    /// The embedded store, in this directory (its file is [`super::FILE_NAME`]).
    Dir(PathBuf),
    /// A Redis: `redis://[USER:PASSWORD@]HOST:PORT/NAME`.
    Redis(String),
}

/// The URL's password stays out of `{:?}` (settings are logged and put in panics).
impl std::fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Off => f.write_str("Off"),
            Self::Dir(d) => f.debug_tuple("Dir").field(d).finish(),
            Self::Redis(url) => f.debug_tuple("Redis").field(&redact(url)).finish(),
        }
    }
}

/// `url` with what lies between `://` and the last `@` (the credentials) shown as `***`.
fn redact(url: &str) -> String {
    let start = url.find("://").map_or(0, |i| i + 3);
    match url.rfind('@') {
        Some(at) if at >= start => format!("{}***{}", &url[..start], &url[at..]),
        _ => url.to_owned(),
    }
}

/// Where the store is and how much it keeps.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreSettings {
    /// Where entries live.
    pub location: StoreLocation,
    /// The largest age of an entry that is returned; older ones are removed.
    pub max_age: Duration,
    /// The most entries (embedded store); beyond it the oldest go first.
    pub max_entries: usize,
    /// The most bytes of serialized entries (embedded store); beyond it the oldest go first.
    /// One entry may take at most a sixteenth of it, in either store.
    pub max_bytes: u64,
}

impl StoreSettings {
    /// The embedded store in `dir`, with the default bounds.
    pub fn embedded(dir: PathBuf) -> Self {
        Self {
            location: StoreLocation::Dir(dir),
            max_age: DEFAULT_MAX_AGE,
            max_entries: DEFAULT_MAX_ENTRIES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }

    /// The embedded store's default directory: `$XDG_CACHE_HOME/geode/gateway` when that is an
    /// absolute path (a relative one is ignored, as the XDG specification says, so the working
    /// directory never decides where responses go), else `$HOME/.cache/geode/gateway`; `None`
    /// with neither.
    pub fn default_dir(env: &dyn Environment) -> Option<PathBuf> {
        env.var("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| env.var("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .map(|cache| cache.join("geode").join("gateway"))
    }

    /// `[gateway.store]` resolved with `env`: off when `enabled = false`, Redis with a `url`,
    /// else the embedded store in `dir` or [`Self::default_dir`]; the bounds given, else the
    /// defaults. No directory at all (neither `HOME` nor `dir`) is an error, not a silent off.
    pub fn from_config(
        cfg: &GatewayStoreConfig,
        env: &dyn Environment,
    ) -> Result<Self, StoreError> {
        let location = match (cfg.enabled, &cfg.url, &cfg.dir) {
            (false, _, _) => StoreLocation::Off,
            (true, Some(url), _) => StoreLocation::Redis(url.clone()),
            (true, None, Some(dir)) => StoreLocation::Dir(dir.clone()),
            (true, None, None) => {
                StoreLocation::Dir(Self::default_dir(env).ok_or(StoreError::NoDir)?)
            }
        };
        let max_age = match &cfg.max_age {
            Some(age) => age.duration().map_err(|e| StoreError::Setting {
                key: "max_age",
                message: e.to_string(),
            })?,
            None => DEFAULT_MAX_AGE,
        };
        Ok(Self {
            location,
            max_age,
            max_entries: cfg.max_entries.map_or(DEFAULT_MAX_ENTRIES, |n| n.get()),
            max_bytes: cfg.max_bytes.map_or(DEFAULT_MAX_BYTES, |n| n.get()),
        })
    }

    /// The largest one entry may be: a sixteenth of [`Self::max_bytes`], so that one response
    /// never pushes out everything else.
    pub fn max_entry_bytes(&self) -> u64 {
        self.max_bytes / 16
    }
}

/// The embedded store in this process's default directory, or off without `HOME`.
impl Default for StoreSettings {
    fn default() -> Self {
        match Self::default_dir(&geode::ProcessEnv) {
            Some(dir) => Self::embedded(dir),
            None => Self {
                location: StoreLocation::Off,
                ..Self::embedded(PathBuf::new())
            },
        }
    }
}
