//! [`FallbackAdapter`]: a configured chain of adapters that takes over on retryable failures.
//!
//! The first adapter serves the call; when it fails with a retryable error (rate limit, 5xx,
//! connection reset, truncated stream) the next one takes the same request, and so on. A fatal
//! error (auth, bad request, schema rejection, cancellation) stops the chain at once. Every
//! adapter tried is recorded in the response's `WireReport::adapters_tried`, which the worker
//! copies into the ledger. A link may carry its own model ([`FallbackAdapter::with_models`]):
//! a fallback in another provider family cannot serve the primary's model name, so it gets
//! the request with its own model instead.

use crate::llm::adapter::{Adapter, Wraps};
use crate::llm::call::{AdapterError, CallCx};
use crate::llm::request::{AdapterCallRequest, AdapterResponse};
use crate::vocab::{AdapterTry, RetryClass};
use std::sync::Arc;

/// A chain of adapters tried in order on retryable failures. It describes itself as its first
/// link ([`Wraps`]: name, registry row, wire mode and its settled form), and forwards tools
/// only when every link does.
pub struct FallbackAdapter {
    /// The first link, which the chain describes itself as.
    first: Arc<dyn Adapter>,
    chain: Vec<Arc<dyn Adapter>>,
    /// Per link: the model to put in the request instead of the caller's (`None`: keep it).
    models: Vec<Option<String>>,
}

impl std::fmt::Debug for FallbackAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.chain.iter().map(|a| a.name()))
            .finish()
    }
}

impl FallbackAdapter {
    /// A chain; `None` when it is empty.
    pub fn new(chain: Vec<Arc<dyn Adapter>>) -> Option<Self> {
        Self::with_models(chain.into_iter().map(|a| (a, None)).collect())
    }

    /// A chain whose links may override the request's model (`Some(model)`); `None` when empty.
    pub fn with_models(links: Vec<(Arc<dyn Adapter>, Option<String>)>) -> Option<Self> {
        let (chain, models): (Vec<_>, Vec<_>) = links.into_iter().unzip();
        let first = Arc::clone(chain.first()?);
        Some(Self {
            first,
            chain,
            models,
        })
    }
}

#[async_trait::async_trait]
impl Wraps for FallbackAdapter {
    fn inner(&self) -> &dyn Adapter {
        &*self.first
    }

    fn supports_tools_through(&self) -> bool {
        self.chain.iter().all(|a| a.supports_tools())
    }

    async fn call_through(
        &self,
        req: AdapterCallRequest,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        let mut tried = Vec::new();
        let mut last_err = None;
        for (adapter, model) in self.chain.iter().zip(&self.models) {
            let mut link_req = req.clone();
            if let Some(m) = model {
                link_req.model.clone_from(m);
            }
            match adapter.call(link_req, cx).await {
                Ok(mut resp) => {
                    tried.push(AdapterTry {
                        adapter: adapter.name().to_owned(),
                        outcome: "ok".to_owned(),
                        model: model.clone(),
                    });
                    resp.wire.adapters_tried = tried;
                    return Ok(resp);
                }
                Err(e) => {
                    tried.push(AdapterTry {
                        adapter: adapter.name().to_owned(),
                        outcome: e.to_string(),
                        model: model.clone(),
                    });
                    let retryable = e.retry_class() == RetryClass::Retryable;
                    last_err = Some(e);
                    if !retryable {
                        break;
                    }
                }
            }
        }
        Err(last_err.unwrap_or(AdapterError::Config {
            adapter: "fallback".to_owned(),
            message: "empty fallback chain".to_owned(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::request::Message;
    use crate::llm::scripted::ScriptedAdapter;
    use crate::vocab::ErrorKind;

    fn server_error(name: &str) -> AdapterError {
        AdapterError::Server {
            adapter: name.into(),
            status: 500,
            message: "down".into(),
        }
    }

    #[tokio::test]
    async fn a_retryable_failure_moves_to_the_next_adapter_and_is_recorded() {
        let a: Arc<dyn Adapter> =
            Arc::new(ScriptedAdapter::new(vec![Err(server_error("a"))]).named("a"));
        let b: Arc<dyn Adapter> =
            Arc::new(ScriptedAdapter::new(vec![Ok(AdapterResponse::text("{}"))]).named("b"));
        let chain = FallbackAdapter::new(vec![a, b]).unwrap();
        let resp = chain
            .call(
                AdapterCallRequest::new("m", vec![Message::user("x")]),
                &CallCx::new(),
            )
            .await
            .unwrap();
        let names: Vec<_> = resp
            .wire
            .adapters_tried
            .iter()
            .map(|t| t.adapter.as_str())
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert!(resp.wire.adapters_tried[0].outcome.contains("500"));
    }

    #[tokio::test]
    async fn a_fatal_failure_stops_the_chain() {
        let a: Arc<dyn Adapter> = Arc::new(
            ScriptedAdapter::new(vec![Err(AdapterError::Auth {
                adapter: "a".into(),
                status: 401,
                message: "no".into(),
            })])
            .named("a"),
        );
        let b = Arc::new(ScriptedAdapter::new(vec![Ok(AdapterResponse::text("{}"))]).named("b"));
        let chain = FallbackAdapter::new(vec![a, b.clone()]).unwrap();
        let err = chain
            .call(AdapterCallRequest::new("m", vec![]), &CallCx::new())
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Auth);
        assert!(b.requests().is_empty());
    }

    #[tokio::test]
    async fn a_link_with_its_own_model_gets_the_request_with_that_model() {
        let a = Arc::new(ScriptedAdapter::new(vec![Err(server_error("a"))]).named("a"));
        let b = Arc::new(ScriptedAdapter::new(vec![Ok(AdapterResponse::text("{}"))]).named("b"));
        let chain = FallbackAdapter::with_models(vec![
            (a.clone() as Arc<dyn Adapter>, None),
            (b.clone() as Arc<dyn Adapter>, Some("b-model".to_owned())),
        ])
        .unwrap();
        chain
            .call(AdapterCallRequest::new("m", vec![]), &CallCx::new())
            .await
            .unwrap();
        assert_eq!(a.requests()[0].model, "m");
        assert_eq!(b.requests()[0].model, "b-model");
    }
}
