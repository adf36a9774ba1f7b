//! The response cache: a validated answer kept under a hash of its request, and replayed
//! openly.
//!
//! Caches of LLM answers (Instructor's, LiteLLM's, TensorZero's) key on the request and return
//! the stored text as if it had just been made. This one says what it did and refuses what
//! would weaken the guarantee:
//!
//! | rule | how |
//! |---|---|
//! | the key is everything that decides the answer | SHA-256 of the canonical request, the schema's hash, the hash of the adapter's plan of the schema, and the policy ([`key`]); a change only in a `description` is a miss |
//! | only validated answers are kept | an answer to a schema that passed full validation, with no pending tool call ([`entry::CacheEntry::of`]); failed, invalid, truncated or refused runs never are |
//! | a hit makes no request and says so | the original ledger comes back marked `replayed` with `cached_at`; its attempts' usage reads zero and the original usage is kept in `original_usage` ([`replay`]) |
//! | a hit is validated again | against the current request's schema; a value that fails is a miss |
//! | an entry's word is taken only from its user | every entry is sealed (HMAC-SHA256) under the user's key ([`seal`]); one shipped in a repository or planted in a shared store reads as damaged |
//! | a weaker answer never serves a stronger request | the entry keeps the `require` it was made under; a request with a stronger one misses, runs, and replaces it |
//! | age is bounded when asked | `--cache-ttl` / `ttl`: an older entry is a miss |
//! | no secret is stored | the prompt is only hashed; the entry passes the secret scrubber before it is written |
//! | a damaged entry is a miss, never a crash | the stores check their bytes ([`store`]); a damaged entry is removed and replaced by the fresh answer |
//! | a store that fails does not fail the run | lookups miss and writes are skipped, each with a log line |
//!
//! Where: a directory on one machine (`--cache DIR`, [`store::dir`], several processes at
//! once), or Redis when machines share it (`--cache redis://HOST:PORT/NAME`,
//! [`store::redis`], feature `redis`). The cache is the worker's answer store
//! ([`crate::agent::store::AnswerStore`]): the worker consults the store of its
//! [`crate::agent::worker::WorkerEnv`] when the task allows it ([`crate::agent::task::Task::cache`]).

pub mod entry;
pub mod key;
pub mod replay;
pub mod seal;
pub mod store;
#[cfg(test)]
mod tests;

use crate::agent::store::AnswerStore;
use crate::agent::task::{Answer, Task};
use crate::llm::adapter::Adapter;
use entry::{CacheEntry, Unfit};
use key::CacheKey;
use seal::SealKey;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use store::{Counters, Got, Store, StoreStats};

/// Why a cache cannot be opened or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    /// The user's key for sealing entries cannot be had.
    #[error(transparent)]
    Seal(#[from] seal::SealError),
    /// The directory cannot be created or used.
    #[error("cache directory {dir}: {source}")]
    Dir {
        /// The path.
        dir: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The store failed (a file, Redis, a timeout).
    #[error("cache store {location}: {source}")]
    Store {
        /// Where (no password).
        location: String,
        /// What failed.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A `redis://` location that does not parse.
    #[cfg(feature = "redis")]
    #[error("bad cache location: {0}")]
    BadUrl(#[source] crate::redis::RedisError),
    /// A location that looks like a URL of a scheme the cache does not take.
    #[error(
        "cache location {scheme}:...: a cache is a directory or redis://[USER:PASSWORD@]HOST:PORT[/NAME] (TLS and unix sockets are not supported)"
    )]
    Scheme {
        /// The scheme written (at most 32 characters of it).
        scheme: String,
    },
    /// A TTL with no cache to bound.
    #[error("a cache TTL needs a cache: a directory or redis:// URL, or [cache] in geode.toml")]
    TtlWithoutCache,
    /// A `redis://` location in a build without Redis.
    #[error("a redis:// cache needs geode built with the `redis` feature")]
    NoRedis,
    /// A TTL that is not a positive duration.
    #[error("bad cache TTL: {0}")]
    BadTtl(#[from] crate::vocab::DurationError),
}

/// Where a cache lives: a directory, or a Redis URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheLocation {
    /// A directory on this machine.
    Dir(PathBuf),
    /// `redis://[USER:PASSWORD@]HOST:PORT[/NAME]` (NAME defaults to `default`).
    Redis(String),
}

impl CacheLocation {
    /// `redis://...` (the scheme in any case) is Redis; a text that starts like a URL of any
    /// other scheme, or a malformed `redis:` one (`rediss://`, `unix://`, `redis:/h`), is
    /// refused: taken as a directory it would become a local folder named `rediss:` and the
    /// user would never know the shared cache was not used. Anything else is a directory.
    pub fn parse(text: &str) -> Result<Self, CacheError> {
        let scheme = text.split_once(':').map(|(s, _)| s).filter(|s| {
            s.starts_with(|c: char| c.is_ascii_alphabetic())
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
        });
        match scheme {
            Some(s) if s.eq_ignore_ascii_case("redis") && text[s.len()..].starts_with("://") => {
                Ok(Self::Redis(format!("redis{}", &text[s.len()..])))
            }
            Some(s) if text[s.len() + 1..].starts_with('/') => Err(CacheError::Scheme {
                scheme: s.chars().take(32).collect(),
            }),
            _ => Ok(Self::Dir(PathBuf::from(text))),
        }
    }
}

/// Where a cache lives and the oldest answer it may replay: plain settings, resolved once per
/// process (`[cache]` in geode.toml, then a caller's own choice over it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheSettings {
    /// Where the entries are.
    pub location: CacheLocation,
    /// Entries older than this are misses; `None`: no bound.
    pub ttl: Option<Duration>,
}

impl CacheSettings {
    /// The one precedence rule for a cache: a location the caller gives (a flag, a keyword
    /// argument) wins over the configured one, and `""` turns caching off; a TTL the caller
    /// gives wins over the configured TTL, and with no cache at all it is an error.
    ///
    /// ```
    /// use geode::cache::{CacheLocation, CacheSettings};
    /// use std::time::Duration;
    /// let configured = CacheSettings { location: CacheLocation::parse("c").unwrap(), ttl: None };
    /// let hour = Some(Duration::from_secs(3600));
    /// let chosen = CacheSettings::choose(None, hour, Some(&configured)).unwrap().unwrap();
    /// assert_eq!((chosen.location, chosen.ttl), (CacheLocation::parse("c").unwrap(), hour));
    /// assert_eq!(CacheSettings::choose(Some(""), None, Some(&configured)).unwrap(), None);
    /// assert!(CacheSettings::choose(None, hour, None).is_err());
    /// ```
    pub fn choose(
        location: Option<&str>,
        ttl: Option<Duration>,
        configured: Option<&Self>,
    ) -> Result<Option<Self>, CacheError> {
        let location = match (location, configured) {
            (Some(""), _) => return Ok(None),
            (Some(given), _) => CacheLocation::parse(given)?,
            (None, Some(c)) => c.location.clone(),
            (None, None) if ttl.is_some() => return Err(CacheError::TtlWithoutCache),
            (None, None) => return Ok(None),
        };
        Ok(Some(Self {
            location,
            ttl: ttl.or(configured.and_then(|c| c.ttl)),
        }))
    }

    /// The cache these settings name, sealing with the key of the user `env` describes
    /// ([`seal::SealKey::for_user`]).
    pub fn open(&self, env: &dyn crate::llm::registry::Environment) -> Result<Cache, CacheError> {
        Cache::open_sealed(&self.location, self.ttl, SealKey::for_user(env)?)
    }
}

/// What a lookup found.
#[derive(Debug)]
pub enum Lookup {
    /// The answer, replayed.
    Hit(Box<Answer>),
    /// Run upstream, then keep the answer under `key`.
    Miss {
        /// The request's key.
        key: CacheKey,
        /// Why it missed.
        why: Miss,
    },
    /// The task is not one the cache keeps (no schema, tools of the worker's own, opted out).
    NotCacheable,
}

/// Why a lookup missed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Miss {
    /// Nothing stored under the key.
    Absent,
    /// The entry is older than the TTL.
    Expired,
    /// The entry was made under a weaker `require`.
    WeakerRequire,
    /// The entry is damaged (removed).
    Corrupt(String),
    /// The stored value fails the current schema.
    NotReplayed(String),
    /// The store failed.
    Unavailable(String),
}

/// A response cache: a store, a TTL and this process's counters. Cheap to clone.
#[derive(Clone)]
pub struct Cache {
    inner: Arc<Inner>,
}

struct Inner {
    store: Box<dyn Store>,
    ttl: Option<Duration>,
    seal: SealKey,
    counters: Mutex<Counters>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let c = *self.counters.lock().unwrap_or_else(|p| p.into_inner());
        if !c.is_zero() {
            self.store.add_counters_at_exit(c);
        }
    }
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("location", &self.location())
            .field("ttl", &self.inner.ttl)
            .finish()
    }
}

impl Cache {
    /// The cache at `location`, its entries sealed with the user's key ([`seal`], read from
    /// the process environment). A directory is created when absent; Redis is connected on
    /// first use.
    pub fn open(location: &CacheLocation, ttl: Option<Duration>) -> Result<Self, CacheError> {
        let seal = SealKey::for_user(&crate::llm::registry::ProcessEnv)?;
        Self::open_sealed(location, ttl, seal)
    }

    /// The cache at `location`, sealing with `seal`.
    pub fn open_sealed(
        location: &CacheLocation,
        ttl: Option<Duration>,
        seal: SealKey,
    ) -> Result<Self, CacheError> {
        let store: Box<dyn Store> = match location {
            CacheLocation::Dir(dir) => Box::new(store::dir::DirStore::open(dir)?),
            CacheLocation::Redis(url) => redis_store(url, ttl)?,
        };
        Ok(Self::with_store(store, ttl, seal))
    }

    /// A cache over any store (tests, other stores), sealing with `seal`.
    pub fn with_store(store: Box<dyn Store>, ttl: Option<Duration>, seal: SealKey) -> Self {
        Self {
            inner: Arc::new(Inner {
                store,
                ttl,
                seal,
                counters: Mutex::default(),
            }),
        }
    }

    /// The TTL: entries older than this are misses.
    pub fn ttl(&self) -> Option<Duration> {
        self.inner.ttl
    }

    /// Where the entries are (no password).
    pub fn location(&self) -> String {
        self.inner.store.location()
    }

    fn count(&self, f: impl FnOnce(&mut Counters)) {
        f(&mut self
            .inner
            .counters
            .lock()
            .unwrap_or_else(|p| p.into_inner()));
    }

    /// The stored answer to `task` on `adapter`, replayed, or why there is none.
    pub async fn lookup(&self, task: &Task, adapter: &dyn Adapter) -> Lookup {
        let Some(schema) = task.output.schema() else {
            return Lookup::NotCacheable;
        };
        let started = std::time::Instant::now();
        let key = CacheKey::of(task, adapter, schema);
        let why = match self.inner.store.get(&key.hex).await {
            Err(e) => {
                tracing::warn!("response cache {}: lookup failed: {e}", self.location());
                Miss::Unavailable(e.to_string())
            }
            Ok(Got::Missing) => Miss::Absent,
            Ok(Got::Corrupt(why)) => self.corrupt(&key, why).await,
            Ok(Got::Bytes(bytes)) => match CacheEntry::open(&bytes, &key.hex, &self.inner.seal) {
                Err(bad) => self.corrupt(&key, bad.to_string()).await,
                Ok(entry) => match entry.serves(task.require, self.inner.ttl, SystemTime::now()) {
                    Err(Unfit::Expired) => Miss::Expired,
                    Err(Unfit::WeakerRequire) => Miss::WeakerRequire,
                    Ok(()) => match replay::replay(entry, task, schema, started.elapsed()) {
                        Ok(answer) => {
                            self.count(|c| c.hits += 1);
                            return Lookup::Hit(Box::new(answer));
                        }
                        Err(e) => Miss::NotReplayed(e.to_string()),
                    },
                },
            },
        };
        tracing::debug!("response cache miss ({why:?}) for {}", key.hex);
        self.count(|c| c.misses += 1);
        Lookup::Miss { key, why }
    }

    /// A damaged entry: counted, removed (a failure only logged), and a miss.
    async fn corrupt(&self, key: &CacheKey, why: String) -> Miss {
        tracing::warn!(
            "response cache {}: a damaged entry is a miss and is replaced: {why}",
            self.location()
        );
        self.count(|c| c.corrupt += 1);
        if let Err(e) = self.inner.store.remove(&key.hex).await {
            tracing::warn!("response cache {}: cannot remove it: {e}", self.location());
        }
        Miss::Corrupt(why)
    }

    /// This cache as the worker's answer store.
    pub fn as_store(&self) -> Arc<dyn AnswerStore> {
        Arc::new(self.clone())
    }

    /// Keeps `answer` to `task` under `key` when it is a validated answer; a failed write is
    /// logged, never an error of the run. Returns whether it was written.
    pub async fn keep_under(&self, key: &CacheKey, task: &Task, answer: &Answer) -> bool {
        let Some(entry) = CacheEntry::of(&key.hex, task, answer, SystemTime::now()) else {
            return false;
        };
        let written = match entry.encode(&self.inner.seal) {
            Ok(bytes) => self.inner.store.put(&key.hex, bytes).await,
            Err(e) => Err(CacheError::Store {
                location: self.location(),
                source: Box::new(e),
            }),
        };
        match written {
            Ok(()) => {
                self.count(|c| c.stores += 1);
                true
            }
            Err(e) => {
                tracing::warn!("response cache {}: not kept: {e}", self.location());
                false
            }
        }
    }

    /// What this process counted since the last [`Self::flush_counters`].
    pub fn counters(&self) -> Counters {
        *self
            .inner
            .counters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Adds this process's counters to the store's totals (for `geode cache stats`) and starts
    /// counting again from zero.
    pub async fn flush_counters(&self) -> Result<(), CacheError> {
        let c = std::mem::take(
            &mut *self
                .inner
                .counters
                .lock()
                .unwrap_or_else(|p| p.into_inner()),
        );
        if c.is_zero() {
            return Ok(());
        }
        self.inner.store.add_counters(c).await
    }

    /// What the store holds, every entry read back.
    pub async fn stats(&self) -> Result<StoreStats, CacheError> {
        self.inner.store.stats().await
    }

    /// Removes every entry and the counters; returns how many entries there were.
    pub async fn clear(&self) -> Result<u64, CacheError> {
        self.inner.store.clear().await
    }
}

#[async_trait::async_trait]
impl AnswerStore for Cache {
    async fn replay(&self, task: &Task, adapter: &dyn Adapter) -> Option<Answer> {
        match self.lookup(task, adapter).await {
            Lookup::Hit(answer) => Some(*answer),
            Lookup::Miss { .. } | Lookup::NotCacheable => None,
        }
    }

    async fn keep(&self, task: &Task, adapter: &dyn Adapter, answer: &Answer) {
        // The key is made again rather than carried from the lookup: a SHA-256 over a small
        // JSON, and it keeps the key the cache's own business.
        if let Some(schema) = task.output.schema() {
            self.keep_under(&CacheKey::of(task, adapter, schema), task, answer)
                .await;
        }
    }
}

#[cfg(feature = "redis")]
fn redis_store(url: &str, ttl: Option<Duration>) -> Result<Box<dyn Store>, CacheError> {
    let with_name = redis_url_with_name(url);
    let parsed = crate::redis::RedisUrl::parse(&with_name).map_err(CacheError::BadUrl)?;
    Ok(Box::new(
        store::redis::RedisStore::new(parsed).expiring_after(ttl),
    ))
}

#[cfg(not(feature = "redis"))]
fn redis_store(_url: &str, _ttl: Option<Duration>) -> Result<Box<dyn Store>, CacheError> {
    Err(CacheError::NoRedis)
}

/// `redis://HOST:PORT` names the cache `default`; `redis://HOST:PORT/NAME` names it.
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
fn redis_url_with_name(url: &str) -> String {
    let rest = url.strip_prefix("redis://").unwrap_or(url);
    let host = &rest[rest.rfind('@').map_or(0, |at| at + 1)..];
    match host.find('/') {
        Some(_) => url.to_owned(),
        None => format!("{}/default", url.trim_end_matches('/')),
    }
}
