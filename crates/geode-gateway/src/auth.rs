//! Inbound keys: a client must send `Authorization: Bearer KEY` with one of the gateway's keys
//! when any are set. Keys are compared in constant time, held as [`Secret`]s (never printed),
//! and the client's `Authorization` is never forwarded: upstream credentials are geode's own.

use geode::secret::Secret;
use subtle::ConstantTimeEq;

/// The keys a client may present (none: the gateway is open, which only a loopback bind allows).
#[derive(Debug, Clone, Default)]
pub struct InboundKeys(Vec<Secret>);

/// The shortest inbound key taken: a key is registered with the secret scrubber, so a short or
/// common one (`decision`) would be scrubbed out of every answer that holds the word, and a short
/// key is a guessable one.
pub const MIN_KEY_CHARS: usize = 16;

/// Why a key list cannot be used. No variant holds a key's text.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeysError {
    /// An entry is empty or holds whitespace.
    #[error("inbound key #{0} is empty or holds whitespace")]
    Malformed(usize),
    /// An entry is shorter than [`MIN_KEY_CHARS`].
    #[error("inbound key #{0} is shorter than {MIN_KEY_CHARS} characters")]
    TooShort(usize),
    /// Keys were given (a variable set, a file named) but none is there: the gateway would be
    /// open to everyone, which is never what that means.
    #[error("{0} holds no key (a keys file takes one key per line, `#` for comments)")]
    NoKeys(&'static str),
}

/// Where keys come from: one rule for what each form holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeysSource {
    /// `GEODE_GATEWAY_KEYS`: keys separated by commas; no comments.
    Variable,
    /// `--keys-file`: one key per line; blank lines and lines starting with `#` are skipped.
    File,
}

impl InboundKeys {
    /// The keys `list` holds, read as `source` gives them. An entry that is empty, holds
    /// whitespace or is shorter than [`MIN_KEY_CHARS`] is refused by position, never echoed;
    /// a list that yields no key is refused.
    pub fn parse(list: &str, source: KeysSource) -> Result<Self, KeysError> {
        let entries: Vec<&str> = match source {
            KeysSource::Variable => list.split(',').map(str::trim).collect(),
            KeysSource::File => list
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .collect(),
        };
        let mut keys = Vec::with_capacity(entries.len());
        for (i, key) in entries.into_iter().enumerate() {
            if key.is_empty() || key.chars().any(char::is_whitespace) {
                return Err(KeysError::Malformed(i + 1));
            }
            if key.chars().count() < MIN_KEY_CHARS {
                return Err(KeysError::TooShort(i + 1));
            }
            keys.push(Secret::new(key));
        }
        if keys.is_empty() {
            return Err(KeysError::NoKeys(match source {
                KeysSource::Variable => "GEODE_GATEWAY_KEYS",
                KeysSource::File => "the keys file",
            }));
        }
        Ok(Self(keys))
    }

    /// Whether no key is required.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether an `Authorization` header value admits the client.
    pub fn admits(&self, authorization: Option<&[u8]>) -> bool {
        self.admit(authorization).is_some()
    }

    /// Who the client is, if an `Authorization` header value admits it.
    pub fn admit(&self, authorization: Option<&[u8]>) -> Option<Tenant> {
        if self.0.is_empty() {
            return Some(Tenant(None));
        }
        let presented = authorization.and_then(bearer_token)?;
        // Every key is compared, so the time does not say which one (or whether any) matched.
        let hit = self.0.iter().fold(false, |hit, key| {
            hit | bool::from(key.expose().as_bytes().ct_eq(presented))
        });
        hit.then(|| Tenant(Some(geode::digest::sha256_hex(presented))))
    }
}

/// The client a request came from, for what must not cross between clients (the response
/// cache's entries): the SHA-256 of its key, never the key; `None` on an open gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant(pub Option<String>);

/// The token of `Bearer TOKEN`: the scheme in any case and one or more spaces or tabs after it
/// (RFC 9110, section 11.1: an auth-scheme is case-insensitive).
fn bearer_token(header: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = header.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case(b"bearer") || !matches!(rest.first(), Some(b' ' | b'\t')) {
        return None;
    }
    let start = rest.iter().position(|b| !matches!(b, b' ' | b'\t'))?;
    Some(&rest[start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = "k-one-0123456789ab";
    const TWO: &str = "k-two-0123456789ab";

    #[test]
    fn a_listed_key_is_admitted_and_anything_else_is_not() {
        let keys = InboundKeys::parse(&format!("{ONE}, {TWO}"), KeysSource::Variable).unwrap();
        assert!(keys.admits(Some(format!("Bearer {TWO}").as_bytes())));
        assert!(!keys.admits(Some(b"Bearer k-three-0123456789ab")));
        assert!(
            !keys.admits(Some(ONE.as_bytes())),
            "the Bearer scheme is required"
        );
        assert!(
            !keys.admits(Some(format!("Bearer {}", &ONE[..ONE.len() - 1]).as_bytes())),
            "a prefix is not the key"
        );
        assert!(!keys.admits(None));
        assert!(InboundKeys::default().admits(None), "no keys: open");
        assert!(!format!("{keys:?}").contains("k-one"), "{keys:?}");
    }

    /// RFC 9110: the scheme is case-insensitive, and one or more spaces may follow it.
    #[test]
    fn the_bearer_scheme_is_read_as_http_says() {
        let keys = InboundKeys::parse(ONE, KeysSource::Variable).unwrap();
        for header in [
            format!("Bearer {ONE}"),
            format!("bearer {ONE}"),
            format!("BEARER  {ONE}"),
            format!("Bearer\t{ONE}"),
        ] {
            assert!(keys.admits(Some(header.as_bytes())), "{header:?}");
        }
        for header in [
            format!("Bearer{ONE}"),
            format!("Basic {ONE}"),
            "Bearer ".to_owned(),
        ] {
            assert!(!keys.admits(Some(header.as_bytes())), "{header:?}");
        }
    }

    /// Keys that were given but parse to none never open the gateway; a file's line is one key
    /// (a comma in it does not split it); a short key is refused; nothing is echoed.
    #[test]
    fn keys_given_but_unusable_are_refused_never_an_open_gateway() {
        use KeysSource::{File, Variable};
        for list in [",", "   ", "#prod-key"] {
            let e = InboundKeys::parse(list, Variable).unwrap_err();
            assert!(
                matches!(
                    e,
                    KeysError::Malformed(_) | KeysError::NoKeys(_) | KeysError::TooShort(_)
                ),
                "{list:?}: {e}"
            );
        }
        // `#` starts no comment in the variable: it is a key like any other.
        assert!(InboundKeys::parse(&format!("#{ONE}"), Variable).is_ok());
        for file in ["", "# only a comment\n\n", "\n"] {
            assert_eq!(
                InboundKeys::parse(file, File).unwrap_err(),
                KeysError::NoKeys("the keys file"),
                "{file:?}"
            );
        }
        let keys = InboundKeys::parse(&format!("# team\n{ONE},x\n"), File).unwrap();
        assert!(
            !keys.admits(Some(b"Bearer x")),
            "the comma does not split a line"
        );
        assert!(keys.admits(Some(format!("Bearer {ONE},x").as_bytes())));
        let e = InboundKeys::parse("decision", Variable).unwrap_err();
        assert_eq!(e, KeysError::TooShort(1));
        assert!(!e.to_string().contains("decision"), "{e}");
        assert_eq!(
            InboundKeys::parse(&format!("{ONE}, b c"), Variable).unwrap_err(),
            KeysError::Malformed(2)
        );
    }
}
