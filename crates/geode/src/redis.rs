//! The Redis connection both the queue ([`crate::batch::queue`]) and the shared response cache
//! ([`crate::cache`]) use: the URL, its password, how the connection manager reconnects, and the
//! errors retrying cannot fix. Feature `redis`.
//!
//! | promise | how |
//! |---|---|
//! | a password in the URL stays secret | it is registered with the scrubber ([`crate::secret::register`]), and URLs in errors and logs show `***@` in its place ([`RedisUrl::redacted_server`]) |
//! | a password can stay off the command line | [`RedisUrl::with_password`] adds one from the environment (`GEODE_QUEUE_PASSWORD`), registered the same way |
//! | a Redis that is down costs seconds, not minutes | the connection manager grows its reconnection delay by 2 up to 2 s, and each TCP connect is bounded ([`manager_config`]) |
//! | a refused password is not retried forever | [`auth_refusal`] names it as [`RedisError::Auth`] |

use ::redis::aio::ConnectionManagerConfig;
use std::time::Duration;

/// A parsed `redis://[USER:PASSWORD@]HOST:PORT/NAME`: the server to connect to and the name
/// its user (a queue, a cache) keeps its keys under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisUrl {
    /// `redis://HOST:PORT` (the server).
    pub server: String,
    /// The name the keys are kept under.
    pub name: String,
}

/// Why a Redis URL cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RedisError {
    /// The URL is not `redis://HOST:PORT/NAME`.
    #[error("bad queue URL {url:?}: {why} (expected redis://HOST:PORT/NAME)")]
    BadUrl {
        /// The URL given, its password shown as `***`.
        url: String,
        /// What is wrong.
        why: &'static str,
    },
    /// The server refused the credentials (a wrong or missing password, a user without the
    /// permission): retrying cannot fix it.
    #[error("redis at {server} refused the credentials: {message}")]
    Auth {
        /// The server, its password shown as `***`.
        server: String,
        /// What Redis said.
        message: String,
    },
}

impl RedisUrl {
    /// Parses `redis://[USER:PASSWORD@]HOST:PORT/NAME` (NAME: ASCII letters, digits, `-`, `_`,
    /// `.`). A password is registered with the scrubber
    /// ([`crate::secret::register`]), and errors show the URL with `***` in its place.
    pub fn parse(url: &str) -> Result<Self, RedisError> {
        let bad = |why| RedisError::BadUrl {
            url: redact(url),
            why,
        };
        let rest = url
            .strip_prefix("redis://")
            .ok_or_else(|| bad("not redis://"))?;
        // The name cannot hold '@', so the last '@' ends the credentials (a password may hold '/').
        let host_from = rest.rfind('@').map_or(0, |at| at + 1);
        if host_from > 0 {
            let userinfo = &rest[..host_from - 1];
            crate::secret::register(userinfo.split_once(':').map_or(userinfo, |(_, p)| p));
        }
        let slash = rest[host_from..]
            .find('/')
            .ok_or_else(|| bad("no queue name"))?;
        let (host, name) = (&rest[..host_from + slash], &rest[host_from + slash + 1..]);
        if host.len() == host_from {
            return Err(bad("no host"));
        }
        let name_ok = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !name_ok {
            return Err(bad(
                "the name must be ASCII letters, digits, '-', '_' or '.' (no spaces, ':', '*' or other characters)",
            ));
        }
        Ok(Self {
            server: format!("redis://{host}"),
            name: name.to_owned(),
        })
    }

    /// The URL with `password` as its Redis password, when the URL gives none (a password in
    /// the URL wins): how `GEODE_QUEUE_PASSWORD` keeps it out of the command line (`ps`, shell
    /// history). Registered with the scrubber like one in the URL.
    ///
    /// ```
    /// use geode::redis::RedisUrl;
    /// let url = RedisUrl::parse("redis://127.0.0.1:6379/jobs").unwrap().with_password("p@ss/1");
    /// assert_eq!(url.server, "redis://:p%40ss%2F1@127.0.0.1:6379");
    /// assert_eq!(url.redacted_server(), "redis://***@127.0.0.1:6379");
    /// ```
    pub fn with_password(mut self, password: &str) -> Self {
        let Some(host) = self.server.strip_prefix("redis://") else {
            return self;
        };
        if password.is_empty() || host.contains('@') {
            return self;
        }
        crate::secret::register(password);
        let encoded: String = password
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        crate::secret::register(&encoded);
        self.server = format!("redis://:{encoded}@{host}");
        self
    }

    /// The server as `redis://HOST:PORT`, with any credentials shown as `***`: what errors and
    /// logs print.
    pub fn redacted_server(&self) -> String {
        redact(&self.server)
    }

    /// The key `geode:NAME:part`.
    pub fn key(&self, part: &str) -> String {
        format!("geode:{}:{part}", self.name)
    }
}

/// `url` with everything between `://` and the last `@` (the credentials) shown as `***`.
fn redact(url: &str) -> String {
    let start = url.find("://").map_or(0, |i| i + 3);
    match url.rfind('@') {
        Some(at) if at >= start => format!("{}***{}", &url[..start], &url[at..]),
        _ => url.to_owned(),
    }
}

/// How the connection manager reconnects. redis 0.32 hands `factor` to its backoff as the growth
/// per try from a 1 s start, so its default (100) made the second reconnection wait the 60 s
/// cap, six times over (a first connection to a Redis that is down took minutes, and a stop
/// could not end it): grow by 2 up to 2 s, and give each TCP connect 5 s. Public for the
/// gateway's response store, which connects the same way.
pub fn manager_config() -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_factor(2)
        .set_max_delay(2000)
        .set_number_of_retries(3)
        .set_connection_timeout(Duration::from_secs(5))
}

/// The refused credentials among Redis's errors, as [`RedisError::Auth`]; `None` for any other.
pub(crate) fn auth_refusal(url: &RedisUrl, e: &::redis::RedisError) -> Option<RedisError> {
    let refused = e.kind() == ::redis::ErrorKind::AuthenticationFailed
        || matches!(e.code(), Some("NOAUTH" | "WRONGPASS" | "NOPERM"));
    refused.then(|| RedisError::Auth {
        server: url.redacted_server(),
        message: crate::secret::scrub(&e.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_the_server_and_the_queue() {
        let u = RedisUrl::parse("redis://127.0.0.1:6390/tickets-1").unwrap();
        assert_eq!(u.server, "redis://127.0.0.1:6390");
        assert_eq!(u.key("tasks"), "geode:tickets-1:tasks");
        for bad in [
            "http://h:1/q",
            "redis://h:1",
            "redis:///q",
            "redis://h:1/",
            "redis://h:1/a b",
            "redis://h:1/ü",
            "redis://h:1/a:b",
        ] {
            let e = RedisUrl::parse(bad).unwrap_err();
            assert!(
                e.to_string().contains("expected redis://HOST:PORT/NAME"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_password_is_kept_for_the_connection_and_hidden_everywhere_else() {
        let u = RedisUrl::parse("redis://:pa/ss-word-42@127.0.0.1:6390/q").unwrap();
        assert_eq!(u.server, "redis://:pa/ss-word-42@127.0.0.1:6390");
        assert_eq!(u.name, "q");
        assert_eq!(u.redacted_server(), "redis://***@127.0.0.1:6390");
        let e = RedisUrl::parse("redis://user:pa/ss-word-42@h:1/bad name").unwrap_err();
        assert!(!e.to_string().contains("ss-word"), "{e}");
        assert_eq!(crate::secret::scrub("x pa/ss-word-42 y"), "x *** y");
    }
}
