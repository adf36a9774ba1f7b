//! [`MessagesWire`]: the Messages family as a [`Wire`] (streamed, `anthropic-version` header).

use super::{Delivery as MessagesDelivery, Flow, ParseError, StreamFold, build, prepend_identity};
use crate::llm::call::AdapterError;
use crate::llm::http::ProviderError;
use crate::llm::request::{AdapterCallRequest, AdapterResponse};
use crate::llm::sse::SseEvent;
use crate::llm::wire::family::{
    self, BuildCx, Built, Delivery, OutputTool, SseFold, SseSteps, Wire, WireFold,
};
use serde_json::Value;

/// The `anthropic-version` header value.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The Messages family, streamed.
#[derive(Debug, Clone, Copy, Default)]
pub struct MessagesWire;

impl Wire for MessagesWire {
    fn delivery(&self) -> Delivery {
        Delivery::Sse
    }

    fn headers(&self) -> &'static [(&'static str, &'static str)] {
        &[("anthropic-version", ANTHROPIC_VERSION)]
    }

    fn build(&self, req: &AdapterCallRequest, cx: &BuildCx<'_>) -> Result<Built, AdapterError> {
        let mut built = build(req, cx.default_model, MessagesDelivery::Stream, cx.plan);
        if let Some(identity) = cx.identity {
            prepend_identity(&mut built.body, identity);
        }
        tracing::debug!(adapter = cx.adapter, model = %built.body.model, mode = %built.wire.mode, "messages call");
        let output_tool = built.output_tool.map(|name| OutputTool {
            name,
            index: built.body.tools.len().saturating_sub(1),
        });
        Ok(Built {
            body: family::to_body(cx.adapter, &built.body)?,
            wire: built.wire,
            output_tool,
        })
    }

    fn fold(&self, built: &Built, max_text_bytes: u64) -> Box<dyn WireFold> {
        Box::new(SseFold {
            steps: MessagesFold {
                fold: StreamFold::with_max_text_bytes(max_text_bytes),
                output_tool: built.output_tool.as_ref().map(|t| t.name.clone()),
            },
            errors: super::provider_error,
        })
    }

    /// `output_config` / `output_format` named by the error, or a 400 naming the forced
    /// output tool (`tools.<its index>.…`, e.g. its `input_schema`).
    fn rejects_schema(&self, built: &Built, err: &ProviderError) -> bool {
        built
            .output_tool
            .as_ref()
            .is_some_and(|t| err.message.contains(&format!("tools.{}.", t.index)))
            || family::names_schema_field(err, &["output_config", "output_format"])
    }
}

/// The stream fold with the output tool it must tell apart.
struct MessagesFold {
    fold: StreamFold,
    output_tool: Option<String>,
}

impl SseSteps for MessagesFold {
    fn step(&mut self, frame: &SseEvent) -> Result<bool, ParseError> {
        Ok(self.fold.push(Some(&frame.event), &frame.data)? == Flow::Done)
    }

    fn answer(&mut self) -> Result<AdapterResponse, ParseError> {
        std::mem::take(&mut self.fold).finish(self.output_tool.as_deref())
    }

    fn whole(&self, body: Value) -> Result<AdapterResponse, ParseError> {
        super::parse_response(&body.to_string(), self.output_tool.as_deref())
    }

    fn text_so_far(&self) -> &str {
        self.fold.text_so_far()
    }
}
