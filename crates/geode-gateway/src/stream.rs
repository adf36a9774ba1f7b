//! `stream: true`: the run's progress as it happens, for both endpoints to write in their own
//! event shapes. Free text is relayed delta by delta as the adapter folds it. An answer with a
//! format is not: every client accumulates the deltas it gets into the answer, so the text it
//! gets must be the checked value, which is known only at the end (the first attempt may fail
//! and be retried, the repair tier may mend it, the model may wrap it in prose); it is sent as
//! the run ends ([`crate::convert::Reply::content`]). The one retry is announced either way; the
//! run's end carries the final validation and the ledger.
//!
//! The stream owns the run: when the client goes away the stream is dropped, which cancels the
//! run's token (the adapter's upstream call is abandoned and its connection closed) and frees
//! the request's slot.

use crate::error::ApiError;
use futures::Stream;
use geode::Client;
use geode::TextSink;
use geode::secret::StreamScrub;
use geode::{Answer, Task};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, mpsc};
use tokio_util::sync::CancellationToken;

/// One step of a streamed run.
#[derive(Debug)]
pub enum Progress {
    /// The answer began to arrive, and its text is held back (a format's): the run got past
    /// every refusal, so the stream can open.
    Started,
    /// Answer text as it arrived.
    Delta(String),
    /// The first answer failed its check; the retry starts (why, scrubbed).
    Retry(String),
    /// The run ended: the checked answer, or why there is none.
    Done(Result<Box<Answer>, ApiError>),
}

/// What an endpoint's event writer keeps between steps.
#[derive(Debug, Default)]
pub struct Written {
    /// Events written so far (the Responses API numbers them).
    pub events: u64,
    /// The answer text relayed so far (since the last retry).
    pub text: String,
    /// Whether the answer's message item is open (the Responses API opens it with the first text).
    pub message_open: bool,
}

impl Written {
    /// The next sequence number.
    pub fn sequence(&mut self) -> u64 {
        let n = self.events;
        self.events += 1;
        n
    }
}

/// Cancels the run when the stream is dropped before its end.
struct Owner {
    cancel: CancellationToken,
    _slot: OwnedSemaphorePermit,
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Starts `task` on `client` and returns its progress; `slot` is held until the stream ends
/// or is dropped, and the run is bounded by `timeout`. With `relay` false, no delta is sent:
/// the upstream call still streams (a long answer keeps its connection alive), but its raw
/// text stays here.
pub fn run(
    client: Client,
    task: Task,
    timeout: Duration,
    slot: OwnedSemaphorePermit,
    relay: bool,
) -> impl Stream<Item = Progress> + Send {
    let (tx, rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let owner = Owner {
        cancel: cancel.clone(),
        _slot: slot,
    };
    let (deltas, retries, done) = (tx.clone(), tx.clone(), tx);
    // Deltas are raw upstream text: they pass the same scrubber as the whole answer, one that
    // also finds a secret cut across two of them.
    let scrub = Arc::new(Mutex::new(StreamScrub::default()));
    let (scrub_deltas, scrub_retry, scrub_end) = (scrub.clone(), scrub.clone(), scrub);
    let flush =
        |scrub: &Mutex<StreamScrub>| scrub.lock().unwrap_or_else(|p| p.into_inner()).finish();
    tokio::spawn(async move {
        let run = client.run_task(task, move |_, env| {
            env.cancel = cancel;
            let started = AtomicBool::new(false);
            env.on_text = Some(TextSink::new(move |d| {
                if !relay {
                    if !started.swap(true, Ordering::Relaxed) {
                        let _ = deltas.send(Progress::Started);
                    }
                    return;
                }
                let ready = scrub_deltas
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(d);
                if !ready.is_empty() {
                    let _ = deltas.send(Progress::Delta(ready));
                }
            }));
            env.on_retry = Some(TextSink::new(move |why| {
                // What the first attempt still held goes out before the retry is announced.
                let rest = flush(&scrub_retry);
                if !rest.is_empty() {
                    let _ = retries.send(Progress::Delta(rest));
                }
                let _ = retries.send(Progress::Retry(why.to_owned()));
            }));
        });
        let end = match tokio::time::timeout(timeout, run).await {
            Ok(result) => crate::convert::settle(result, relay).map(Box::new),
            Err(_) => Err(ApiError::timeout()),
        };
        let rest = flush(&scrub_end);
        if !rest.is_empty() {
            let _ = done.send(Progress::Delta(rest));
        }
        let _ = done.send(Progress::Done(end));
    });
    futures::stream::unfold((rx, Some(owner)), |(mut rx, owner)| async move {
        let owner = owner?;
        match rx.recv().await {
            Some(Progress::Done(end)) => {
                // The run is over: its slot is free before the last event is written.
                drop(owner);
                Some((Progress::Done(end), (rx, None)))
            }
            Some(p) => Some((p, (rx, Some(owner)))),
            None => None,
        }
    })
}
