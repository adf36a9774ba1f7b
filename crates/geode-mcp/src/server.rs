//! The MCP server: the contracts' tools listed for the peer's protocol version, and each call
//! run through the worker, at most [`Limits::max_in_flight`] at once, with progress
//! notifications while the model writes and the upstream call dropped when the client cancels.

use crate::outcome;
use crate::tools::{ContractTool, arguments_refused_as_result, takes_any_root};
use geode::Client;
use geode::config::Settings;
use rmcp::ErrorData as McpError;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;

/// How often a call with a progress token is reported while it runs.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// The server's bounds.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Tool calls run at once; a call beyond it is refused with `isError` at once.
    pub max_in_flight: usize,
}

/// Serves every contract of the settings as a tool. Cheap to clone: every session of the HTTP
/// transport shares one client and one concurrency bound.
#[derive(Clone)]
pub struct ContractServer {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    settings: Settings,
    tools: BTreeMap<String, ContractTool>,
    slots: Arc<Semaphore>,
    limits: Limits,
}

impl ContractServer {
    /// A server for the contracts of `settings`, run on `client`.
    pub fn new(client: Client, settings: Settings, limits: Limits) -> Self {
        let tools = settings
            .contracts
            .iter()
            .map(|(name, c)| (name.clone(), ContractTool::new(c.clone())))
            .collect();
        Self {
            inner: Arc::new(Inner {
                client,
                slots: Arc::new(Semaphore::new(limits.max_in_flight.max(1))),
                settings,
                tools,
                limits,
            }),
        }
    }

    /// How many tools it serves.
    pub fn tool_count(&self) -> usize {
        self.inner.tools.len()
    }
}

impl ServerHandler for ContractServer {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("geode", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Each tool is a named contract: a model answers it, geode validates the answer \
                 against the tool's outputSchema (one retry with the validator's feedback), and \
                 the guarantee ledger is under _meta[\"dev.geode/ledger\"].",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let version = context.protocol_version();
        Ok(ListToolsResult::with_all_items(
            self.inner
                .tools
                .values()
                .map(|t| t.tool(version.as_ref()))
                .collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.tools.get(name).map(|t| t.tool(None))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let version = context.protocol_version();
        let Some(tool) = self.inner.tools.get(request.name.as_ref()) else {
            let shown: String = request.name.chars().take(128).collect();
            return Err(McpError::invalid_params(
                format!("unknown tool {shown:?}"),
                None,
            ));
        };
        let args = request.arguments.unwrap_or_default();
        let task = match tool.contract.task(&args, &self.inner.settings) {
            Ok(t) => t,
            Err(e) if arguments_refused_as_result(version.as_ref()) => {
                return Ok(outcome::bad_arguments(&e).into());
            }
            Err(e) => return Err(McpError::invalid_params(e.to_string(), None)),
        };
        let Ok(_slot) = self.inner.slots.clone().try_acquire_owned() else {
            return Ok(outcome::busy(self.inner.limits.max_in_flight).into());
        };
        let received = Arc::new(AtomicUsize::new(0));
        let progress = context.meta.get_progress_token();
        let counter = received.clone();
        let run = self.inner.client.run_task(task, |_, env| {
            if progress.is_some() {
                env.on_text = Some(geode::TextSink::new(move |delta| {
                    counter.fetch_add(delta.len(), Ordering::Relaxed);
                }));
            }
        });
        tokio::pin!(run);
        let mut ticks =
            tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
        let mut seconds = 0u64;
        let outcome = loop {
            tokio::select! {
                outcome = &mut run => break outcome,
                // Dropping the run closes its upstream connection (or ends its CLI process).
                () = context.ct.cancelled() => {
                    return Err(McpError::internal_error("the call was cancelled", None));
                }
                _ = ticks.tick(), if progress.is_some() => {
                    seconds += 1;
                    if let Some(token) = progress.clone() {
                        let bytes = received.load(Ordering::Relaxed);
                        let mut note = ProgressNotificationParam::new(token, seconds as f64);
                        note.message = Some(format!(
                            "{seconds} s: {bytes} bytes of the answer so far"
                        ));
                        // A peer that cannot take it loses a notification, not the call.
                        let _ = context.peer.notify_progress(note).await;
                    }
                }
            }
        };
        Ok(match outcome {
            Ok(answer) => {
                let wrap = tool.wraps && !takes_any_root(version.as_ref());
                outcome::success(answer, wrap, version.as_ref())
            }
            Err(e) => outcome::failure(&e),
        }
        .into())
    }
}
