//! Run one child process with a deadline, a cancellation token and bounded capture.
//!
//! This is the only place in geode that starts processes, and it does it one way:
//!
//! | concern | what [`run`] does |
//! |---|---|
//! | program | an argv (never a shell); a bare name is looked up on `PATH`, a path must exist ([`resolve_program`] adds the `GEODE_*_BIN` override) |
//! | arguments | each one is checked against the kernel's single-argument limit ([`MAX_ARG_BYTES`]) before spawning |
//! | environment | cleared, then only [`BASE_ENV_ALLOW`], the spec's extra allowed names and its explicit variables |
//! | stdin | the spec's bytes are written, then the pipe is closed (concurrently with reading, so a chatty child cannot deadlock) |
//! | process group | the child leads a new group; everything it starts stays in that group unless it escapes on purpose |
//! | deadline / cancel | the whole group gets `SIGKILL`, the leader is reaped, and the pipes are drained for at most [`DRAIN_AFTER_KILL`] |
//! | normal exit | the group is killed too, so background children left behind do not outlive the call |
//! | drop | dropping the future kills the group (`killpg`) and the leader (`kill_on_drop`) |
//! | output | stdout and stderr are read concurrently, each capped at the spec's limit; the **tail** is kept and the dropped byte count reported |
//! | stdout lines | with [`ProcessSpec::stdout_lines`], each complete stdout line (without its `\n`, lossily decoded) is handed to a sink as it arrives, so an adapter can stream a CLI's JSON events; a line longer than [`MAX_STREAMED_LINE`] is not handed on (it is still captured) |
//! | stdout budget | with [`ProcessSpec::stdout_budget`], stdout past that many bytes ends the run like a deadline: the group is killed, the ending is [`Ending::OutputTooLarge`] |
//! | encoding | stdout must be UTF-8 ([`SubprocessError::NonUtf8`]); stderr is diagnostic and decoded lossily |
//!
//! The result ([`SubprocessOutput`]) carries how the process ended ([`Ending`]: exited, timed out or
//! cancelled; [`SubprocessOutput::timed_out`]), the partial output in every case, and the group id.
//!
//! Not guaranteed: a process that leaves the group (`setsid`, `setpgid`) is out of reach, and
//! orphans killed here are reaped by whatever init the machine runs (a container init that never
//! reaps leaves dead zombies behind; they hold no resources).
//! This module knows bytes and processes, never providers.

use crate::llm::call::TextSink;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop, ProcessGroup};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

mod pipes;
mod program;

use pipes::{TailBuffer, feed, pump};
pub use program::resolve_program;
use program::{locate, not_found};

/// The kernel's limit on one argument or environment string, NUL included (`MAX_ARG_STRLEN`,
/// 32 pages of 4 KiB). An argument of this many bytes or more is refused before spawning.
pub const MAX_ARG_BYTES: usize = 131_072;

/// Default cap on each captured stream (the tail is kept).
pub const DEFAULT_CAPTURE_BYTES: usize = 8 << 20;

/// How long the pipes are drained after the group was killed or the leader exited.
pub const DRAIN_AFTER_KILL: Duration = Duration::from_secs(2);

/// How long reaping the killed leader may take.
const REAP_BOUND: Duration = Duration::from_secs(5);

/// Parent environment variables every child may see (when set).
pub const BASE_ENV_ALLOW: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// Which output stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl std::fmt::Display for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Stdout => "stdout",
            Self::Stderr => "stderr",
        })
    }
}

/// A failure to run a process at all, or to read what it wrote.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubprocessError {
    /// The program does not exist or is not executable.
    #[error("program not found: {program} ({looked})")]
    NotFound {
        /// The program as given.
        program: String,
        /// Where it was looked for.
        looked: String,
    },
    /// An argument or environment string is over the kernel's single-string limit.
    #[error("{what} is {len} bytes, over the kernel's single-argument limit of {limit} bytes")]
    ArgTooLong {
        /// Which string (`argument 3`, `environment variable NAME`).
        what: String,
        /// Its length in bytes.
        len: usize,
        /// The limit, [`MAX_ARG_BYTES`].
        limit: usize,
    },
    /// Spawning failed.
    #[error("could not start {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// Waiting for or killing the process failed.
    #[error("lost track of {program}: {source}")]
    Wait {
        /// The program.
        program: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The captured stream is not UTF-8.
    #[error("{stream} of {program} is not UTF-8 (invalid byte at offset {offset})")]
    NonUtf8 {
        /// The program.
        program: String,
        /// The stream.
        stream: Stream,
        /// Offset of the first invalid byte in the captured text.
        offset: usize,
    },
}

/// What to run. `Debug` shows variable names but never their values.
#[derive(Clone)]
pub struct ProcessSpec {
    program: PathBuf,
    args: Vec<OsString>,
    env_allow: Vec<String>,
    env: Vec<(String, OsString)>,
    cwd: Option<PathBuf>,
    stdin: Vec<u8>,
    capture_limit: usize,
    stdout_budget: Option<u64>,
    stdout_lines: Option<TextSink>,
}

/// The longest stdout line [`ProcessSpec::stdout_lines`] hands on (1 MiB).
pub const MAX_STREAMED_LINE: usize = 1 << 20;

impl std::fmt::Debug for ProcessSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessSpec")
            .field("program", &self.program)
            .field("args", &self.args.len())
            .field("env_allow", &self.env_allow)
            .field(
                "env",
                &self.env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            )
            .field("cwd", &self.cwd)
            .field("stdin_bytes", &self.stdin.len())
            .field("capture_limit", &self.capture_limit)
            .field("stdout_budget", &self.stdout_budget)
            .field("stdout_lines", &self.stdout_lines.is_some())
            .finish()
    }
}

impl ProcessSpec {
    /// Runs `program` (a path, or a bare name looked up on `PATH`) with no arguments, empty
    /// stdin and the default capture limit.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            env_allow: Vec::new(),
            env: Vec::new(),
            cwd: None,
            stdin: Vec::new(),
            capture_limit: DEFAULT_CAPTURE_BYTES,
            stdout_budget: None,
            stdout_lines: None,
        }
    }

    /// Hands each complete stdout line to `sink` as it arrives (see the module table).
    pub fn stdout_lines(mut self, sink: TextSink) -> Self {
        self.stdout_lines = Some(sink);
        self
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Appends arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Lets the child see the parent's variable `name`, when it is set.
    pub fn allow_env(mut self, name: impl Into<String>) -> Self {
        self.env_allow.push(name.into());
        self
    }

    /// Sets a variable for the child (it wins over an allowed parent variable).
    pub fn env(mut self, name: impl Into<String>, value: impl AsRef<OsStr>) -> Self {
        self.env.push((name.into(), value.as_ref().to_owned()));
        self
    }

    /// Runs the child in `dir`.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Bytes written to the child's stdin before it is closed.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = bytes.into();
        self
    }

    /// Caps each captured stream at `bytes` (the tail is kept).
    pub fn capture_limit(mut self, bytes: usize) -> Self {
        self.capture_limit = bytes.max(1);
        self
    }

    /// Ends the run when stdout passes `bytes` in total: the group is killed and the ending is
    /// [`Ending::OutputTooLarge`] (a runaway writer is stopped at once, not at the deadline).
    pub fn stdout_budget(mut self, bytes: u64) -> Self {
        self.stdout_budget = Some(bytes);
        self
    }

    /// The program as given.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The arguments.
    pub fn arguments(&self) -> &[OsString] {
        &self.args
    }

    /// What is written to the child's stdin.
    pub fn stdin_bytes(&self) -> &[u8] {
        &self.stdin
    }

    /// The names of the variables set explicitly.
    pub fn env_names(&self) -> impl Iterator<Item = &str> {
        self.env.iter().map(|(k, _)| k.as_str())
    }

    /// Checks every argument and explicit variable against [`MAX_ARG_BYTES`].
    pub fn check_sizes(&self) -> Result<(), SubprocessError> {
        let too_long = |what: String, len: usize| SubprocessError::ArgTooLong {
            what,
            len,
            limit: MAX_ARG_BYTES,
        };
        for (i, a) in self.args.iter().enumerate() {
            if a.len() >= MAX_ARG_BYTES {
                return Err(too_long(format!("argument {}", i + 1), a.len()));
            }
        }
        for (k, v) in &self.env {
            let len = k.len() + 1 + v.len();
            if len >= MAX_ARG_BYTES {
                return Err(too_long(format!("environment variable {k}"), len));
            }
        }
        Ok(())
    }
}

/// How the process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// It exited (or died of a signal it did not get from us).
    Exited(ExitStatus),
    /// The deadline passed; the group was killed.
    TimedOut,
    /// The token was cancelled; the group was killed.
    Cancelled,
    /// Stdout passed the spec's [`ProcessSpec::stdout_budget`]; the group was killed.
    OutputTooLarge {
        /// The budget in bytes.
        limit: u64,
    },
}

/// One captured stream: the tail of what was written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// The kept text (the last `capture_limit` bytes, cut at a character boundary).
    pub text: String,
    /// How many bytes were written before the kept tail and dropped.
    pub dropped_bytes: u64,
}

impl Captured {
    /// Whether bytes were dropped.
    pub fn truncated(&self) -> bool {
        self.dropped_bytes > 0
    }

    /// The last non-empty line, scrubbed of secrets ([`crate::secret::scrub`]), trimmed and cut
    /// to `max` characters (for one-line errors). Scrubbing comes before the cut.
    pub fn last_line(&self, max: usize) -> String {
        let text = crate::secret::scrub(&self.text);
        let line = text
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("");
        line.chars().take(max).collect()
    }
}

/// What a finished, timed-out or cancelled process left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubprocessOutput {
    /// How it ended.
    pub ending: Ending,
    /// Its standard output (tail).
    pub stdout: Captured,
    /// Its standard error (tail, decoded lossily).
    pub stderr: Captured,
    /// The leader's pid, which is also the process group id.
    pub pgid: u32,
}

impl SubprocessOutput {
    /// True when the deadline killed it.
    pub fn timed_out(&self) -> bool {
        self.ending == Ending::TimedOut
    }

    /// True when it exited with status 0.
    pub fn success(&self) -> bool {
        matches!(self.ending, Ending::Exited(s) if s.success())
    }

    /// The exit code, when it exited normally.
    pub fn exit_code(&self) -> Option<i32> {
        match self.ending {
            Ending::Exited(s) => s.code(),
            _ => None,
        }
    }
}

/// Kills the group when dropped while armed (the future was dropped mid-run).
struct GroupGuard {
    pgid: Pid,
    armed: bool,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            let _ = killpg(self.pgid, Signal::SIGKILL);
        }
    }
}

/// Runs `spec` until it exits, `deadline` passes or `cancel` fires (see the module table).
pub async fn run(
    spec: &ProcessSpec,
    cancel: &CancellationToken,
    deadline: Option<Instant>,
) -> Result<SubprocessOutput, SubprocessError> {
    spec.check_sizes()?;
    let program = locate(&spec.program).map_err(|looked| not_found(&spec.program, looked))?;
    let name = spec.program.display().to_string();
    let mut child = spawn(spec, &program).map_err(|source| SubprocessError::Spawn {
        program: name.clone(),
        source,
    })?;
    let raw_pid = child.id().unwrap_or(0);
    let mut guard = GroupGuard {
        pgid: Pid::from_raw(i32::try_from(raw_pid).unwrap_or(0)),
        armed: raw_pid != 0,
    };

    let stdin = child.stdin().take();
    let stdout = child.stdout().take();
    let stderr = child.stderr().take();
    let mut out = TailBuffer::new(spec.capture_limit);
    let mut err = TailBuffer::new(spec.capture_limit);
    let overflow = CancellationToken::new();
    let ending = {
        let io = async {
            tokio::join!(
                feed(stdin, &spec.stdin),
                pump(
                    stdout,
                    &mut out,
                    spec.stdout_lines.as_ref(),
                    spec.stdout_budget.map(|b| (b, &overflow))
                ),
                pump(stderr, &mut err, None, None)
            )
        };
        tokio::pin!(io);
        let mut io_done = false;
        let sleep = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending::<()>().await,
            }
        };
        tokio::pin!(sleep);
        let ending = loop {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => break Ending::Cancelled,
                _ = &mut sleep => break Ending::TimedOut,
                _ = overflow.cancelled() => break Ending::OutputTooLarge {
                    limit: spec.stdout_budget.unwrap_or_default(),
                },
                _ = &mut io, if !io_done => io_done = true,
                status = child.wait() => match status {
                    Ok(s) => break Ending::Exited(s),
                    Err(source) => return Err(SubprocessError::Wait { program: name, source }),
                },
            }
        };
        // Kill the whole group in every case: on a deadline, cancel or runaway output to stop
        // it, on a normal exit so that background children left behind do not outlive the call.
        let _ = killpg(guard.pgid, Signal::SIGKILL);
        if !matches!(ending, Ending::Exited(_)) {
            let _ = tokio::time::timeout(REAP_BOUND, child.wait()).await;
        }
        if !io_done {
            let _ = tokio::time::timeout(DRAIN_AFTER_KILL, &mut io).await;
        }
        match (ending, spec.stdout_budget) {
            // A child that wrote past the budget and exited before the reader noticed.
            (Ending::Exited(_), Some(limit)) if overflow.is_cancelled() => {
                Ending::OutputTooLarge { limit }
            }
            _ => ending,
        }
    };
    guard.armed = false;
    let (out_bytes, out_dropped) = out.into_tail();
    let (err_bytes, err_dropped) = err.into_tail();
    let stdout = String::from_utf8(out_bytes).map_err(|e| SubprocessError::NonUtf8 {
        program: name,
        stream: Stream::Stdout,
        offset: e.utf8_error().valid_up_to(),
    })?;
    Ok(SubprocessOutput {
        ending,
        stdout: Captured {
            text: stdout,
            dropped_bytes: out_dropped,
        },
        stderr: Captured {
            text: String::from_utf8_lossy(&err_bytes).into_owned(),
            dropped_bytes: err_dropped,
        },
        pgid: raw_pid,
    })
}

fn spawn(spec: &ProcessSpec, program: &Path) -> std::io::Result<Box<dyn ChildWrapper>> {
    let mut cmd = CommandWrap::with_new(program, |c| {
        c.args(&spec.args)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for name in BASE_ENV_ALLOW
            .iter()
            .copied()
            .chain(spec.env_allow.iter().map(String::as_str))
        {
            if let Some(v) = std::env::var_os(name) {
                c.env(name, v);
            }
        }
        for (k, v) in &spec.env {
            c.env(k, v);
        }
        if let Some(dir) = &spec.cwd {
            c.current_dir(dir);
        }
    });
    cmd.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    cmd.spawn()
}

#[cfg(test)]
mod tests;
