//! Reading Responses replies: [`classify`] one SSE frame, [`Fold`] a stream, or
//! [`parse_response`] a whole response object. Sans-IO (see the parent module's table).

use crate::llm::call::{AdapterError, DEFAULT_MAX_RESPONSE_BYTES};
use crate::llm::http::{ProviderError, truncate};
use crate::llm::request::{AdapterResponse, ToolUse};
use crate::llm::sse::SseEvent;
use crate::llm::wire::parse_error::ParseError;
use crate::vocab::{StopReason, Usage};
use serde_json::{Value, json};

/// One classified stream event.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// `response.output_text.delta`.
    TextDelta(String),
    /// `response.refusal.delta`.
    RefusalDelta(String),
    /// `response.output_item.done`: one finished output item.
    ItemDone(Value),
    /// `response.completed`: the final response object (terminal).
    Completed(Value),
    /// `response.incomplete`: the final, cut response object (terminal).
    Incomplete(Value),
    /// `response.failed`: the failed response object (terminal).
    Failed(Value),
    /// An `error` event (terminal).
    Error(ProviderError),
    /// A known event that carries nothing we keep (created, in_progress, argument deltas, ...).
    Progress,
    /// An event type we do not know (named by its kind only).
    Unknown(String),
}

/// Known event types that carry nothing the fold needs.
const PROGRESS: &[&str] = &[
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.output_item.added",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.done",
    "response.output_text.annotation.added",
    "response.refusal.done",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_part.done",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_text.done",
    "response.reasoning_text.delta",
    "response.reasoning_text.done",
    "keepalive",
];

/// Classifies one frame by its `type` (the data's, else the SSE event name): a known event, an
/// unknown type ([`Event::Unknown`]), or, for a known type whose data does not decode,
/// [`ParseError::Corrupt`] (a `Protocol` error through [`adapter_error`]).
pub fn classify(adapter: &str, frame: &SseEvent) -> Result<Event, ParseError> {
    let data: Option<Value> = serde_json::from_str(&frame.data).ok();
    let kind = data
        .as_ref()
        .and_then(|d| d.get("type"))
        .and_then(Value::as_str)
        .unwrap_or(frame.event.as_str())
        .to_owned();
    if PROGRESS.contains(&kind.as_str()) {
        return Ok(Event::Progress);
    }
    let corrupt = |what: &str| ParseError::Corrupt {
        what: format!("event {kind}"),
        message: what.to_owned(),
    };
    let known = matches!(
        kind.as_str(),
        "response.output_text.delta"
            | "response.refusal.delta"
            | "response.output_item.done"
            | "response.completed"
            | "response.incomplete"
            | "response.failed"
            | "error"
    );
    if !known {
        tracing::debug!(adapter, kind = %crate::secret::clip(&kind, 80), "unknown Responses event");
        return Ok(Event::Unknown(kind));
    }
    let Some(data) = data else {
        return Err(corrupt("data is not JSON"));
    };
    let field = |name: &str| {
        data.get(name)
            .cloned()
            .ok_or_else(|| corrupt(&format!("no `{name}`")))
    };
    let string = |name: &str| match data.get(name) {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(corrupt(&format!("no string `{name}`"))),
    };
    Ok(match kind.as_str() {
        "response.output_text.delta" => Event::TextDelta(string("delta")?),
        "response.refusal.delta" => Event::RefusalDelta(string("delta")?),
        "response.output_item.done" => Event::ItemDone(field("item")?),
        "response.completed" => Event::Completed(field("response")?),
        "response.incomplete" => Event::Incomplete(field("response")?),
        "response.failed" => Event::Failed(field("response")?),
        _ => {
            // `error`: {"type":"error","code","message","param"} (or nested under "error").
            let e = data.get("error").filter(|e| e.is_object()).unwrap_or(&data);
            Event::Error(error_fields(e))
        }
    })
}

fn error_fields(e: &Value) -> ProviderError {
    let s = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_owned);
    ProviderError {
        message: s("message").unwrap_or_default(),
        code: s("code").or_else(|| s("type")),
        param: s("param"),
    }
}

/// Folds stream events into an [`AdapterResponse`]. Feed events with [`Fold::push`] until it
/// returns `Some` (the terminal event); a stream that ends before that is the transport's
/// `Truncated` error, never a response. Text and refusal deltas past the budget
/// ([`Fold::with_max_text_bytes`], default [`DEFAULT_MAX_RESPONSE_BYTES`]) are
/// `ResponseTooLarge`.
#[derive(Debug)]
pub struct Fold {
    items: Vec<Value>,
    text: String,
    refusal: String,
    max_text_bytes: u64,
}

impl Default for Fold {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            text: String::new(),
            refusal: String::new(),
            max_text_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }
}

impl Fold {
    /// An empty fold whose accumulated text may not pass `bytes`.
    pub fn with_max_text_bytes(bytes: u64) -> Self {
        Self {
            max_text_bytes: bytes,
            ..Self::default()
        }
    }

    /// The answer text folded so far (it only grows), for [`CallCx::forward_text`].
    ///
    /// [`CallCx::forward_text`]: crate::llm::call::CallCx::forward_text
    pub fn text_so_far(&self) -> &str {
        &self.text
    }

    /// Takes one event; returns the response at the terminal event, or an error for
    /// `response.failed` / `error`.
    pub fn push(
        &mut self,
        adapter: &str,
        event: Event,
    ) -> Result<Option<AdapterResponse>, AdapterError> {
        if let Event::TextDelta(d) | Event::RefusalDelta(d) = &event {
            let held = self.text.len() + self.refusal.len() + d.len();
            if held as u64 > self.max_text_bytes {
                return Err(AdapterError::ResponseTooLarge {
                    adapter: adapter.to_owned(),
                    limit: self.max_text_bytes,
                });
            }
        }
        match event {
            Event::TextDelta(d) => self.text.push_str(&d),
            Event::RefusalDelta(d) => self.refusal.push_str(&d),
            Event::ItemDone(item) => self.items.push(item),
            Event::Completed(resp) | Event::Incomplete(resp) => {
                return self.finish(adapter, resp).map(Some);
            }
            Event::Failed(resp) => {
                let e = resp.get("error").map(error_fields).unwrap_or_default();
                return Err(run_error(adapter, e, "response.failed"));
            }
            Event::Error(e) => return Err(run_error(adapter, e, "error")),
            Event::Progress | Event::Unknown(_) => {}
        }
        Ok(None)
    }

    fn finish(&mut self, adapter: &str, mut resp: Value) -> Result<AdapterResponse, AdapterError> {
        let has_output = resp
            .get("output")
            .and_then(Value::as_array)
            .is_some_and(|o| !o.is_empty());
        if !has_output && resp.is_object() {
            let mut items = std::mem::take(&mut self.items);
            if items.is_empty() && !(self.text.is_empty() && self.refusal.is_empty()) {
                let mut content = Vec::new();
                if !self.text.is_empty() {
                    content.push(json!({"type": "output_text", "text": self.text}));
                }
                if !self.refusal.is_empty() {
                    content.push(json!({"type": "refusal", "refusal": self.refusal}));
                }
                items.push(json!({"type": "message", "role": "assistant", "content": content}));
            }
            resp["output"] = Value::Array(items);
        }
        parse_response(adapter, &resp)
    }
}

/// The typed adapter error for a Responses frame that failed to parse; a provider error kind
/// is read as a failed run's code (`run_error`).
pub fn adapter_error(e: ParseError, adapter: &str) -> AdapterError {
    e.into_adapter_error(adapter, |adapter, kind, message| {
        let e = ProviderError {
            message,
            code: Some(kind.to_owned()),
            param: None,
        };
        run_error(&adapter, e, kind)
    })
}

/// Maps a failed run to an error: rate limits stay retryable, schema complaints are
/// `SchemaRejected` (the HTTP status was 200), anything else is `RunFailed`.
fn run_error(adapter: &str, e: ProviderError, fallback_kind: &str) -> AdapterError {
    let adapter = adapter.to_owned();
    let message = truncate(if e.message.is_empty() {
        "no message"
    } else {
        &e.message
    });
    let code = e.code.as_deref().unwrap_or(fallback_kind);
    let lower = format!("{code} {}", e.param.as_deref().unwrap_or("")).to_ascii_lowercase();
    if lower.contains("rate_limit") {
        AdapterError::RateLimited {
            adapter,
            retry_after: None,
            message,
        }
    } else if lower.contains("schema") || lower.contains("text.format") {
        AdapterError::SchemaRejected {
            adapter,
            status: 200,
            code: truncate(code),
            message,
        }
    } else {
        AdapterError::RunFailed {
            adapter,
            kind: truncate(code),
            message,
        }
    }
}

/// Reads a complete response object (a JSON reply or the terminal event's `response`).
pub fn parse_response(adapter: &str, resp: &Value) -> Result<AdapterResponse, AdapterError> {
    let status = resp
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("completed");
    match status {
        "completed" | "incomplete" => {}
        "failed" | "cancelled" => {
            let e = resp.get("error").map(error_fields).unwrap_or_default();
            return Err(run_error(adapter, e, status));
        }
        other => {
            return Err(AdapterError::Protocol {
                adapter: adapter.to_owned(),
                message: format!("response not finished (status {})", truncate(other)),
            });
        }
    }
    let mut out = AdapterResponse::default();
    let mut refusal = String::new();
    for item in resp
        .get("output")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                let parts = item.get("content").and_then(Value::as_array);
                for part in parts.into_iter().flatten() {
                    let text = |k: &str| part.get(k).and_then(Value::as_str).unwrap_or("");
                    match part.get("type").and_then(Value::as_str) {
                        Some("output_text") => out.text.push_str(text("text")),
                        Some("refusal") => refusal.push_str(text("refusal")),
                        _ => {}
                    }
                }
            }
            Some("function_call") => {
                let s = |k: &str| {
                    item.get(k)
                        .and_then(Value::as_str)
                        .filter(|s| !s.is_empty())
                };
                let id = s("call_id").or_else(|| s("id")).unwrap_or("");
                out.tool_uses.push(ToolUse::from_json_arguments(
                    id,
                    s("name").unwrap_or(""),
                    s("arguments").unwrap_or(""),
                ));
            }
            _ => {}
        }
    }
    out.usage = usage(resp.get("usage"));
    let reason = resp
        .get("incomplete_details")
        .and_then(|d| d.get("reason"))
        .and_then(Value::as_str);
    out.stop_reason = if status == "incomplete" {
        match reason {
            Some("content_filter") => StopReason::ContentFilter,
            _ => StopReason::MaxTokens,
        }
    } else if !refusal.is_empty() {
        StopReason::Refusal
    } else if !out.tool_uses.is_empty() {
        StopReason::ToolUse
    } else {
        StopReason::EndTurn
    };
    if !refusal.is_empty() && out.text.is_empty() {
        out.text = refusal;
    }
    Ok(out)
}

fn usage(u: Option<&Value>) -> Usage {
    let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let Some(u) = u else {
        return Usage::default();
    };
    Usage {
        input_tokens: n(u.get("input_tokens")),
        output_tokens: n(u.get("output_tokens")),
        cached_input_tokens: n(u.pointer("/input_tokens_details/cached_tokens")),
        cost_usd: None,
    }
}
