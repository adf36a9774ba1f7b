//! [`ScriptedAdapter`]: an in-process adapter that replays a script and records every request.
//!
//! For tests, benchmarks and doctests of the loop, the worker and the retry. It never touches
//! the network. Each scripted step may wait before answering (to model provider latency); the
//! wait honours the call's cancellation token and deadline.

use crate::llm::adapter::Adapter;
use crate::llm::call::{AdapterError, CallCx};
use crate::llm::request::{AdapterCallRequest, AdapterResponse, WireReport};
use crate::schema::ResponseSchema;
use crate::vocab::StructuredOutputMode;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

/// One scripted step: an answer or an error, after an optional delay.
#[derive(Debug)]
pub struct Step {
    /// What the adapter returns.
    pub outcome: Result<AdapterResponse, AdapterError>,
    /// How long to wait first.
    pub delay: Duration,
}

/// An adapter that replays scripted steps in order and records the requests it receives.
#[derive(Debug)]
pub struct ScriptedAdapter {
    name: String,
    mode_with_schema: StructuredOutputMode,
    steps: Mutex<VecDeque<Step>>,
    repeat_last: Option<AdapterResponse>,
    requests: Mutex<Vec<AdapterCallRequest>>,
    stream_chunk: Option<usize>,
}

impl ScriptedAdapter {
    /// Replays `outcomes` with no delay, named `scripted`, reporting wire mode `hint`
    /// when a schema is present.
    pub fn new(outcomes: Vec<Result<AdapterResponse, AdapterError>>) -> Self {
        Self::with_steps(
            outcomes
                .into_iter()
                .map(|outcome| Step {
                    outcome,
                    delay: Duration::ZERO,
                })
                .collect(),
        )
    }

    /// Replays the given steps.
    pub fn with_steps(steps: Vec<Step>) -> Self {
        Self {
            name: "scripted".to_owned(),
            mode_with_schema: StructuredOutputMode::Hint,
            steps: Mutex::new(steps.into()),
            repeat_last: None,
            requests: Mutex::new(Vec::new()),
            stream_chunk: None,
        }
    }

    /// Answers every call with `response` after `delay` (for load benchmarks).
    pub fn repeating(response: AdapterResponse, delay: Duration) -> Self {
        let mut s = Self::with_steps(vec![Step {
            outcome: Ok(response.clone()),
            delay,
        }]);
        s.repeat_last = Some(response);
        s
    }

    /// Renames the adapter (as it appears in ledgers).
    pub fn named(mut self, name: &str) -> Self {
        self.name = name.to_owned();
        self
    }

    /// Sets the wire mode reported when a schema is present.
    pub fn with_mode(mut self, mode: StructuredOutputMode) -> Self {
        self.mode_with_schema = mode;
        self
    }

    /// Streams each answer to the call's [`CallCx::on_text`] in pieces of about `bytes` bytes
    /// (cut at character boundaries) before returning it, as a streaming wire would. Without
    /// it the adapter behaves as a wire that does not stream (no deltas).
    pub fn streaming(mut self, bytes: usize) -> Self {
        self.stream_chunk = Some(bytes.max(1));
        self
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<AdapterCallRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Scripted steps not yet played.
    pub fn remaining(&self) -> usize {
        self.steps.lock().map(|s| s.len()).unwrap_or(0)
    }
}

#[async_trait::async_trait]
impl Adapter for ScriptedAdapter {
    fn name(&self) -> &str {
        &self.name
    }

    /// The row of the adapter it is named after, if any.
    fn spec(&self) -> Option<&'static crate::llm::registry::AdapterSpec> {
        crate::llm::registry::spec(&self.name)
    }

    fn wire_mode(&self, schema: Option<&ResponseSchema>) -> StructuredOutputMode {
        match schema {
            Some(_) => self.mode_with_schema,
            None => StructuredOutputMode::None,
        }
    }

    async fn call(
        &self,
        req: AdapterCallRequest,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        let mode = self.wire_mode(req.response_schema.as_ref());
        if let Ok(mut r) = self.requests.lock() {
            r.push(req);
        }
        let step = self.steps.lock().ok().and_then(|mut s| {
            if s.len() == 1 && self.repeat_last.is_some() {
                s.front().map(|f| Step {
                    outcome: Ok(self.repeat_last.clone().unwrap_or_default()),
                    delay: f.delay,
                })
            } else {
                s.pop_front()
            }
        });
        let Some(step) = step else {
            return Err(AdapterError::Protocol {
                adapter: self.name.clone(),
                message: "script exhausted".to_owned(),
            });
        };
        let delay = step.delay;
        let chunk = self.stream_chunk;
        cx.run(&self.name, async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            if let (Some(size), Ok(resp)) = (chunk, &step.outcome) {
                for piece in char_chunks(&resp.text, size) {
                    cx.text_delta(piece);
                    // As between two frames of a real stream, the listener may run.
                    tokio::task::yield_now().await;
                }
            }
            step.outcome.map(|mut resp| {
                if resp.wire == WireReport::default() {
                    resp.wire.mode = mode;
                }
                resp
            })
        })
        .await
    }
}

/// `text` in pieces of at least `size` bytes (the last may be shorter), cut at char boundaries.
fn char_chunks(text: &str, size: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = size.min(rest.len());
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}
