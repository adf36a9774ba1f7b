//! The store's one error type. No variant holds a password (Redis servers are shown with
//! `***`) or an entry's text (a damaged entry is described, not quoted).

use std::path::PathBuf;

/// Why the store could not do what was asked. No variant holds a password or an entry's text.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The directory or its file could not be made or read.
    #[error("response store {}: {source}", path.display())]
    Io {
        /// The directory or file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The embedded database failed.
    #[error("response store {}: {source}", path.display())]
    Db {
        /// The database file.
        path: PathBuf,
        /// What redb said (boxed: redb's error is 160 bytes).
        #[source]
        source: Box<redb::Error>,
    },
    /// Another process holds the embedded store's file.
    #[error(
        "response store {}: the file is in use by another gateway (an embedded store serves one \
         process); give each gateway its own [gateway.store] dir, or share one store with \
         [gateway.store] url = \"redis://HOST:PORT/NAME\"",
        dir.display()
    )]
    Locked {
        /// The store's directory.
        dir: PathBuf,
    },
    /// The Redis URL is not `redis://[USER:PASSWORD@]HOST:PORT/NAME`.
    #[error("[gateway.store] url: {0}")]
    Url(#[source] geode::redis::RedisError),
    /// Redis failed a command, or could not be reached.
    #[error("response store at {server}: {message}")]
    Redis {
        /// The server, its password shown as `***`.
        server: String,
        /// What failed, passed through the secret scrubber.
        message: String,
        /// Redis's error.
        #[source]
        source: ::redis::RedisError,
    },
    /// Redis did not answer in time.
    #[error("response store at {server}: no answer within {} s", super::redis::OP_TIMEOUT.as_secs())]
    Timeout {
        /// The server, its password shown as `***`.
        server: String,
    },
    /// An entry is over the largest one entry may be ([`super::StoreSettings::max_entry_bytes`]).
    #[error("a stored response of {bytes} bytes is over the store's limit of {max} bytes")]
    TooLarge {
        /// The entry's serialized size.
        bytes: u64,
        /// The limit.
        max: u64,
    },
    /// An entry does not read back as one.
    #[error("a stored response does not read back: {why}")]
    Corrupt {
        /// What is wrong (never the entry's text).
        why: String,
    },
    /// The id (or the tenant) cannot name an entry; it is not shown.
    #[error("a response id is 1 to 128 of A-Z, a-z, 0-9, '_' and '-'")]
    BadId,
    /// No directory for the embedded store.
    #[error(
        "no directory for the response store: set HOME, [gateway.store] dir, or \
         [gateway.store] enabled = false"
    )]
    NoDir,
    /// A `[gateway.store]` value is not usable.
    #[error("[gateway.store] {key}: {message}")]
    Setting {
        /// The key.
        key: &'static str,
        /// Why.
        message: String,
    },
}
