//! Stored responses: what the Responses API's `store: true` keeps, so that `GET
//! /v1/responses/{id}`, its `input_items` and a later `previous_response_id` can read it back.
//!
//! Each entry is kept under its inbound key's tenant (`scope`, the SHA-256 of the key) and its
//! id: one client never sees, continues or deletes another's responses, and an open gateway's
//! entries (`None`) are a scope of their own. The store is bounded in age, in count and in
//! bytes, so a gateway that stores every response does not fill its disk.
//!
//! | file | job |
//! |---|---|
//! | `embedded.rs` | one `redb` file on this machine (the default): one gateway per directory |
//! | `redis.rs` | a Redis shared by gateways behind one balancer; Redis expires entries |
//! | `settings.rs` | where the store is and its bounds, from `[gateway.store]` |
//! | `error.rs` | [`StoreError`] |

mod embedded;
mod error;
mod redis;
mod settings;

pub use error::StoreError;
pub use settings::{
    DEFAULT_MAX_AGE, DEFAULT_MAX_BYTES, DEFAULT_MAX_ENTRIES, StoreLocation, StoreSettings,
};
use std::sync::Arc;

/// The embedded store's file, in its directory.
pub const FILE_NAME: &str = "responses.redb";

/// The longest id (and tenant) a key may hold.
const MAX_ID_LEN: usize = 128;

/// One stored response: what GET returns, what input_items lists, and what a continuation reads.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stored {
    /// The response object as the create call answered it (serde_json::Value).
    pub response: serde_json::Value,
    /// This request's own input items, each with an `id` (for GET .../input_items).
    pub input_items: Vec<serde_json::Value>,
    /// The conversation a `previous_response_id` continuation starts from: the earlier context,
    /// then this request's input items, then this response's output items, as input items.
    pub context: Vec<serde_json::Value>,
}

/// The key of `(scope, id)`: `SCOPE/ID`, or `-/ID` without a scope. An id is
/// `[A-Za-z0-9_-]{1,128}`, a scope `[A-Za-z0-9_]{1,128}` (a tenant is hex), so `-` is no scope's
/// and the `/` splits every key one way: no two pairs share a key. `None` for anything else.
fn entry_key(scope: Option<&str>, id: &str) -> Option<String> {
    let word = |s: &str, dash: bool| {
        (1..=MAX_ID_LEN).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || (dash && b == b'-'))
    };
    if !word(id, true) {
        return None;
    }
    match scope {
        None => Some(format!("-/{id}")),
        Some(s) if word(s, false) => Some(format!("{s}/{id}")),
        Some(_) => None,
    }
}

/// An entry as bytes, after the secret scrubber (a key the gateway knows, echoed by a model
/// or pasted by a user, is stored as `***`), refused past `max` bytes.
fn encode(entry: &Stored, max: u64) -> Result<Vec<u8>, StoreError> {
    let unserializable = |e: serde_json::Error| StoreError::Corrupt {
        why: format!("cannot be serialized ({})", category(&e)),
    };
    let mut json = serde_json::to_string(entry).map_err(unserializable)?;
    // Walked only when the text holds a secret, so a clean entry costs one pass.
    if geode::secret::scrub(&json) != json {
        let mut tree = serde_json::to_value(entry).map_err(unserializable)?;
        geode::secret::scrub_value(&mut tree);
        json = serde_json::to_string(&tree).map_err(unserializable)?;
    }
    let size = json.len() as u64;
    if size > max {
        return Err(StoreError::TooLarge { bytes: size, max });
    }
    Ok(json.into_bytes())
}

/// An entry read back; a value that is not one is [`StoreError::Corrupt`], without its text.
fn decode(bytes: &[u8]) -> Result<Stored, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt {
        why: format!(
            "not a stored response ({} at line {}, column {})",
            category(&e),
            e.line(),
            e.column()
        ),
    })
}

/// serde_json's error class as words (its message could quote the entry).
fn category(e: &serde_json::Error) -> &'static str {
    match e.classify() {
        serde_json::error::Category::Io => "an I/O error",
        serde_json::error::Category::Syntax => "a syntax error",
        serde_json::error::Category::Data => "a shape error",
        serde_json::error::Category::Eof => "cut short",
    }
}

/// The gateway's stored responses: embedded, Redis, or off. Cheap to clone; clones share one
/// store.
#[derive(Clone)]
pub struct ResponseStore {
    inner: Arc<Inner>,
}

enum Inner {
    Off,
    Embedded(embedded::Embedded),
    Redis(redis::RedisStore),
}

impl std::fmt::Debug for ResponseStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.inner.as_ref() {
            Inner::Off => f.write_str("ResponseStore(off)"),
            Inner::Embedded(e) => write!(f, "ResponseStore({})", e.path().display()),
            Inner::Redis(r) => write!(f, "ResponseStore({})", r.server()),
        }
    }
}

impl ResponseStore {
    /// The store `settings` name. The embedded store's directory is made (0700) and its file
    /// opened now, so a store in use elsewhere fails at start ([`StoreError::Locked`]); Redis
    /// is connected on first use.
    pub fn open(settings: &StoreSettings) -> Result<Self, StoreError> {
        Self::open_with_clock(settings, embedded::system_clock())
    }

    /// [`Self::open`] with the embedded store reading `clock` (milliseconds since the epoch).
    fn open_with_clock(
        settings: &StoreSettings,
        clock: embedded::Clock,
    ) -> Result<Self, StoreError> {
        let inner = match &settings.location {
            StoreLocation::Off => Inner::Off,
            StoreLocation::Dir(dir) => {
                Inner::Embedded(embedded::Embedded::open(dir, settings, clock)?)
            }
            StoreLocation::Redis(url) => Inner::Redis(redis::RedisStore::new(url, settings)?),
        };
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// A store that keeps nothing: `put` does nothing, `get` finds nothing.
    pub fn off() -> Self {
        Self {
            inner: Arc::new(Inner::Off),
        }
    }

    /// Whether anything is stored.
    pub fn enabled(&self) -> bool {
        !matches!(self.inner.as_ref(), Inner::Off)
    }

    /// Keeps `entry` as `id` under `scope`, replacing one of the same id. An id that cannot
    /// name an entry is [`StoreError::BadId`]; one over a sixteenth of `max_bytes` is
    /// [`StoreError::TooLarge`].
    pub async fn put(
        &self,
        scope: Option<&str>,
        id: &str,
        entry: &Stored,
    ) -> Result<(), StoreError> {
        if !self.enabled() {
            return Ok(());
        }
        let key = entry_key(scope, id).ok_or(StoreError::BadId)?;
        match self.inner.as_ref() {
            Inner::Off => Ok(()),
            Inner::Embedded(e) => e.put(key, entry).await,
            Inner::Redis(r) => r.put(&key, entry).await,
        }
    }

    /// The entry `id` under `scope`: `None` when there is none, it is too old, it was put under
    /// another scope, or the id cannot name one.
    pub async fn get(&self, scope: Option<&str>, id: &str) -> Result<Option<Stored>, StoreError> {
        let Some(key) = entry_key(scope, id) else {
            return Ok(None);
        };
        match self.inner.as_ref() {
            Inner::Off => Ok(None),
            Inner::Embedded(e) => e.get(key).await,
            Inner::Redis(r) => r.get(&key).await,
        }
    }

    /// Removes the entry `id` under `scope`; whether there was one (never one of another
    /// scope's).
    pub async fn delete(&self, scope: Option<&str>, id: &str) -> Result<bool, StoreError> {
        let Some(key) = entry_key(scope, id) else {
            return Ok(false);
        };
        match self.inner.as_ref() {
            Inner::Off => Ok(false),
            Inner::Embedded(e) => e.delete(key).await,
            Inner::Redis(r) => r.delete(&key).await,
        }
    }
}

#[cfg(test)]
mod tests;
