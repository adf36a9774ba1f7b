//! `geode batch --queue`: enqueue the input's tasks and collect their results (see [`super`]).

use super::{BATCH_FIELD, Backoff, QueueError, connect, ensure_group, field, refusal};
use crate::batch::Summary;
use crate::batch::input::InputLine;
use crate::batch::output::ResultLog;
use crate::protocol::WorkerResult;
use crate::redis::RedisUrl;
use redis::aio::ConnectionManager;
use redis::streams::StreamReadReply;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

fn lock(s: &Mutex<Summary>) -> std::sync::MutexGuard<'_, Summary> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

/// How the collector runs.
#[derive(Debug, Clone, Default)]
pub struct CollectOptions {
    /// Stops collecting (what was collected is kept; the tasks stay queued).
    pub stop: CancellationToken,
}

/// Enqueues every task of `lines` not already in `log`, then appends each task's first result
/// (or its dead-letter entry, as a failed result) to `log` until every task has one.
pub async fn collect(
    url: &RedisUrl,
    lines: impl IntoIterator<Item = InputLine>,
    mut log: ResultLog,
    summary: Arc<Mutex<Summary>>,
    options: CollectOptions,
) -> Result<Summary, QueueError> {
    let started = tokio::time::Instant::now();
    lock(&summary).note_log(&log);
    let mut pending: HashMap<String, String> = HashMap::new();
    for line in lines {
        match line {
            InputLine::Bad(b) => lock(&summary).bad_lines.push(b),
            InputLine::Task { request, .. } if log.contains(&request.task_id) => {
                lock(&summary).skipped += 1;
            }
            InputLine::Task { request, .. } => {
                let json = serde_json::to_string(&request)
                    .map_err(|e| QueueError::Redis(format!("cannot serialise a task: {e}")))?;
                pending.insert(request.task_id.clone(), json);
            }
        }
    }
    lock(&summary).queued = pending.len() as u64;
    let stop = options.stop;
    let mut conn = match connect(url, &stop).await {
        // Stopped (Ctrl-C) before Redis answered: nothing collected, the caller says so.
        Err(QueueError::Stopped) => return Ok(lock(&summary).clone()),
        other => other?,
    };
    // This run's id: its tasks carry it, their results come back with it, and a result without
    // it (an earlier batch's answer for the same task id) is not this batch's.
    let epoch = crate::llm::adapters::uuid_v4();
    let mut cursors = ("0".to_owned(), "0".to_owned());
    let mut backoff = Backoff::new();
    let mut enqueued = false;
    while !pending.is_empty() && !stop.is_cancelled() {
        let round = async {
            let current: Option<String> = redis::cmd("GET")
                .arg(url.key("epoch"))
                .query_async(&mut conn)
                .await?;
            if !enqueued || current.is_none() {
                if enqueued {
                    tracing::warn!("the queue lost its data (a Redis restart?): enqueueing again");
                }
                enqueue(&mut conn, url, &pending, &epoch).await?;
                enqueued = true;
            }
            read(&mut conn, url, &cursors).await
        };
        let read = tokio::select! {
            _ = stop.cancelled() => break,
            r = round => r,
        };
        match read {
            Err(e) => {
                if let Some(fatal) = refusal(url, &e) {
                    return Err(fatal);
                }
                tracing::warn!("redis: {e}; retrying");
                if !backoff.sleep(&stop).await {
                    break;
                }
            }
            Ok(reply) => {
                backoff.reset();
                for stream in reply.keys {
                    let dead = stream.key == url.key("dead");
                    for entry in stream.ids {
                        if dead {
                            cursors.1.clone_from(&entry.id);
                        } else {
                            cursors.0.clone_from(&entry.id);
                        }
                        let Some(result) = entry_result(&entry.map, dead) else {
                            // Written by hand or damaged: no task to give it to. (A dead letter
                            // without a task id was logged by the worker that moved it.)
                            if dead {
                                continue;
                            }
                            tracing::warn!(
                                stream = %stream.key,
                                entry = %entry.id,
                                "skipped an entry that is not a geode result"
                            );
                            continue;
                        };
                        if field(&entry.map, BATCH_FIELD).as_deref() != Some(epoch.as_str()) {
                            // Another run's (an earlier batch on this queue, for the same ids).
                            continue;
                        }
                        if pending.remove(&result.task_id).is_some() && log.append(&result)? {
                            if dead {
                                lock(&summary).failed += 1;
                            } else {
                                lock(&summary).record(&result);
                            }
                        }
                    }
                }
            }
        }
    }
    let mut s = lock(&summary);
    s.wall_ms = started.elapsed().as_millis().try_into().unwrap_or(u64::MAX);
    Ok(s.clone())
}

/// Adds every pending task to the stream and marks the epoch.
async fn enqueue(
    conn: &mut ConnectionManager,
    url: &RedisUrl,
    pending: &HashMap<String, String>,
    epoch: &str,
) -> redis::RedisResult<()> {
    ensure_group(conn, url).await?;
    let tasks: Vec<(&String, &String)> = pending.iter().collect();
    for chunk in tasks.chunks(500) {
        let mut pipe = redis::pipe();
        for (id, request) in chunk {
            pipe.cmd("XADD")
                .arg(url.key("tasks"))
                .arg("*")
                .arg("task_id")
                .arg(id)
                .arg("request")
                .arg(request)
                .arg(BATCH_FIELD)
                .arg(epoch)
                .ignore();
        }
        pipe.query_async::<()>(conn).await?;
    }
    redis::cmd("SET")
        .arg(url.key("epoch"))
        .arg(epoch)
        .query_async::<()>(conn)
        .await
}

/// Reads new results and dead letters after the cursors, waiting at most a second.
async fn read(
    conn: &mut ConnectionManager,
    url: &RedisUrl,
    cursors: &(String, String),
) -> redis::RedisResult<StreamReadReply> {
    let reply: Option<StreamReadReply> = redis::cmd("XREAD")
        .arg("COUNT")
        .arg(1000)
        .arg("BLOCK")
        .arg(1000)
        .arg("STREAMS")
        .arg(url.key("results"))
        .arg(url.key("dead"))
        .arg(&cursors.0)
        .arg(&cursors.1)
        .query_async(conn)
        .await?;
    Ok(reply.unwrap_or_default())
}

/// The result an entry carries: a result, or a dead letter as a failed result.
fn entry_result(map: &HashMap<String, redis::Value>, dead: bool) -> Option<WorkerResult> {
    if dead {
        let task_id = field(map, "task_id")?;
        let error = field(map, "error").unwrap_or_default();
        Some(WorkerResult::failed(
            &task_id,
            format!("dead-lettered: {error}"),
        ))
    } else {
        serde_json::from_str(&field(map, "result")?).ok()
    }
}
