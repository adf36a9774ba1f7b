//! `--cache DIR|redis://...` and `--cache-ttl` of `geode run`, `batch`, `worker` and `serve`,
//! over `[cache]` in geode.toml ([`geode::cache`]).

use clap::Args;
use geode::cache::{Cache, CacheError, CacheSettings};
use geode::config::Settings;
use std::time::Duration;

/// The response cache flags.
#[derive(Args, Clone, Default)]
pub(crate) struct CacheArgs {
    /// Keep validated answers here and replay them without a request (the ledger says
    /// `replayed`): a directory, or redis://HOST:PORT[/NAME] shared by machines. Also `[cache]`
    /// in geode.toml.
    #[arg(long, value_name = "DIR|URL")]
    pub(crate) cache: Option<String>,
    /// Stored answers older than this are not replayed: seconds, or a duration (90s, 30m, 1h,
    /// 7d). Default: `[cache] ttl`, else no bound.
    #[arg(long, value_name = "TTL", value_parser = geode::vocab::parse_duration)]
    cache_ttl: Option<Duration>,
}

/// Why the cache flags cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CacheArgsError {
    /// The cache does not open.
    #[error(transparent)]
    Open(CacheError),
    /// `--cache-ttl` with no cache to bound.
    #[error("--cache-ttl needs a cache: --cache DIR|URL or [cache] in geode.toml")]
    TtlWithoutCache,
}

impl From<CacheError> for CacheArgsError {
    fn from(e: CacheError) -> Self {
        match e {
            CacheError::TtlWithoutCache => Self::TtlWithoutCache,
            other => Self::Open(other),
        }
    }
}

impl CacheArgs {
    /// The cache the flags (else the settings) name, if any ([`CacheSettings::choose`]).
    pub(crate) fn open(&self, settings: &Settings) -> Result<Option<Cache>, CacheArgsError> {
        let chosen = CacheSettings::choose(
            self.cache.as_deref(),
            self.cache_ttl,
            settings.cache.as_ref(),
        )?;
        if chosen.is_some() {
            // A cache that fails (Redis down, a damaged entry) says so on stderr; the run goes
            // on upstream.
            crate::logs::init();
        }
        Ok(chosen.map(|c| c.open(&geode::ProcessEnv)).transpose()?)
    }
}

/// Adds what this process counted to the cache's totals (for `geode cache stats`); a failure
/// is logged, never the command's.
pub(crate) async fn flush(cache: Option<&Cache>) {
    if let Some(c) = cache
        && let Err(e) = c.flush_counters().await
    {
        tracing::warn!("response cache counters not written: {e}");
    }
}
