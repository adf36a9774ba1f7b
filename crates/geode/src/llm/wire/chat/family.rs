//! [`ChatWire`]: the Chat Completions family as a [`Wire`]: streamed (SSE chunks, folded by
//! [`super::stream::StreamFold`]) or one JSON reply, like GEODE's.

use super::stream::{Flow, StreamFold};
use super::{ChatTools, ParseError, StreamOptions, build_with, parse_value};
use crate::llm::call::AdapterError;
use crate::llm::http::ProviderError;
use crate::llm::request::{AdapterCallRequest, AdapterResponse};
use crate::llm::sse::SseEvent;
use crate::llm::wire::family::{self, BuildCx, Built, Delivery, SseFold, SseSteps, Wire, WireFold};
use serde_json::Value;

/// The Chat Completions family, with the schema placed as the call's plan says, the tools as
/// the server takes them ([`Self::tools`]) and the reply delivered as [`Self::delivery`] says
/// (the default streams; the `openai-compatible` probe asks for one JSON reply).
#[derive(Debug, Clone, Copy)]
pub struct ChatWire {
    /// What the server accepts of tools.
    pub tools: ChatTools,
    /// SSE chunks (`stream: true`) or one JSON reply.
    pub delivery: Delivery,
}

impl ChatWire {
    /// The streamed wire for a server that takes `tools`.
    pub fn streamed(tools: ChatTools) -> Self {
        Self {
            tools,
            delivery: Delivery::Sse,
        }
    }
}

impl Wire for ChatWire {
    fn delivery(&self) -> Delivery {
        self.delivery
    }

    fn build(&self, req: &AdapterCallRequest, cx: &BuildCx<'_>) -> Result<Built, AdapterError> {
        let mut built = build_with(req, cx.default_model, cx.plan, self.tools)
            .map_err(|e| e.into_adapter_error(cx.adapter))?;
        if self.delivery == Delivery::Sse {
            built.body.stream = true;
            built.body.stream_options = Some(StreamOptions {
                include_usage: true,
            });
        }
        tracing::debug!(adapter = cx.adapter, model = %built.body.model, mode = %built.wire.mode, "chat call");
        Ok(Built {
            body: family::to_body(cx.adapter, &built.body)?,
            wire: built.wire,
            output_tool: None,
        })
    }

    fn fold(&self, _built: &Built, max_text_bytes: u64) -> Box<dyn WireFold> {
        Box::new(SseFold {
            steps: ChatFold(StreamFold::with_max_text_bytes(max_text_bytes)),
            errors: super::provider_error,
        })
    }

    /// `response_format` named by the error.
    fn rejects_schema(&self, _built: &Built, err: &ProviderError) -> bool {
        family::names_schema_field(err, &["response_format"])
    }
}

/// Folds a streamed reply; a JSON reply is parsed whole.
struct ChatFold(StreamFold);

impl SseSteps for ChatFold {
    fn step(&mut self, frame: &SseEvent) -> Result<bool, ParseError> {
        Ok(self.0.push(&frame.data)? == Flow::Done)
    }

    fn answer(&mut self) -> Result<AdapterResponse, ParseError> {
        std::mem::take(&mut self.0).finish()
    }

    fn whole(&self, body: Value) -> Result<AdapterResponse, ParseError> {
        parse_value(body)
    }

    fn text_so_far(&self) -> &str {
        self.0.text_so_far()
    }
}
