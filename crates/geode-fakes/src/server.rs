//! The running fake: an HTTP/1.1 server on `127.0.0.1` that records every request and answers
//! model calls from its [`Script`].
//!
//! Contract:
//! - [`FakeServer::start`] binds before it returns, so [`FakeServer::base_url`] is usable at
//!   once. Port 0 (the default) picks a free ephemeral port per instance.
//! - Every request is recorded (see [`crate::record`]) before it is answered, including
//!   requests that are then reset, cut, delayed or left hanging.
//! - Dropping the server (or [`FakeServer::shutdown`]) stops accepting and closes every open
//!   connection, including hanging ones; nothing keeps running afterwards.
//! - With [`FakeServerBuilder::tls`] it serves HTTPS instead (see [`crate::tls`]).
//! - A request whose body is over 64 MiB (or never fully arrives) gets a 413 and is the one
//!   kind of request that is not recorded.

use crate::deliver::{Body, Ending, FILL_TEXT_UNIT, deliver, full};
use crate::faults;
use crate::kind::Kind;
use crate::plan::{Call, Content, Ids, Plan, Route};
use crate::record::{RecordedRequest, decode_body, mask_body, mask_header, mask_path, parse_json};
use crate::script::{Player, Reply, Script};
use crate::tls::TlsIdentity;
use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::CONTENT_ENCODING;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::oneshot;
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;

/// The text a [`Reply::StreamCut`] starts to send.
const CUT_TEXT: &str = "This answer is cut off before it ends.";
const MAX_BODY: usize = 64 << 20;
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);

/// A running fake provider (see the module docs). Stops when dropped.
#[derive(Debug)]
pub struct FakeServer {
    kind: Kind,
    addr: SocketAddr,
    state: Arc<State>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

/// Options for [`FakeServer`]; start with [`FakeServer::builder`].
#[derive(Debug)]
pub struct FakeServerBuilder {
    kind: Kind,
    script: Script,
    port: u16,
    tap: Option<UnboundedSender<RecordedRequest>>,
    tls: Option<TlsIdentity>,
    schema_support: SchemaSupport,
}

/// How a Chat fake treats `response_format: json_schema` when geode's `openai-compatible`
/// adapter probes it ([`crate::chat::is_probe`]): the probe is answered by this setting and
/// never takes a step of the script, so scripts describe the real calls only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SchemaSupport {
    /// Enforces the schema: the probe gets an instance of it (the nonce).
    #[default]
    Enforce,
    /// Answers 200 with prose, ignoring the schema.
    Ignore,
    /// Refuses `json_schema` with a 400 naming `response_format`.
    Refuse,
}

impl SchemaSupport {
    fn probe_reply(self) -> Reply {
        match self {
            Self::Enforce => Reply::Auto,
            Self::Ignore => Reply::text("Hello! How can I help you today?"),
            Self::Refuse => {
                Reply::SchemaRejection("response_format type json_schema is not supported".into())
            }
        }
    }
}

impl FakeServerBuilder {
    /// How a Chat fake answers the `openai-compatible` probe (default: it enforces the schema).
    pub fn schema_support(mut self, support: SchemaSupport) -> Self {
        self.schema_support = support;
        self
    }

    /// The replies to play (default: an empty script, which answers [`Reply::Auto`]).
    pub fn script(mut self, script: Script) -> Self {
        self.script = script;
        self
    }

    /// Listens on this port of 127.0.0.1 instead of an ephemeral one.
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Also sends each recorded request (already masked) to `tap`, e.g. to log it live.
    pub fn tap(mut self, tap: UnboundedSender<RecordedRequest>) -> Self {
        self.tap = Some(tap);
        self
    }

    /// Serves HTTPS with this identity (the base URL then starts with `https://`).
    pub fn tls(mut self, identity: TlsIdentity) -> Self {
        self.tls = Some(identity);
        self
    }

    /// Binds the port and starts serving on the current Tokio runtime.
    pub async fn start(self) -> std::io::Result<FakeServer> {
        let acceptor = match &self.tls {
            Some(identity) => Some(identity.acceptor().map_err(std::io::Error::other)?),
            None => None,
        };
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, self.port)).await?;
        let addr = listener.local_addr()?;
        let scheme = if acceptor.is_some() { "https" } else { "http" };
        let state = Arc::new(State {
            kind: self.kind,
            origin: format!("{scheme}://{addr}"),
            player: Player::new(self.script),
            ids: Ids::default(),
            log: Mutex::new(Vec::new()),
            tap: self.tap,
            schema_support: self.schema_support,
            open_bodies: Arc::default(),
        });
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(accept_loop(listener, Arc::clone(&state), acceptor, stopped));
        Ok(FakeServer {
            kind: self.kind,
            addr,
            state,
            stop: Some(stop),
            task: Some(task),
        })
    }
}

impl FakeServer {
    /// Starts a fake of `kind` playing `script` on an ephemeral port of 127.0.0.1.
    pub async fn start(kind: Kind, script: Script) -> std::io::Result<FakeServer> {
        FakeServer::builder(kind).script(script).start().await
    }

    /// A builder for the other options (fixed port, request tap, TLS).
    pub fn builder(kind: Kind) -> FakeServerBuilder {
        FakeServerBuilder {
            kind,
            script: Script::default(),
            port: 0,
            tap: None,
            tls: None,
            schema_support: SchemaSupport::default(),
        }
    }

    /// `"http://127.0.0.1:PORT"` (`https://` with TLS), without a trailing slash.
    pub fn base_url(&self) -> String {
        self.state.origin.clone()
    }

    /// The full URL for model calls of this kind, e.g. `http://127.0.0.1:PORT/v1/responses`.
    pub fn model_url(&self) -> String {
        format!("{}{}", self.state.origin, self.kind.model_path())
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The protocol this server speaks.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Model answers whose bodies are still being sent: 0 once every client has read its
    /// answer or gone away (how a test sees that a cancelled call closed its connection).
    pub fn open_bodies(&self) -> usize {
        self.state.open_bodies.load(Ordering::SeqCst)
    }

    /// Every request received so far, in arrival order (secrets masked).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state.lock_log().clone()
    }

    /// Stops the server and waits until its connections are closed.
    pub async fn shutdown(mut self) {
        self.stop.take();
        if let Some(task) = self.task.take() {
            // The loop ends by itself once `stop` is dropped; a panic in it is not ours to raise.
            let _ = task.await;
        }
    }
}

impl Drop for FakeServer {
    /// Signals the accept loop, which then aborts every connection (no waiting here).
    fn drop(&mut self) {
        self.stop.take();
    }
}

#[derive(Debug)]
struct State {
    kind: Kind,
    origin: String,
    player: Player,
    ids: Ids,
    log: Mutex<Vec<RecordedRequest>>,
    tap: Option<UnboundedSender<RecordedRequest>>,
    schema_support: SchemaSupport,
    /// Model answers whose bodies are still being sent.
    open_bodies: Arc<AtomicUsize>,
}

impl State {
    fn lock_log(&self) -> std::sync::MutexGuard<'_, Vec<RecordedRequest>> {
        self.log.lock().unwrap_or_else(|poison| poison.into_inner())
    }

    fn record(&self, request: RecordedRequest) {
        if let Some(tap) = &self.tap {
            // A closed tap only means nobody listens any more.
            let _ = tap.send(request.clone());
        }
        self.lock_log().push(request);
    }
}

/// Accepts connections until `stopped` fires or its sender is dropped, then aborts every
/// connection and waits for them to end.
async fn accept_loop(
    listener: TcpListener,
    state: Arc<State>,
    tls: Option<TlsAcceptor>,
    mut stopped: oneshot::Receiver<()>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve_connection(stream, Arc::clone(&state), tls.clone()));
                }
                // Out of file descriptors and the like: back off instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    connections.shutdown().await;
}

async fn serve_connection(stream: TcpStream, state: Arc<State>, tls: Option<TlsAcceptor>) {
    let _ = stream.set_nodelay(true);
    match tls {
        None => serve_io(stream, state).await,
        Some(acceptor) => {
            // A client that never finishes its handshake must not pin the task forever.
            if let Ok(Ok(stream)) =
                tokio::time::timeout(HANDSHAKE_LIMIT, acceptor.accept(stream)).await
            {
                serve_io(stream, state).await;
            }
        }
    }
}

async fn serve_io<I>(io: I, state: Arc<State>)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request| handle(Arc::clone(&state), request));
    // Connection errors (client went away, a scripted reset) end this connection only.
    let _ = http1::Builder::new()
        .serve_connection(TokioIo::new(io), service)
        .await;
}

/// The error that makes hyper close a connection without answering ([`Reply::ConnectionReset`]).
#[derive(Debug, thiserror::Error)]
#[error("connection reset by the fake")]
struct ResetByScript;

async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
) -> Result<Response<Body>, ResetByScript> {
    let (parts, body) = request.into_parts();
    let raw = match Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return Ok(too_large()),
    };
    let encoding = parts
        .headers
        .get(CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok());
    let decoded = decode_body(encoding, &raw);
    let body = parse_json(decoded.as_deref());
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path().to_owned(), |pq| pq.as_str().to_owned());
    let headers = parts
        .headers
        .iter()
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes());
            (name.as_str().to_owned(), mask_header(name.as_str(), &value))
        })
        .collect();
    let mut record = RecordedRequest {
        method: parts.method.as_str().to_owned(),
        path: mask_path(&path),
        headers,
        body: body.clone(),
        raw_body_len: raw.len(),
    };
    // Routing sees presence of headers and the unmasked body; the log sees the masked one.
    let route = state.kind.route(&record, &state.origin, &state.ids);
    mask_body(&mut record.body);
    state.record(record);
    match route {
        Route::Reply(plan) => Ok(deliver(plan, Duration::ZERO, Ending::Complete).await),
        Route::Model if state.kind == Kind::Chat && crate::chat::is_probe(&body) => {
            play(&state, &body, state.schema_support.probe_reply()).await
        }
        Route::Model => play(&state, &body, state.player.next_reply()).await,
    }
}

/// Plays one scripted reply to a model call.
async fn play(state: &State, body: &Value, reply: Reply) -> Result<Response<Body>, ResetByScript> {
    let kind = state.kind;
    let call = Call {
        body,
        usage: state.player.usage(),
        ids: &state.ids,
    };
    let mut delay = Duration::ZERO;
    let mut reply = reply;
    let complete = |content: Content| (kind.answer(&call, &content), Ending::Complete);
    let (plan, ending) = loop {
        break match reply {
            Reply::SlowBody { delay_ms, then } => {
                delay = delay.saturating_add(Duration::from_millis(delay_ms));
                reply = *then;
                continue;
            }
            Reply::ConnectionReset => {
                tokio::time::sleep(delay).await;
                return Err(ResetByScript);
            }
            Reply::IgnoreStream(then) => {
                let mut whole = body.clone();
                if let Some(stream) = whole.get_mut("stream") {
                    *stream = Value::Bool(false);
                }
                tokio::time::sleep(delay).await;
                return Box::pin(play(state, &whole, *then)).await;
            }
            Reply::Hang => std::future::pending().await,
            Reply::StreamCut => (
                kind.answer(&call, &Content::Text(CUT_TEXT.to_owned())),
                Ending::Cut,
            ),
            Reply::HangMidBody => (
                kind.answer(&call, &Content::Text(CUT_TEXT.to_owned())),
                Ending::CutThenHang,
            ),
            Reply::HangMidText(text) => (
                kind.answer(&call, &Content::Text(text)),
                Ending::CutThenHang,
            ),
            Reply::ResetMidBody => (
                kind.answer(&call, &Content::Text(CUT_TEXT.to_owned())),
                Ending::CutThenReset,
            ),
            Reply::Endless => (
                kind.answer(&call, &Content::Text(FILL_TEXT_UNIT.repeat(64))),
                Ending::Endless,
            ),
            Reply::Garbage => (faults::garbage(&call), Ending::Complete),
            Reply::Html => (faults::html(), Ending::Complete),
            Reply::InBandError(message) => (kind.in_band_error(&call, &message), Ending::Complete),
            Reply::ResponseFailed(message) => {
                (kind.response_failed(&call, &message), Ending::Complete)
            }
            Reply::Status {
                status,
                body,
                retry_after,
            } => {
                let body = if body.is_null() {
                    kind.error_body(status)
                } else {
                    body
                };
                let mut plan = Plan::json(status, body);
                if let Some(secs) = retry_after {
                    plan = plan.with_header("retry-after", secs.to_string());
                }
                (plan, Ending::Complete)
            }
            Reply::SchemaRejection(message) => (
                Plan::json(400, kind.schema_rejection(&message)),
                Ending::Complete,
            ),
            Reply::Auto => complete(kind.auto(body)),
            Reply::CallOfferedTool => complete(kind.call_offered_tool(body)),
            Reply::Text(text) => complete(Content::Text(text)),
            Reply::Json(value) => complete(Content::Text(value.to_string())),
            Reply::ToolCall { name, arguments } => {
                let arguments = if arguments.is_null() {
                    Value::Object(serde_json::Map::new())
                } else {
                    arguments
                };
                complete(Content::ToolCall { name, arguments })
            }
            Reply::Refusal(text) => complete(Content::Refusal(text)),
            Reply::MaxTokens(text) => complete(Content::MaxTokens(text)),
        };
    };
    let response = deliver(plan, delay, ending).await;
    Ok(response.map(|body| counted(body, state.open_bodies.clone())))
}

/// Counts `body` among the server's open answer bodies until hyper drops it (sent in full, or
/// the client went away).
fn counted(body: Body, open: Arc<AtomicUsize>) -> Body {
    struct Open(Arc<AtomicUsize>);
    impl Drop for Open {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }
    open.fetch_add(1, Ordering::SeqCst);
    let guard = Open(open);
    body.map_frame(move |frame| {
        let _ = &guard;
        frame
    })
    .boxed()
}

fn too_large() -> Response<Body> {
    let mut response = Response::new(full(Bytes::from_static(
        b"{\"error\":{\"message\":\"request body too large\"}}",
    )));
    *response.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
    response
}
