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
//! | `geode serve` stops gracefully | on stop it reads no new task and finishes what it holds |

mod collect;
mod serve;

pub use collect::{CollectOptions, collect};
pub use serve::serve;

use redis::aio::ConnectionManager;
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
    /// Redis failed in a way retrying does not fix, or the run was stopped while connecting.
    #[error("redis: {0}")]
    Redis(String),
    /// The results file failed.
    #[error(transparent)]
    Output(#[from] crate::batch::output::OutputError),
}

impl QueueUrl {
    /// Parses `redis://HOST:PORT/NAME` (NAME: letters, digits, `-`, `_`, `.`).
    pub fn parse(url: &str) -> Result<Self, QueueError> {
        let bad = |why| QueueError::BadUrl {
            url: url.to_owned(),
            why,
        };
        let rest = url
            .strip_prefix("redis://")
            .ok_or_else(|| bad("not redis://"))?;
        let (host, name) = rest.split_once('/').ok_or_else(|| bad("no queue name"))?;
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let name_ok = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !name_ok {
            return Err(bad("the name must be letters, digits, '-', '_' or '.'"));
        }
        Ok(Self {
            server: format!("redis://{host}"),
            name: name.to_owned(),
        })
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

/// Connects, retrying with backoff (up to 5 s between tries) until it works or `stop` fires.
pub(crate) async fn connect(
    url: &QueueUrl,
    stop: &CancellationToken,
) -> Result<ConnectionManager, QueueError> {
    let client =
        redis::Client::open(url.server.as_str()).map_err(|e| QueueError::Redis(e.to_string()))?;
    let mut backoff = Backoff::new();
    loop {
        match ConnectionManager::new(client.clone()).await {
            Ok(c) => return Ok(c),
            Err(e) => {
                tracing::warn!("redis {}: {e}; retrying", url.server);
                if !backoff.sleep(stop).await {
                    return Err(QueueError::Redis(format!("stopped while connecting: {e}")));
                }
            }
        }
    }
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
        ] {
            let e = QueueUrl::parse(bad).unwrap_err();
            assert!(
                e.to_string().contains("expected redis://HOST:PORT/NAME"),
                "{e}"
            );
        }
    }
}
