//! The seal on every stored entry: HMAC-SHA256 of its bytes under a key that is the user's, so
//! an entry's claim about its guarantee (`"require": "enforced"`, a validated ledger) is taken
//! only from a process that held the key when it wrote it. An entry shipped in a repository,
//! copied from another user or written into a shared Redis by someone without the key reads as
//! damaged: a miss, replaced by a fresh answer.
//!
//! | the key | from |
//! |---|---|
//! | `GEODE_CACHE_KEY` (at least 16 characters; its SHA-256 is the key) | the environment: what machines sharing one Redis cache set alike |
//! | `<config dir>/geode/cache.key` | made on first use (32 random bytes, hex, mode 0600); refused when others may read or write it |
//! | a key of this process alone | when neither can be had (no `HOME`): entries then serve only the process that wrote them |
//!
//! A sealed entry is one line `geode-seal-v1 <64 hex digits>` and the entry's bytes after it.

use crate::llm::registry::{Environment, user_config_dir};
use ring::hmac;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The variable a fleet sets to share one key.
pub const KEY_ENV: &str = "GEODE_CACHE_KEY";

/// The shortest `GEODE_CACHE_KEY` taken.
pub const MIN_KEY_CHARS: usize = 16;

const MAGIC: &[u8] = b"geode-seal-v1 ";
const TAG_HEX: usize = 64;

/// The key that seals entries. Its bytes never leave it (no `Debug` of them).
#[derive(Clone)]
pub struct SealKey(hmac::Key);

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealKey(***)")
    }
}

/// Why the user's key cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// `GEODE_CACHE_KEY` is too short to be a key.
    #[error("{KEY_ENV} is shorter than {MIN_KEY_CHARS} characters")]
    ShortVariable,
    /// The key file cannot be used.
    #[error("cache key {path}: {message}")]
    File {
        /// Its path.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl SealKey {
    /// The user's key (see the module's table).
    pub fn for_user(env: &dyn Environment) -> Result<Self, SealError> {
        if let Some(text) = env.var(KEY_ENV) {
            if text.chars().count() < MIN_KEY_CHARS {
                return Err(SealError::ShortVariable);
            }
            crate::secret::register(&text);
            return Ok(Self::from_bytes(
                ring::digest::digest(&ring::digest::SHA256, text.as_bytes()).as_ref(),
            ));
        }
        match user_config_dir(env) {
            Some(dir) => {
                key_file(&dir.join("geode").join("cache.key")).map(|b| Self::from_bytes(&b))
            }
            None => Ok(Self::ephemeral()),
        }
    }

    /// A key of this process alone.
    pub fn ephemeral() -> Self {
        Self::from_bytes(&random_bytes())
    }

    fn from_bytes(bytes: &[u8]) -> Self {
        Self(hmac::Key::new(hmac::HMAC_SHA256, bytes))
    }

    /// `body` sealed: the seal line, then `body`.
    pub fn seal(&self, body: &[u8]) -> Vec<u8> {
        let tag = hmac::sign(&self.0, body);
        let mut out = Vec::with_capacity(MAGIC.len() + TAG_HEX + 1 + body.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(hex(tag.as_ref()).as_bytes());
        out.push(b'\n');
        out.extend_from_slice(body);
        out
    }

    /// The body of `sealed` when this key sealed it (compared in constant time).
    pub fn open<'a>(&self, sealed: &'a [u8]) -> Option<&'a [u8]> {
        let (tag, body) = split(sealed)?;
        let tag = unhex(tag)?;
        hmac::verify(&self.0, body, &tag).ok().map(|()| body)
    }
}

/// The body of `sealed` without checking its seal (to count entries); `None` when it has no
/// seal line.
pub fn body(sealed: &[u8]) -> Option<&[u8]> {
    split(sealed).map(|(_, b)| b)
}

fn split(sealed: &[u8]) -> Option<(&[u8], &[u8])> {
    let rest = sealed.strip_prefix(MAGIC)?;
    let (tag, rest) = rest.split_at_checked(TAG_HEX)?;
    let body = rest.strip_prefix(b"\n")?;
    Some((tag, body))
}

/// The key in `path`, made when absent: 32 random bytes, hex, readable by its owner alone.
fn key_file(path: &Path) -> Result<Vec<u8>, SealError> {
    let fail = |message: String| SealError::File {
        path: path.to_path_buf(),
        message,
    };
    match std::fs::symlink_metadata(path) {
        Ok(meta) => {
            use std::os::unix::fs::PermissionsExt;
            if !meta.is_file() {
                return Err(fail("not a regular file".to_owned()));
            }
            if meta.permissions().mode() & 0o077 != 0 {
                return Err(fail(
                    "others may read or write it, so it proves nothing (chmod 600 it)".to_owned(),
                ));
            }
            let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
            unhex(text.trim().as_bytes())
                .filter(|b| b.len() == 32)
                .ok_or_else(|| fail("not 64 hex digits".to_owned()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let bytes = random_bytes();
            let dir = path.parent().unwrap_or(Path::new("."));
            std::fs::create_dir_all(dir).map_err(|e| fail(e.to_string()))?;
            // Written whole beside it, then linked into place only if no other process made
            // it first: a reader never sees a half-written key.
            let made = tempfile::NamedTempFile::new_in(dir).and_then(|mut tmp| {
                use std::os::unix::fs::PermissionsExt;
                tmp.as_file()
                    .set_permissions(std::fs::Permissions::from_mode(0o600))?;
                writeln!(tmp, "{}", hex(&bytes))?;
                tmp.as_file().sync_all()?;
                tmp.persist_noclobber(path).map(drop).map_err(|e| e.error)
            });
            match made {
                Ok(()) => Ok(bytes),
                // Another process made it first: its key is the one.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => key_file(path),
                Err(e) => Err(fail(e.to_string())),
            }
        }
        Err(e) => Err(fail(e.to_string())),
    }
}

fn random_bytes() -> Vec<u8> {
    use ring::rand::SecureRandom;
    let mut bytes = vec![0u8; 32];
    // The system's generator; it fails only where no random source exists at all.
    if ring::rand::SystemRandom::new().fill(&mut bytes).is_err() {
        let fallback = crate::llm::adapters::uuid_v4() + &crate::llm::adapters::uuid_v4();
        bytes = ring::digest::digest(&ring::digest::SHA256, fallback.as_bytes())
            .as_ref()
            .to_vec();
    }
    bytes
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &[u8]) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_key_that_sealed_an_entry_opens_it() {
        let (mine, theirs) = (SealKey::ephemeral(), SealKey::ephemeral());
        let sealed = mine.seal(b"{\"require\":\"enforced\"}");
        assert_eq!(mine.open(&sealed), Some(&b"{\"require\":\"enforced\"}"[..]));
        assert_eq!(theirs.open(&sealed), None, "another user's key");
        let mut altered = sealed.clone();
        *altered.last_mut().unwrap() = b'!';
        assert_eq!(mine.open(&altered), None, "a changed body");
        assert_eq!(
            mine.open(b"{\"require\":\"enforced\"}"),
            None,
            "no seal at all"
        );
        assert_eq!(body(&sealed), Some(&b"{\"require\":\"enforced\"}"[..]));
    }

    #[test]
    fn the_key_file_is_made_once_private_and_refused_when_open_to_others() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("geode").join("cache.key");
        let first = key_file(&path).unwrap();
        assert_eq!(key_file(&path).unwrap(), first, "the same key next time");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(key_file(&path).is_err());
        assert!(!format!("{:?}", SealKey::ephemeral()).contains(&hex(&first)));
    }
}
