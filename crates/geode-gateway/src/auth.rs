//! Inbound keys: a client must send `Authorization: Bearer KEY` with one of the gateway's keys
//! when any are set. Keys are compared in constant time, held as [`Secret`]s (never printed),
//! and the client's `Authorization` is never forwarded: upstream credentials are geode's own.

use geode::secret::Secret;
use subtle::ConstantTimeEq;

/// The keys a client may present (none: the gateway is open, which only a loopback bind allows).
#[derive(Debug, Clone, Default)]
pub struct InboundKeys(Vec<Secret>);

/// Why a key list cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeysError {
    /// An entry is empty or holds whitespace.
    #[error("inbound key #{0} is empty or holds whitespace")]
    Malformed(usize),
}

impl InboundKeys {
    /// Keys from a comma- or newline-separated list (`GEODE_GATEWAY_KEYS`, a keys file);
    /// blank entries and `#` comment lines are skipped.
    pub fn parse(list: &str) -> Result<Self, KeysError> {
        let mut keys = Vec::new();
        for (i, raw) in list.split([',', '\n']).enumerate() {
            let key = raw.trim();
            if key.is_empty() || key.starts_with('#') {
                continue;
            }
            if key.chars().any(char::is_whitespace) {
                return Err(KeysError::Malformed(i + 1));
            }
            keys.push(Secret::new(key));
        }
        Ok(Self(keys))
    }

    /// Whether no key is required.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether an `Authorization` header value admits the client.
    pub fn admits(&self, authorization: Option<&[u8]>) -> bool {
        if self.0.is_empty() {
            return true;
        }
        let Some(presented) = authorization.and_then(|h| h.strip_prefix(b"Bearer ")) else {
            return false;
        };
        // Every key is compared, so the time does not say which one (or whether any) matched.
        self.0.iter().fold(false, |hit, key| {
            hit | bool::from(key.expose().as_bytes().ct_eq(presented))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_key_is_admitted_and_anything_else_is_not() {
        let keys = InboundKeys::parse("k-one, k-two\n# a comment\n\n").unwrap();
        assert!(keys.admits(Some(b"Bearer k-two")));
        assert!(!keys.admits(Some(b"Bearer k-three")));
        assert!(
            !keys.admits(Some(b"k-one")),
            "the Bearer scheme is required"
        );
        assert!(
            !keys.admits(Some(b"Bearer k-on")),
            "a prefix is not the key"
        );
        assert!(!keys.admits(None));
        assert!(InboundKeys::default().admits(None), "no keys: open");
        assert_eq!(
            InboundKeys::parse("a, b c").unwrap_err(),
            KeysError::Malformed(2)
        );
        assert!(!format!("{keys:?}").contains("k-one"), "{keys:?}");
    }
}
