//! The [`Adapter`] trait: one LLM call over one provider's wire.
//!
//! An adapter takes an [`AdapterCallRequest`] and a [`CallCx`] (cancellation and deadline) and
//! returns an [`AdapterResponse`] whose [`crate::llm::request::WireReport`] says how the schema
//! went on the wire. Failures are [`AdapterError`]s that name the adapter and classify the
//! provider's answer, so retry code matches on [`AdapterError::retry_class`], never on text.

use crate::llm::call::{AdapterError, CallCx};
use crate::llm::registry::AdapterSpec;
use crate::llm::request::{AdapterCallRequest, AdapterResponse};
use crate::media::Accepts;
use crate::schema::ResponseSchema;
use crate::vocab::StructuredOutputMode;

/// One LLM call over one provider's wire.
///
/// ```
/// use geode::llm::adapter::Adapter;
/// use geode::llm::call::CallCx;
/// use geode::llm::request::{AdapterCallRequest, AdapterResponse, Message};
/// use geode::llm::scripted::ScriptedAdapter;
///
/// # tokio_test_block(async {
/// let adapter = ScriptedAdapter::new(vec![Ok(AdapterResponse::text(r#"{"ok":true}"#))]);
/// let req = AdapterCallRequest::new("m", vec![Message::user("hi")]);
/// let resp = adapter.call(req, &CallCx::new()).await.unwrap();
/// assert_eq!(resp.text, r#"{"ok":true}"#);
/// assert_eq!(adapter.requests().len(), 1);
/// # });
/// # fn tokio_test_block(f: impl std::future::Future<Output = ()>) {
/// #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
/// # }
/// ```
#[async_trait::async_trait]
pub trait Adapter: Send + Sync {
    /// The adapter's registry name (`openai-payg`, `local`, `scripted`, ...). By default its
    /// row's name; adapters outside the registry override it.
    fn name(&self) -> &str {
        self.spec().map_or("unnamed", |s| s.name)
    }

    /// The registry row this adapter serves (`None` for adapters outside the registry, e.g.
    /// scripted test adapters).
    fn spec(&self) -> Option<&'static AdapterSpec> {
        None
    }

    /// Where this adapter's answers come from, as far as the response cache must tell two
    /// apart: the model-call URL of an HTTP adapter (a proxy, staging or another compatible
    /// server answers differently, and may enforce differently), the program of a CLI or an
    /// engine. Empty for adapters that have none (scripted test adapters).
    fn endpoint(&self) -> String {
        String::new()
    }

    /// The mode this adapter would use for `schema` (`None` means no schema). By default its
    /// row's route ([`crate::llm::registry::SchemaRoute::mode`]), so the table and the adapter cannot disagree;
    /// adapters outside the registry override it.
    fn wire_mode(&self, schema: Option<&ResponseSchema>) -> StructuredOutputMode {
        self.spec()
            .map_or(StructuredOutputMode::None, |s| s.schema_route.mode(schema))
    }

    /// The mode this adapter will really use for `schema` with `model` ("" = its default),
    /// after finding out what its row cannot say by itself: `openai-compatible` probes its
    /// server here, once per server and model. By default [`Adapter::wire_mode`]. The worker
    /// asks this before the first call and refuses a `require` the answer does not meet; an
    /// error (the server is down) is left for the call itself to report.
    async fn settle_mode(
        &self,
        model: &str,
        schema: Option<&ResponseSchema>,
        cx: &CallCx,
    ) -> Result<StructuredOutputMode, AdapterError> {
        let _ = (model, cx);
        Ok(self.wire_mode(schema))
    }

    /// Whether the framework's own tools are forwarded to the model. By default its row's
    /// `framework_tools` (true for adapters outside the registry).
    fn supports_tools(&self) -> bool {
        self.spec().is_none_or(|s| s.framework_tools)
    }

    /// What this adapter takes beside text for `model` ("" = its default model): its row's
    /// [`crate::llm::registry::Inputs`] (everything for adapters outside the registry). The
    /// worker checks a task's images and documents against it before the first call.
    fn accepts(&self, model: &str) -> Accepts {
        self.spec().map_or(Accepts::ANY, |s| {
            let model = if model.is_empty() {
                s.default_model
            } else {
                model
            };
            s.inputs.for_model(model)
        })
    }

    /// Makes one call.
    async fn call(
        &self,
        req: AdapterCallRequest,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError>;
}

/// An adapter around another one that changes only how a call runs (pacing, recording, ...).
///
/// Every [`Wraps`] is an [`Adapter`] that describes itself as the adapter it wraps: its name,
/// registry row ([`Adapter::spec`]), wire mode (and its settled form) and tool support
/// ([`Wraps::supports_tools_through`]) pass through, so a wrapper writes only its call.
#[async_trait::async_trait]
pub trait Wraps: Send + Sync {
    /// The wrapped adapter.
    fn inner(&self) -> &dyn Adapter;

    /// Whether the framework's own tools are forwarded: by default as the wrapped adapter does.
    fn supports_tools_through(&self) -> bool {
        self.inner().supports_tools()
    }

    /// Makes one call, usually through [`Wraps::inner`].
    async fn call_through(
        &self,
        req: AdapterCallRequest,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError>;
}

#[async_trait::async_trait]
impl<W: Wraps> Adapter for W {
    fn name(&self) -> &str {
        self.inner().name()
    }

    fn spec(&self) -> Option<&'static AdapterSpec> {
        self.inner().spec()
    }

    fn endpoint(&self) -> String {
        self.inner().endpoint()
    }

    fn wire_mode(&self, schema: Option<&ResponseSchema>) -> StructuredOutputMode {
        self.inner().wire_mode(schema)
    }

    fn supports_tools(&self) -> bool {
        self.supports_tools_through()
    }

    fn accepts(&self, model: &str) -> Accepts {
        self.inner().accepts(model)
    }

    async fn settle_mode(
        &self,
        model: &str,
        schema: Option<&ResponseSchema>,
        cx: &CallCx,
    ) -> Result<StructuredOutputMode, AdapterError> {
        self.inner().settle_mode(model, schema, cx).await
    }

    async fn call(
        &self,
        req: AdapterCallRequest,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        self.call_through(req, cx).await
    }
}
