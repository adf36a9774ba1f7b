//! The streamable HTTP transport: rmcp's service at `/mcp`, behind the gateway's inbound keys
//! (`Authorization: Bearer KEY`, compared in constant time; none on a loopback bind without
//! keys), with a bound on request bodies. Legacy peers (before 2026-07-28) get sessions, later
//! ones are served statelessly, as rmcp does.

use crate::ContractServer;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use geode_gateway::auth::InboundKeys;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The path the MCP endpoint is served at.
pub const PATH: &str = "/mcp";

/// How the HTTP transport is bounded.
#[derive(Debug, Clone)]
pub struct HttpLimits {
    /// The largest request body, in bytes (413 beyond it).
    pub max_body_bytes: usize,
}

/// Serves `server` on `listener` until `shutdown` resolves; then open streams are closed and
/// calls in flight dropped (their upstream calls with them).
pub async fn serve(
    server: ContractServer,
    listener: tokio::net::TcpListener,
    keys: InboundKeys,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let local: SocketAddr = listener.local_addr()?;
    let stop = CancellationToken::new();
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(stop.child_token())
        .with_max_request_body_bytes(limits.max_body_bytes);
    // On loopback, the Host check stops a web page from reaching the server through DNS
    // rebinding. Off it, inbound keys are required, and the hosts clients use are the
    // operator's to know.
    if !local.ip().is_loopback() {
        config = config.disable_allowed_hosts();
    }
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let app = axum::Router::new()
        .route_service(PATH, service)
        .layer(axum::middleware::from_fn_with_state(Arc::new(keys), admit));
    let stopping = stop.clone();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            stopping.cancel();
        })
        .await
}

/// Lets a request through when it holds an inbound key (or none is required); removes its
/// `Authorization` header either way, so nothing below sees the key.
async fn admit(State(keys): State<Arc<InboundKeys>>, mut request: Request, next: Next) -> Response {
    let given = request
        .headers_mut()
        .remove(header::AUTHORIZATION)
        .map(|v| v.as_bytes().to_vec());
    if keys.is_empty() || keys.admits(given.as_deref()) {
        return next.run(request).await;
    }
    let mut response = (
        StatusCode::UNAUTHORIZED,
        "geode mcp: a missing or wrong inbound key (Authorization: Bearer KEY)\n",
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}
