//! Where entries live: a directory on one machine ([`dir::DirStore`]) or Redis, shared
//! ([`redis::RedisStore`], feature `redis`). A store moves bytes under a key; what the bytes
//! mean is [`super::entry`]'s business, so both stores are held to the same rules: a missing,
//! damaged or unreadable entry is a miss, never an error that ends a run.

pub mod dir;
#[cfg(feature = "redis")]
pub mod redis;

use super::CacheError;
use serde::{Deserialize, Serialize};

/// What a read found.
#[derive(Debug)]
pub enum Got {
    /// The entry's bytes, whole (the directory store has checked their integrity).
    Bytes(Vec<u8>),
    /// No entry under this key.
    Missing,
    /// An entry is there but damaged: truncated, overwritten, failing its integrity hash.
    Corrupt(String),
}

/// Hits, misses and writes, counted by each process and added to the store's totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Lookups answered from the store.
    pub hits: u64,
    /// Lookups that went upstream (absent, expired, weaker `require`, damaged).
    pub misses: u64,
    /// Entries written.
    pub stores: u64,
    /// Damaged entries found (each also a miss) and removed.
    pub corrupt: u64,
}

impl Counters {
    /// Adds `other` to these.
    pub fn add(&mut self, other: &Counters) {
        self.hits += other.hits;
        self.misses += other.misses;
        self.stores += other.stores;
        self.corrupt += other.corrupt;
    }

    /// True when nothing was counted.
    pub fn is_zero(&self) -> bool {
        *self == Self::default()
    }
}

/// What a store holds now, for `geode cache stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StoreStats {
    /// Where (a directory, or a Redis server and prefix with any password hidden).
    pub location: String,
    /// Entries that read back whole.
    pub entries: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Entries that do not read back (damaged); the next lookup of each is a miss and replaces it.
    pub unreadable: u64,
    /// Hits, misses, writes and damaged entries counted by every process since the last clear.
    pub counters: Counters,
}

/// One store of entries.
#[async_trait::async_trait]
pub trait Store: Send + Sync {
    /// The bytes under `key`.
    async fn get(&self, key: &str) -> Result<Got, CacheError>;
    /// Writes `bytes` under `key`, replacing what was there, atomically.
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), CacheError>;
    /// Removes the entry under `key` (a damaged one), if any.
    async fn remove(&self, key: &str) -> Result<(), CacheError>;
    /// Adds a process's counters to the store's totals.
    async fn add_counters(&self, counters: Counters) -> Result<(), CacheError>;
    /// [`Self::add_counters`] when the cache is dropped, without a runtime: what a store can
    /// do synchronously, else nothing (those counts are lost, never the entries).
    fn add_counters_at_exit(&self, counters: Counters) {
        let _ = counters;
    }
    /// What the store holds, every entry read back.
    async fn stats(&self) -> Result<StoreStats, CacheError>;
    /// Removes every entry and the counters; returns how many entries there were.
    async fn clear(&self) -> Result<u64, CacheError>;
    /// Where it is, for messages (no password).
    fn location(&self) -> String;
}
