//! Many machines on one batch, through Redis Streams (the `redis` crate; feature `redis`).
//!
//! A queue `redis://HOST:PORT/NAME` is four keys under `geode:NAME:`:
//!
//! | key | what it holds |
//! |---|---|
//! | `tasks` | a stream of tasks (`task_id`, `request` = a WorkerRequest as JSON, `batch` = the id of the run that enqueued it), read by the consumer group `workers` |
//! | `results` | a stream of results (`task_id`, `result` = a WorkerResult as JSON, the task's `batch`) |
//! | `dead` | the dead-letter stream: tasks delivered [`QueueOptions::max_deliveries`] times without a result (`task_id`, `request`, `error`, the task's `batch`) |
//! | `epoch` | set by the collector when it enqueues; gone after Redis lost its data (a restart without persistence), which makes it enqueue again |
//!
//! What is promised, at least once, one result per task id:
//!
//! | promise | how |
//! |---|---|
//! | a task is acknowledged only after its result is written | one `MULTI`: `XADD results` then `XACK tasks` ([`serve`]) |
//! | a worker that dies mid-task loses nothing | its entries stay pending; live workers take them with `XAUTOCLAIM` once idle past the lease, which a worker renews (`XCLAIM ... JUSTID`) while a long task runs, from a thread of its own ([`leases`]) so that busy tasks cannot starve it |
//! | a task that keeps killing its worker ends | past `max_deliveries` it moves to `dead` with its last known error, and the collector records it as a failed result |
//! | a task finished twice reports once | the collector's [`crate::batch::output::ResultLog`] keeps the first result per id |
//! | a rerun on the same queue gets its own answers | each collector run has an id ([`BATCH_FIELD`]) its tasks carry into their results; it takes no other run's |
//! | Redis restarts or the network drops | commands go through a reconnecting `ConnectionManager`; workers and the collector retry with backoff, the group is re-created, and the collector re-enqueues what is not done when the `epoch` is gone |
//! | `geode serve` stops gracefully | on stop it reads no new task and finishes what it holds; a stop while Redis is unreachable ends the wait at once |
//! | errors retrying cannot fix end the run | a refused password ([`crate::redis::RedisError::Auth`]) or a queue key that is not a stream ([`QueueError::WrongType`]) is returned, not retried forever |
//! | a password in the URL stays secret | as everywhere Redis is used ([`crate::redis`]) |

mod collect;
mod leases;
mod serve;

pub use collect::{CollectOptions, collect};
pub use serve::serve;

use crate::redis::{RedisUrl, manager_config};
use redis::aio::ConnectionManager;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The field of a task entry, its result and its dead letter that names the batch run that
/// enqueued it: a collector takes only its own run's results, so a rerun on the same queue never
/// returns an earlier run's answers for the same task ids.
pub const BATCH_FIELD: &str = "batch";

/// The consumer group of the workers.
pub const GROUP: &str = "workers";

/// Why a queue cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// The URL does not parse, or the server refused the credentials.
    #[error(transparent)]
    Connection(#[from] crate::redis::RedisError),
    /// Redis failed in a way retrying does not fix.
    #[error("redis: {0}")]
    Redis(String),
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

/// Connects, retrying with backoff (up to 5 s between tries) until it works, `stop` fires
/// ([`QueueError::Stopped`], at once) or Redis refuses in a way retrying cannot fix.
pub(crate) async fn connect(
    url: &RedisUrl,
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
pub(crate) fn refusal(url: &RedisUrl, e: &redis::RedisError) -> Option<QueueError> {
    if let Some(auth) = crate::redis::auth_refusal(url, e) {
        return Some(auth.into());
    }
    (e.code() == Some("WRONGTYPE")).then(|| QueueError::WrongType {
        queue: url.name.clone(),
        message: crate::secret::scrub(&e.to_string()),
    })
}

/// Creates the consumer group (and the stream) unless it exists.
pub(crate) async fn ensure_group(
    conn: &mut ConnectionManager,
    url: &RedisUrl,
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
