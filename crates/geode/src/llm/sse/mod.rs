//! A small Server-Sent Events reader over a byte stream. Provider-neutral: it knows frames,
//! never event meanings.
//!
//! Contract:
//! - [`SseParser`] is sans-IO: push bytes in any chunking, pop complete [`SseEvent`]s. It follows
//!   the WHATWG framing rules that matter for LLM streams: `\n`, `\r\n` and `\r` line ends, a
//!   leading BOM, `:` comment lines (keep-alives), `data` lines joined with `\n`, one optional
//!   space after the colon, `event`/`id` fields, and a blank line ending an event. An event with
//!   no `data` line is dropped, as the spec says. A single event larger than the size limit is
//!   a `Protocol` error (a guard against unbounded buffering).
//! - [`SseReader::next_event`] waits for the next event under the call's [`CallCx`] (cancel and
//!   deadline) and an **idle timeout per event**. The whole stream is capped
//!   ([`SseReader::with_max_total_bytes`], default [`DEFAULT_MAX_RESPONSE_BYTES`]): a stream
//!   that goes past it, e.g. one that never ends, is [`AdapterError::ResponseTooLarge`]. It never reports a clean end: the caller stops
//!   reading once it has seen its own terminal event, so a stream that ends (EOF, connection
//!   error, idle stall) before that is always [`AdapterError::Truncated`], never success.
//! - The content type is not checked (the ChatGPT backend may omit it,
//!   docs/wire.md#chatgpt-codex-backend).

use crate::llm::call::{AdapterError, CallCx, DEFAULT_MAX_RESPONSE_BYTES};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use std::collections::VecDeque;
use std::time::Duration;

/// The default largest single event accepted (16 MiB).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// One SSE event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, or `message` when absent (the SSE default).
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The `id:` field, when present.
    pub id: Option<String>,
}

/// Why the parser refused the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("server-sent event larger than {limit} bytes")]
pub struct EventTooLarge {
    /// The size limit in bytes.
    pub limit: usize,
}

/// A sans-IO SSE parser: [`SseParser::push`] bytes, [`SseParser::pop`] events.
#[derive(Debug)]
pub struct SseParser {
    line: Vec<u8>,
    skip_lf: bool,
    started: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
    id: Option<String>,
    pending_bytes: usize,
    max_event_bytes: usize,
    ready: VecDeque<SseEvent>,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_EVENT_BYTES)
    }
}

impl SseParser {
    /// A parser that refuses events over `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> Self {
        Self {
            line: Vec::new(),
            skip_lf: false,
            started: false,
            event: None,
            data: String::new(),
            has_data: false,
            id: None,
            pending_bytes: 0,
            max_event_bytes,
            ready: VecDeque::new(),
        }
    }

    /// Feeds bytes; complete events become available through [`SseParser::pop`].
    pub fn push(&mut self, mut bytes: &[u8]) -> Result<(), EventTooLarge> {
        while !bytes.is_empty() {
            if self.skip_lf {
                self.skip_lf = false;
                if bytes[0] == b'\n' {
                    bytes = &bytes[1..];
                    continue;
                }
            }
            match bytes.iter().position(|b| *b == b'\n' || *b == b'\r') {
                Some(i) => {
                    self.grow(i)?;
                    self.line.extend_from_slice(&bytes[..i]);
                    self.skip_lf = bytes[i] == b'\r';
                    bytes = &bytes[i + 1..];
                    let line = std::mem::take(&mut self.line);
                    // The stream's leading BOM is dropped from its first line, so it is found
                    // whatever the chunking (it may arrive split over several pushes).
                    match line.strip_prefix(b"\xEF\xBB\xBF") {
                        Some(rest) if !self.started => self.line_done(rest),
                        _ => self.line_done(&line),
                    }
                    self.started = true;
                    self.line = line;
                    self.line.clear();
                }
                None => {
                    self.grow(bytes.len())?;
                    self.line.extend_from_slice(bytes);
                    bytes = &[];
                }
            }
        }
        Ok(())
    }

    /// The next complete event, if any.
    pub fn pop(&mut self) -> Option<SseEvent> {
        self.ready.pop_front()
    }

    fn grow(&mut self, n: usize) -> Result<(), EventTooLarge> {
        self.pending_bytes += n;
        if self.pending_bytes > self.max_event_bytes {
            return Err(EventTooLarge {
                limit: self.max_event_bytes,
            });
        }
        Ok(())
    }

    fn line_done(&mut self, line: &[u8]) {
        if line.is_empty() {
            self.dispatch();
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|b| *b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        let value = String::from_utf8_lossy(value);
        match field {
            b"event" => self.event = Some(value.into_owned()),
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            b"id" if !value.contains('\0') => self.id = Some(value.into_owned()),
            _ => {}
        }
    }

    fn dispatch(&mut self) {
        self.pending_bytes = 0;
        let event = self.event.take();
        if !self.has_data {
            return;
        }
        self.has_data = false;
        self.ready.push_back(SseEvent {
            event: event.unwrap_or_else(|| "message".to_owned()),
            data: std::mem::take(&mut self.data),
            id: self.id.clone(),
        });
    }
}

/// Reads [`SseEvent`]s from a byte stream with an idle timeout per event.
pub struct SseReader<S> {
    adapter: String,
    stream: S,
    parser: SseParser,
    idle: Duration,
    ended: bool,
    read_bytes: u64,
    max_total_bytes: u64,
}

impl<S> std::fmt::Debug for SseReader<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseReader")
            .field("adapter", &self.adapter)
            .field("idle", &self.idle)
            .finish_non_exhaustive()
    }
}

impl<S, E> SseReader<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::error::Error,
{
    /// A reader for `adapter` over `stream`; waiting longer than `idle` for one event ends it.
    pub fn new(adapter: impl Into<String>, stream: S, idle: Duration) -> Self {
        Self {
            adapter: adapter.into(),
            stream,
            parser: SseParser::default(),
            idle,
            ended: false,
            read_bytes: 0,
            max_total_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }

    /// Caps the whole stream at `bytes` (at least 1): reading past it is
    /// [`AdapterError::ResponseTooLarge`].
    pub fn with_max_total_bytes(mut self, bytes: u64) -> Self {
        self.max_total_bytes = bytes.max(1);
        self
    }

    /// The next event. The end of the stream, a connection error or an idle stall is
    /// [`AdapterError::Truncated`]; the deadline is `Timeout`, cancellation `Cancelled`.
    pub async fn next_event(&mut self, cx: &CallCx) -> Result<SseEvent, AdapterError> {
        let adapter = self.adapter.clone();
        cx.run(&adapter, self.next_inner()).await
    }

    async fn next_inner(&mut self) -> Result<SseEvent, AdapterError> {
        loop {
            if let Some(ev) = self.parser.pop() {
                return Ok(ev);
            }
            if self.ended {
                return Err(self.truncated("stream ended before its terminal event".into()));
            }
            match tokio::time::timeout(self.idle, self.stream.next()).await {
                Err(_) => {
                    self.ended = true;
                    let secs = self.idle.as_secs_f32();
                    return Err(self.truncated(format!("no event for {secs}s (idle timeout)")));
                }
                // An event not closed by a blank line is discarded at EOF (WHATWG).
                Ok(None) => self.ended = true,
                Ok(Some(Err(e))) => {
                    self.ended = true;
                    return Err(self.truncated(format!("stream failed: {}", error_chain(&e))));
                }
                Ok(Some(Ok(bytes))) => {
                    self.read_bytes = self.read_bytes.saturating_add(bytes.len() as u64);
                    if self.read_bytes > self.max_total_bytes {
                        self.ended = true;
                        return Err(AdapterError::ResponseTooLarge {
                            adapter: self.adapter.clone(),
                            limit: self.max_total_bytes,
                        });
                    }
                    self.parser
                        .push(&bytes)
                        .map_err(|e| AdapterError::Protocol {
                            adapter: self.adapter.clone(),
                            message: e.to_string(),
                        })?;
                }
            }
        }
    }

    fn truncated(&self, message: String) -> AdapterError {
        AdapterError::Truncated {
            adapter: self.adapter.clone(),
            message,
        }
    }
}

/// An error and its sources joined with `: ` (one line).
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        src = s.source();
    }
    out
}

#[cfg(test)]
mod tests;
