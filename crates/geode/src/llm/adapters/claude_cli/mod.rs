//! `claude-cli`: one call through the `claude` CLI (`@anthropic-ai/claude-code`, pinned 2.1.197)
//! in print mode, authenticated by the CLI's own login or by the `ANTHROPIC_*` variables.
//!
//! argv (no shell; the transcript goes on stdin, see [`super::cli_common::transcript`]):
//! `claude -p --output-format stream-json --verbose --no-session-persistence [--model M]
//! --max-turns N [--system-prompt S] [--json-schema <compact schema>] [--tools ""]`.
//! The stream prints one JSON event per line and ends with the same result object as
//! `--output-format json`; the `assistant` events before it carry every `StructuredOutput` tool
//! input the model sent, which the result object alone does not when the CLI gives up.
//!
//! With `--json-schema` the CLI offers the model a `StructuredOutput` tool whose input schema is
//! the caller's schema (a tool input needs an object root: any other root is wrapped under
//! `value`, [`crate::schema::subset::ANTHROPIC_TOOL`]), validates the tool input itself and feeds errors back (up to 5 tries);
//! see docs/wire.md#the-claude-cli. The wire mode is therefore [`StructuredOutputMode::CliValidated`](crate::vocab::StructuredOutputMode::CliValidated).
//!
//! | result object | outcome |
//! |---|---|
//! | `is_error:false` and `structured_output` present | success: text = compact JSON of it, `structured` = it |
//! | `is_error:false`, no schema asked | success: text = `result` |
//! | `is_error:false`, schema asked, no `structured_output`, a `StructuredOutput` input in the stream | an answer: the **last** input, as below (the model called the tool with an invalid input, then ended its turn) |
//! | `is_error:false`, schema asked, no `structured_output`, no input in the stream | `RunFailed{kind:"no_structured_output"}` (the model never called the tool; `subtype` still says success) |
//! | `subtype:"error_max_structured_output_retries"`, a `StructuredOutput` input in the stream | an answer: text = compact JSON of the **last** rejected input, `structured` = none; the worker's validation then fails it (an invalid answer, not a provider failure) |
//! | `subtype:"error_max_structured_output_retries"`, no input in the stream | `RunFailed{kind:"max_structured_output_retries"}` |
//! | `subtype:"error_max_turns"` | `RunFailed{kind:"max_turns"}` |
//! | `subtype:"error_max_budget_usd"` | `RunFailed{kind:"max_budget"}` |
//! | `subtype:"error_during_execution"` | `RunFailed{kind:"during_execution"}` |
//! | `is_error:true`, `api_error_status` 401/403, 429, 5xx | `Auth`, `RateLimited`, `Server` |
//! | `is_error:true`, other API status (e.g. 400; `subtype` says success) | `RunFailed{kind:"api_error"}` |
//! | no result object | `Truncated` (exit 0) or `RunFailed{kind:"exit_status"}` |
//!
//! When the caller listens for text ([`CallCx::on_text`], e.g. `geode run --stream`), the argv
//! gains `--include-partial-messages` and the answer's deltas are handed on as the CLI prints
//! them ([`super::claude_partial`]).
//!
//! `subtype` is advisory. Usage and `total_cost_usd` come from the result. The CLI's built-in
//! tools are off by default (`--tools ""`, only `StructuredOutput` remains); geode's own tools are
//! never forwarded ([`Adapter::supports_tools`] is false).
//! CLI reference: <https://docs.claude.com/en/docs/claude-code/cli-reference>.

use super::claude_partial::{PartialAnswer, STRUCTURED_OUTPUT_TOOL};
use super::cli_common::{self, CliOptions, CliRow};
use crate::llm::adapter::Adapter;
use crate::llm::call::{AdapterError, CallCx, TextSink};
use crate::llm::request::{AdapterCallRequest, AdapterResponse, ContentBlock, WireReport};
use crate::llm::subprocess::{MAX_ARG_BYTES, ProcessSpec};
use crate::schema::subset::WirePlan;
use crate::vocab::{StopReason, Usage};
use serde::Deserialize;
use serde_json::Value;
use std::path::PathBuf;

/// This adapter's registry row ([`crate::llm::registry::CLAUDE_CLI`]): its name, binary variable
/// (`GEODE_CLAUDE_BIN`), the parent variables the CLI may see and its default time limit.
pub const ROW: CliRow = CliRow::of_cli_row(&crate::llm::registry::CLAUDE_CLI);

/// Always set: no update checks, telemetry or other non-essential traffic.
const QUIET_ENV: &[(&str, &str)] = &[
    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
    ("DISABLE_AUTOUPDATER", "1"),
    ("DISABLE_TELEMETRY", "1"),
];

/// Whether the CLI's own built-in tools (Bash, Read, Edit, ...) are offered to the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BuiltinTools {
    /// `--tools ""`: only `StructuredOutput` (when a schema is set). The cautious default.
    #[default]
    Off,
    /// The CLI's defaults, under its default permission mode (print mode denies what needs approval).
    CliDefault,
}

/// Configuration of [`ClaudeCliAdapter`].
#[derive(Debug, Clone)]
pub struct ClaudeCliConfig {
    /// How to run the binary.
    pub cli: CliOptions,
    /// `--max-turns` (the structured-output turn does not count).
    pub max_turns: u32,
    /// The CLI's built-in tools.
    pub builtin_tools: BuiltinTools,
}

impl Default for ClaudeCliConfig {
    fn default() -> Self {
        Self {
            cli: CliOptions::with_timeout(ROW.cli.timeout),
            max_turns: 100,
            builtin_tools: BuiltinTools::Off,
        }
    }
}

/// The `claude-cli` adapter.
#[derive(Debug, Clone, Default)]
pub struct ClaudeCliAdapter {
    config: ClaudeCliConfig,
}

impl ClaudeCliAdapter {
    /// An adapter with `config`.
    pub fn new(config: ClaudeCliConfig) -> Self {
        Self { config }
    }

    /// The process to run `bin` for `req` with its schema as `plan` says, without spawning it;
    /// with `partial`, the CLI also prints the stream's deltas (`--include-partial-messages`,
    /// see [`PartialAnswer`]).
    pub fn process_spec(
        &self,
        bin: PathBuf,
        req: &AdapterCallRequest,
        plan: &WirePlan,
        partial: bool,
    ) -> ProcessSpec {
        let c = &self.config;
        let system_as_flag =
            !req.system_prompt.is_empty() && req.system_prompt.len() < MAX_ARG_BYTES;
        let mut spec = ProcessSpec::new(bin).args([
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--no-session-persistence",
        ]);
        if !req.model.is_empty() {
            spec = spec.args(["--model", req.model.as_str()]);
        }
        spec = spec.arg("--max-turns").arg(c.max_turns.to_string());
        if system_as_flag {
            spec = spec.args(["--system-prompt", req.system_prompt.as_str()]);
        }
        if let Some(schema) = &req.response_schema {
            let wire = plan.wire_schema(schema);
            spec = spec.arg("--json-schema").arg(wire.to_compact_json());
        }
        if partial {
            spec = spec.arg("--include-partial-messages");
        }
        if c.builtin_tools == BuiltinTools::Off {
            // Variadic: it must come after every other flag (the prompt is on stdin).
            spec = spec.args(["--tools", ""]);
        }
        let transcript = cli_common::transcript(req, !system_as_flag);
        spec = match stream_json_input(req, &transcript) {
            Some(line) => spec.args(["--input-format", "stream-json"]).stdin(line),
            None => spec.stdin(transcript),
        };
        for (k, v) in QUIET_ENV {
            spec = spec.env(*k, v);
        }
        c.cli.apply(spec, ROW.cli.pass_env, &[])
    }
}

/// The call as one stream-json user message, when it holds images or documents: every part
/// as the Messages block the CLI passes on, in the order of the conversation, then the
/// transcript as text. `None` for a text-only call (the transcript goes on stdin as it is).
fn stream_json_input(req: &AdapterCallRequest, transcript: &str) -> Option<String> {
    let mut content: Vec<ContentBlock> = req
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .filter(|b| {
            matches!(
                b,
                ContentBlock::Image { .. } | ContentBlock::Document { .. }
            )
        })
        .filter_map(crate::llm::wire::messages::wire_block)
        .collect();
    if content.is_empty() {
        return None;
    }
    content.push(ContentBlock::Text {
        text: transcript.to_owned(),
    });
    let line = serde_json::json!({
        "type": "user",
        "message": {"role": "user", "content": content},
    });
    Some(format!("{line}\n"))
}

#[async_trait::async_trait]
impl Adapter for ClaudeCliAdapter {
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
        let partial = cx.on_text.is_some();
        let plan = ROW.wire_plan(&req);
        let mut spec = self.process_spec(
            ROW.resolve_bin(self.config.cli.bin.as_ref())?,
            &req,
            &plan,
            partial,
        );
        if partial {
            let picker = std::sync::Mutex::new(PartialAnswer::new(req.response_schema.is_some()));
            let cx = cx.clone();
            spec = spec.stdout_lines(TextSink::new(move |line| {
                let delta = picker.lock().unwrap_or_else(|p| p.into_inner()).delta(line);
                if let Some(d) = delta {
                    cx.text_delta(&d);
                }
            }));
        }
        let timeout = self.config.cli.timeout;
        let out = ROW.run_process(spec, cx, timeout).await?;
        let Some(result) = last_result(&out.stdout.text) else {
            return Err(cli_common::no_outcome(
                ROW.name(),
                &out,
                "no result object on stdout",
            ));
        };
        let schema_requested = req.response_schema.is_some();
        let resp = match rejected_answer(&result, &out.stdout.text, schema_requested) {
            Some(resp) => resp,
            None => interpret(result, schema_requested)?,
        };
        Ok(cli_common::answered(resp, plan))
    }
}

/// The CLI's `result` object (docs/wire.md#the-claude-cli); unknown fields are ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct CliResult {
    /// `success` or an `error_*` subtype (advisory).
    pub subtype: String,
    /// The authoritative failure flag.
    pub is_error: bool,
    /// The HTTP status of an API error, when there was one.
    pub api_error_status: Option<Value>,
    /// The final text (absent on `error_*` subtypes).
    pub result: Option<String>,
    /// The validated `StructuredOutput` tool input (absent when the tool was never called).
    pub structured_output: Option<Value>,
    /// The last API stop reason.
    pub stop_reason: Option<String>,
    /// Cost of the whole run.
    pub total_cost_usd: Option<f64>,
    /// Token usage of the whole run.
    pub usage: Option<CliUsage>,
    /// Error messages of `error_*` subtypes.
    pub errors: Vec<String>,
}

/// The result's `usage`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct CliUsage {
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the cache.
    pub cache_read_input_tokens: u64,
}

/// The last `{"type":"result",…}` line of stdout (works for `json` and `stream-json`).
pub fn last_result(stdout: &str) -> Option<CliResult> {
    stdout.lines().rev().find_map(|line| {
        let v: Value = serde_json::from_str(line.trim()).ok()?;
        if v.get("type").and_then(Value::as_str) != Some("result") {
            return None;
        }
        serde_json::from_value(v).ok()
    })
}

/// The input of the last `StructuredOutput` tool call of the main conversation in a
/// `stream-json` stdout (`assistant` events; a subagent's events have a `parent_tool_use_id`).
pub fn last_structured_output_input(stdout: &str) -> Option<Value> {
    stdout.lines().rev().find_map(|line| {
        let v: Value = serde_json::from_str(line.trim()).ok()?;
        if v.get("type").and_then(Value::as_str) != Some("assistant")
            || v.get("parent_tool_use_id").is_some_and(|p| !p.is_null())
        {
            return None;
        }
        v["message"]["content"]
            .as_array()?
            .iter()
            .rev()
            .find(|b| {
                b.get("type").and_then(Value::as_str) == Some("tool_use")
                    && b.get("name").and_then(Value::as_str) == Some(STRUCTURED_OUTPUT_TOOL)
            })
            .and_then(|b| b.get("input").cloned())
    })
}

/// When the stream holds a `StructuredOutput` input but no accepted structured result, the last
/// input as an answer: the CLI gave up on the model's inputs (retries exhausted), or the model
/// called the tool with an invalid input and then ended its turn without calling it again. The
/// provider worked and the model answered, so the caller's validation decides (it fails, with
/// the errors of that answer, after the worker's retry). A turn cut at `max_tokens` or refused
/// keeps its own ending. `None` otherwise.
pub fn rejected_answer(
    r: &CliResult,
    stdout: &str,
    schema_requested: bool,
) -> Option<AdapterResponse> {
    let gave_up = r.subtype == "error_max_structured_output_retries";
    let ended_without_one = schema_requested
        && !r.is_error
        && r.structured_output.is_none()
        && !matches!(r.stop_reason.as_deref(), Some("max_tokens" | "refusal"));
    if !gave_up && !ended_without_one {
        return None;
    }
    let input = last_structured_output_input(stdout)?;
    Some(AdapterResponse {
        text: input.to_string(),
        tool_uses: Vec::new(),
        usage: usage_of(r),
        stop_reason: StopReason::EndTurn,
        structured: None,
        wire: WireReport::default(),
    })
}

fn usage_of(r: &CliResult) -> Usage {
    r.usage
        .as_ref()
        .map(|u| Usage {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cached_input_tokens: u.cache_read_input_tokens,
            cost_usd: r.total_cost_usd,
        })
        .unwrap_or(Usage {
            cost_usd: r.total_cost_usd,
            ..Usage::default()
        })
}

/// Turns a result object into the answer or a typed failure (the module table).
pub fn interpret(r: CliResult, schema_requested: bool) -> Result<AdapterResponse, AdapterError> {
    let run_failed = |kind: &str, message: String| AdapterError::RunFailed {
        adapter: ROW.name().into(),
        kind: kind.into(),
        message: crate::secret::clip(&message, 300),
    };
    let detail = || {
        let mut parts = r.errors.clone();
        parts.extend(r.result.clone());
        if parts.is_empty() {
            r.subtype.clone()
        } else {
            parts.join("; ")
        }
    };
    if r.is_error {
        let status = r
            .api_error_status
            .as_ref()
            .and_then(Value::as_u64)
            .and_then(|s| u16::try_from(s).ok());
        return Err(match (r.subtype.as_str(), status) {
            ("error_max_structured_output_retries", _) => {
                run_failed("max_structured_output_retries", detail())
            }
            ("error_max_turns", _) => run_failed("max_turns", detail()),
            ("error_max_budget_usd", _) => run_failed("max_budget", detail()),
            ("error_during_execution", _) => run_failed("during_execution", detail()),
            (_, Some(status @ (401 | 403))) => AdapterError::Auth {
                adapter: ROW.name().into(),
                status,
                message: crate::secret::clip(&detail(), 300),
            },
            (_, Some(429)) => AdapterError::RateLimited {
                adapter: ROW.name().into(),
                retry_after: None,
                message: crate::secret::clip(&detail(), 300),
            },
            (_, Some(status @ 500..=599)) => AdapterError::Server {
                adapter: ROW.name().into(),
                status,
                message: crate::secret::clip(&detail(), 300),
            },
            (_, Some(status)) => run_failed("api_error", format!("HTTP {status}: {}", detail())),
            (_, None) => run_failed("is_error", detail()),
        });
    }
    let usage = usage_of(&r);
    let stop_reason = match r.stop_reason.as_deref() {
        Some("max_tokens") => StopReason::MaxTokens,
        Some("refusal") => StopReason::Refusal,
        _ => StopReason::EndTurn,
    };
    let (text, structured) = match (r.structured_output, schema_requested) {
        (Some(v), _) => (v.to_string(), Some(v)),
        (None, true) => {
            return Err(run_failed(
                "no_structured_output",
                format!(
                    "the model never called the StructuredOutput tool (stop reason {})",
                    r.stop_reason.as_deref().unwrap_or("-")
                ),
            ));
        }
        (None, false) => (r.result.unwrap_or_default(), None),
    };
    Ok(AdapterResponse {
        text,
        tool_uses: Vec::new(),
        usage,
        stop_reason,
        structured,
        wire: WireReport::default(),
    })
}

#[cfg(test)]
mod tests;
