//! The parent side of the protocol: [`EngineProcess`], an adapter whose calls are served by a
//! long-lived engine process (see the module table in [`super`]).

use super::{EngineCall, EngineLine};
use crate::llm::adapter::Adapter;
use crate::llm::call::{AdapterError, CallCx};
use crate::llm::registry::AdapterSpec;
use crate::llm::request::{AdapterCallRequest, AdapterResponse};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// The variable naming the engine binary (default: `geode-engine` beside the running binary).
pub const ENGINE_BIN_ENV: &str = "GEODE_ENGINE_BIN";

/// How much of the engine's stderr is kept for error messages.
const STDERR_TAIL: usize = 2048;

/// A running engine: its pipes and the tail of its stderr. Dropping it kills the process.
struct Engine {
    _child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    stderr_tail: Arc<Mutex<Vec<u8>>>,
    /// Reads stderr into the tail until the engine closes it.
    stderr_reader: tokio::task::JoinHandle<()>,
}

/// An adapter served by an engine process (`geode-engine`), started on the first call and
/// kept for the next ones; calls are served one at a time, in order.
pub struct EngineProcess {
    name: String,
    spec: Option<&'static AdapterSpec>,
    program: PathBuf,
    engine: tokio::sync::Mutex<Option<Engine>>,
}

impl std::fmt::Debug for EngineProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineProcess")
            .field("name", &self.name)
            .field("program", &self.program)
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
            engine: tokio::sync::Mutex::new(None),
        }
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
        let mut child = tokio::process::Command::new(&self.program)
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
        let stderr_tail = Arc::new(Mutex::new(Vec::new()));
        let tail = stderr_tail.clone();
        let stderr_reader = tokio::spawn(async move {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = stderr.read(&mut chunk).await {
                let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
                t.extend_from_slice(&chunk[..n]);
                let excess = t.len().saturating_sub(STDERR_TAIL);
                t.drain(..excess);
            }
        });
        Ok(Engine {
            _child: child,
            stdin,
            stdout: BufReader::new(stdout).lines(),
            stderr_tail,
            stderr_reader,
        })
    }

    /// One exchange on `engine`: the call line out, deltas and the end back.
    async fn exchange(
        &self,
        engine: &mut Engine,
        req: AdapterCallRequest,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        let call = EngineCall {
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
        let lost = |what: String| {
            let tail = engine_tail(&engine.stderr_tail);
            self.error(|adapter| AdapterError::Transport {
                adapter,
                message: format!("the engine {what}{tail}"),
            })
        };
        if let Err(e) = engine.stdin.write_all(&line).await {
            return Err(lost(format!("does not take calls ({e})")));
        }
        let _ = engine.stdin.flush().await;
        let mut streamed: u64 = 0;
        loop {
            let next = match engine.stdout.next_line().await {
                Ok(Some(l)) => l,
                Ok(None) => {
                    // Its last words may still be in the pipe.
                    let _ = tokio::time::timeout(
                        std::time::Duration::from_millis(500),
                        &mut engine.stderr_reader,
                    )
                    .await;
                    return Err(lost("exited mid-call".to_owned()));
                }
                Err(e) => return Err(lost(format!("output is unreadable ({e})"))),
            };
            match serde_json::from_str::<EngineLine>(&next) {
                Ok(EngineLine::Text { text }) => {
                    streamed = streamed.saturating_add(text.len() as u64);
                    if streamed > cx.max_response_bytes {
                        return Err(cx.response_too_large(&self.name));
                    }
                    cx.text_delta(&text);
                }
                Ok(EngineLine::Done { response }) => return Ok(response),
                Ok(EngineLine::Failed { error }) => return Err(error),
                Err(e) => {
                    return Err(self.error(|adapter| AdapterError::Protocol {
                        adapter,
                        message: format!("the engine wrote a line that is not the protocol: {e}"),
                    }));
                }
            }
        }
    }
}

/// `: <last stderr line>` when the engine said something, for error messages.
fn engine_tail(tail: &Mutex<Vec<u8>>) -> String {
    let t = tail.lock().unwrap_or_else(|p| p.into_inner());
    let text = String::from_utf8_lossy(&t);
    match text.lines().rev().find(|l| !l.trim().is_empty()) {
        Some(last) => format!(": {}", crate::secret::scrub(last.trim())),
        None => String::new(),
    }
}

#[async_trait::async_trait]
impl Adapter for EngineProcess {
    fn name(&self) -> &str {
        &self.name
    }

    fn spec(&self) -> Option<&'static AdapterSpec> {
        self.spec
    }

    async fn call(
        &self,
        req: AdapterCallRequest,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        cx.run(&self.name, async {
            let mut slot = self.engine.lock().await;
            // Taken out for the exchange: if the call is dropped mid-way (cancelled, deadline)
            // or fails, the engine is dropped, which kills it; only a clean end puts it back.
            let mut engine = match slot.take() {
                Some(engine) => engine,
                None => self.start()?,
            };
            let result = self.exchange(&mut engine, req, cx).await;
            let keep = match &result {
                Ok(_) => true,
                Err(e) => !matches!(
                    e,
                    AdapterError::Transport { .. }
                        | AdapterError::Protocol { .. }
                        | AdapterError::ResponseTooLarge { .. }
                ),
            };
            if keep {
                *slot = Some(engine);
            }
            result
        })
        .await
    }
}
