//! The one-machine store: a directory in [cacache]'s layout (npm's cache format).
//!
//! Why cacache, and not an embedded database: `redb` and `sled` take an exclusive lock per
//! process, so two `geode batch` runs on one cache directory would fail or wait, and SQLite
//! would add a C library for what is a key-to-bytes map. cacache keeps the properties the
//! cache needs with plain files, so several processes share one directory at once:
//!
//! | property | how cacache has it |
//! |---|---|
//! | a write is all or nothing | the bytes go to a temporary file in `tmp/`, then are renamed into `content-v2/` under their own SHA-256 |
//! | a damaged entry is never read as valid | every read checks the content against that hash; the index line (`index-v5/`) carries a hash of itself and a torn or altered line is skipped |
//! | processes writing at once do not corrupt each other | content files are whole or absent (rename); index lines are appended with one write each, and the last whole line for a key wins |
//!
//! A damaged entry (its hash fails, its file is gone or its bytes are not an entry) is a miss:
//! it is removed here, and the fresh answer written in its place. The directory also holds
//! `geode/counters.jsonl`, one line of counters appended by each process that used it (a line
//! that does not read is skipped).
//!
//! [cacache]: https://docs.rs/cacache

use super::{Counters, Got, Store, StoreStats};
use crate::cache::CacheError;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What cacache and geode create in the directory; `clear` removes these and nothing else.
const OWNED: &[&str] = &["index-v5", "content-v2", "tmp", "geode"];

/// Entries in a directory.
#[derive(Debug, Clone)]
pub struct DirStore {
    dir: PathBuf,
}

impl DirStore {
    /// The store in `dir`, created when absent. A path that exists and is not a directory is
    /// refused.
    pub fn open(dir: &Path) -> Result<Self, CacheError> {
        let io = |source| CacheError::Dir {
            dir: dir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir.join("geode")).map_err(io)?;
        Ok(Self {
            dir: dir.to_path_buf(),
        })
    }

    fn counters_file(&self) -> PathBuf {
        self.dir.join("geode").join("counters.jsonl")
    }

    fn get_sync(&self, key: &str) -> Got {
        let meta = match cacache::metadata_sync(&self.dir, key) {
            Ok(Some(m)) => m,
            Ok(None) => return Got::Missing,
            Err(e) => return Got::Corrupt(e.to_string()),
        };
        match cacache::read_hash_sync(&self.dir, &meta.integrity) {
            Ok(bytes) => Got::Bytes(bytes),
            Err(e) => Got::Corrupt(e.to_string()),
        }
    }

    /// Writes the entry, then reads its index line back: an index file damaged beyond a line
    /// (bytes that are not text stop cacache's reader) hides every line written after the
    /// damage, so such a file is removed and the entry written again.
    fn put_sync(&self, key: &str, bytes: &[u8]) -> Result<(), CacheError> {
        cacache::write_sync(&self.dir, key, bytes).map_err(|e| self.error(e))?;
        if let Ok(Some(_)) = cacache::metadata_sync(&self.dir, key) {
            return Ok(());
        }
        // No line reads back: with `remove_fully` and no entry found, cacache removes the
        // index file alone.
        cacache::RemoveOpts::new()
            .remove_fully(true)
            .remove_sync(&self.dir, key)
            .map_err(|e| self.error(e))?;
        cacache::write_sync(&self.dir, key, bytes)
            .map(drop)
            .map_err(|e| self.error(e))
    }

    /// Removes `key`'s index lines and its content, whichever of the two are there.
    fn remove_sync(&self, key: &str) -> Result<(), CacheError> {
        if let Ok(Some(meta)) = cacache::metadata_sync(&self.dir, key) {
            // Gone already is fine; the content may be shared with nothing else (entries
            // hold their own key, so two keys never share content).
            let _ = cacache::remove_hash_sync(&self.dir, &meta.integrity);
        }
        cacache::remove_sync(&self.dir, key).map_err(|e| self.error(e))
    }

    fn stats_sync(&self) -> Result<StoreStats, CacheError> {
        let mut stats = StoreStats {
            location: self.location(),
            ..StoreStats::default()
        };
        for meta in cacache::list_sync(&self.dir) {
            let Ok(meta) = meta else {
                stats.unreadable += 1;
                continue;
            };
            let whole = cacache::read_hash_sync(&self.dir, &meta.integrity)
                .ok()
                .filter(|b| crate::cache::entry::CacheEntry::decode(b, &meta.key).is_ok());
            match whole {
                Some(bytes) => {
                    stats.entries += 1;
                    stats.bytes += bytes.len() as u64;
                }
                None => stats.unreadable += 1,
            }
        }
        stats.counters = self.read_counters();
        Ok(stats)
    }

    /// The counters every process appended; a line that does not read (torn) is skipped.
    fn read_counters(&self) -> Counters {
        let mut total = Counters::default();
        let Ok(text) = std::fs::read_to_string(self.counters_file()) else {
            return total;
        };
        for line in text.lines() {
            if let Ok(c) = serde_json::from_str::<Counters>(line) {
                total.add(&c);
            }
        }
        total
    }

    /// One append of one short line: whole even with other processes appending.
    fn append_counters(&self, counters: Counters) -> Result<(), CacheError> {
        let path = self.counters_file();
        let io = |source| CacheError::Dir {
            dir: path.clone(),
            source,
        };
        let json = serde_json::to_string(&counters).map_err(|e| self.error_of(e))?;
        // A leading newline: a torn line left by a crash ends there instead of taking this one.
        let line = format!("\n{json}\n");
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io)?;
        file.write_all(line.as_bytes()).map_err(io)
    }

    fn clear_sync(&self) -> Result<u64, CacheError> {
        let entries = cacache::list_sync(&self.dir).filter(Result::is_ok).count() as u64;
        for name in OWNED {
            let path = self.dir.join(name);
            match std::fs::remove_dir_all(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(CacheError::Dir { dir: path, source }),
            }
        }
        std::fs::create_dir_all(self.dir.join("geode")).map_err(|source| CacheError::Dir {
            dir: self.dir.clone(),
            source,
        })?;
        Ok(entries)
    }

    fn error(&self, e: cacache::Error) -> CacheError {
        self.error_of(e)
    }

    fn error_of(&self, e: impl std::error::Error + Send + Sync + 'static) -> CacheError {
        CacheError::Store {
            location: self.location(),
            source: Box::new(e),
        }
    }
}

/// Runs blocking file work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, CacheError> + Send + 'static,
) -> Result<T, CacheError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| CacheError::Store {
            location: "a blocking task".to_owned(),
            source: Box::new(e),
        })?
}

#[async_trait::async_trait]
impl Store for DirStore {
    async fn get(&self, key: &str) -> Result<Got, CacheError> {
        let (me, key) = (self.clone(), key.to_owned());
        blocking(move || Ok(me.get_sync(&key))).await
    }

    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), CacheError> {
        let (me, key) = (self.clone(), key.to_owned());
        blocking(move || me.put_sync(&key, &bytes)).await
    }

    async fn remove(&self, key: &str) -> Result<(), CacheError> {
        let (me, key) = (self.clone(), key.to_owned());
        blocking(move || me.remove_sync(&key)).await
    }

    async fn add_counters(&self, counters: Counters) -> Result<(), CacheError> {
        let me = self.clone();
        blocking(move || me.append_counters(counters)).await
    }

    fn add_counters_at_exit(&self, counters: Counters) {
        if let Err(e) = self.append_counters(counters) {
            tracing::debug!("response cache counters not written: {e}");
        }
    }

    async fn stats(&self) -> Result<StoreStats, CacheError> {
        let me = self.clone();
        blocking(move || me.stats_sync()).await
    }

    async fn clear(&self) -> Result<u64, CacheError> {
        let me = self.clone();
        blocking(move || me.clear_sync()).await
    }

    fn location(&self) -> String {
        self.dir.display().to_string()
    }
}
