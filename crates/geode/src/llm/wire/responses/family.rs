//! [`ResponsesWire`]: the Responses family as a [`Wire`] (streamed, one backend per row).

use super::{Backend, Fold, Options, Reasoning, classify, parse_response};
use crate::llm::call::AdapterError;
use crate::llm::http::ProviderError;
use crate::llm::request::{AdapterCallRequest, AdapterResponse};
use crate::llm::sse::SseEvent;
use crate::llm::wire::family::{self, BuildCx, Built, Delivery, Wire, WireFold};
use serde_json::Value;

/// The Responses family on one backend; always streamed (the ChatGPT backend requires it).
#[derive(Debug, Clone, Copy)]
pub struct ResponsesWire {
    /// The server the body is for.
    pub backend: Backend,
}

impl Wire for ResponsesWire {
    fn delivery(&self) -> Delivery {
        Delivery::Sse
    }

    fn build(&self, req: &AdapterCallRequest, cx: &BuildCx<'_>) -> Result<Built, AdapterError> {
        let opts = Options {
            backend: self.backend,
            reasoning: if cx.reasoning {
                Reasoning::On
            } else {
                Reasoning::Off
            },
            delivery: super::Delivery::Sse,
        };
        let built = super::build(cx.adapter, req, &opts, cx.plan)?;
        Ok(Built {
            body: built.body,
            wire: built.wire,
            output_tool: None,
        })
    }

    fn fold(&self, _built: &Built, max_text_bytes: u64) -> Box<dyn WireFold> {
        Box::new(Fold::with_max_text_bytes(max_text_bytes))
    }

    /// `text.format` (or `response_format`, as OpenAI's messages say) named by the error,
    /// or any `param` under `text`.
    fn rejects_schema(&self, _built: &Built, err: &ProviderError) -> bool {
        err.param.as_deref().is_some_and(|p| p.starts_with("text"))
            || family::names_schema_field(err, &["text.format", "response_format"])
    }
}

impl WireFold for Fold {
    fn event(
        &mut self,
        adapter: &str,
        frame: &SseEvent,
    ) -> Result<Option<AdapterResponse>, AdapterError> {
        let event = classify(adapter, frame).map_err(|e| super::adapter_error(e, adapter))?;
        self.push(adapter, event)
    }

    fn body(self: Box<Self>, adapter: &str, body: Value) -> Result<AdapterResponse, AdapterError> {
        parse_response(adapter, &body)
    }

    fn text_so_far(&self) -> &str {
        Fold::text_so_far(self)
    }
}
