//! The embedded store: one redb file, [`FILE_NAME`], in the store's directory (made 0700, the
//! file 0600: stored conversations are the users' own). redb locks its file for one process,
//! so a second gateway on the same directory is refused at start ([`StoreError::Locked`]), not
//! left to wait. Every redb call blocks, so each runs on tokio's blocking threads.
//!
//! | table | key → value |
//! |---|---|
//! | `entries` | `SCOPE/ID` → created (ms since the epoch) and sequence, 8 bytes each big-endian, then the entry's JSON |
//! | `by_age` | (created, sequence) → `SCOPE/ID`: oldest first, so pruning reads only what it removes |
//! | `meta` | `bytes` (the entries' total size), `seq` (the last sequence), `last` (the latest created) |
//!
//! Each put removes what is past `max_age`, then the oldest until the count and the bytes are
//! within bounds, in its own transaction; an old entry found by a read is removed there. Puts
//! commit without waiting for the disk (a crash may lose the last few, never the file's
//! consistency); deletes wait for it.

use super::{FILE_NAME, StoreError, StoreSettings, Stored, decode, encode};
use redb::{
    Database, Durability, ReadableTable, ReadableTableMetadata, Table, TableDefinition,
    WriteTransaction,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const ENTRIES: TableDefinition<&str, &[u8]> = TableDefinition::new("entries");
const BY_AGE: TableDefinition<(u64, u64), &str> = TableDefinition::new("by_age");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// The created time and sequence in front of each entry's JSON.
const HEADER: usize = 16;

/// redb's page cache: its default is 1 GiB; recent entries, which continuations read, fit.
const CACHE_BYTES: usize = 32 << 20;

/// A redb error of any kind, boxed (redb's own is 160 bytes, too large to pass around).
struct Db(Box<redb::Error>);

impl<E: Into<redb::Error>> From<E> for Db {
    fn from(e: E) -> Self {
        Self(Box::new(e.into()))
    }
}

/// Milliseconds since the epoch (settable in tests).
pub(super) type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// The system's clock.
pub(super) fn system_clock() -> Clock {
    Arc::new(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    })
}

/// The embedded store; clones share the open database.
pub(super) struct Embedded {
    shared: Arc<Shared>,
}

struct Shared {
    db: Database,
    path: PathBuf,
    max_age_ms: u64,
    max_entries: u64,
    max_bytes: u64,
    max_entry_bytes: u64,
    clock: Clock,
}

impl Embedded {
    /// Opens (or makes) the store in `dir`, and removes what aged while no gateway ran.
    pub(super) fn open(
        dir: &Path,
        settings: &StoreSettings,
        clock: Clock,
    ) -> Result<Self, StoreError> {
        let path = dir.join(FILE_NAME);
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| StoreError::Io { path, source }
        };
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        let mut file = std::fs::OpenOptions::new();
        file.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
            builder.mode(0o700);
            file.mode(0o600);
        }
        builder.create(dir).map_err(io(dir))?;
        let file = file.open(&path).map_err(io(&path))?;
        let db = Database::builder()
            .create_with_file_format_v3(true)
            .set_cache_size(CACHE_BYTES)
            .create_file(file)
            .map_err(|e| match e {
                redb::DatabaseError::DatabaseAlreadyOpen => StoreError::Locked {
                    dir: dir.to_path_buf(),
                },
                e => StoreError::Db {
                    path: path.clone(),
                    source: Box::new(e.into()),
                },
            })?;
        let shared = Shared {
            db,
            path,
            max_age_ms: u64::try_from(settings.max_age.as_millis()).unwrap_or(u64::MAX),
            max_entries: settings.max_entries as u64,
            max_bytes: settings.max_bytes,
            max_entry_bytes: settings.max_entry_bytes(),
            clock,
        };
        shared.db_result(shared.write(Durability::Immediate, |s, t| s.prune_in(t)))?;
        Ok(Self {
            shared: Arc::new(shared),
        })
    }

    /// The database file.
    pub(super) fn path(&self) -> &Path {
        &self.shared.path
    }

    pub(super) async fn put(&self, key: String, entry: &Stored) -> Result<(), StoreError> {
        let json = encode(entry, self.shared.max_entry_bytes)?;
        self.blocking(move |s| s.db_result(s.put(&key, &json)))
            .await
    }

    pub(super) async fn get(&self, key: String) -> Result<Option<Stored>, StoreError> {
        self.blocking(move |s| s.get(&key)).await
    }

    pub(super) async fn delete(&self, key: String) -> Result<bool, StoreError> {
        self.blocking(move |s| {
            let now = s.now();
            let taken = s.db_result(s.write(Durability::Immediate, |_, t| take(t, &key, None)))?;
            Ok(taken.is_some_and(|created| !s.expired(created, now)))
        })
        .await
    }

    /// Runs `f` on a blocking thread.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Shared) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let shared = self.shared.clone();
        tokio::task::spawn_blocking(move || f(&shared))
            .await
            .map_err(|e| StoreError::Io {
                path: self.shared.path.clone(),
                source: std::io::Error::other(e.to_string()),
            })?
    }
}

impl Shared {
    fn now(&self) -> u64 {
        (self.clock)()
    }

    fn expired(&self, created: u64, now: u64) -> bool {
        now.saturating_sub(created) >= self.max_age_ms
    }

    fn db_result<T>(&self, r: Result<T, Db>) -> Result<T, StoreError> {
        r.map_err(|Db(source)| StoreError::Db {
            path: self.path.clone(),
            source,
        })
    }

    /// One write transaction around `f`, committed with `durability`.
    fn write<T>(
        &self,
        durability: Durability,
        f: impl FnOnce(&Self, &WriteTransaction) -> Result<T, Db>,
    ) -> Result<T, Db> {
        let mut txn = self.db.begin_write()?;
        txn.set_durability(durability);
        let out = f(self, &txn)?;
        txn.commit()?;
        Ok(out)
    }

    fn put(&self, key: &str, json: &[u8]) -> Result<(), Db> {
        self.write(Durability::Eventual, |s, txn| {
            take(txn, key, None)?;
            let mut meta = txn.open_table(META)?;
            let seq = meta_get(&meta, "seq")? + 1;
            // Never before the latest entry, so the age order is the order of the puts.
            let created = s.now().max(meta_get(&meta, "last")?);
            let mut value = Vec::with_capacity(HEADER + json.len());
            value.extend_from_slice(&created.to_be_bytes());
            value.extend_from_slice(&seq.to_be_bytes());
            value.extend_from_slice(json);
            txn.open_table(ENTRIES)?.insert(key, value.as_slice())?;
            txn.open_table(BY_AGE)?.insert((created, seq), key)?;
            let bytes = meta_get(&meta, "bytes")? + value.len() as u64;
            meta.insert("bytes", bytes)?;
            meta.insert("seq", seq)?;
            meta.insert("last", created)?;
            drop(meta);
            s.prune_in(txn)
        })
    }

    /// Removes what is too old, then the oldest while the count or the bytes are over.
    fn prune_in(&self, txn: &WriteTransaction) -> Result<(), Db> {
        let now = self.now();
        loop {
            let oldest = txn
                .open_table(BY_AGE)?
                .first()?
                .map(|(k, v)| (k.value(), v.value().to_owned()));
            let Some(((created, seq), key)) = oldest else {
                return Ok(());
            };
            let count = txn.open_table(ENTRIES)?.len()?;
            let bytes = meta_get(&txn.open_table(META)?, "bytes")?;
            let over = count > self.max_entries || bytes > self.max_bytes;
            if !over && !self.expired(created, now) {
                return Ok(());
            }
            txn.open_table(BY_AGE)?.remove((created, seq))?;
            take(txn, &key, Some((created, seq)))?;
        }
    }

    fn get(&self, key: &str) -> Result<Option<Stored>, StoreError> {
        let read = || -> Result<Option<Vec<u8>>, Db> {
            let txn = self.db.begin_read()?;
            let entries = txn.open_table(ENTRIES)?;
            Ok(entries.get(key)?.map(|v| v.value().to_vec()))
        };
        let Some(value) = self.db_result(read())? else {
            return Ok(None);
        };
        let Some((created, seq)) = header(&value) else {
            return Err(StoreError::Corrupt {
                why: format!("an entry of {} bytes, shorter than its header", value.len()),
            });
        };
        if self.expired(created, self.now()) {
            self.db_result(self.write(Durability::Eventual, |_, t| {
                take(t, key, Some((created, seq)))
            }))?;
            return Ok(None);
        }
        decode(&value[HEADER..]).map(Some)
    }
}

/// Removes the entry `key` (only when its header is `only`, if given), its row in `by_age` and
/// its bytes from the total; its created time, if there was one.
fn take(txn: &WriteTransaction, key: &str, only: Option<(u64, u64)>) -> Result<Option<u64>, Db> {
    let mut entries = txn.open_table(ENTRIES)?;
    let found = entries
        .get(key)?
        .map(|v| (header(v.value()), v.value().len() as u64));
    let Some((head, size)) = found else {
        return Ok(None);
    };
    if only.is_some_and(|o| head != Some(o)) {
        return Ok(None);
    }
    entries.remove(key)?;
    if let Some(h) = head {
        txn.open_table(BY_AGE)?.remove(h)?;
    }
    let mut meta = txn.open_table(META)?;
    let bytes = meta_get(&meta, "bytes")?.saturating_sub(size);
    meta.insert("bytes", bytes)?;
    Ok(Some(head.map_or(0, |(created, _)| created)))
}

/// The created time and sequence in front of an entry, if it is long enough to hold them.
fn header(value: &[u8]) -> Option<(u64, u64)> {
    let created = value.get(..8)?.try_into().ok()?;
    let seq = value.get(8..HEADER)?.try_into().ok()?;
    Some((u64::from_be_bytes(created), u64::from_be_bytes(seq)))
}

fn meta_get(meta: &Table<&str, u64>, name: &str) -> Result<u64, Db> {
    Ok(meta.get(name)?.map_or(0, |v| v.value()))
}

#[cfg(test)]
impl Embedded {
    /// The entries and their bytes, as the store counts them.
    pub(super) async fn usage(&self) -> Result<(u64, u64), StoreError> {
        self.blocking(|s| {
            s.db_result((|| {
                let txn = s.db.begin_read()?;
                let count = txn.open_table(ENTRIES)?.len()?;
                let bytes = txn.open_table(META)?.get("bytes")?.map_or(0, |v| v.value());
                Ok((count, bytes))
            })())
        })
        .await
    }

    /// Writes `value` as the entry `key` as it is, as a damaged file would hold it.
    pub(super) async fn plant(&self, key: &'static str, value: &'static [u8]) {
        self.blocking(move |s| {
            s.db_result(s.write(Durability::Immediate, |_, t| {
                t.open_table(ENTRIES)?.insert(key, value)?;
                Ok(())
            }))
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    }
}
