//! `geode serve`: one worker on a queue (see the table in [`super`]).

use super::leases::Leases;
use super::{
    BATCH_FIELD, Backoff, GROUP, QueueError, QueueOptions, connect, ensure_group, field, refusal,
};
use crate::batch::Prepare;
use crate::protocol::{WorkerRequest, WorkerResult, parse_request_line, run_worker};
use crate::redis::RedisUrl;
use redis::aio::ConnectionManager;
use redis::streams::{StreamAutoClaimReply, StreamId, StreamPendingCountReply, StreamReadReply};
use std::sync::Arc;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Serves tasks from `url` until `options.stop` fires, then finishes what it holds. Returns
/// how many results this worker wrote.
pub async fn serve(
    url: &RedisUrl,
    options: QueueOptions,
    prepare: Arc<Prepare>,
) -> Result<u64, QueueError> {
    let stop = options.stop.clone();
    let mut conn = match connect(url, &stop).await {
        // Stopped before holding anything: a graceful stop like any other.
        Err(QueueError::Stopped) => return Ok(0),
        other => other?,
    };
    let me = format!(
        "{}-{}",
        std::env::var("HOSTNAME").unwrap_or_else(|_| "worker".to_owned()),
        std::process::id()
    );
    // Renewed on a thread of its own, whatever the tasks do to this runtime.
    let leases = Arc::new(Leases::start(url, &me, options.lease));
    let permits = Arc::new(Semaphore::new(options.concurrency.max(1)));
    let mut running: JoinSet<bool> = JoinSet::new();
    let mut written = 0;
    let mut backoff = Backoff::new();
    let mut last_reclaim = tokio::time::Instant::now() - options.lease;
    while !stop.is_cancelled() {
        while let Some(done) = running.try_join_next() {
            written += u64::from(done.unwrap_or(false));
        }
        let free = permits.available_permits();
        if free == 0 {
            tokio::select! {
                _ = stop.cancelled() => break,
                Some(done) = running.join_next() => written += u64::from(done.unwrap_or(false)),
            }
            continue;
        }
        let round = async {
            ensure_group(&mut conn, url).await?;
            let mut entries = Vec::new();
            if last_reclaim.elapsed() >= options.lease / 2 {
                last_reclaim = tokio::time::Instant::now();
                dead_letter(&mut conn, url, &options).await?;
                entries.extend(reclaim(&mut conn, url, &me, &options, free).await?);
            }
            if entries.is_empty() {
                entries.extend(read_new(&mut conn, url, &me, free).await?);
            }
            Ok::<_, redis::RedisError>(entries)
        };
        let entries = tokio::select! {
            _ = stop.cancelled() => break,
            r = round => r,
        };
        match entries {
            Ok(entries) => {
                backoff.reset();
                for entry in entries {
                    let Ok(permit) = permits.clone().try_acquire_owned() else {
                        break;
                    };
                    let (conn, url, prepare, leases, stop) = (
                        conn.clone(),
                        url.clone(),
                        prepare.clone(),
                        leases.clone(),
                        stop.clone(),
                    );
                    running.spawn(async move {
                        let _permit = permit;
                        run_entry(conn, &url, entry, prepare, &leases, &stop).await
                    });
                }
            }
            Err(e) => {
                if let Some(fatal) = refusal(url, &e) {
                    return Err(fatal);
                }
                tracing::warn!("redis: {e}; retrying");
                if !backoff.sleep(&stop).await {
                    break;
                }
            }
        }
    }
    while let Some(done) = running.join_next().await {
        written += u64::from(done.unwrap_or(false));
    }
    Ok(written)
}

/// Reads up to `count` new tasks for this consumer, waiting at most a second.
async fn read_new(
    conn: &mut ConnectionManager,
    url: &RedisUrl,
    me: &str,
    count: usize,
) -> redis::RedisResult<Vec<StreamId>> {
    let reply: Option<StreamReadReply> = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg(GROUP)
        .arg(me)
        .arg("COUNT")
        .arg(count)
        .arg("BLOCK")
        .arg(1000)
        .arg("STREAMS")
        .arg(url.key("tasks"))
        .arg(">")
        .query_async(conn)
        .await?;
    Ok(reply
        .map(|r| r.keys.into_iter().flat_map(|k| k.ids).collect())
        .unwrap_or_default())
}

/// Takes over tasks idle past the lease (their worker died).
async fn reclaim(
    conn: &mut ConnectionManager,
    url: &RedisUrl,
    me: &str,
    options: &QueueOptions,
    count: usize,
) -> redis::RedisResult<Vec<StreamId>> {
    let reply: StreamAutoClaimReply = redis::cmd("XAUTOCLAIM")
        .arg(url.key("tasks"))
        .arg(GROUP)
        .arg(me)
        .arg(options.lease.as_millis() as u64)
        .arg("0-0")
        .arg("COUNT")
        .arg(count)
        .query_async(conn)
        .await?;
    if !reply.claimed.is_empty() {
        tracing::info!(
            count = reply.claimed.len(),
            "reclaimed tasks past their lease"
        );
    }
    Ok(reply.claimed)
}

/// Moves tasks delivered `max_deliveries` times (and idle past the lease again) to the
/// dead-letter stream.
async fn dead_letter(
    conn: &mut ConnectionManager,
    url: &RedisUrl,
    options: &QueueOptions,
) -> redis::RedisResult<()> {
    let pending: StreamPendingCountReply = redis::cmd("XPENDING")
        .arg(url.key("tasks"))
        .arg(GROUP)
        .arg("IDLE")
        .arg(options.lease.as_millis() as u64)
        .arg("-")
        .arg("+")
        .arg(100)
        .query_async(conn)
        .await?;
    for p in pending
        .ids
        .into_iter()
        .filter(|p| p.times_delivered as u64 >= options.max_deliveries)
    {
        let entries: redis::streams::StreamRangeReply = redis::cmd("XRANGE")
            .arg(url.key("tasks"))
            .arg(&p.id)
            .arg(&p.id)
            .query_async(conn)
            .await?;
        let entry = entries.ids.into_iter().next();
        let task_id = entry
            .as_ref()
            .and_then(|e| field(&e.map, "task_id"))
            .unwrap_or_default();
        let request = entry
            .as_ref()
            .and_then(|e| field(&e.map, "request"))
            .unwrap_or_default();
        let batch = entry
            .as_ref()
            .and_then(|e| field(&e.map, BATCH_FIELD))
            .unwrap_or_default();
        let error = format!(
            "delivered {} times without a result (its workers were lost; the last was {})",
            p.times_delivered, p.consumer
        );
        tracing::warn!(task = ?task_id, "dead-lettered: {error}");
        redis::pipe()
            .atomic()
            .cmd("XADD")
            .arg(url.key("dead"))
            .arg("*")
            .arg("task_id")
            .arg(&task_id)
            .arg("request")
            .arg(&request)
            .arg("error")
            .arg(&error)
            .arg(BATCH_FIELD)
            .arg(&batch)
            .ignore()
            .cmd("XACK")
            .arg(url.key("tasks"))
            .arg(GROUP)
            .arg(&p.id)
            .ignore()
            .query_async::<()>(conn)
            .await?;
    }
    Ok(())
}

/// Runs one task entry and writes its result with the acknowledgement; its lease is renewed
/// while it runs ([`Leases`]). Returns whether a result was written.
async fn run_entry(
    mut conn: ConnectionManager,
    url: &RedisUrl,
    entry: StreamId,
    prepare: Arc<Prepare>,
    leases: &Leases,
    stop: &CancellationToken,
) -> bool {
    // Anything may be written into the stream by hand: an entry without a task id cannot be
    // answered to anyone, so it goes to the dead-letter stream (once, with a log line).
    let Some(task_id) = field(&entry.map, "task_id").filter(|id| !id.is_empty()) else {
        let error = "not a geode task: no task_id field (written into the stream by hand?)";
        tracing::warn!(entry = %entry.id, "{error}; moved to the dead-letter stream");
        return dead_letter_entry(&mut conn, url, &entry.id, error, stop).await;
    };
    let request = field(&entry.map, "request");
    let batch = field(&entry.map, BATCH_FIELD).unwrap_or_default();
    let work = async {
        let parsed = match &request {
            Some(text) => parse_request_line(text).map_err(|e| e.to_string()),
            None => Err("no request field, or one that is not UTF-8".to_owned()),
        };
        match parsed {
            Ok(req) => run_one(req, &prepare).await,
            Err(e) => {
                tracing::warn!(task = ?task_id, entry = %entry.id, "bad task in the queue: {e}; answered as failed");
                WorkerResult::failed(&task_id, format!("bad task in the queue: {e}"))
            }
        }
    };
    leases.hold(&entry.id);
    let result = work.await;
    leases.release(&entry.id);
    write_result(&mut conn, url, &entry.id, &batch, &result, stop).await
}

/// Moves one entry to the dead-letter stream with `error` and acknowledges it, retried like
/// [`write_result`]. Returns `false`: no result was written.
async fn dead_letter_entry(
    conn: &mut ConnectionManager,
    url: &RedisUrl,
    entry_id: &str,
    error: &str,
    stop: &CancellationToken,
) -> bool {
    let fields = [("entry", entry_id), ("error", error)];
    if !add_and_ack(conn, url, "dead", &fields, entry_id, stop).await {
        tracing::warn!(entry = %entry_id, "gave up dead-lettering the entry");
    }
    false
}

/// `XADD part FIELDS` and `XACK tasks ENTRY` in one transaction, retried with backoff (at most
/// about a minute) while Redis is away; `true` once done. Once the worker is stopping, a failed
/// try is the last: a SIGTERM is never held up by a Redis that is down (the entry stays
/// pending, and another worker runs it again after the lease).
/// The longest one write of a result may wait for Redis.
const WRITE_TRY: std::time::Duration = std::time::Duration::from_secs(10);

async fn add_and_ack(
    conn: &mut ConnectionManager,
    url: &RedisUrl,
    part: &str,
    fields: &[(&str, &str)],
    entry_id: &str,
    stop: &CancellationToken,
) -> bool {
    let mut backoff = Backoff::new();
    for _ in 0..20 {
        let mut pipe = redis::pipe();
        let add = pipe.atomic().cmd("XADD").arg(url.key(part)).arg("*");
        for (name, value) in fields {
            add.arg(*name).arg(*value);
        }
        let query = add
            .ignore()
            .cmd("XACK")
            .arg(url.key("tasks"))
            .arg(GROUP)
            .arg(entry_id)
            .ignore()
            .query_async::<()>(conn);
        // A frozen Redis answers nothing: each try is bounded.
        let r = match tokio::time::timeout(WRITE_TRY, query).await {
            Ok(r) => r,
            Err(_) => Err(redis::RedisError::from((
                redis::ErrorKind::IoError,
                "no answer from redis",
            ))),
        };
        match r {
            Ok(()) => return true,
            Err(e) => {
                tracing::warn!(entry = %entry_id, stream = part, "cannot write to redis yet: {e}");
                if !backoff.sleep(stop).await {
                    tracing::warn!(entry = %entry_id, stream = part, "stopping while redis is unreachable: not written; the entry stays pending for another worker");
                    return false;
                }
            }
        }
    }
    false
}

async fn run_one(req: WorkerRequest, prepare: &Arc<Prepare>) -> WorkerResult {
    let task_id = req.task_id.clone();
    match prepare(req) {
        Ok((req, env)) => run_worker(&req, &env).await,
        Err(why) => WorkerResult::failed(&task_id, why.to_string()),
    }
}

/// The result into the results stream, acknowledging its entry ([`add_and_ack`]).
async fn write_result(
    conn: &mut ConnectionManager,
    url: &RedisUrl,
    entry_id: &str,
    batch: &str,
    result: &WorkerResult,
    stop: &CancellationToken,
) -> bool {
    let Ok(json) = serde_json::to_string(result) else {
        return false;
    };
    let fields = [
        ("task_id", result.task_id.as_str()),
        ("result", json.as_str()),
        (BATCH_FIELD, batch),
    ];
    add_and_ack(conn, url, "results", &fields, entry_id, stop).await
}
