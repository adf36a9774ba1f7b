//! `codex-cli`: one call through `codex exec` (`@openai/codex`, pinned 0.171.0), authenticated by
//! the CLI's own login (`$CODEX_HOME/auth.json`) or a configured model provider.
//!
//! argv (no shell; the transcript goes on stdin, read because the prompt argument is `-`):
//! `codex exec --json --skip-git-repo-check --ephemeral --sandbox read-only
//! -c check_for_update_on_startup=false --disable plugins --disable remote_plugin --disable apps
//! [-m M] [-c key=value ...] [--output-schema FILE] -`.
//! The four start-up flags keep codex from looking up hosts of its own (without them
//! 0.171.0 looks up `api.github.com` and `chatgpt.com`; docs/wire.md#running-the-clis-offline).
//!
//! The schema, fitted to OpenAI strict by the row's plan ([`crate::schema::subset::openai_strict`]:
//! a non-object root wrapped under `value`, refused keywords removed, optional properties made
//! required and nullable; the ledger names each rewrite). codex sends `--output-schema` as
//! `strict: true` whatever it holds, and OpenAI refuses a schema strict mode still cannot take
//! (a map whose `additionalProperties` is a schema, an optional property under `anyOf`) with 400
//! `invalid_json_schema`; so such a schema is not passed as a flag but written into the
//! transcript's system block as an instruction (mode `prompt`, the reasons in the ledger). A
//! schema that fits is written as compact JSON to `schema.json` (mode 0600) in a fresh private
//! directory (mode 0700) under the temp root; a guard removes the directory when the call ends
//! on any path: normal exit, non-zero exit, timeout kill, cancellation, or the future dropped.
//! Codex sends it verbatim as `text.format` but does not validate the answer, so the wire mode
//! is [`StructuredOutputMode::CliFlag`] and the worker's validation decides.
//!
//! | `--json` events (docs/wire.md#the-codex-cli) | outcome |
//! |---|---|
//! | `turn.completed` with an `agent_message` before it | success: text = the last agent message (unchanged, even if it breaks the schema); usage from `turn.completed` |
//! | `turn.failed` | `RunFailed{kind:"turn_failed"}`, whatever the exit code, unless the message names a provider status (below) |
//! | an `error` event not followed by `turn.completed` | `RunFailed{kind:"stream_error"}`, whatever the exit code (`Reconnecting…` errors that recover are ignored), unless the message names a provider status |
//! | either, with `unexpected status 401 …` / `403` | `Auth` |
//! | either, with `… last status: 429 …` (or `status 429`) | `RateLimited` |
//! | either, with `status 5xx`, or codex's wording for a 500 (`…experiencing high demand…`) | `Server` |
//! | `turn.completed` with no agent message | `RunFailed{kind:"no_agent_message"}` |
//! | no terminal event | `Truncated` (exit 0) or `RunFailed{kind:"exit_status"}` |
//!
//! Item-level `error` items (e.g. unknown model metadata) are warnings, not failures.
//!
//! Environment: besides its own list, codex gets the variables its configuration names (the
//! `env_key` and `env_http_headers` of its model providers, see [`super::codex_config`]), read
//! at each call, and those of `pass_env` in `geode.toml`.
//! geode's own tools are never forwarded ([`Adapter::supports_tools`] is false).
//!
//! No streaming: `exec --json` prints each agent message whole, and which one is the answer is
//! known only at `turn.completed`, so a stream (`geode run --stream`) gets the final event only.

use super::cli_common::{self, CliOptions, CliRow};
use super::codex_config;
use crate::llm::adapter::Adapter;
use crate::llm::call::{AdapterError, CallCx};
use crate::llm::request::{AdapterCallRequest, AdapterResponse, ContentBlock, WireReport};
use crate::llm::subprocess::ProcessSpec;
use crate::llm::wire::schema_prompt::append_to_system;
use crate::media::Format;
use crate::schema::ResponseSchema;
use crate::vocab::{StopReason, StructuredOutputMode, Usage};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// This adapter's registry row ([`crate::llm::registry::CODEX_CLI`]): its name, binary variable
/// (`GEODE_CODEX_BIN`), the parent variables the CLI may see and its default time limit.
pub const ROW: CliRow = CliRow::of_cli_row(&crate::llm::registry::CODEX_CLI);

/// Flags that stop codex's own start-up lookups (update check, plugin catalogue, apps).
const QUIET_ARGS: &[&str] = &[
    "-c",
    "check_for_update_on_startup=false",
    "--disable",
    "plugins",
    "--disable",
    "remote_plugin",
    "--disable",
    "apps",
];

/// Codex's sandbox for commands the model runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Sandbox {
    /// `read-only`: the cautious default.
    #[default]
    ReadOnly,
    /// `workspace-write`.
    WorkspaceWrite,
}

impl Sandbox {
    fn flag(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
        }
    }
}

/// Configuration of [`CodexCliAdapter`].
#[derive(Debug, Clone)]
pub struct CodexCliConfig {
    /// How to run the binary.
    pub cli: CliOptions,
    /// The sandbox for commands the model runs.
    pub sandbox: Sandbox,
    /// `-c key=value` overrides (TOML values), e.g. a custom `model_providers.<id>` for a gateway.
    pub config_overrides: Vec<(String, String)>,
    /// Where the private schema directories are made (`None`: the system temp dir).
    pub temp_root: Option<PathBuf>,
}

impl Default for CodexCliConfig {
    fn default() -> Self {
        Self {
            cli: CliOptions::with_timeout(ROW.cli.timeout),
            sandbox: Sandbox::ReadOnly,
            config_overrides: Vec::new(),
            temp_root: None,
        }
    }
}

/// The `codex-cli` adapter.
#[derive(Debug, Clone, Default)]
pub struct CodexCliAdapter {
    config: CodexCliConfig,
}

/// The schema file of one call; dropping it removes its private directory.
#[derive(Debug)]
pub struct SchemaFile {
    dir: tempfile::TempDir,
    path: PathBuf,
}

/// A private directory under `root`: `geode-codex-XXXX`, 0700, removed when dropped.
fn private_dir(root: &Path) -> std::io::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .prefix("geode-codex-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in(root)
}

/// Writes `bytes` as a new 0600 file `name` in `dir`.
fn write_private(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(name);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    Ok(path)
}

impl SchemaFile {
    /// Writes `schema` compact into `<root>/geode-codex-XXXX/schema.json` (dir 0700, file 0600).
    pub fn create(root: &Path, schema: &ResponseSchema) -> std::io::Result<Self> {
        let dir = private_dir(root)?;
        let path = write_private(
            dir.path(),
            "schema.json",
            schema.to_compact_json().as_bytes(),
        )?;
        Ok(Self { dir, path })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The private directory holding it.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// The images of one call, as the files `--image` takes; dropping it removes them.
#[derive(Debug)]
pub struct ImageFiles {
    _dir: Option<tempfile::TempDir>,
    paths: Vec<PathBuf>,
}

impl ImageFiles {
    /// Writes every inline image of `req` into `<root>/geode-codex-XXXX/image-N.EXT` (dir 0700,
    /// files 0600); nothing when it has none. An image URL cannot be given to `--image`: the
    /// row takes none, so the worker refused it before this call.
    pub fn create(root: &Path, req: &AdapterCallRequest) -> std::io::Result<Self> {
        let images: Vec<(Format, Vec<u8>)> = req
            .messages
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|b| match b {
                ContentBlock::Image { source } => Some((source.format()?, source.bytes()?)),
                _ => None,
            })
            .collect();
        if images.is_empty() {
            return Ok(Self {
                _dir: None,
                paths: Vec::new(),
            });
        }
        let dir = private_dir(root)?;
        let mut paths = Vec::new();
        for (i, (format, bytes)) in images.iter().enumerate() {
            let name = format!("image-{}.{}", i + 1, format.name());
            paths.push(write_private(dir.path(), &name, bytes)?);
        }
        Ok(Self {
            _dir: Some(dir),
            paths,
        })
    }

    /// The files, in the order of the conversation.
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }
}

impl CodexCliAdapter {
    /// An adapter with `config`.
    pub fn new(config: CodexCliConfig) -> Self {
        Self { config }
    }

    /// The process to run `bin` for `req` with the schema at `schema_path`, without spawning it.
    /// The variables of codex's own configuration are added by [`Adapter::call`], which reads
    /// it (see [`codex_config`]).
    pub fn process_spec(
        &self,
        bin: PathBuf,
        req: &AdapterCallRequest,
        schema_path: Option<&Path>,
    ) -> ProcessSpec {
        self.process_spec_with(bin, req, schema_path, &[], &[])
    }

    /// [`Self::process_spec`], also passing the parent variables `named` (by codex's config)
    /// and the files of the call's `images` (`--image FILE` each).
    pub fn process_spec_with(
        &self,
        bin: PathBuf,
        req: &AdapterCallRequest,
        schema_path: Option<&Path>,
        named: &[String],
        images: &[PathBuf],
    ) -> ProcessSpec {
        let c = &self.config;
        let mut spec = ProcessSpec::new(bin)
            .args(["exec", "--json", "--skip-git-repo-check", "--ephemeral"])
            .args(["--sandbox", c.sandbox.flag()])
            .args(QUIET_ARGS);
        if !req.model.is_empty() {
            spec = spec.args(["-m", req.model.as_str()]);
        }
        for (k, v) in &c.config_overrides {
            spec = spec.arg("-c").arg(format!("{k}={v}"));
        }
        if let Some(p) = schema_path {
            spec = spec.arg("--output-schema").arg(p);
        }
        // `--image` takes several values: the `=` form keeps the next argument (the `-` that
        // reads the prompt from stdin) from being read as one.
        for image in images {
            let mut flag = std::ffi::OsString::from("--image=");
            flag.push(image);
            spec = spec.arg(flag);
        }
        spec = spec.arg("-").stdin(cli_common::transcript(req, true));
        c.cli.apply(spec, ROW.cli.pass_env, named)
    }

    async fn write_schema(&self, schema: &ResponseSchema) -> Result<SchemaFile, AdapterError> {
        let schema = schema.clone();
        self.write_files("schema file", move |root| SchemaFile::create(root, &schema))
            .await
    }

    /// Runs `make` in the temp root off the async threads; an error names `what`.
    async fn write_files<T: Send + 'static>(
        &self,
        what: &'static str,
        make: impl FnOnce(&Path) -> std::io::Result<T> + Send + 'static,
    ) -> Result<T, AdapterError> {
        let root = self
            .config
            .temp_root
            .clone()
            .unwrap_or_else(std::env::temp_dir);
        let io_err = |message: String| AdapterError::Transport {
            adapter: ROW.name().into(),
            message,
        };
        tokio::task::spawn_blocking(move || make(&root))
            .await
            .map_err(|e| io_err(format!("{what} task failed: {e}")))?
            .map_err(|e| io_err(format!("could not write the {what}: {e}")))
    }
}

#[async_trait::async_trait]
impl Adapter for CodexCliAdapter {
    fn endpoint(&self) -> String {
        ROW.resolve_bin(self.config.cli.bin.as_ref())
            .map(|b| b.display().to_string())
            .unwrap_or_default()
    }

    fn spec(&self) -> Option<&'static crate::llm::registry::AdapterSpec> {
        Some(ROW.spec)
    }

    async fn call(
        &self,
        req: AdapterCallRequest,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        let bin = ROW.resolve_bin(self.config.cli.bin.as_ref())?;
        // Lives until the end of this function on every path, then removes the directory.
        let plan = ROW.wire_plan(&req);
        let (schema_file, req) = match &req.response_schema {
            Some(s) if plan.mode == StructuredOutputMode::Prompt => {
                let system_prompt = append_to_system(&req.system_prompt, s);
                (
                    None,
                    AdapterCallRequest {
                        system_prompt,
                        ..req
                    },
                )
            }
            Some(s) => (Some(self.write_schema(&plan.wire_schema(s)).await?), req),
            None => (None, req),
        };
        let named =
            codex_config::read_env_names(&self.config.cli, &self.config.config_overrides).await;
        let schema_path = schema_file.as_ref().map(SchemaFile::path);
        let for_images = req.clone();
        let images = self
            .write_files("image files", move |root| {
                ImageFiles::create(root, &for_images)
            })
            .await?;
        let spec = self.process_spec_with(bin, &req, schema_path, &named, images.paths());
        let timeout = self.config.cli.timeout;
        let out = ROW.run_process(spec, cx, timeout).await;
        drop(schema_file);
        drop(images);
        let out = out?;
        let resp = match interpret(&out.stdout.text) {
            Outcome::Answer(resp) => resp,
            Outcome::Failed(e) => return Err(e),
            Outcome::NoTerminal => {
                let missing = "the event stream ended without turn.completed";
                return Err(cli_common::no_outcome(ROW.name(), &out, missing));
            }
        };
        Ok(cli_common::answered(resp, plan))
    }
}

/// What a JSONL event stream amounts to.
#[derive(Debug)]
pub enum Outcome {
    /// A completed turn with an answer.
    Answer(AdapterResponse),
    /// A reported failure.
    Failed(AdapterError),
    /// Neither `turn.completed` nor a failure.
    NoTerminal,
}

/// Folds codex's `--json` events (the module table). Lines that are not JSON objects are skipped.
pub fn interpret(stdout: &str) -> Outcome {
    let mut last_message: Option<String> = None;
    let mut completed: Option<Usage> = None;
    let mut pending_error: Option<String> = None;
    let failed = |kind: &str, message: &str| Outcome::Failed(failure(kind, message));
    for line in stdout.lines() {
        let Ok(ev) = serde_json::from_str::<Value>(line.trim()) else {
            continue;
        };
        match ev.get("type").and_then(Value::as_str) {
            Some("item.completed") => {
                let item = &ev["item"];
                if item.get("type").and_then(Value::as_str) == Some("agent_message") {
                    last_message = item.get("text").and_then(Value::as_str).map(str::to_owned);
                }
            }
            Some("turn.completed") => {
                pending_error = None;
                let u = &ev["usage"];
                let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
                completed = Some(Usage {
                    input_tokens: n("input_tokens"),
                    output_tokens: n("output_tokens"),
                    cached_input_tokens: n("cached_input_tokens"),
                    cost_usd: None,
                });
            }
            Some("turn.failed") => {
                let msg = ev["error"]["message"].as_str().unwrap_or("turn failed");
                return failed("turn_failed", msg);
            }
            Some("error") => {
                pending_error = Some(ev["message"].as_str().unwrap_or("error").to_owned());
            }
            _ => {}
        }
    }
    if let Some(msg) = pending_error {
        return failed("stream_error", &msg);
    }
    match (completed, last_message) {
        (Some(usage), Some(text)) => Outcome::Answer(AdapterResponse {
            text,
            tool_uses: Vec::new(),
            usage,
            stop_reason: StopReason::EndTurn,
            structured: None,
            wire: WireReport::default(),
        }),
        (Some(_), None) => failed(
            "no_agent_message",
            "the turn completed without an agent message",
        ),
        (None, _) => Outcome::NoTerminal,
    }
}

/// The typed error for a failure codex reported with `message` (the module table).
fn failure(kind: &str, message: &str) -> AdapterError {
    let adapter = ROW.name().to_owned();
    let message = crate::secret::clip(message, 300);
    let status = provider_status(&message).or_else(|| {
        // codex words a 500 from the provider this way, without the status.
        message.contains("experiencing high demand").then_some(500)
    });
    match status {
        Some(status @ (401 | 403)) => AdapterError::Auth {
            adapter,
            status,
            message,
        },
        Some(429) => AdapterError::RateLimited {
            adapter,
            retry_after: None,
            message,
        },
        Some(status @ 500..=599) => AdapterError::Server {
            adapter,
            status,
            message,
        },
        _ => AdapterError::RunFailed {
            adapter,
            kind: kind.into(),
            message,
        },
    }
}

/// The HTTP status codex names in a message: `status 401`, `status: 429`.
fn provider_status(message: &str) -> Option<u16> {
    message.match_indices("status").find_map(|(i, word)| {
        let rest = message[i + word.len()..].trim_start_matches([':', ' ']);
        let digits = rest.get(..3)?;
        let after = rest[3..].chars().next();
        if after.is_some_and(|c| c.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok().filter(|s| (100..600).contains(s))
    })
}

#[cfg(test)]
mod tests;
