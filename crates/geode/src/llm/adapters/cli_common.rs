//! What the two vendor-CLI adapters (`claude-cli`, `codex-cli`) share: their registry row
//! unpacked ([`CliRow`]: name, binary variable, `pass_env`, default time limit, all from the
//! row), their options, the transcript they write on the CLI's stdin, and how a process
//! outcome becomes an error.
//!
//! The transcript follows GEODE's layout (docs/reference.md#the-adapters): an optional `[SYSTEM]`
//! block, then one `[ROLE]` block per message, blocks separated by a blank line, the whole text
//! trimmed and ended with one newline. Tools are never forwarded; tool calls and results already
//! in the conversation are rendered as text so the CLI sees the whole history.
//!
//! Environment: a CLI starts with a cleared environment plus [`crate::llm::subprocess::BASE_ENV_ALLOW`],
//! its adapter's own list, the variables its own configuration names (codex: `env_key` and
//! `env_http_headers` of `$CODEX_HOME/config.toml`), [`CliOptions::allow_env`] (`pass_env` of
//! `geode.toml`) and [`CliOptions::env`]. Only names are ever shown, never values.
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

use crate::llm::call::AdapterError;
use crate::llm::registry::{AdapterSpec, Auth, CliSpec, Environment, WireFamily, is_env_name};
use crate::llm::request::{AdapterCallRequest, AdapterResponse, ContentBlock, Role, WireReport};
use crate::llm::subprocess::{
    BASE_ENV_ALLOW, DEFAULT_CAPTURE_BYTES, Ending, ProcessSpec, SubprocessError, SubprocessOutput,
};
use crate::schema::subset::WirePlan;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// A CLI adapter's registry row, unpacked: the row, how its binary is found ([`Auth::Binary`])
/// and its CLI facts ([`WireFamily::Cli`]). The adapters hold theirs as a constant, so a row
/// that is not a CLI row fails the build.
#[derive(Debug, Clone, Copy)]
pub struct CliRow {
    /// The row.
    pub spec: &'static AdapterSpec,
    /// The variable naming the binary (`GEODE_*_BIN`).
    pub bin_env: &'static str,
    /// The executable looked for on `PATH`.
    pub program: &'static str,
    /// Which CLI, the parent variables it may see, its default time limit.
    pub cli: CliSpec,
}

impl CliRow {
    /// `spec` unpacked; `None` when it is not a CLI row.
    pub const fn of(spec: &'static AdapterSpec) -> Option<Self> {
        match (spec.auth, spec.wire_family) {
            (Auth::Binary { env, name }, WireFamily::Cli(cli)) => Some(Self {
                spec,
                bin_env: env,
                program: name,
                cli,
            }),
            _ => None,
        }
    }

    /// `spec` unpacked, for the adapters' constants only (evaluated at compile time): a row
    /// that is not a CLI row stops the build.
    pub(crate) const fn of_cli_row(spec: &'static AdapterSpec) -> Self {
        match Self::of(spec) {
            Some(row) => row,
            None => panic!("not a CLI row"),
        }
    }

    /// The adapter's registry name.
    pub fn name(&self) -> &'static str {
        self.spec.name
    }

    /// The binary: `configured`, else the row's variable, else its program on `PATH`.
    pub fn resolve_bin(&self, configured: Option<&PathBuf>) -> Result<PathBuf, AdapterError> {
        match configured {
            Some(bin) => Ok(bin.clone()),
            None => crate::llm::subprocess::resolve_program(self.bin_env, self.program)
                .map_err(|e| self.spawn_error(e)),
        }
    }

    /// How the schema of `req` goes on this CLI's wire: its row's
    /// [`crate::llm::registry::SchemaRoute`] plan, the same one `geode schema check --adapter`
    /// shows. Made once per call.
    pub fn wire_plan(&self, req: &AdapterCallRequest) -> WirePlan {
        self.spec.schema_route.plan_call(req, None)
    }

    /// Runs the CLI's process for one call: stdout capped at the call's response budget, ended
    /// at the earlier of the call's deadline and `timeout`, or on cancellation. A failed spawn,
    /// a kill (deadline, cancellation, budget) are the matching adapter errors; any exit is `Ok`.
    pub async fn run_process(
        &self,
        spec: ProcessSpec,
        cx: &crate::llm::call::CallCx,
        timeout: Duration,
    ) -> Result<SubprocessOutput, AdapterError> {
        let spec = spec.stdout_budget(cx.max_response_bytes);
        let deadline = cx.with_timeout(timeout).deadline;
        let out = crate::llm::subprocess::run(&spec, &cx.cancel, deadline)
            .await
            .map_err(|e| self.spawn_error(e))?;
        match killed(self.name(), &out) {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    /// Maps a failure to run the process at all.
    pub fn spawn_error(&self, e: SubprocessError) -> AdapterError {
        let adapter = self.name().to_owned();
        match e {
            SubprocessError::NotFound { .. } => AdapterError::Config {
                adapter,
                message: format!(
                    "{e} (install it with scripts/install-clis.sh or set {})",
                    self.bin_env
                ),
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
}

/// How to run a vendor CLI. `Debug` shows variable names, never values.
#[derive(Clone)]
pub struct CliOptions {
    /// The binary; `None` reads the adapter's `GEODE_*_BIN` variable, then searches `PATH`.
    pub bin: Option<PathBuf>,
    /// The adapter's own time limit (the call's deadline applies too; the earlier wins).
    pub timeout: Duration,
    /// The working directory of the CLI (`None`: inherited).
    pub cwd: Option<PathBuf>,
    /// Extra parent variables the CLI may see, beyond the adapter's own list (`pass_env` in
    /// `geode.toml`). Names that are not variable names ([`is_env_name`]) are ignored.
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

    /// These options for a described machine `env` (the library's [`Environment`], e.g. a
    /// [`crate::Client`] built with another environment than the process's): the binary from
    /// the row's variable, `allow` (the configuration's `pass_env`) allowed, and the values
    /// `env` gives for the base variables, the row's own `pass_env` and `allow` set explicitly,
    /// so the CLI sees that machine. With the process environment this changes nothing it
    /// would see.
    pub fn described_by(mut self, env: &dyn Environment, row: &CliRow, allow: &[String]) -> Self {
        if let Some(bin) = env.var(row.bin_env) {
            self.bin = Some(PathBuf::from(bin));
        }
        self.allow_env = allow.to_vec();
        let names = BASE_ENV_ALLOW.iter().chain(row.cli.pass_env).copied();
        for name in names.chain(allow.iter().map(String::as_str)) {
            if let Some(value) = env.var(name).filter(|_| is_env_name(name)) {
                self = self.env(name, value);
            }
        }
        self
    }

    /// Sets a variable for the CLI.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<OsString>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// The value `name` will have in the CLI: an explicit [`CliOptions::env`] entry, else the
    /// parent's variable (which reaches the CLI only when allowed). Empty counts as unset.
    pub fn var(&self, name: &str) -> Option<OsString> {
        self.env
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var_os(name))
            .filter(|v| !v.is_empty())
    }

    /// Completes `spec` with these options: the adapter's own variables `own`, the names the
    /// CLI's configuration gives (`named`), [`CliOptions::allow_env`], the explicit variables,
    /// the working directory and the capture limit. Names that fail [`is_env_name`] are dropped.
    pub fn apply(&self, mut spec: ProcessSpec, own: &[&str], named: &[String]) -> ProcessSpec {
        // Variables the CLI's own configuration names hold its keys: the scrubber learns their
        // values, whatever their names, so a CLI that prints one cannot leak it through geode.
        for name in named.iter().filter(|n| is_env_name(n)) {
            crate::secret::learn_env_var(name);
        }
        let names = named.iter().chain(&self.allow_env).map(String::as_str);
        for name in own.iter().copied().chain(names) {
            if is_env_name(name) {
                spec = spec.allow_env(name);
            }
        }
        for (k, v) in &self.env {
            spec = spec.env(k.clone(), v);
        }
        if let Some(dir) = &self.cwd {
            spec = spec.current_dir(dir);
        }
        spec.capture_limit(self.capture_limit)
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
        // The part itself travels beside the text (`--image`, stream-json blocks); the
        // transcript marks where it was.
        ContentBlock::Image { .. } => "[the attached image]".to_owned(),
        ContentBlock::Document { title, .. } => {
            format!(
                "[the attached document {}]",
                title.as_deref().unwrap_or_default()
            )
        }
    }
}

/// The error for a run whose output holds no outcome: [`AdapterError::Truncated`] saying what
/// is `missing` when the CLI exited 0, else [`AdapterError::RunFailed`] `exit_status`.
pub fn no_outcome(adapter: &str, out: &SubprocessOutput, missing: &str) -> AdapterError {
    if out.success() {
        AdapterError::Truncated {
            adapter: adapter.into(),
            message: missing.into(),
        }
    } else {
        AdapterError::RunFailed {
            adapter: adapter.into(),
            kind: "exit_status".into(),
            message: exit_summary(out),
        }
    }
}

/// `resp` with the wire report of a CLI call made with `plan` (its mode and the rewrites of the
/// schema it was given).
pub fn answered(mut resp: AdapterResponse, plan: WirePlan) -> AdapterResponse {
    resp.wire = WireReport {
        mode: plan.mode,
        transforms: plan.transforms,
        wrapped_root: plan.wrapped,
        absent_nulls: plan.absent_nulls,
        ..WireReport::default()
    };
    resp
}

/// The error for a process killed at the deadline, on cancellation or for runaway output;
/// `None` when it exited.
pub fn killed(adapter: &str, out: &SubprocessOutput) -> Option<AdapterError> {
    let adapter = adapter.to_owned();
    match out.ending {
        Ending::TimedOut => Some(AdapterError::Timeout { adapter }),
        Ending::Cancelled => Some(AdapterError::Cancelled { adapter }),
        Ending::OutputTooLarge { limit } => Some(AdapterError::ResponseTooLarge { adapter, limit }),
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Calls `adapter` for `req` and asserts the call fails before running anything, as a
    /// [`AdapterError::Config`] naming `bin_env` (the binary is missing).
    pub(crate) async fn assert_missing_binary_is_named(
        adapter: &dyn crate::llm::adapter::Adapter,
        req: AdapterCallRequest,
        bin_env: &str,
    ) {
        let cx = crate::llm::call::CallCx::new();
        let err = adapter.call(req, &cx).await.unwrap_err();
        assert!(matches!(err, AdapterError::Config { .. }), "{err:?}");
        assert!(err.to_string().contains(bin_env), "{err}");
    }

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
                Message::tool_call("c1", "grep", json!({"q": "x"})),
                Message::tool_result("c1", "no match", true),
            ],
        );
        assert_eq!(
            transcript(&req, true),
            "[ASSISTANT]\n[tool call grep id=c1] {\"q\":\"x\"}\n\n[USER]\n[tool result id=c1 error] no match\n"
        );
    }

    #[test]
    fn every_cli_row_unpacks_with_the_facts_the_adapters_had() {
        for spec in crate::llm::registry::ADAPTERS {
            let is_cli = matches!(spec.wire_family, WireFamily::Cli(_));
            assert_eq!(CliRow::of(spec).is_some(), is_cli, "{}", spec.name);
        }
        let (claude, codex) = (super::super::claude_cli::ROW, super::super::codex_cli::ROW);
        assert_eq!(
            (claude.name(), claude.bin_env, claude.program),
            ("claude-cli", "GEODE_CLAUDE_BIN", "claude")
        );
        assert_eq!(
            (codex.name(), codex.bin_env, codex.program),
            ("codex-cli", "GEODE_CODEX_BIN", "codex")
        );
        assert_eq!(claude.cli.timeout, Duration::from_secs(1800));
        assert_eq!(codex.cli.timeout, Duration::from_secs(600));
        assert_eq!(claude.cli.pass_env.len(), 13);
        assert!(claude.cli.pass_env.contains(&"CLAUDE_CONFIG_DIR"));
        assert_eq!(codex.cli.pass_env.len(), 6);
        assert!(codex.cli.pass_env.contains(&"CODEX_HOME"));
    }

    #[test]
    fn env_names_are_portable_names_only() {
        for ok in ["MY_KEY", "_X", "a1", "OPENAI_API_KEY"] {
            assert!(is_env_name(ok), "{ok}");
        }
        for bad in [
            "",
            "1X",
            "MY=KEY",
            "MY KEY",
            "A\0B",
            "sk-ant-123",
            "KEY\n",
            "É",
        ] {
            assert!(!is_env_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn apply_allows_own_named_and_configured_names_and_drops_bad_ones() {
        let mut o = CliOptions::with_timeout(Duration::from_secs(1)).env("HOME", "/h");
        o.allow_env = vec!["FROM_GEODE_TOML".into(), "BAD=NAME".into()];
        let named = ["FROM_CLI_CONFIG".to_owned(), "no pe".to_owned()];
        let spec = o.apply(ProcessSpec::new("/bin/true"), &["OWN"], &named);
        let d = format!("{spec:?}");
        for name in ["OWN", "FROM_CLI_CONFIG", "FROM_GEODE_TOML", "HOME"] {
            assert!(d.contains(name), "{name} missing: {d}");
        }
        assert!(!d.contains("BAD=NAME") && !d.contains("no pe"), "{d}");
    }

    #[test]
    fn var_prefers_the_explicit_value_and_treats_empty_as_unset() {
        let o = CliOptions::with_timeout(Duration::from_secs(1))
            .env("GEODE_TEST_UNSET_VAR_X", "")
            .env("PATH", "/explicit");
        assert_eq!(o.var("PATH"), Some(OsString::from("/explicit")));
        assert_eq!(o.var("GEODE_TEST_UNSET_VAR_X"), None);
    }

    #[test]
    fn options_debug_hides_values() {
        let o = CliOptions::with_timeout(Duration::from_secs(1)).env("ANTHROPIC_API_KEY", "sk-1");
        let d = format!("{o:?}");
        assert!(d.contains("ANTHROPIC_API_KEY") && !d.contains("sk-1"));
    }
}
