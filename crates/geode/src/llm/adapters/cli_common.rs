//! What the two vendor-CLI adapters (`claude-cli`, `codex-cli`) share: their options, the
//! transcript they write on the CLI's stdin, and how a process outcome becomes an error.
//!
//! The transcript follows the reference (`reference-behaviour.md` §2.B): an optional `[SYSTEM]`
//! block, then one `[ROLE]` block per message, blocks separated by a blank line, the whole text
//! trimmed and ended with one newline. Tools are never forwarded; tool calls and results already
//! in the conversation are rendered as text so the CLI sees the whole history.
//!
//! | process outcome | error |
//! |---|---|
//! | binary missing | [`AdapterError::Config`] (names the `GEODE_*_BIN` variable) |
//! | an argument over the kernel limit (e.g. a huge inline schema) | [`AdapterError::Unsupported`] |
//! | spawn or wait failure | [`AdapterError::Transport`] |
//! | stdout not UTF-8 | [`AdapterError::Protocol`] |
//! | deadline passed | [`AdapterError::Timeout`] (the group was killed) |
//! | cancelled | [`AdapterError::Cancelled`] (the group was killed) |
//! | stdout past the call's response budget | [`AdapterError::ResponseTooLarge`] (the group was killed) |

use crate::llm::adapter::AdapterError;
use crate::llm::request::{AdapterCallRequest, ContentBlock, Role};
use crate::llm::subprocess::{DEFAULT_CAPTURE_BYTES, Ending, SubprocessError, SubprocessOutput};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// How to run a vendor CLI. `Debug` shows variable names, never values.
#[derive(Clone)]
pub struct CliOptions {
    /// The binary; `None` reads the adapter's `GEODE_*_BIN` variable, then searches `PATH`.
    pub bin: Option<PathBuf>,
    /// The adapter's own time limit (the call's deadline applies too; the earlier wins).
    pub timeout: Duration,
    /// The working directory of the CLI (`None`: inherited).
    pub cwd: Option<PathBuf>,
    /// Extra parent variables the CLI may see, beyond the adapter's own list.
    pub allow_env: Vec<String>,
    /// Variables set for the CLI (e.g. `HOME`, a base URL, a key for a gateway).
    pub env: Vec<(String, OsString)>,
    /// Cap on each captured stream.
    pub capture_limit: usize,
}

impl std::fmt::Debug for CliOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CliOptions")
            .field("bin", &self.bin)
            .field("timeout", &self.timeout)
            .field("cwd", &self.cwd)
            .field("allow_env", &self.allow_env)
            .field(
                "env",
                &self.env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            )
            .field("capture_limit", &self.capture_limit)
            .finish()
    }
}

impl CliOptions {
    /// Options with the given time limit and everything else default.
    pub fn with_timeout(timeout: Duration) -> Self {
        Self {
            bin: None,
            timeout,
            cwd: None,
            allow_env: Vec::new(),
            env: Vec::new(),
            capture_limit: DEFAULT_CAPTURE_BYTES,
        }
    }

    /// Sets a variable for the CLI.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<OsString>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }
}

/// The transcript written on the CLI's stdin. `include_system` puts the system prompt in a
/// `[SYSTEM]` block (when the CLI has no flag for it, or the flag cannot carry it).
pub fn transcript(req: &AdapterCallRequest, include_system: bool) -> String {
    let mut out = String::new();
    if include_system && !req.system_prompt.trim().is_empty() {
        out.push_str("[SYSTEM]\n");
        out.push_str(&req.system_prompt);
        out.push_str("\n\n");
    }
    for m in &req.messages {
        out.push_str(match m.role {
            Role::User => "[USER]\n",
            Role::Assistant => "[ASSISTANT]\n",
        });
        let parts: Vec<String> = m.content.iter().map(render_block).collect();
        out.push_str(&parts.join("\n"));
        out.push_str("\n\n");
    }
    let mut text = out.trim().to_owned();
    text.push('\n');
    text
}

fn render_block(b: &ContentBlock) -> String {
    match b {
        ContentBlock::Text { text } => text.clone(),
        ContentBlock::ToolUse { id, name, input } => format!("[tool call {name} id={id}] {input}"),
        ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
        } => {
            let flag = if *is_error { " error" } else { "" };
            format!("[tool result id={tool_use_id}{flag}] {content}")
        }
    }
}

/// Maps a failure to run the process at all.
pub fn spawn_error(adapter: &str, bin_env: &str, e: SubprocessError) -> AdapterError {
    let adapter = adapter.to_owned();
    match e {
        SubprocessError::NotFound { .. } => AdapterError::Config {
            adapter,
            message: format!("{e} (install it with scripts/install-clis.sh or set {bin_env})"),
        },
        SubprocessError::ArgTooLong { .. } => AdapterError::Unsupported {
            adapter,
            message: e.to_string(),
        },
        SubprocessError::NonUtf8 { .. } => AdapterError::Protocol {
            adapter,
            message: e.to_string(),
        },
        _ => AdapterError::Transport {
            adapter,
            message: e.to_string(),
        },
    }
}

/// The error for a process killed at the deadline, on cancellation or for runaway output;
/// `None` when it exited.
pub fn killed(adapter: &str, out: &SubprocessOutput) -> Option<AdapterError> {
    let adapter = adapter.to_owned();
    match out.ending {
        Ending::TimedOut => Some(AdapterError::Timeout { adapter }),
        Ending::Cancelled => Some(AdapterError::Cancelled { adapter }),
        Ending::OutputTooLarge { limit } => {
            Some(AdapterError::ResponseTooLarge { adapter, limit })
        }
        Ending::Exited(_) => None,
    }
}

/// `exit code N` or `killed by signal N`, plus the last stderr line, for one-line errors.
pub fn exit_summary(out: &SubprocessOutput) -> String {
    use std::os::unix::process::ExitStatusExt;
    let status = match out.ending {
        Ending::Exited(s) => match (s.code(), s.signal()) {
            (Some(c), _) => format!("exit code {c}"),
            (None, Some(sig)) => format!("killed by signal {sig}"),
            _ => "ended".to_owned(),
        },
        Ending::TimedOut => "timed out".to_owned(),
        Ending::Cancelled => "cancelled".to_owned(),
        Ending::OutputTooLarge { limit } => format!("stdout passed {limit} bytes"),
    };
    let line = out.stderr.last_line(200);
    if line.is_empty() {
        status
    } else {
        format!("{status}; stderr: {line}")
    }
}

/// Cuts provider text for a one-line error message.
pub fn clip(text: &str, max: usize) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let mut s: String = one_line.chars().take(max).collect();
        s.push('…');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::request::Message;
    use serde_json::json;

    #[test]
    fn transcript_matches_the_reference_layout() {
        let mut req = AdapterCallRequest::new(
            "m",
            vec![
                Message::user("task"),
                Message::user("<system-reminder>\nr\n</system-reminder>"),
            ],
        );
        req.system_prompt = "be terse".into();
        assert_eq!(
            transcript(&req, true),
            "[SYSTEM]\nbe terse\n\n[USER]\ntask\n\n[USER]\n<system-reminder>\nr\n</system-reminder>\n"
        );
        assert_eq!(
            transcript(&req, false),
            "[USER]\ntask\n\n[USER]\n<system-reminder>\nr\n</system-reminder>\n"
        );
    }

    #[test]
    fn transcript_renders_tool_blocks_as_text() {
        let req = AdapterCallRequest::new(
            "m",
            vec![
                Message {
                    role: Role::Assistant,
                    content: vec![ContentBlock::ToolUse {
                        id: "c1".into(),
                        name: "grep".into(),
                        input: json!({"q": "x"}),
                    }],
                },
                Message {
                    role: Role::User,
                    content: vec![ContentBlock::ToolResult {
                        tool_use_id: "c1".into(),
                        content: "no match".into(),
                        is_error: true,
                    }],
                },
            ],
        );
        assert_eq!(
            transcript(&req, true),
            "[ASSISTANT]\n[tool call grep id=c1] {\"q\":\"x\"}\n\n[USER]\n[tool result id=c1 error] no match\n"
        );
    }

    #[test]
    fn clip_makes_one_bounded_line() {
        assert_eq!(clip("a\n b   c", 10), "a b c");
        assert_eq!(clip("abcdefghij", 4), "abcd…");
    }

    #[test]
    fn options_debug_hides_values() {
        let o = CliOptions::with_timeout(Duration::from_secs(1)).env("ANTHROPIC_API_KEY", "sk-1");
        let d = format!("{o:?}");
        assert!(d.contains("ANTHROPIC_API_KEY") && !d.contains("sk-1"));
    }
}
