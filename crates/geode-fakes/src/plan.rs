//! The shared vocabulary between the server and the protocol modules.
//!
//! A protocol module turns a model call plus a [`Content`] into a [`Plan`]: status, headers and
//! either a JSON body or a list of SSE events. The server then delivers the plan, applying
//! delays and cuts; protocol modules never touch sockets.

use crate::script::TokenUsage;
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// What the model "says" in a successful (HTTP 200) answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Content {
    /// A complete text answer.
    Text(String),
    /// One tool call with its arguments object.
    ToolCall { name: String, arguments: Value },
    /// A refusal with its text.
    Refusal(String),
    /// An answer cut by the output token limit, with its partial text.
    MaxTokens(String),
}

/// One server-sent event. `event: None` writes only the `data:` line (Chat Completions).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

impl SseEvent {
    /// A named event whose data is `payload` (compact JSON).
    pub(crate) fn named(event: &str, payload: &Value) -> SseEvent {
        SseEvent {
            event: Some(event.to_owned()),
            data: payload.to_string(),
        }
    }

    /// A data-only event.
    pub(crate) fn data(data: impl Into<String>) -> SseEvent {
        SseEvent {
            event: None,
            data: data.into(),
        }
    }
}

/// The body of a planned response.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PlanBody {
    /// `application/json`.
    Json(Value),
    /// `text/event-stream`.
    Sse(Vec<SseEvent>),
    /// Bytes sent as they are, with this content type (garbage, an HTML page).
    Raw {
        /// The `content-type` header.
        content_type: String,
        /// The body.
        bytes: bytes::Bytes,
    },
    /// No body.
    Empty,
}

/// A complete response, ready for the server to deliver.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: PlanBody,
}

impl Plan {
    /// A JSON response.
    pub(crate) fn json(status: u16, body: Value) -> Plan {
        Plan {
            status,
            headers: Vec::new(),
            body: PlanBody::Json(body),
        }
    }

    /// A 200 SSE response.
    pub(crate) fn sse(events: Vec<SseEvent>) -> Plan {
        Plan {
            status: 200,
            headers: Vec::new(),
            body: PlanBody::Sse(events),
        }
    }

    /// Adds a header.
    pub(crate) fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Plan {
        self.headers.push((name, value.into()));
        self
    }
}

/// How the server handles one request, as decided by the protocol module.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Route {
    /// A model call: play the next scripted reply.
    Model,
    /// Anything else (side endpoints, rejections, 404): send this response.
    Reply(Plan),
}

/// Everything a protocol module needs to answer one model call.
#[derive(Debug)]
pub(crate) struct Call<'a> {
    /// The request body (masked JSON; `Null` when not JSON).
    pub body: &'a Value,
    /// Usage numbers to report.
    pub usage: TokenUsage,
    /// Id source.
    pub ids: &'a Ids,
}

impl Call<'_> {
    /// True when the body asks for a streamed answer (`"stream": true`).
    pub(crate) fn wants_stream(&self) -> bool {
        self.body.get("stream").and_then(Value::as_bool) == Some(true)
    }

    /// The requested model name, or `default`.
    pub(crate) fn model(&self, default: &str) -> String {
        self.body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(default)
            .to_owned()
    }
}

/// Generates unique, readable ids (`resp_fake000000000001`) per server.
#[derive(Debug, Default)]
pub(crate) struct Ids {
    next: AtomicU64,
}

impl Ids {
    pub(crate) fn next(&self, prefix: &str) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed).saturating_add(1);
        format!("{prefix}_fake{n:012}")
    }
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Splits `text` into two halves on a character boundary (the second may be empty), the way the
/// Python fakes send deltas.
pub(crate) fn halves(text: &str) -> Vec<&str> {
    let mut mid = (text.len() / 2).max(1).min(text.len());
    while !text.is_char_boundary(mid) {
        mid += 1;
    }
    [&text[..mid], &text[mid..]]
        .into_iter()
        .filter(|part| !part.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_respect_char_boundaries_and_skip_empty_parts() {
        assert_eq!(halves("abcd"), vec!["ab", "cd"]);
        assert_eq!(halves("a"), vec!["a"]);
        assert!(halves("").is_empty());
        assert_eq!(halves("éé").concat(), "éé");
    }

    #[test]
    fn ids_are_unique_and_prefixed() {
        let ids = Ids::default();
        let a = ids.next("msg");
        let b = ids.next("msg");
        assert!(a.starts_with("msg_") && a != b);
    }
}
