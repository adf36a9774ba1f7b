//! The parent side of the protocol: [`EngineProcess`], an adapter whose calls are served by a
//! long-lived engine process (see the module table in [`super`]). Calls run concurrently over
//! one engine: each is sent with its own id and a reader task routes the engine's lines back
//! by id.

use super::{EngineCall, EngineCancel, EngineLine, EngineReply};
use crate::llm::adapter::Adapter;
use crate::llm::call::{AdapterError, CallCx};
use crate::llm::registry::AdapterSpec;
use crate::llm::request::{AdapterCallRequest, AdapterResponse};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::mpsc;

/// The variable naming the engine binary (default: `geode-engine` beside the running binary).
pub const ENGINE_BIN_ENV: &str = "GEODE_ENGINE_BIN";

/// How long the engine has to end a call after it was cancelled (or passed its deadline or
/// its response budget) before it is killed as hung.
pub const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// OpenMP's wait policy; when the caller sets it (or [`GOMP_SPINCOUNT`]), the engine gets the
/// caller's choice.
const OMP_WAIT_POLICY: &str = "OMP_WAIT_POLICY";
/// How long libgomp's threads spin before sleeping; the engine is started with 10,000 unless
/// the caller chose.
const GOMP_SPINCOUNT: &str = "GOMP_SPINCOUNT";

/// How much of the engine's stderr is kept for error messages.
const STDERR_TAIL: usize = 2048;

/// The routes from call ids to their callers, and whether the engine is gone.
#[derive(Default)]
struct Routes {
    calls: Mutex<BTreeMap<u64, mpsc::UnboundedSender<EngineLine>>>,
    /// Set once the engine's output ended or it was killed: the next call starts another.
    dead: AtomicBool,
    stderr_tail: Mutex<Vec<u8>>,
}

impl Routes {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, mpsc::UnboundedSender<EngineLine>>> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hands `reply` to its call: by id, or (an engine that sends no ids serves one call at a
    /// time) to the oldest call. The route ends with the call's last line.
    fn deliver(&self, reply: EngineReply) {
        let mut calls = self.lock();
        let id = match reply.id {
            Some(id) => id,
            None => match calls.keys().next() {
                Some(id) => *id,
                None => return,
            },
        };
        let last = !matches!(reply.line, EngineLine::Text { .. });
        if let Some(route) = calls.get(&id) {
            let _ = route.send(reply.line);
        }
        if last {
            calls.remove(&id);
        }
    }

    /// The engine is gone: every call in flight sees its route close.
    fn close(&self) {
        self.dead.store(true, Ordering::SeqCst);
        self.lock().clear();
    }

    /// `: <last stderr line>` when the engine said something, for error messages.
    fn tail(&self) -> String {
        let t = self.stderr_tail.lock().unwrap_or_else(|p| p.into_inner());
        let text = String::from_utf8_lossy(&t);
        match text.lines().rev().find(|l| !l.trim().is_empty()) {
            Some(last) => format!(": {}", crate::secret::scrub(last.trim())),
            None => String::new(),
        }
    }
}

/// A running engine shared by the calls in flight. Dropping it kills the process.
struct Engine {
    child: Mutex<Option<Child>>,
    stdin: tokio::sync::Mutex<ChildStdin>,
    routes: Arc<Routes>,
    /// Reads the engine's stdout into the routes.
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Engine {
    /// Kills the process (a hung or broken engine); the calls in flight fail.
    fn kill(&self) {
        let child = self.child.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(mut child) = child {
            let _ = child.start_kill();
        }
        self.routes.close();
    }

    async fn send(&self, line: &[u8]) -> std::io::Result<()> {
        let mut stdin = self.stdin.lock().await;
        stdin.write_all(line).await?;
        stdin.flush().await
    }
}

/// Reads the engine's lines and routes them until its stdout ends or is not the protocol.
async fn read_lines(
    stdout: ChildStdout,
    routes: Arc<Routes>,
    stderr_reader: tokio::task::JoinHandle<()>,
    adapter: String,
) {
    let mut lines = BufReader::new(stdout).lines();
    loop {
        match lines.next_line().await {
            Ok(Some(line)) => match serde_json::from_str::<EngineReply>(&line) {
                Ok(reply) => routes.deliver(reply),
                Err(e) => {
                    let message = format!("the engine wrote a line that is not the protocol: {e}");
                    let calls = std::mem::take(&mut *routes.lock());
                    for route in calls.values() {
                        let error = AdapterError::Protocol {
                            adapter: adapter.clone(),
                            message: message.clone(),
                        };
                        let _ = route.send(EngineLine::Failed { error });
                    }
                    break;
                }
            },
            Ok(None) | Err(_) => {
                // Its last words may still be in the pipe.
                let _ = tokio::time::timeout(Duration::from_millis(500), stderr_reader).await;
                break;
            }
        }
    }
    routes.close();
}

/// An adapter served by an engine process (`geode-engine`), started on the first call and
/// kept for the next ones; concurrent calls are sent to it together.
pub struct EngineProcess {
    name: String,
    spec: Option<&'static AdapterSpec>,
    program: PathBuf,
    args: Vec<OsString>,
    vars: Vec<(String, String)>,
    engine: Mutex<Option<Arc<Engine>>>,
    next_id: AtomicU64,
}

impl std::fmt::Debug for EngineProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineProcess")
            .field("name", &self.name)
            .field("program", &self.program)
            .field("args", &self.args)
            .field(
                "vars",
                &self.vars.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl EngineProcess {
    /// The adapter `name` (its registry row, if any, describes it) served by `program`.
    pub fn new(name: &str, program: impl Into<PathBuf>) -> Self {
        Self {
            name: name.to_owned(),
            spec: crate::llm::registry::spec(name),
            program: program.into(),
            args: Vec::new(),
            vars: Vec::new(),
            engine: Mutex::new(None),
            next_id: AtomicU64::new(1),
        }
    }

    /// Starts the engine with these arguments (an interpreter serving the engine from a module,
    /// as the Python package does: the interpreter running `geode._engine`).
    #[must_use]
    pub fn with_args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args = args.into_iter().map(Into::into).collect();
        self
    }

    /// Sets these variables in the engine's environment (a caller's own settings for the
    /// engine, such as `GEODE_LOCAL_MODEL`, that are not in this process's environment).
    #[must_use]
    pub fn with_vars(mut self, vars: impl IntoIterator<Item = (String, String)>) -> Self {
        self.vars = vars.into_iter().collect();
        self
    }

    /// The engine binary: `$GEODE_ENGINE_BIN`, else `geode-engine` in the running binary's
    /// directory.
    pub fn default_program(env: &dyn crate::llm::registry::Environment) -> PathBuf {
        if let Some(bin) = env.var(ENGINE_BIN_ENV) {
            return PathBuf::from(bin);
        }
        let beside = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(|dir| dir.join("geode-engine")));
        beside.unwrap_or_else(|| PathBuf::from("geode-engine"))
    }

    fn error(&self, make: impl FnOnce(String) -> AdapterError) -> AdapterError {
        make(self.name.clone())
    }

    fn start(&self) -> Result<Engine, AdapterError> {
        let mut command = tokio::process::Command::new(&self.program);
        command.args(&self.args).envs(self.vars.iter().cloned());
        if std::env::var_os(OMP_WAIT_POLICY).is_none() && std::env::var_os(GOMP_SPINCOUNT).is_none()
        {
            // llama.cpp's OpenMP threads spin at every barrier (300,000 turns by default)
            // before sleeping: on a busy 2-core machine they take the cores from each other
            // and from every other process (a Decision call beside two busy loops: 4.1 s).
            // Not spinning at all (`OMP_WAIT_POLICY=passive`) costs a futex wake-up per
            // barrier (1.1 s where spinning takes 0.56 s on a quiet machine). A short spin is
            // as fast as either in both cases (0.56 s quiet, 1.1 s beside the busy loops).
            command.env(GOMP_SPINCOUNT, "10000");
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                self.error(|adapter| AdapterError::Config {
                    adapter,
                    message: format!(
                        "cannot start the engine {} ({e}); build it with `cargo build -p geode-local` or set {ENGINE_BIN_ENV}",
                        self.program.display()
                    ),
                })
            })?;
        let (Some(stdin), Some(stdout), Some(mut stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(self.error(|adapter| AdapterError::Transport {
                adapter,
                message: "the engine's pipes are missing".to_owned(),
            }));
        };
        let routes = Arc::new(Routes::default());
        let tail = routes.clone();
        let stderr_reader = tokio::spawn(async move {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = stderr.read(&mut chunk).await {
                let mut t = tail.stderr_tail.lock().unwrap_or_else(|p| p.into_inner());
                t.extend_from_slice(&chunk[..n]);
                let excess = t.len().saturating_sub(STDERR_TAIL);
                t.drain(..excess);
            }
        });
        let reader = tokio::spawn(read_lines(
            stdout,
            routes.clone(),
            stderr_reader,
            self.name.clone(),
        ));
        Ok(Engine {
            child: Mutex::new(Some(child)),
            stdin: tokio::sync::Mutex::new(stdin),
            routes,
            reader,
        })
    }

    /// The running engine, started when there is none or the last one is gone.
    fn engine(&self) -> Result<Arc<Engine>, AdapterError> {
        let mut slot = self.engine.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(engine) = slot.as_ref()
            && !engine.routes.dead.load(Ordering::SeqCst)
        {
            return Ok(engine.clone());
        }
        let engine = Arc::new(self.start()?);
        *slot = Some(engine.clone());
        Ok(engine)
    }

    /// One exchange: the call line out, deltas and the end back. If it is dropped or ends
    /// early (cancelled, deadline, budget), its [`Pending`] asks the engine to stop the call.
    async fn exchange(
        &self,
        req: AdapterCallRequest,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        let engine = self.engine()?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let call = EngineCall {
            id: Some(id),
            request: req,
            max_response_bytes: cx.max_response_bytes,
            timeout_ms: cx.remaining().map(|d| d.as_millis() as u64),
            stream: cx.on_text.is_some(),
        };
        let mut line = serde_json::to_vec(&call).map_err(|e| {
            self.error(|adapter| AdapterError::Protocol {
                adapter,
                message: format!("cannot encode the call: {e}"),
            })
        })?;
        line.push(b'\n');
        let (route, lines) = mpsc::unbounded_channel();
        engine.routes.lock().insert(id, route);
        let mut pending = Pending {
            engine: engine.clone(),
            id,
            lines: Some(lines),
        };
        let lost = |what: String| {
            let tail = engine.routes.tail();
            self.error(|adapter| AdapterError::Transport {
                adapter,
                message: format!("the engine {what}{tail}"),
            })
        };
        if let Err(e) = engine.send(&line).await {
            engine.kill();
            pending.lines = None;
            return Err(lost(format!("does not take calls ({e})")));
        }
        let mut streamed: u64 = 0;
        loop {
            let next = match pending.lines.as_mut() {
                Some(lines) => lines.recv().await,
                None => None,
            };
            match next {
                Some(EngineLine::Text { text }) => {
                    streamed = streamed.saturating_add(text.len() as u64);
                    if streamed > cx.max_response_bytes {
                        return Err(cx.response_too_large(&self.name));
                    }
                    cx.text_delta(&text);
                }
                Some(EngineLine::Done { response }) => {
                    pending.lines = None;
                    return Ok(response);
                }
                Some(EngineLine::Failed { error }) => {
                    pending.lines = None;
                    if matches!(error, AdapterError::Protocol { .. }) {
                        engine.kill();
                    }
                    return Err(error);
                }
                None => {
                    pending.lines = None;
                    return Err(lost("exited mid-call".to_owned()));
                }
            }
        }
    }
}

/// A call sent to the engine whose end has not been read. Dropped so (the call was cancelled,
/// passed its deadline or its budget), it asks the engine to cancel the call and kills an
/// engine that does not end it within [`CANCEL_GRACE`].
struct Pending {
    engine: Arc<Engine>,
    id: u64,
    lines: Option<mpsc::UnboundedReceiver<EngineLine>>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Some(mut lines) = self.lines.take() else {
            return;
        };
        let engine = self.engine.clone();
        let id = self.id;
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            engine.kill();
            return;
        };
        runtime.spawn(async move {
            let mut line = serde_json::to_vec(&EngineCancel { cancel: id }).unwrap_or_default();
            line.push(b'\n');
            let ended = async {
                engine.send(&line).await.ok()?;
                loop {
                    match lines.recv().await? {
                        EngineLine::Text { .. } => {}
                        EngineLine::Done { .. } | EngineLine::Failed { .. } => return Some(()),
                    }
                }
            };
            if tokio::time::timeout(CANCEL_GRACE, ended)
                .await
                .ok()
                .flatten()
                .is_none()
            {
                engine.kill();
            }
            engine.routes.lock().remove(&id);
        });
    }
}

#[async_trait::async_trait]
impl Adapter for EngineProcess {
    fn name(&self) -> &str {
        &self.name
    }

    fn endpoint(&self) -> String {
        // The program and what it is told: the model file comes in its arguments or variables.
        let told: Vec<String> = self
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .chain(self.vars.iter().map(|(k, v)| format!("{k}={v}")))
            .collect();
        format!("{} {}", self.program.display(), told.join(" "))
    }

    fn spec(&self) -> Option<&'static AdapterSpec> {
        self.spec
    }

    async fn call(
        &self,
        req: AdapterCallRequest,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        cx.run(&self.name, self.exchange(req, cx)).await
    }
}
