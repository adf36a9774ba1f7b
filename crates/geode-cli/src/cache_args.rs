//! `--cache DIR|redis://...` and `--cache-ttl` of `geode run`, `batch`, `worker` and `serve`,
//! over `[cache]` in geode.toml ([`geode::cache`]).

use clap::Args;
use geode::cache::{Cache, CacheError, CacheLocation};
use geode::config::Config;
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
    #[arg(long, value_name = "TTL", value_parser = ttl)]
    cache_ttl: Option<Duration>,
}

fn ttl(text: &str) -> Result<Duration, String> {
    geode::cache::parse_ttl(text).map_err(|e| e.to_string())
}

/// Why the cache flags cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CacheArgsError {
    /// The cache does not open.
    #[error(transparent)]
    Open(#[from] CacheError),
    /// `--cache-ttl` with no cache to bound.
    #[error("--cache-ttl needs a cache: --cache DIR|URL or [cache] in geode.toml")]
    TtlWithoutCache,
}

impl CacheArgs {
    /// The cache the flags (else the config) name, if any.
    pub(crate) fn open(&self, cfg: &Config) -> Result<Option<Cache>, CacheArgsError> {
        let ttl = match self.cache_ttl {
            Some(t) => Some(t),
            None => cfg.cache.ttl.as_ref().map(|t| t.duration()).transpose()?,
        };
        let location = match (&self.cache, &cfg.cache.dir, &cfg.cache.url) {
            (Some(flag), _, _) => CacheLocation::parse(flag),
            (None, Some(dir), _) => CacheLocation::Dir(dir.clone()),
            (None, None, Some(url)) => CacheLocation::parse(url),
            (None, None, None) if self.cache_ttl.is_some() => {
                return Err(CacheArgsError::TtlWithoutCache);
            }
            (None, None, None) => return Ok(None),
        };
        Ok(Some(Cache::open(&location, ttl)?))
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
