//! The shared store: Redis (`redis://[USER:PASSWORD@]HOST:PORT[/NAME]`), through the same
//! connection settings as the queue ([`crate::redis`]).
//!
//! | key | holds |
//! |---|---|
//! | `geode:cache:NAME:e:KEY` | one entry: the SHA-256 of its bytes in hex, a newline, the bytes |
//! | `geode:cache:NAME:counters` | a hash of the counters every process added (`HINCRBY`) |
//!
//! A cache opened with a TTL writes its entries with `SET ... PX`, so Redis drops them once no
//! reader with that TTL could replay them: a shared cache does not grow without end. (A reader
//! with a longer TTL then misses sooner; the writer's TTL bounds what is kept.)
//!
//! `SET` replaces a value whole, so writers never interleave; the hash in front of the bytes
//! makes a damaged value (truncated, altered) a miss like a damaged file. Every command is
//! bounded by [`OP_TIMEOUT`]: an unreachable or frozen Redis makes lookups miss and writes
//! fail (logged), and the run goes on upstream. After a failure the store rests for
//! [`REST_AFTER_FAILURE`]: every command fails at once instead of waiting out its own timeout,
//! so a Redis that is down costs one timeout per rest, not two per task. The connection is
//! made on first use.

use super::{Counters, Got, Store, StoreStats};
use crate::cache::CacheError;
use crate::digest::sha256_hex;
use crate::redis::RedisUrl;
use redis::aio::ConnectionManager;
use std::time::Duration;

/// The longest one command may take before the cache gives up on it.
pub const OP_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the store gives up on Redis after a command failed.
pub const REST_AFTER_FAILURE: Duration = Duration::from_secs(30);

/// The longest expiry sent: Redis refuses one past the end of its millisecond clock, and a
/// quarter of it is millions of years.
const MAX_EXPIRY_MS: u64 = i64::MAX.unsigned_abs() / 4;

/// Entries in Redis.
pub struct RedisStore {
    url: RedisUrl,
    conn: tokio::sync::OnceCell<ConnectionManager>,
    /// How long Redis keeps an entry written here; `None`: until it is replaced or cleared.
    expiry: Option<Duration>,
    /// Until when commands fail at once, after a failure.
    resting_until: std::sync::Mutex<Option<std::time::Instant>>,
}

impl RedisStore {
    /// The store at `url` (parsed by [`RedisUrl::parse`], whose NAME is the cache's name).
    /// Nothing is connected yet.
    pub fn new(url: RedisUrl) -> Self {
        Self {
            url,
            conn: tokio::sync::OnceCell::new(),
            expiry: None,
            resting_until: std::sync::Mutex::new(None),
        }
    }

    /// Entries written from now on expire in Redis after `ttl` (at least 1 ms).
    pub fn expiring_after(mut self, ttl: Option<Duration>) -> Self {
        self.expiry = ttl;
        self
    }

    fn key(&self, part: &str) -> String {
        format!("geode:cache:{}:{part}", self.url.name)
    }

    fn error(&self, source: impl std::error::Error + Send + Sync + 'static) -> CacheError {
        CacheError::Store {
            location: self.location(),
            source: Box::new(source),
        }
    }

    async fn conn(&self) -> Result<ConnectionManager, CacheError> {
        let make = || async {
            let client =
                redis::Client::open(self.url.server.as_str()).map_err(|e| self.error(e))?;
            ConnectionManager::new_with_config(client, crate::redis::manager_config())
                .await
                .map_err(|e| self.error(e))
        };
        let conn = tokio::time::timeout(OP_TIMEOUT, self.conn.get_or_try_init(make))
            .await
            .map_err(|e| self.error(e))??;
        Ok(conn.clone())
    }

    /// Runs `cmd` ([`Self::guarded`]).
    async fn run<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T, CacheError> {
        self.guarded(|mut conn| async move { cmd.query_async::<T>(&mut conn).await })
            .await
    }

    /// One query on the connection, within [`OP_TIMEOUT`], failing at once while the store
    /// rests and starting a rest when it fails.
    async fn guarded<T, F, Fut>(&self, query: F) -> Result<T, CacheError>
    where
        F: FnOnce(ConnectionManager) -> Fut,
        Fut: std::future::Future<Output = redis::RedisResult<T>>,
    {
        self.awake()?;
        let result = async {
            let conn = self.conn().await?;
            tokio::time::timeout(OP_TIMEOUT, query(conn))
                .await
                .map_err(|e| self.error(e))?
                .map_err(|e| self.error(e))
        }
        .await;
        self.note(result.is_err());
        result
    }

    /// An error while the store rests after a failure.
    fn awake(&self) -> Result<(), CacheError> {
        let until = *self.resting_until.lock().unwrap_or_else(|p| p.into_inner());
        let left = until.map_or(Duration::ZERO, |u| {
            u.saturating_duration_since(std::time::Instant::now())
        });
        if left.is_zero() {
            return Ok(());
        }
        Err(self.error(std::io::Error::other(format!(
            "redis failed a moment ago; not tried again for {} s",
            left.as_secs().max(1)
        ))))
    }

    /// Starts a rest after a failure, or ends it after a success.
    fn note(&self, failed: bool) {
        *self.resting_until.lock().unwrap_or_else(|p| p.into_inner()) =
            failed.then(|| std::time::Instant::now() + REST_AFTER_FAILURE);
    }

    /// Every entry key, by `SCAN` (never `KEYS`, which blocks the server).
    async fn entry_keys(&self) -> Result<Vec<String>, CacheError> {
        let pattern = self.key("e:*");
        let mut cursor: u64 = 0;
        let mut keys = Vec::new();
        loop {
            let (next, batch): (u64, Vec<String>) = self
                .run(
                    redis::cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(&pattern)
                        .arg("COUNT")
                        .arg(500),
                )
                .await?;
            keys.extend(batch);
            if next == 0 {
                return Ok(keys);
            }
            cursor = next;
        }
    }
}

/// The stored form: the bytes' SHA-256 in hex, a newline, the bytes.
fn framed(bytes: &[u8]) -> Vec<u8> {
    let mut out = sha256_hex(bytes).into_bytes();
    out.push(b'\n');
    out.extend_from_slice(bytes);
    out
}

/// The bytes of a stored value whose hash holds.
fn unframed(stored: &[u8]) -> Result<Vec<u8>, String> {
    let nl = stored
        .iter()
        .position(|b| *b == b'\n')
        .ok_or("no hash line")?;
    let (hash, bytes) = (&stored[..nl], &stored[nl + 1..]);
    if hash != sha256_hex(bytes).as_bytes() {
        return Err("its hash does not match (truncated or altered)".to_owned());
    }
    Ok(bytes.to_vec())
}

#[async_trait::async_trait]
impl Store for RedisStore {
    async fn get(&self, key: &str) -> Result<Got, CacheError> {
        let stored: Option<Vec<u8>> = self
            .run(redis::cmd("GET").arg(self.key(&format!("e:{key}"))))
            .await?;
        Ok(match stored {
            None => Got::Missing,
            Some(s) => match unframed(&s) {
                Ok(bytes) => Got::Bytes(bytes),
                Err(why) => Got::Corrupt(why),
            },
        })
    }

    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), CacheError> {
        let mut set = redis::cmd("SET");
        set.arg(self.key(&format!("e:{key}"))).arg(framed(&bytes));
        if let Some(ttl) = self.expiry {
            let ms = u64::try_from(ttl.as_millis())
                .unwrap_or(MAX_EXPIRY_MS)
                .clamp(1, MAX_EXPIRY_MS);
            set.arg("PX").arg(ms);
        }
        self.run::<()>(&set).await
    }

    async fn remove(&self, key: &str) -> Result<(), CacheError> {
        self.run::<()>(redis::cmd("DEL").arg(self.key(&format!("e:{key}"))))
            .await
    }

    async fn add_counters(&self, c: Counters) -> Result<(), CacheError> {
        let key = self.key("counters");
        let mut pipe = redis::pipe();
        for (field, n) in [
            ("hits", c.hits),
            ("misses", c.misses),
            ("stores", c.stores),
            ("corrupt", c.corrupt),
        ] {
            pipe.cmd("HINCRBY").arg(&key).arg(field).arg(n).ignore();
        }
        self.guarded(|mut conn| async move { pipe.query_async::<()>(&mut conn).await })
            .await
    }

    async fn stats(&self) -> Result<StoreStats, CacheError> {
        let mut stats = StoreStats {
            location: self.location(),
            ..StoreStats::default()
        };
        let prefix = self.key("e:");
        for full in self.entry_keys().await? {
            let key = full.strip_prefix(&prefix).unwrap_or(&full).to_owned();
            let stored: Option<Vec<u8>> = self.run(redis::cmd("GET").arg(&full)).await?;
            let whole = stored
                .and_then(|s| unframed(&s).ok())
                .filter(|b| crate::cache::entry::CacheEntry::decode(b, &key).is_ok());
            match whole {
                Some(b) => {
                    stats.entries += 1;
                    stats.bytes += b.len() as u64;
                }
                None => stats.unreadable += 1,
            }
        }
        let counts: std::collections::HashMap<String, u64> = self
            .run(redis::cmd("HGETALL").arg(self.key("counters")))
            .await?;
        let n = |f: &str| counts.get(f).copied().unwrap_or(0);
        stats.counters = Counters {
            hits: n("hits"),
            misses: n("misses"),
            stores: n("stores"),
            corrupt: n("corrupt"),
        };
        Ok(stats)
    }

    async fn clear(&self) -> Result<u64, CacheError> {
        let keys = self.entry_keys().await?;
        for chunk in keys.chunks(500) {
            self.run::<()>(redis::cmd("DEL").arg(chunk)).await?;
        }
        self.run::<()>(redis::cmd("DEL").arg(self.key("counters")))
            .await?;
        Ok(keys.len() as u64)
    }

    fn location(&self) -> String {
        format!("{}/{}", self.url.redacted_server(), self.url.name)
    }
}
