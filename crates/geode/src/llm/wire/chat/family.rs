//! [`ChatWire`]: the Chat Completions family as a [`Wire`] (one JSON reply, like the reference).

use super::{SchemaPlacement, build_with, parse_value};
use crate::llm::call::AdapterError;
use crate::llm::http::ProviderError;
use crate::llm::request::{AdapterCallRequest, AdapterResponse};
use crate::llm::sse::SseEvent;
use crate::llm::wire::family::{self, BuildCx, Built, Delivery, Wire, WireFold};
use serde_json::Value;

/// The Chat Completions family, not streamed, with the schema placed as [`Self::placement`]
/// says (the default, JSON mode, is GLM's).
#[derive(Debug, Clone, Copy, Default)]
pub struct ChatWire {
    /// Where the response schema goes.
    pub placement: SchemaPlacement,
}

impl Wire for ChatWire {
    fn delivery(&self) -> Delivery {
        Delivery::Json
    }

    fn build(&self, req: &AdapterCallRequest, cx: &BuildCx<'_>) -> Result<Built, AdapterError> {
        let built = build_with(req, cx.default_model, self.placement)
            .map_err(|e| e.into_adapter_error(cx.adapter))?;
        tracing::debug!(adapter = cx.adapter, model = %built.body.model, mode = %built.wire.mode, "chat call");
        Ok(Built {
            body: family::to_body(cx.adapter, &built.body)?,
            wire: built.wire,
            output_tool: None,
        })
    }

    fn fold(&self, _built: &Built, _max_text_bytes: u64) -> Box<dyn WireFold> {
        Box::new(ChatFold)
    }

    /// `response_format` named by the error.
    fn rejects_schema(&self, _built: &Built, err: &ProviderError) -> bool {
        family::names_schema_field(err, &["response_format"])
    }
}

/// A Chat reply is one body; there is nothing to accumulate.
struct ChatFold;

impl WireFold for ChatFold {
    fn event(
        &mut self,
        adapter: &str,
        _frame: &SseEvent,
    ) -> Result<Option<AdapterResponse>, AdapterError> {
        Err(AdapterError::Protocol {
            adapter: adapter.to_owned(),
            message: "a Chat Completions reply is not streamed here".to_owned(),
        })
    }

    fn body(self: Box<Self>, adapter: &str, body: Value) -> Result<AdapterResponse, AdapterError> {
        parse_value(body).map_err(|e| super::adapter_error(e, adapter))
    }
}
