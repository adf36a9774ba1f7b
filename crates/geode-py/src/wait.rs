//! [`wait`]: a sync call runs on the shared tokio runtime with the GIL released, so other
//! Python threads run meanwhile; every 50 ms it takes the GIL back to let Python deliver signals.
//! A `KeyboardInterrupt` (Ctrl-C) drops the future, which cancels the call: the request is
//! abandoned, a CLI or engine call is ended, nothing is left running.

use pyo3::prelude::*;
use std::future::Future;
use std::time::Duration;

/// How often a waiting call lets Python handle signals.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Runs `fut` to its end, or until a signal handler raises.
pub fn wait<F>(py: Python<'_>, fut: F) -> PyResult<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    let runtime = pyo3_async_runtimes::tokio::get_runtime();
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
