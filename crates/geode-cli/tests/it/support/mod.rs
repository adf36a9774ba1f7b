//! Shared harness of the end-to-end tests: spawn the real `geode` binary with a cleared
//! environment, a temporary HOME and a temporary working directory, bounded in time.
//!
//! Only the variables a case names reach the binary (plus `PATH` and `HOME`), so no user config,
//! credential or proxy setting of the machine running the tests can leak in; every base URL a
//! case sets points at a `geode-fakes` server on 127.0.0.1.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod batch;
pub mod http_cases;
pub mod redis;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// Bound on one `geode` invocation.
pub const RUN_BOUND: Duration = Duration::from_secs(90);

/// A key value that must never show up in any output.
pub const SECRET: &str = "sk-e2e-SECRET-7f3a9c";

/// The examples directory of the repository.
pub fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// `examples/decision.schema.json`, as a path string.
pub fn decision_schema_path() -> String {
    examples()
        .join("decision.schema.json")
        .display()
        .to_string()
}

/// The Decision schema as a JSON value.
pub fn decision_schema() -> Value {
    serde_json::from_str(&std::fs::read_to_string(decision_schema_path()).unwrap()).unwrap()
}

/// What one run of the binary left behind.
#[derive(Debug)]
pub struct Outcome {
    /// The exit code (`None` when killed by a signal).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Outcome {
    /// Stdout as JSON lines (`--stream` events), one value per line.
    pub fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect()
    }

    /// Stdout parsed as one JSON value (panics with both streams when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim()).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON value ({e}):\nstdout: {}\nstderr: {}",
                self.stdout, self.stderr
            )
        })
    }

    /// Both streams, for assertion messages.
    pub fn dump(&self) -> String {
        format!(
            "exit {:?}\nstdout: {}\nstderr: {}",
            self.code, self.stdout, self.stderr
        )
    }

    /// Fails (with both streams) unless the exit code is `code`.
    #[track_caller]
    pub fn assert_exit(&self, code: i32) -> &Outcome {
        assert_eq!(self.code, Some(code), "{}", self.dump());
        self
    }

    /// Fails (with both streams) unless the run succeeded and printed `answer` as its JSON.
    #[track_caller]
    pub fn assert_answer(&self, answer: &Value) -> &Outcome {
        self.assert_exit(0);
        assert_eq!(&self.json(), answer, "{}", self.dump());
        self
    }

    /// Fails (with both streams) unless stderr contains every one of `needles`.
    #[track_caller]
    pub fn assert_stderr_has(&self, needles: &[&str]) -> &Outcome {
        for needle in needles {
            assert!(
                self.stderr.contains(needle),
                "wanted {needle:?}: {}",
                self.dump()
            );
        }
        self
    }

    /// Fails when `secret` shows in either stream.
    #[track_caller]
    pub fn assert_hides(&self, secret: &str) -> &Outcome {
        assert!(
            !self.stdout.contains(secret) && !self.stderr.contains(secret),
            "a secret was shown: {}",
            self.dump()
        );
        self
    }

    /// The first `error:` line of stderr (fails when there is none).
    #[track_caller]
    pub fn error_line(&self) -> String {
        self.stderr
            .lines()
            .find(|l| l.starts_with("error:"))
            .unwrap_or_else(|| panic!("no error line: {}", self.dump()))
            .to_owned()
    }
}

/// A sandbox for one invocation: a temporary HOME and a temporary working directory.
pub struct Sandbox {
    /// The temporary HOME.
    pub home: tempfile::TempDir,
    /// The temporary working directory (a `geode.toml` written here is picked up).
    pub cwd: tempfile::TempDir,
    /// The variables passed to the binary (besides PATH and HOME).
    pub env: Vec<(String, String)>,
}

impl Sandbox {
    /// An empty sandbox.
    pub fn new() -> Sandbox {
        Sandbox {
            home: tempfile::tempdir().unwrap(),
            cwd: tempfile::tempdir().unwrap(),
            env: Vec::new(),
        }
    }

    /// Adds one variable.
    pub fn var(&mut self, key: &str, value: impl AsRef<str>) -> &mut Sandbox {
        self.env.push((key.to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Writes `geode.toml` in the working directory.
    pub fn config(&self, text: &str) {
        std::fs::write(self.cwd.path().join("geode.toml"), text).unwrap();
    }

    /// Writes the working directory's `geode.toml` and trusts it as it is (`geode config
    /// trust`), as its user would before letting it choose, e.g., where the cache lives.
    pub fn trusted_config(&self, text: &str) {
        self.config(text);
        let out = self.command(&["config", "trust"]).output().unwrap();
        assert!(
            out.status.success(),
            "geode config trust: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The HOME path.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// Runs `geode run --adapter ADAPTER --schema <Decision> [EXTRA...] PROMPT`.
    pub async fn run_decision(&self, adapter: &str, extra: &[&str], prompt: &str) -> Outcome {
        let schema = decision_schema_path();
        let mut args = vec!["run", "--adapter", adapter, "--schema", &schema];
        args.extend_from_slice(extra);
        args.push(prompt);
        self.geode(&args, "").await
    }

    /// Runs `geode worker` with `line` (one WorkerRequest; a newline is added when missing).
    pub async fn worker(&self, line: &str) -> Outcome {
        let mut stdin = line.to_owned();
        if !stdin.ends_with('\n') {
            stdin.push('\n');
        }
        self.geode(&["worker"], &stdin).await
    }

    /// Starts `geode ARGS` in the background (stdout discarded, stderr piped), with the same
    /// environment as [`Sandbox::geode`]; the caller waits for or kills it.
    pub fn spawn(&self, args: &[&str]) -> std::process::Child {
        self.command(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// `geode ARGS` with the sandbox's environment and working directory, for a caller that
    /// wires its standard streams itself (e.g. stderr to a terminal).
    pub fn command(&self, args: &[&str]) -> std::process::Command {
        self.wrapped(&[], args)
    }

    /// [`Self::command`] run by a wrapper program: `WRAPPER... geode ARGS` (`prlimit --as=N --`,
    /// `unshare -rn`, `sh -c SCRIPT`).
    pub fn wrapped(&self, wrapper: &[&str], args: &[&str]) -> std::process::Command {
        self.wrapped_binary(wrapper, Path::new(env!("CARGO_BIN_EXE_geode")), args)
    }

    /// [`Self::wrapped`] with another copy of the binary (one another user may execute).
    pub fn wrapped_binary(
        &self,
        wrapper: &[&str],
        geode: &Path,
        args: &[&str],
    ) -> std::process::Command {
        let mut cmd = match wrapper.split_first() {
            Some((program, rest)) => {
                let mut cmd = std::process::Command::new(program);
                cmd.args(rest).arg(geode);
                cmd
            }
            None => std::process::Command::new(geode),
        };
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .current_dir(self.cwd.path());
        cmd
    }

    /// Runs `geode ARGS` with `stdin`, bounded by [`RUN_BOUND`].
    pub async fn geode(&self, args: &[&str], stdin: &str) -> Outcome {
        self.geode_bytes(args, stdin.as_bytes()).await
    }

    /// A sandbox whose `GEODE_LOCAL_MODEL` is the local model `scripts/setup.sh` installs
    /// (failing loudly when it is missing).
    pub fn with_local_model() -> Sandbox {
        let model = geode::llm::registry::local_model_path(&geode::llm::registry::ProcessEnv)
            .expect("no local model path: run scripts/setup.sh");
        assert!(
            model.exists(),
            "the local model is missing at {}: run scripts/setup.sh",
            model.display()
        );
        let mut sb = Sandbox::new();
        sb.var("GEODE_LOCAL_MODEL", model.display().to_string());
        sb
    }

    /// Runs `geode run --adapter ADAPTER --schema SCHEMA REST...` with nothing on stdin.
    pub async fn run(&self, adapter: &str, schema: &str, rest: &[&str]) -> Outcome {
        let mut args = vec!["run", "--adapter", adapter, "--schema", schema];
        args.extend_from_slice(rest);
        self.geode(&args, "").await
    }

    /// Runs `geode ARGS` with raw bytes on stdin (binary, invalid UTF-8), bounded by [`RUN_BOUND`].
    pub async fn geode_bytes(&self, args: &[&str], stdin: &[u8]) -> Outcome {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_geode"));
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .current_dir(self.cwd.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let mut input = child.stdin.take().unwrap();
        let stdin = stdin.to_owned();
        let writer = tokio::spawn(async move {
            // A child that exits before reading all of stdin is not an error here.
            let _ = input.write_all(&stdin).await;
            drop(input);
        });
        let out = tokio::time::timeout(RUN_BOUND, child.wait_with_output())
            .await
            .unwrap_or_else(|_| panic!("geode {args:?} exceeded {RUN_BOUND:?}"))
            .unwrap();
        writer.await.unwrap();
        Outcome {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// One WorkerRequest line for `adapter` with the Decision schema.
pub fn worker_line(task_id: &str, adapter: &str) -> String {
    serde_json::json!({
        "task_id": task_id,
        "description": "Decide whether to accept the change. Answer with the Decision object.",
        "adapter": adapter,
        "response_schema": decision_schema(),
    })
    .to_string()
}

/// A good Decision answer.
pub fn good_answer() -> Value {
    serde_json::json!({"decision": "accept", "reason": "the tests pass"})
}

/// A Decision-shaped answer with a wrong enum value.
pub fn bad_enum_answer() -> Value {
    serde_json::json!({"decision": "Accept", "reason": "the tests pass"})
}

/// A `geode-fakes` server of `kind` playing `script` on 127.0.0.1.
pub async fn fake_of(
    kind: geode_fakes::Kind,
    script: geode_fakes::Script,
) -> geode_fakes::FakeServer {
    geode_fakes::FakeServer::start(kind, script).await.unwrap()
}

/// A Chat (GLM) fake giving `reply` to every call.
pub async fn glm_answering(reply: geode_fakes::Reply) -> geode_fakes::FakeServer {
    fake_of(geode_fakes::Kind::Chat, geode_fakes::Script::always(reply)).await
}

/// The prompt of a Decision run.
pub const DECIDE: &str = "Decide.";

/// The model calls a fake recorded (side endpoints and `openai-compatible`'s probe left out).
pub fn model_calls(server: &geode_fakes::FakeServer) -> Vec<geode_fakes::RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| {
            r.method == "POST"
                && (r.route().ends_with("/responses")
                    || r.route().ends_with("/v1/messages")
                    || r.route().ends_with("/chat/completions"))
                && !geode_fakes::chat::is_probe(&r.body)
        })
        .collect()
}
