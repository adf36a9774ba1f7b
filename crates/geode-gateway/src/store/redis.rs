//! The shared store: a Redis that every gateway behind one balancer points at, so that a
//! continuation may reach another gateway than the one that stored its response. One key per
//! entry, `geode:NAME:response:SCOPE/ID`, holding the entry's JSON, written with `SET ... EX
//! max_age`: Redis drops what is too old, and its own `maxmemory` bounds the rest (the count and
//! byte bounds are the embedded store's). The connection is made on first use, through the
//! same URL parsing and reconnection settings as geode's queue and cache ([`geode::redis`]),
//! and each command is bounded by [`OP_TIMEOUT`]. Errors show the server with `***` for its
//! password.

use super::{StoreError, StoreSettings, Stored, decode, encode};
use ::redis::aio::ConnectionManager;
use geode::redis::RedisUrl;
use std::time::Duration;

/// The longest one command (or the first connection) may take.
pub const OP_TIMEOUT: Duration = Duration::from_secs(5);

/// Entries in Redis.
pub(super) struct RedisStore {
    url: RedisUrl,
    conn: tokio::sync::OnceCell<ConnectionManager>,
    expiry_s: u64,
    max_entry_bytes: u64,
}

impl RedisStore {
    /// The store at `url`; nothing is connected yet. The password, if any, is registered with
    /// the secret scrubber here ([`RedisUrl::parse`]).
    pub(super) fn new(url: &str, settings: &StoreSettings) -> Result<Self, StoreError> {
        Ok(Self {
            url: RedisUrl::parse(url).map_err(StoreError::Url)?,
            conn: tokio::sync::OnceCell::new(),
            expiry_s: settings.max_age.as_secs().max(1),
            max_entry_bytes: settings.max_entry_bytes(),
        })
    }

    /// The server, its password shown as `***`.
    pub(super) fn server(&self) -> String {
        self.url.redacted_server()
    }

    pub(super) async fn put(&self, key: &str, entry: &Stored) -> Result<(), StoreError> {
        let json = encode(entry, self.max_entry_bytes)?;
        let mut cmd = ::redis::cmd("SET");
        cmd.arg(self.key(key))
            .arg(json)
            .arg("EX")
            .arg(self.expiry_s);
        self.run::<()>(&cmd).await
    }

    pub(super) async fn get(&self, key: &str) -> Result<Option<Stored>, StoreError> {
        let mut cmd = ::redis::cmd("GET");
        cmd.arg(self.key(key));
        match self.run::<Option<Vec<u8>>>(&cmd).await? {
            Some(bytes) => decode(&bytes).map(Some),
            None => Ok(None),
        }
    }

    pub(super) async fn delete(&self, key: &str) -> Result<bool, StoreError> {
        let mut cmd = ::redis::cmd("DEL");
        cmd.arg(self.key(key));
        Ok(self.run::<u64>(&cmd).await? > 0)
    }

    fn key(&self, key: &str) -> String {
        self.url.key(&format!("response:{key}"))
    }

    fn error(&self, source: ::redis::RedisError) -> StoreError {
        StoreError::Redis {
            server: self.server(),
            message: geode::secret::scrub(&source.to_string()),
            source,
        }
    }

    /// `cmd` on the connection (made on first use), within [`OP_TIMEOUT`] each.
    async fn run<T: ::redis::FromRedisValue>(&self, cmd: &::redis::Cmd) -> Result<T, StoreError> {
        let timeout = || StoreError::Timeout {
            server: self.server(),
        };
        let connect = || async {
            let client =
                ::redis::Client::open(self.url.server.as_str()).map_err(|e| self.error(e))?;
            ConnectionManager::new_with_config(client, manager_config())
                .await
                .map_err(|e| self.error(e))
        };
        let mut conn = tokio::time::timeout(OP_TIMEOUT, self.conn.get_or_try_init(connect))
            .await
            .map_err(|_| timeout())??
            .clone();
        tokio::time::timeout(OP_TIMEOUT, cmd.query_async::<T>(&mut conn))
            .await
            .map_err(|_| timeout())?
            .map_err(|e| self.error(e))
    }
}

/// geode's reconnection settings ([`geode::redis::manager_config`]), with one retry per
/// connection instead of three: a request waits on its store, so a refused password or a Redis
/// that is down is an error within a second or two, not a timeout.
fn manager_config() -> ::redis::aio::ConnectionManagerConfig {
    geode::redis::manager_config().set_number_of_retries(1)
}
