//! [`wait`]: a sync call runs on this process's tokio runtime with the GIL released, so other
//! Python threads run meanwhile; every 50 ms it takes the GIL back to let Python deliver signals.
//! A `KeyboardInterrupt` (Ctrl-C) drops the future, which cancels the call: the request is
//! abandoned, a CLI or engine call is ended, nothing is left running.
//!
//! The runtime is made per process: a child forked after a call (multiprocessing, gunicorn and
//! Celery workers fork) inherits the parent's runtime without its threads, and a call on it
//! would wait for ever. A child makes its own on its first call; the inherited one is left
//! untouched (dropping it would wait for threads that are not there). Clients made before the
//! fork hold connections of the parent's: make the child's clients in the child.

use pyo3::prelude::*;
use std::future::Future;
use std::time::Duration;

/// How often a waiting call lets Python handle signals.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// This process's runtime, made on first use in each process.
fn runtime() -> &'static tokio::runtime::Runtime {
    static MADE: std::sync::Mutex<Option<(u32, &'static tokio::runtime::Runtime)>> =
        std::sync::Mutex::new(None);
    let pid = std::process::id();
    let mut made = MADE.lock().unwrap_or_else(|p| p.into_inner());
    match *made {
        Some((owner, rt)) if owner == pid => rt,
        _ => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .thread_name("geode")
                .build()
                .map(|rt| &*Box::leak(Box::new(rt)))
                .unwrap_or_else(|_| pyo3_async_runtimes::tokio::get_runtime());
            *made = Some((pid, rt));
            rt
        }
    }
}

/// Runs `fut` to its end, or until a signal handler raises.
pub fn wait<F>(py: Python<'_>, fut: F) -> PyResult<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    let runtime = runtime();
    let mut fut = std::pin::pin!(fut);
    loop {
        let step = py.detach(|| {
            runtime.block_on(async { tokio::time::timeout(SIGNAL_POLL, &mut fut).await.ok() })
        });
        match step {
            Some(out) => return Ok(out),
            None => py.check_signals()?,
        }
    }
}
