//! Not a fake: the real upstream `llama-server` (llama.cpp's OpenAI-compatible server) on
//! 127.0.0.1, for the `openai-compatible` adapter's tests and `make bench-peer`.
//!
//! The binary is the one `scripts/install-llama-server.sh` builds into
//! `${XDG_CACHE_HOME:-~/.cache}/geode/llama-server/<VERSION>/llama-server` (or
//! `$GEODE_LLAMA_SERVER`); a missing binary is [`LlamaServerError::Missing`], which names the
//! script. The server always listens on `--host 127.0.0.1` on a free port, its stderr goes to a
//! temporary log file (its tail is quoted when it fails to start), and dropping the
//! [`LlamaServer`] kills the process and waits for it, so nothing outlives the test or bench.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The pinned llama.cpp sdist version the install script builds.
pub const VERSION: &str = "11434.0.0";

/// The script that builds the binary.
pub const INSTALL_SCRIPT: &str = "scripts/install-llama-server.sh";

/// The variable overriding the binary's path.
pub const BINARY_ENV: &str = "GEODE_LLAMA_SERVER";

/// How long the server may take to load the model and answer `/health`.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// Why the server could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LlamaServerError {
    /// No binary at the expected path.
    #[error(
        "llama-server not found at {}: run {INSTALL_SCRIPT} (or `make setup`) to build it (about 6 minutes), or set {BINARY_ENV}",
        path.display()
    )]
    Missing {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The model file is missing.
    #[error("model not found at {}: run scripts/fetch-model.sh", path.display())]
    NoModel {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The process could not be spawned, or a port could not be found.
    #[error("cannot start llama-server: {0}")]
    Io(#[from] std::io::Error),
    /// The server exited or did not become ready in time.
    #[error("llama-server did not become ready ({why}); log tail:\n{log_tail}")]
    NotReady {
        /// What happened.
        why: String,
        /// The end of its stderr.
        log_tail: String,
    },
}

/// The binary's path: `$GEODE_LLAMA_SERVER`, else the install script's cache path.
pub fn binary_path() -> PathBuf {
    if let Some(p) = std::env::var_os(BINARY_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    cache_dir()
        .join("geode/llama-server")
        .join(VERSION)
        .join("llama-server")
}

/// The SmolLM2 GGUF the local adapter uses: `$GEODE_LOCAL_MODEL`, else the model cache.
pub fn model_path() -> PathBuf {
    if let Some(p) = std::env::var_os("GEODE_LOCAL_MODEL").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    cache_dir().join("geode/models/SmolLM2-135M-Instruct.Q4_1.gguf")
}

fn cache_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"))
}

/// How to run the server.
#[derive(Debug, Clone)]
pub struct LlamaServerOptions {
    /// The GGUF file.
    pub model: PathBuf,
    /// CPU threads (`-t` and `-tb`).
    pub threads: u32,
    /// Context window in tokens (`-c`).
    pub ctx: u32,
}

impl Default for LlamaServerOptions {
    /// [`model_path`], 2 threads, a 4,096-token context: the local adapter's settings.
    fn default() -> Self {
        Self {
            model: model_path(),
            threads: 2,
            ctx: 4096,
        }
    }
}

/// A running llama-server; killed and reaped when dropped.
#[derive(Debug)]
pub struct LlamaServer {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl LlamaServer {
    /// Starts the server with `options` and waits until `/health` answers 200.
    pub fn start(options: &LlamaServerOptions) -> Result<Self, LlamaServerError> {
        let binary = binary_path();
        if !binary.is_file() {
            return Err(LlamaServerError::Missing { path: binary });
        }
        if !options.model.is_file() {
            return Err(LlamaServerError::NoModel {
                path: options.model.clone(),
            });
        }
        let port = free_port()?;
        let log = std::env::temp_dir().join(format!(
            "geode-llama-server-{}-{port}.log",
            std::process::id()
        ));
        let stderr = std::fs::File::create(&log)?;
        let threads = options.threads.to_string();
        let child = Command::new(&binary)
            .arg("-m")
            .arg(&options.model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["-c", &options.ctx.to_string(), "-np", "1"])
            .args(["-t", &threads, "-tb", &threads, "--jinja"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn();
        let child = match child {
            Ok(c) => c,
            Err(e) => {
                let _ = std::fs::remove_file(&log);
                return Err(e.into());
            }
        };
        let mut server = Self { child, port, log };
        server.wait_ready()?;
        Ok(server)
    }

    fn wait_ready(&mut self) -> Result<(), LlamaServerError> {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Err(self.not_ready(format!("exited with {status}")));
            }
            if health(self.port) == Some(200) {
                return Ok(());
            }
            if started.elapsed() > READY_WITHIN {
                return Err(self.not_ready(format!("no 200 on /health within {READY_WITHIN:?}")));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn not_ready(&self, why: String) -> LlamaServerError {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n");
        LlamaServerError::NotReady {
            why,
            log_tail: tail,
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The OpenAI-style base URL, `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.origin())
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The log file (stderr).
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// Kills the process (SIGKILL) and reaps it. Idempotent.
    pub fn kill(&mut self) -> std::io::Result<()> {
        if self.child.try_wait()?.is_none() {
            self.child.kill()?;
        }
        self.child.wait().map(drop)
    }

    /// Whether the process has exited (and been reaped).
    pub fn has_exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.kill();
        let _ = std::fs::remove_file(&self.log);
    }
}

fn free_port() -> std::io::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}

/// The status of `GET /health`, or `None` when nothing answers.
fn health(port: u16) -> Option<u16> {
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream
        .write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .ok()?;
    let mut head = [0u8; 16];
    let n = stream.read(&mut head).ok()?;
    let line = std::str::from_utf8(&head[..n]).ok()?;
    line.split_whitespace().nth(1)?.parse().ok()
}
