//! The one shape every wire family has, and the one driver that runs it.
//!
//! A [`Wire`] builds the request body for an [`AdapterCallRequest`] ([`Wire::build`]), says
//! whether the reply is an SSE stream or one JSON body ([`Wire::delivery`]), starts a
//! [`WireFold`] that turns the reply into an [`AdapterResponse`], and judges whether a 400/422
//! error body names the response schema it placed ([`Wire::rejects_schema`], so the transport
//! knows no provider field names). Implemented by [`crate::llm::wire::responses::ResponsesWire`],
//! [`crate::llm::wire::messages::MessagesWire`] and [`crate::llm::wire::chat::ChatWire`];
//! [`exchange`] is the single POST-and-fold loop every HTTP adapter runs.

use crate::llm::call::{AdapterError, CallCx};
use crate::llm::http::{HttpClient, PostRequest, ProviderError, SseReply};
use crate::llm::request::{AdapterCallRequest, AdapterResponse, WireReport};
use crate::llm::sse::SseEvent;
use crate::llm::wire::parse_error::{ParseError, ProviderErrors};
use crate::schema::subset::WirePlan;
use bytes::Bytes;
use serde_json::Value;

/// How the provider answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// An SSE stream (`accept: text/event-stream`, `stream: true` in the body).
    Sse,
    /// One JSON body.
    Json,
}

/// What a build may need beyond the request.
#[derive(Debug, Clone, Copy)]
pub struct BuildCx<'a> {
    /// The adapter name (for errors and logs).
    pub adapter: &'a str,
    /// The model used when the request names none.
    pub default_model: &'a str,
    /// Whether the model is a reasoning model (the registry row's `reasoning_models`).
    pub reasoning: bool,
    /// A system block that must come first (the Claude subscription's identity), if any.
    pub identity: Option<&'a str>,
    /// How the schema goes on this call's wire: the adapter's
    /// [`crate::llm::registry::SchemaRoute`] plan, made once for the call. The body follows it
    /// and the ledger reports its mode.
    pub plan: &'a WirePlan,
}

/// A built request: the serialised body, how the schema went on the wire, and what the fold
/// and the schema-rejection judge need to know about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Built {
    /// The JSON body.
    pub body: Bytes,
    /// The structured-output mode and rewrites of this body.
    pub wire: WireReport,
    /// The forced output tool, when the schema travels as a tool (Messages `tool` mode).
    pub output_tool: Option<OutputTool>,
}

/// The forced output tool of a Messages request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputTool {
    /// Its name.
    pub name: String,
    /// Its index in the request's `tools`.
    pub index: usize,
}

/// One wire family.
pub trait Wire: Send + Sync + std::fmt::Debug {
    /// SSE stream or one JSON body.
    fn delivery(&self) -> Delivery;
    /// Headers every request of this family carries (e.g. `anthropic-version`).
    fn headers(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// Builds and serialises the body. A request the family cannot carry is `Unsupported`.
    fn build(&self, req: &AdapterCallRequest, cx: &BuildCx<'_>) -> Result<Built, AdapterError>;
    /// A fresh fold for the reply to `built`, whose answer may not pass `max_text_bytes`.
    fn fold(&self, built: &Built, max_text_bytes: u64) -> Box<dyn WireFold>;
    /// Whether a 400/422 error body names the response schema `built` placed (rather than a
    /// tool's schema or the prompt): then the error is `SchemaRejected`.
    fn rejects_schema(&self, built: &Built, err: &ProviderError) -> bool;
}

/// Folds one reply into an [`AdapterResponse`].
///
/// Each SSE frame is first classified by the family's `classify` (`responses::classify`,
/// `messages::classify`) into one of three: a known event (folded), an unknown type (the
/// family's `Event::Unknown`, skipped: providers add event types), or a known
/// type whose data does not decode ([`ParseError::Corrupt`], a `Protocol` error).
pub trait WireFold: Send {
    /// Takes one SSE event; `Some` at the terminal event. An event of a known type that does
    /// not decode is an error; an unknown type is skipped.
    fn event(
        &mut self,
        adapter: &str,
        frame: &SseEvent,
    ) -> Result<Option<AdapterResponse>, AdapterError>;
    /// Reads a whole JSON reply.
    fn body(self: Box<Self>, adapter: &str, body: Value) -> Result<AdapterResponse, AdapterError>;
    /// The answer text folded so far (it only grows), passed on to [`CallCx::forward_text`]
    /// after each event; empty for a family that does not stream text.
    fn text_so_far(&self) -> &str {
        ""
    }
}

/// A family's sans-IO stream fold as [`SseFold`] drives it: Messages and Chat (Responses folds
/// its own way, answering on its terminal event).
pub(crate) trait SseSteps: Send {
    /// Applies one frame; `true` at the terminal event.
    fn step(&mut self, frame: &SseEvent) -> Result<bool, ParseError>;
    /// The answer, after the terminal event.
    fn answer(&mut self) -> Result<AdapterResponse, ParseError>;
    /// Reads a whole JSON reply instead.
    fn whole(&self, body: Value) -> Result<AdapterResponse, ParseError>;
    /// The answer text folded so far.
    fn text_so_far(&self) -> &str;
}

/// The [`WireFold`] of an [`SseSteps`], mapping its errors with the family's provider errors.
pub(crate) struct SseFold<S> {
    /// The family's fold.
    pub steps: S,
    /// The family's provider-error vocabulary.
    pub errors: ProviderErrors,
}

impl<S: SseSteps> WireFold for SseFold<S> {
    fn event(
        &mut self,
        adapter: &str,
        frame: &SseEvent,
    ) -> Result<Option<AdapterResponse>, AdapterError> {
        let errors = self.errors;
        let typed = |e: ParseError| e.into_adapter_error(adapter, errors);
        if !self.steps.step(frame).map_err(typed)? {
            return Ok(None);
        }
        self.steps.answer().map(Some).map_err(typed)
    }

    fn body(self: Box<Self>, adapter: &str, body: Value) -> Result<AdapterResponse, AdapterError> {
        self.steps
            .whole(body)
            .map_err(|e| e.into_adapter_error(adapter, self.errors))
    }

    fn text_so_far(&self) -> &str {
        self.steps.text_so_far()
    }
}

/// POSTs `post` (the body of `built`, auth already added) and folds the reply: the one
/// stream driver. A stream that ends before its terminal event is the transport's `Truncated`.
pub async fn exchange(
    http: &HttpClient,
    wire: &dyn Wire,
    post: &PostRequest,
    built: &Built,
    cx: &CallCx,
) -> Result<AdapterResponse, AdapterError> {
    let adapter = post.adapter();
    let mut fold = wire.fold(built, cx.max_response_bytes);
    let mut resp = match wire.delivery() {
        Delivery::Sse => match http.post_sse(post, cx).await? {
            SseReply::Events(mut sse) => {
                let mut sent = 0;
                loop {
                    let frame = sse.next_event(cx).await?;
                    let done = fold.event(adapter, &frame)?;
                    cx.forward_text(&mut sent, fold.text_so_far());
                    if let Some(resp) = done {
                        break resp;
                    }
                }
            }
            // A server that ignored `stream: true`: its one JSON body is the whole answer.
            SseReply::Whole(body) => fold.body(adapter, body)?,
        },
        Delivery::Json => fold.body(adapter, http.post_json(post, cx).await?)?,
    };
    resp.wire = built.wire.clone();
    Ok(resp)
}

/// Serialises a request struct (Messages and Chat bodies).
pub(crate) fn to_body<T: serde::Serialize>(adapter: &str, body: &T) -> Result<Bytes, AdapterError> {
    serde_json::to_vec(body)
        .map(Bytes::from)
        .map_err(|e| AdapterError::Protocol {
            adapter: adapter.to_owned(),
            message: format!("cannot serialise request: {e}"),
        })
}

/// The common judge of [`Wire::rejects_schema`]: the error's message, code or param names one
/// of `fields` (the family's schema fields, plus `json_schema` / `invalid schema`), or its
/// param is a `format`; and it does not point at a tool (`tools`, `input_schema`, `function`)
/// unless the message also names one of `fields`.
pub(crate) fn names_schema_field(p: &ProviderError, fields: &[&str]) -> bool {
    const COMMON: [&str; 2] = ["json_schema", "invalid schema"];
    let param = p.param.as_deref().unwrap_or("").to_ascii_lowercase();
    let code = p.code.as_deref().unwrap_or("").to_ascii_lowercase();
    let msg = p.message.to_ascii_lowercase();
    if param.contains("format") {
        return true;
    }
    let tool =
        |s: &str| s.contains("tools") || s.contains("input_schema") || s.contains("function");
    let own = fields.iter().any(|f| msg.contains(f));
    fields
        .iter()
        .chain(&COMMON)
        .any(|f| msg.contains(f) || code.contains(f) || param.contains(f))
        && !(tool(&param) || (tool(&msg) && !own))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(message: &str, code: Option<&str>, param: Option<&str>) -> ProviderError {
        ProviderError {
            message: message.into(),
            code: code.map(Into::into),
            param: param.map(Into::into),
        }
    }

    #[test]
    fn the_schema_judge_tells_the_response_schema_from_a_tool_schema() {
        let fields = ["text.format"];
        let openai = err(
            "Invalid schema for response_format 'X': 'additionalProperties' is required",
            Some("invalid_json_schema"),
            Some("text.format.schema"),
        );
        assert!(names_schema_field(&openai, &fields));
        let tool = err(
            "Invalid schema for function 'f': bad",
            None,
            Some("tools[0].parameters"),
        );
        assert!(!names_schema_field(&tool, &fields));
        let prompt = err("prompt too long", None, None);
        assert!(!names_schema_field(&prompt, &fields));
        let anthropic = err(
            "output_config.format.schema: recursive schemas are not supported",
            None,
            None,
        );
        assert!(names_schema_field(&anthropic, &["output_config"]));
    }
}
