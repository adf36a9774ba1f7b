//! One stored answer: what replay needs, and nothing secret.
//!
//! An entry is JSON bytes, sealed under the user's key ([`super::seal`]). It holds its own key,
//! so bytes read under another key (a store mixed up, a file copied over another) are refused
//! like corrupted ones; it never holds the prompt (the key is a hash of it) and passes the
//! secret scrubber before it is written.

use super::seal::SealKey;
use crate::agent::task::{Answer, Output, Task};
use crate::ledger::GuaranteeLedger;
use crate::vocab::TerminationReason;
use crate::vocab::{Require, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Bumped when the entry's shape changes: older entries then read as corrupt (a miss, replaced).
pub const ENTRY_FORMAT: u32 = 2;

/// One validated answer, as kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheEntry {
    /// [`ENTRY_FORMAT`].
    pub format: u32,
    /// The key it is stored under ([`super::key::CacheKey::hex`]).
    pub key: String,
    /// When the answer was made, in milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// The `require` the answer was made under: it answers no stronger one.
    pub require: Require,
    /// The answer's text.
    pub text: String,
    /// The validated value.
    pub value: Value,
    /// How the run ended.
    pub termination: TerminationReason,
    /// What the original run used.
    pub usage: Usage,
    /// The original run's ledger.
    pub ledger: GuaranteeLedger,
}

/// Why bytes read from a store are not an entry for this key.
#[derive(Debug, thiserror::Error)]
pub enum BadEntry {
    /// Not an entry (truncated, garbage, another shape).
    #[error("not a cache entry: {0}")]
    Unreadable(#[source] serde_json::Error),
    /// Written by another entry format.
    #[error("entry format {found}, this geode reads {ENTRY_FORMAT}")]
    Format {
        /// The format found.
        found: u32,
    },
    /// Stored under another key.
    #[error("the entry belongs to another key")]
    OtherKey,
    /// Not sealed by this user's key: written by another user or process without it (shipped
    /// in a repository, planted in a shared store), or altered since.
    #[error("the entry is not sealed by this user's cache key")]
    Unsealed,
}

/// Why a stored entry does not answer this request (each is a miss).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unfit {
    /// Older than the TTL.
    Expired,
    /// Made under a weaker `require` than this request's.
    WeakerRequire,
}

impl CacheEntry {
    /// The entry for a finished run, or `None` when it must not be kept: only an answer to a
    /// schema that passed full validation, with no pending tool calls and no replay in it.
    pub fn of(key: &str, task: &Task, answer: &Answer, now: SystemTime) -> Option<Self> {
        let Output::Schema(_) = &task.output else {
            return None;
        };
        let valid = answer
            .ledger
            .full_validation
            .as_ref()
            .is_some_and(|v| v.valid);
        if !valid || !answer.tool_calls.is_empty() || answer.ledger.replayed {
            return None;
        }
        let value = answer.value.clone()?;
        if answer.termination.is_failure() || answer.text.is_empty() {
            return None;
        }
        Some(Self {
            format: ENTRY_FORMAT,
            key: key.to_owned(),
            created_at_ms: millis(now),
            require: task.require,
            text: answer.text.clone(),
            value,
            termination: answer.termination,
            usage: answer.usage,
            ledger: answer.ledger.clone(),
        })
    }

    /// The bytes to store: the entry after the secret scrubber, as JSON, sealed with `seal`.
    pub fn encode(&self, seal: &SealKey) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(&crate::secret::scrub_serde(self.clone())).map(|b| seal.seal(&b))
    }

    /// The entry in `bytes`, refused unless `seal` sealed it and it is whole, of this format
    /// and for `key`.
    pub fn open(bytes: &[u8], key: &str, seal: &SealKey) -> Result<Self, BadEntry> {
        let body = seal.open(bytes).ok_or(BadEntry::Unsealed)?;
        Self::decode_body(body, key)
    }

    /// The entry in `bytes` without checking its seal (to count what a store holds).
    pub fn decode(bytes: &[u8], key: &str) -> Result<Self, BadEntry> {
        Self::decode_body(super::seal::body(bytes).ok_or(BadEntry::Unsealed)?, key)
    }

    fn decode_body(bytes: &[u8], key: &str) -> Result<Self, BadEntry> {
        #[derive(Deserialize)]
        struct Format {
            format: u32,
        }
        let format: Format = serde_json::from_slice(bytes).map_err(BadEntry::Unreadable)?;
        if format.format != ENTRY_FORMAT {
            return Err(BadEntry::Format {
                found: format.format,
            });
        }
        let entry: Self = serde_json::from_slice(bytes).map_err(BadEntry::Unreadable)?;
        if entry.key != key {
            return Err(BadEntry::OtherKey);
        }
        Ok(entry)
    }

    /// Whether this entry may answer a request with `require` now, under `ttl`.
    pub fn serves(
        &self,
        require: Require,
        ttl: Option<Duration>,
        now: SystemTime,
    ) -> Result<(), Unfit> {
        if self.require < require {
            return Err(Unfit::WeakerRequire);
        }
        let age = Duration::from_millis(millis(now).saturating_sub(self.created_at_ms));
        match ttl {
            Some(ttl) if age > ttl => Err(Unfit::Expired),
            _ => Ok(()),
        }
    }

    /// When it was made, RFC 3339 in UTC with milliseconds.
    pub fn created_at(&self) -> String {
        let at = UNIX_EPOCH + Duration::from_millis(self.created_at_ms);
        humantime::format_rfc3339_millis(at).to_string()
    }
}

/// Milliseconds since the Unix epoch (0 before it).
pub(crate) fn millis(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
