//! `Stream`: the events of [`geode::Client::stream_typed`], pulled one at a time, sync (GIL
//! released, Ctrl-C cancels) or async. Each event crosses as a tuple whose first element names it:
//! `("partial", value_json, complete, guarantee)`, `("item", index, value_json)`,
//! `("retry", reason)`, `("final", value_json, ledger_json, summary)`; `None` ends the stream.
//! Dropping or closing the stream drops the call (the request or engine call is cancelled).

use crate::outcome::{done, to_py_err};
use crate::wait::wait;
use futures::StreamExt;
use futures::stream::BoxStream;
use geode::{Error, PartialGuarantee, StreamEvent};
use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::Mutex;

type Events = BoxStream<'static, Result<StreamEvent<Value>, Error>>;

/// One streamed call. The events sit behind an async mutex: one pull at a time, from any thread
/// or task.
#[pyclass(frozen, module = "geode._native", name = "Stream")]
pub struct NativeStream {
    events: Arc<Mutex<Option<Events>>>,
}

impl NativeStream {
    pub fn new(events: Events) -> Self {
        Self {
            events: Arc::new(Mutex::new(Some(events))),
        }
    }
}

#[pymethods]
impl NativeStream {
    /// The next event, or `None` after the last; blocks with the GIL released.
    fn next(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let events = self.events.clone();
        let next = wait(py, async move { pull(&events).await })?;
        next.map(|ev| event(py, ev)).transpose()
    }

    /// [`Self::next`] as an awaitable.
    fn anext<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let events = self.events.clone();
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let next = pull(&events).await;
            Python::attach(|py| next.map(|ev| event(py, ev)).transpose())
        })
    }

    /// Ends the call now (what dropping the stream does); later pulls give `None`.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let events = self.events.clone();
        let dropped = wait(py, async move { events.lock().await.take() })?;
        py.detach(move || drop(dropped));
        Ok(())
    }
}

/// The next event; the stream is dropped once it has given its last (the call is over).
async fn pull(events: &Mutex<Option<Events>>) -> Option<Result<StreamEvent<Value>, Error>> {
    let mut guard = events.lock().await;
    let next = guard.as_mut()?.next().await;
    if matches!(next, None | Some(Ok(StreamEvent::Final(_))) | Some(Err(_))) {
        *guard = None;
    }
    next
}

fn event(py: Python<'_>, ev: Result<StreamEvent<Value>, Error>) -> PyResult<Py<PyAny>> {
    match ev {
        Err(e) => Err(to_py_err(py, &e)),
        Ok(StreamEvent::Partial {
            value,
            complete,
            guarantee,
        }) => {
            let guarantee = match guarantee {
                PartialGuarantee::Enforced => "enforced",
                PartialGuarantee::Unchecked => "unchecked",
            };
            ("partial", value.to_string(), complete, guarantee).into_py_any(py)
        }
        Ok(StreamEvent::Item { index, value }) => {
            ("item", index, value.to_string()).into_py_any(py)
        }
        Ok(StreamEvent::Retry { reason }) => ("retry", reason).into_py_any(py),
        Ok(StreamEvent::Final(x)) => {
            let (value, ledger, summary) = done(py, Ok(*x))?;
            ("final", value, ledger, summary).into_py_any(py)
        }
    }
}
