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
//! it is removed here, and the fresh answer written in its place.
//!
//! The store is not the directory the user names but one geode makes inside it,
//! [`STORE_DIR`], marked by a `CACHEDIR.TAG` (the Cache Directory Tagging convention, which
//! backup tools honour): `geode cache clear` removes that directory and nothing beside it, so a
//! cache pointed at a directory that also holds the user's own `tmp/` or `geode/` never touches
//! them. A [`STORE_DIR`] that is a symbolic link, or that exists without the tag, is refused:
//! it is not one geode made. Beside the entries, `counters.jsonl` holds one line of counters
//! appended by each process that used the store (a line that does not read is skipped); it is
//! read and appended only when it is a regular file (a FIFO planted there would hang a reader).
//!
//! [cacache]: https://docs.rs/cacache

use super::{Counters, Got, Store, StoreStats};
use crate::cache::CacheError;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The directory geode makes, inside the one it is given, for the store.
pub const STORE_DIR: &str = "geode-cache-v1";

/// The marker of a directory geode made (<https://bford.info/cachedir/>): its first line is
/// the convention's signature.
const TAG: &str = "CACHEDIR.TAG";
const TAG_TEXT: &str = "Signature: 8a477f597d28d172789f06886806bc55\n# This is geode's response cache (geode cache clear removes it).\n";

/// Entries in a directory.
#[derive(Debug, Clone)]
pub struct DirStore {
    /// The directory the user named.
    dir: PathBuf,
    /// [`STORE_DIR`] inside it: cacache's root.
    root: PathBuf,
}

impl DirStore {
    /// The store in `dir`, created when absent. A path that exists and is not a directory is
    /// refused, as is a [`STORE_DIR`] inside it that geode did not make.
    pub fn open(dir: &Path) -> Result<Self, CacheError> {
        let root = dir.join(STORE_DIR);
        let fail = |path: &Path, source| CacheError::Dir {
            dir: path.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(|e| fail(dir, e))?;
        match std::fs::symlink_metadata(&root) {
            Ok(meta) if meta.is_dir() => {
                if !is_regular(&root.join(TAG)) {
                    return Err(fail(
                        &root,
                        not_ours("it exists without geode's CACHEDIR.TAG"),
                    ));
                }
            }
            Ok(_) => {
                return Err(fail(
                    &root,
                    not_ours("it is not a directory (a symbolic link?)"),
                ));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => make_root(&root)?,
            Err(e) => return Err(fail(&root, e)),
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            root,
        })
    }

    /// The entries' index lines; none before the first write (cacache reports the index
    /// directory's absence as an error, which would count as a damaged entry).
    fn list(&self) -> Box<dyn Iterator<Item = cacache::Result<cacache::Metadata>> + '_> {
        if self.root.join("index-v5").is_dir() {
            Box::new(cacache::list_sync(&self.root))
        } else {
            Box::new(std::iter::empty())
        }
    }

    fn counters_file(&self) -> PathBuf {
        self.root.join("counters.jsonl")
    }

    fn get_sync(&self, key: &str) -> Got {
        let meta = match cacache::metadata_sync(&self.root, key) {
            Ok(Some(m)) => m,
            Ok(None) => return Got::Missing,
            Err(e) => return Got::Corrupt(e.to_string()),
        };
        match cacache::read_hash_sync(&self.root, &meta.integrity) {
            Ok(bytes) => Got::Bytes(bytes),
            Err(e) => Got::Corrupt(e.to_string()),
        }
    }

    /// Writes the entry, then reads its index line back: an index file damaged beyond a line
    /// (bytes that are not text stop cacache's reader) hides every line written after the
    /// damage, so such a file is removed and the entry written again.
    fn put_sync(&self, key: &str, bytes: &[u8]) -> Result<(), CacheError> {
        cacache::write_sync(&self.root, key, bytes).map_err(|e| self.error(e))?;
        if let Ok(Some(_)) = cacache::metadata_sync(&self.root, key) {
            return Ok(());
        }
        // No line reads back: with `remove_fully` and no entry found, cacache removes the
        // index file alone.
        cacache::RemoveOpts::new()
            .remove_fully(true)
            .remove_sync(&self.root, key)
            .map_err(|e| self.error(e))?;
        cacache::write_sync(&self.root, key, bytes)
            .map(drop)
            .map_err(|e| self.error(e))
    }

    /// Removes `key`'s index lines and its content, whichever of the two are there.
    fn remove_sync(&self, key: &str) -> Result<(), CacheError> {
        if let Ok(Some(meta)) = cacache::metadata_sync(&self.root, key) {
            // Gone already is fine; the content may be shared with nothing else (entries
            // hold their own key, so two keys never share content).
            let _ = cacache::remove_hash_sync(&self.root, &meta.integrity);
        }
        cacache::remove_sync(&self.root, key).map_err(|e| self.error(e))
    }

    fn stats_sync(&self) -> Result<StoreStats, CacheError> {
        let mut stats = StoreStats {
            location: self.location(),
            ..StoreStats::default()
        };
        for meta in self.list() {
            let Ok(meta) = meta else {
                stats.unreadable += 1;
                continue;
            };
            let whole = cacache::read_hash_sync(&self.root, &meta.integrity)
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
        let path = self.counters_file();
        if !is_regular(&path) {
            return total;
        }
        let Ok(text) = std::fs::read_to_string(path) else {
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
        if std::fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
            return Err(io(not_ours("it is not a regular file")));
        }
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

    /// Removes the store (checked to be geode's once more) and makes it again, empty.
    fn clear_sync(&self) -> Result<u64, CacheError> {
        let entries = self.list().filter(Result::is_ok).count() as u64;
        let fail = |source| CacheError::Dir {
            dir: self.root.clone(),
            source,
        };
        let ours = std::fs::symlink_metadata(&self.root).is_ok_and(|m| m.is_dir())
            && is_regular(&self.root.join(TAG));
        if !ours {
            return Err(fail(not_ours("it is no longer geode's (no CACHEDIR.TAG)")));
        }
        std::fs::remove_dir_all(&self.root).map_err(fail)?;
        make_root(&self.root)?;
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

/// Whether `path` is a regular file (not a link, a FIFO or a directory).
fn is_regular(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

fn not_ours(why: &str) -> std::io::Error {
    std::io::Error::other(format!("not a geode cache directory: {why}"))
}

/// Makes the store's directory with its tag in place from the first moment: both are made
/// beside it and renamed into place, so a process racing this one sees no directory or a
/// tagged one; when another process won the race, its directory is taken.
fn make_root(root: &Path) -> Result<(), CacheError> {
    let fail = |source| CacheError::Dir {
        dir: root.to_path_buf(),
        source,
    };
    let parent = root.parent().unwrap_or(Path::new("."));
    let fresh = tempfile::Builder::new()
        .prefix(".geode-cache-new")
        .tempdir_in(parent)
        .map_err(fail)?;
    std::fs::write(fresh.path().join(TAG), TAG_TEXT).map_err(fail)?;
    match std::fs::rename(fresh.path(), root) {
        Ok(()) => {
            // Renamed away: nothing is left for the guard to remove.
            let _ = fresh.keep();
            Ok(())
        }
        Err(_) if is_regular(&root.join(TAG)) => Ok(()),
        Err(e) => Err(fail(e)),
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
