//! Many machines on one batch, through Redis Streams (the `redis` crate; feature `queue`).
//!
//! A queue `redis://HOST:PORT/NAME` is four keys under `geode:NAME:`:
//!
//! | key | what it holds |
//! |---|---|
//! | `tasks` | a stream of tasks (`task_id`, `request` = a WorkerRequest as JSON), read by the consumer group `workers` |
//! | `results` | a stream of results (`task_id`, `result` = a WorkerResult as JSON) |
//! | `dead` | the dead-letter stream: tasks delivered [`QueueOptions::max_deliveries`] times without a result (`task_id`, `request`, `error`) |
//! | `epoch` | set by the collector when it enqueues; gone after Redis lost its data (a restart without persistence), which makes it enqueue again |
//!
//! What is promised, at least once, one result per task id:
//!
//! | promise | how |
//! |---|---|
//! | a task is acknowledged only after its result is written | one `MULTI`: `XADD results` then `XACK tasks` ([`serve`]) |
//! | a worker that dies mid-task loses nothing | its entries stay pending; live workers take them with `XAUTOCLAIM` once idle past the lease, which a worker renews (`XCLAIM ... JUSTID`) while a long task runs |
//! | a task that keeps killing its worker ends | past `max_deliveries` it moves to `dead` with its last known error, and the collector records it as a failed result |
//! | a task finished twice reports once | the collector's [`crate::batch::output::ResultLog`] keeps the first result per id |
//! | Redis restarts or the network drops | commands go through a reconnecting `ConnectionManager`; workers and the collector retry with backoff, the group is re-created, and the collector re-enqueues what is not done when the `epoch` is gone |
//! | `geode serve` stops gracefully | on stop it reads no new task and finishes what it holds; a stop while Redis is unreachable ends the wait at once |
//! | errors retrying cannot fix end the run | a refused password ([`QueueError::Auth`]) or a queue key that is not a stream ([`QueueError::WrongType`]) is returned, not retried forever |
//! | a password in the URL stays secret | it is registered with the scrubber, and URLs in errors and logs show `***@` in its place ([`QueueUrl::redacted_server`]) |

mod collect;
mod serve;

pub use collect::{CollectOptions, collect};
pub use serve::serve;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The consumer group of the workers.
pub const GROUP: &str = "workers";

/// A parsed `redis://HOST:PORT/NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueUrl {
    /// `redis://HOST:PORT` (the server).
    pub server: String,
    /// The queue's name.
    pub name: String,
}

/// Why a queue cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// The URL is not `redis://HOST:PORT/NAME`.
    #[error("bad queue URL {url:?}: {why} (expected redis://HOST:PORT/NAME)")]
    BadUrl {
        /// The URL given.
        url: String,
        /// What is wrong.
        why: &'static str,
    },
    /// Redis failed in a way retrying does not fix.
    #[error("redis: {0}")]
    Redis(String),
    /// The server refused the credentials (a wrong or missing password, a user without the
    /// permission): retrying cannot fix it.
    #[error("redis at {server} refused the credentials: {message}")]
    Auth {
        /// The server, its password shown as `***`.
        server: String,
        /// What Redis said.
        message: String,
    },
    /// A key of the queue holds something other than a stream (something else wrote it):
    /// retrying cannot fix it.
    #[error(
        "redis: a key of queue {queue:?} is not a stream ({message}); delete the geode:{queue}:* keys or use another queue name"
    )]
    WrongType {
        /// The queue's name.
        queue: String,
        /// What Redis said.
        message: String,
    },
    /// The run was stopped (SIGTERM, Ctrl-C) before a connection was made.
    #[error("stopped before a connection to redis was made")]
    Stopped,
    /// The results file failed.
    #[error(transparent)]
    Output(#[from] crate::batch::output::OutputError),
}

impl QueueUrl {
    /// Parses `redis://[USER:PASSWORD@]HOST:PORT/NAME` (NAME: ASCII letters, digits, `-`, `_`,
    /// `.`). A password is registered with the scrubber
    /// ([`crate::secret::register`]), and errors show the URL with `***` in its place.
    pub fn parse(url: &str) -> Result<Self, QueueError> {
        let bad = |why| QueueError::BadUrl {
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
    /// use geode::batch::queue::QueueUrl;
    /// let url = QueueUrl::parse("redis://127.0.0.1:6379/jobs").unwrap().with_password("p@ss/1");
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

/// How workers share a queue.
#[derive(Debug, Clone)]
pub struct QueueOptions {
    /// Tasks one worker runs at once.
    pub concurrency: usize,
    /// How long a task may go without its worker's renewal before another worker takes it.
    pub lease: Duration,
    /// Deliveries after which a task goes to the dead-letter stream.
    pub max_deliveries: u64,
    /// Stops the worker: no new task is read, the ones held are finished.
    pub stop: CancellationToken,
}

impl Default for QueueOptions {
    fn default() -> Self {
        Self {
            concurrency: 4,
            lease: Duration::from_secs(30),
            max_deliveries: 3,
            stop: CancellationToken::new(),
        }
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
/// could not end it): grow by 2 up to 2 s, and give each TCP connect 5 s.
pub(crate) fn manager_config() -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_factor(2)
        .set_max_delay(2000)
        .set_number_of_retries(3)
        .set_connection_timeout(Duration::from_secs(5))
}

/// Connects, retrying with backoff (up to 5 s between tries) until it works, `stop` fires
/// ([`QueueError::Stopped`], at once) or Redis refuses in a way retrying cannot fix.
pub(crate) async fn connect(
    url: &QueueUrl,
    stop: &CancellationToken,
) -> Result<ConnectionManager, QueueError> {
    let client = redis::Client::open(url.server.as_str())
        .map_err(|e| QueueError::Redis(crate::secret::scrub(&e.to_string())))?;
    let mut backoff = Backoff::new();
    loop {
        let attempt = tokio::select! {
            _ = stop.cancelled() => return Err(QueueError::Stopped),
            r = ConnectionManager::new_with_config(client.clone(), manager_config()) => r,
        };
        match attempt {
            Ok(c) => return Ok(c),
            Err(e) => {
                if let Some(fatal) = refusal(url, &e) {
                    return Err(fatal);
                }
                tracing::warn!(
                    "cannot reach redis at {}: {e}; retrying",
                    url.redacted_server()
                );
                if !backoff.sleep(stop).await {
                    return Err(QueueError::Stopped);
                }
            }
        }
    }
}

/// The Redis errors retrying cannot fix, as a typed error; `None` for the ones worth retrying
/// (a dropped connection, a restart, a server still loading).
pub(crate) fn refusal(url: &QueueUrl, e: &redis::RedisError) -> Option<QueueError> {
    let message = || crate::secret::scrub(&e.to_string());
    if e.kind() == redis::ErrorKind::AuthenticationFailed
        || matches!(e.code(), Some("NOAUTH" | "WRONGPASS" | "NOPERM"))
    {
        return Some(QueueError::Auth {
            server: url.redacted_server(),
            message: message(),
        });
    }
    if e.code() == Some("WRONGTYPE") {
        return Some(QueueError::WrongType {
            queue: url.name.clone(),
            message: message(),
        });
    }
    None
}

/// Creates the consumer group (and the stream) unless it exists.
pub(crate) async fn ensure_group(
    conn: &mut ConnectionManager,
    url: &QueueUrl,
) -> redis::RedisResult<()> {
    let r: redis::RedisResult<()> = redis::cmd("XGROUP")
        .arg("CREATE")
        .arg(url.key("tasks"))
        .arg(GROUP)
        .arg("0")
        .arg("MKSTREAM")
        .query_async(conn)
        .await;
    match r {
        Err(e) if e.code() == Some("BUSYGROUP") => Ok(()),
        other => other,
    }
}

/// Exponential backoff from 100 ms to 5 s, cut short by a stop.
pub(crate) struct Backoff {
    next: Duration,
}

impl Backoff {
    pub(crate) fn new() -> Self {
        Self {
            next: Duration::from_millis(100),
        }
    }

    /// Sleeps the next delay; `false` when stopped first.
    pub(crate) async fn sleep(&mut self, stop: &CancellationToken) -> bool {
        let d = self.next;
        self.next = (self.next * 2).min(Duration::from_secs(5));
        tokio::select! {
            _ = stop.cancelled() => false,
            _ = tokio::time::sleep(d) => true,
        }
    }

    pub(crate) fn reset(&mut self) {
        self.next = Duration::from_millis(100);
    }
}

/// A string field of a stream entry.
pub(crate) fn field(
    map: &std::collections::HashMap<String, redis::Value>,
    key: &str,
) -> Option<String> {
    match map.get(key)? {
        redis::Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        redis::Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_the_server_and_the_queue() {
        let u = QueueUrl::parse("redis://127.0.0.1:6390/tickets-1").unwrap();
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
            let e = QueueUrl::parse(bad).unwrap_err();
            assert!(
                e.to_string().contains("expected redis://HOST:PORT/NAME"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_password_is_kept_for_the_connection_and_hidden_everywhere_else() {
        let u = QueueUrl::parse("redis://:pa/ss-word-42@127.0.0.1:6390/q").unwrap();
        assert_eq!(u.server, "redis://:pa/ss-word-42@127.0.0.1:6390");
        assert_eq!(u.name, "q");
        assert_eq!(u.redacted_server(), "redis://***@127.0.0.1:6390");
        let e = QueueUrl::parse("redis://user:pa/ss-word-42@h:1/bad name").unwrap_err();
        assert!(!e.to_string().contains("ss-word"), "{e}");
        assert_eq!(crate::secret::scrub("x pa/ss-word-42 y"), "x *** y");
    }
}
