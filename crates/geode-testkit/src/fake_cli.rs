//! Fake `claude` / `codex` binaries: small `sh` scripts that read the transcript on stdin and
//! then misbehave in one way. Write them all before any test spawns processes (a script being
//! written while another thread forks can make `exec` fail with "text file busy").

use std::path::{Path, PathBuf};

/// Which CLI's output a fake imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cli {
    /// `claude -p --output-format json`: one result object.
    Claude,
    /// `codex exec --json`: JSONL events.
    Codex,
}

/// How a fake CLI misbehaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Behaviour {
    /// An error on stderr and exit status 1, nothing on stdout.
    Crash,
    /// Starts a background child, then both sleep far past any deadline.
    HangWithChild,
    /// 64 MiB of non-JSON lines on stdout, then exit 0.
    GiantOutput,
    /// One line of prose on stdout, then exit 0.
    NonJson,
    /// A complete, valid answer on stdout, then a sleep far past any deadline.
    AnswerThenHang,
    /// Killed by SIGKILL (exit status 137 in a shell) before writing anything.
    Exit137,
    /// An authentication error quoting this secret on stderr, then exit 1.
    SecretOnStderr(String),
}

impl Behaviour {
    fn script(&self, cli: Cli) -> String {
        let body = match self {
            Self::Crash => {
                "echo 'Error: internal failure (this CLI crashed)' >&2\nexit 1".to_owned()
            }
            Self::HangWithChild => "sleep 600 &\nsleep 600".to_owned(),
            Self::GiantOutput => {
                "yes 'giant output line that is not a JSON event at all' | head -c 67108864\nexit 0"
                    .to_owned()
            }
            Self::NonJson => {
                "echo 'Hello! I am a CLI that does not speak JSON.'\nexit 0".to_owned()
            }
            Self::AnswerThenHang => format!("cat <<'EOF'\n{}\nEOF\nsleep 600", answer(cli)),
            Self::Exit137 => "kill -9 $$".to_owned(),
            Self::SecretOnStderr(secret) => {
                format!("echo 'Error: invalid API key {secret} (401)' >&2\nexit 1")
            }
        };
        format!("#!/bin/sh\ncat >/dev/null\n{body}\n")
    }
}

/// A valid answer in the CLI's output format (a `Decision` object).
pub fn answer(cli: Cli) -> String {
    match cli {
        Cli::Claude => r#"{"type":"result","subtype":"success","is_error":false,"result":"","structured_output":{"decision":"accept","reason":"fine"},"usage":{"input_tokens":1,"output_tokens":1},"total_cost_usd":0}"#.to_owned(),
        Cli::Codex => [
            r#"{"type":"thread.started","thread_id":"fake"}"#,
            r#"{"type":"item.completed","item":{"id":"i0","type":"agent_message","text":"{\"decision\":\"accept\",\"reason\":\"fine\"}"}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}"#,
        ]
        .join("\n"),
    }
}

/// Writes the fake for `cli` and `behaviour` into `dir` (mode 0755) and returns its path.
pub fn write(dir: &Path, name: &str, cli: Cli, behaviour: &Behaviour) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, behaviour.script(cli)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}
