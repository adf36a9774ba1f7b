//! The capability registry: every adapter and what it can do, as data.
//!
//! [`ADAPTERS`] is the single source of the README's wiring table and of `geode adapters`
//! (a test keeps the README equal to [`markdown_table`]). Each row says how `response_schema`
//! reaches the wire ([`ModeRule`], judged per schema by [`AdapterSpec::mode_for`]), whether the
//! framework's tools work, whether tools and a schema can share a request, streaming, the schema
//! dialect, and which credentials the adapter needs. Provider names are matched only here and in
//! `routing.rs`.

use crate::schema::ResponseSchema;
use crate::schema::dialect::Dialect;
use crate::schema::strict::check_strict;
use crate::vocab::StructuredOutputMode;
use std::path::PathBuf;

/// The provider family, used by model-name routing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// OpenAI models (`gpt-*`, `o1`/`o3`/`o4*`, `*-codex`).
    OpenAi,
    /// Anthropic models (`claude-*`).
    Anthropic,
    /// Zhipu GLM models (`glm-*`).
    Glm,
    /// The embedded local model.
    Local,
}

/// How the caller pays, which orders candidates within a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Billing {
    /// A pay-as-you-go API key (tried first).
    Payg,
    /// A subscription token.
    Subscription,
    /// A vendor CLI with its own login.
    Cli,
    /// Free, in-process.
    Local,
}

/// How an adapter's structured-output mode depends on the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModeRule {
    /// `strict` when the OpenAI strict check passes, else `hint`.
    StrictOrHint,
    /// Anthropic: `strict` (native `output_config.format`) when the schema fits the subset,
    /// else a forced output `tool` (thinking off), else `prompt`.
    AnthropicLadder,
    /// Always this mode.
    Fixed(StructuredOutputMode),
}

/// A credential an adapter needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    /// An environment variable holding a key.
    Env(&'static str),
    /// Either of two sources: an environment variable, or a file under the home directory
    /// (or under the directory named by `dir_env`, when set).
    EnvOrFile {
        /// The variable.
        env: &'static str,
        /// A variable naming the directory of the file, if any.
        dir_env: Option<&'static str>,
        /// The path relative to that directory, or to `$HOME` with `~/` stripped.
        path: &'static str,
    },
    /// A file (under `dir_env` when set, else under `$HOME`).
    File {
        /// A variable naming the directory of the file, if any.
        dir_env: Option<&'static str>,
        /// The path relative to that directory, or to `$HOME` with `~/` stripped.
        path: &'static str,
    },
    /// An executable: the variable's path, else the name on `PATH`.
    Binary {
        /// The variable overriding the path.
        env: &'static str,
        /// The executable name.
        name: &'static str,
    },
    /// A model file (the local adapter).
    ModelFile,
    /// Nothing.
    None,
}

/// One adapter's capabilities.
#[derive(Debug, Clone, PartialEq)]
pub struct AdapterSpec {
    /// The registry name.
    pub name: &'static str,
    /// The provider family.
    pub family: Family,
    /// How it is paid for.
    pub billing: Billing,
    /// The transport, in words.
    pub wire: &'static str,
    /// Where `response_schema` goes on the wire.
    pub schema_on_wire: &'static str,
    /// How the structured-output mode is decided.
    pub mode_rule: ModeRule,
    /// Whether the framework's own tools are forwarded.
    pub framework_tools: bool,
    /// Whether tools and the schema can share one request.
    pub tools_with_schema: bool,
    /// Whether responses are streamed.
    pub streaming: bool,
    /// The schema dialect (for projection and preflight).
    pub dialect: Dialect,
    /// Dialect limits, in words.
    pub limits: &'static str,
    /// The credentials it needs.
    pub credential: Credential,
    /// The variable overriding the base URL.
    pub base_url_env: Option<&'static str>,
    /// The default base URL.
    pub default_base_url: Option<&'static str>,
    /// The model used when none is named.
    pub default_model: &'static str,
}

const OPENAI_LIMITS: &str =
    "strict: 5,000 properties, 10 levels, 1,000 enum values, 120,000 characters";

/// Every adapter, in the reference's registration order, plus `local`.
pub const ADAPTERS: &[AdapterSpec] = &[
    AdapterSpec {
        name: "anthropic-payg",
        family: Family::Anthropic,
        billing: Billing::Payg,
        wire: "Messages API `POST {base}/v1/messages`",
        schema_on_wire: "`output_config.format` json_schema when it fits; else a forced output tool; else the system prompt",
        mode_rule: ModeRule::AnthropicLadder,
        framework_tools: true,
        tools_with_schema: true,
        streaming: false,
        dialect: Dialect::Anthropic,
        limits: "no recursion; unsupported keywords checked locally",
        credential: Credential::Env("ANTHROPIC_API_KEY"),
        base_url_env: Some("GEODE_ANTHROPIC_BASE_URL"),
        default_base_url: Some("https://api.anthropic.com"),
        default_model: "claude-sonnet-4-6",
    },
    AdapterSpec {
        name: "anthropic-oauth",
        family: Family::Anthropic,
        billing: Billing::Subscription,
        wire: "Messages API `POST {base}/v1/messages`, bearer + `anthropic-beta: oauth-2025-04-20`",
        schema_on_wire: "same as anthropic-payg",
        mode_rule: ModeRule::AnthropicLadder,
        framework_tools: true,
        tools_with_schema: true,
        streaming: false,
        dialect: Dialect::Anthropic,
        limits: "no recursion; unsupported keywords checked locally",
        credential: Credential::EnvOrFile {
            env: "CLAUDE_CODE_OAUTH_TOKEN",
            dir_env: None,
            path: ".claude/.credentials.json",
        },
        base_url_env: Some("GEODE_ANTHROPIC_BASE_URL"),
        default_base_url: Some("https://api.anthropic.com"),
        default_model: "claude-sonnet-4-6",
    },
    AdapterSpec {
        name: "claude-cli",
        family: Family::Anthropic,
        billing: Billing::Cli,
        wire: "`claude -p --output-format stream-json` subprocess",
        schema_on_wire: "`--json-schema <inline JSON>`; `structured_output` read and re-validated",
        mode_rule: ModeRule::Fixed(StructuredOutputMode::CliValidated),
        framework_tools: false,
        tools_with_schema: false,
        streaming: false,
        dialect: Dialect::ClaudeCli,
        limits: "argument ≤ 128 KiB",
        credential: Credential::Binary {
            env: "GEODE_CLAUDE_BIN",
            name: "claude",
        },
        base_url_env: None,
        default_base_url: None,
        default_model: "",
    },
    AdapterSpec {
        name: "openai-payg",
        family: Family::OpenAi,
        billing: Billing::Payg,
        wire: "Responses API `POST {base}/v1/responses`",
        schema_on_wire: "`text.format` json_schema, `strict` from the strict check",
        mode_rule: ModeRule::StrictOrHint,
        framework_tools: true,
        tools_with_schema: true,
        streaming: false,
        dialect: Dialect::OpenAiStrict,
        limits: OPENAI_LIMITS,
        credential: Credential::Env("OPENAI_API_KEY"),
        base_url_env: Some("GEODE_OPENAI_BASE_URL"),
        default_base_url: Some("https://api.openai.com"),
        default_model: "gpt-5.5",
    },
    AdapterSpec {
        name: "codex-oauth",
        family: Family::OpenAi,
        billing: Billing::Subscription,
        wire: "ChatGPT backend `{base}/backend-api/codex/responses`, SSE, `store:false`",
        schema_on_wire: "`text.format` json_schema, `strict` from the strict check",
        mode_rule: ModeRule::StrictOrHint,
        framework_tools: true,
        tools_with_schema: true,
        streaming: true,
        dialect: Dialect::OpenAiStrict,
        limits: OPENAI_LIMITS,
        credential: Credential::File {
            dir_env: Some("CODEX_HOME"),
            path: ".codex/auth.json",
        },
        base_url_env: Some("GEODE_CODEX_BASE_URL"),
        default_base_url: Some("https://chatgpt.com"),
        default_model: "gpt-5.5",
    },
    AdapterSpec {
        name: "codex-cli",
        family: Family::OpenAi,
        billing: Billing::Cli,
        wire: "`codex exec --json` subprocess",
        schema_on_wire: "temp file (0600) + `--output-schema FILE`, removed on every path",
        mode_rule: ModeRule::Fixed(StructuredOutputMode::CliFlag),
        framework_tools: false,
        tools_with_schema: false,
        streaming: false,
        dialect: Dialect::CodexCli,
        limits: OPENAI_LIMITS,
        credential: Credential::Binary {
            env: "GEODE_CODEX_BIN",
            name: "codex",
        },
        base_url_env: None,
        default_base_url: None,
        default_model: "",
    },
    AdapterSpec {
        name: "glm-payg",
        family: Family::Glm,
        billing: Billing::Payg,
        wire: "Chat Completions `POST {base}/chat/completions`",
        schema_on_wire: "`response_format: json_object` + the schema in the system prompt",
        mode_rule: ModeRule::Fixed(StructuredOutputMode::JsonMode),
        framework_tools: true,
        tools_with_schema: true,
        streaming: false,
        dialect: Dialect::Glm,
        limits: "JSON mode only; `tool_choice` auto only",
        credential: Credential::Env("ZAI_API_KEY"),
        base_url_env: Some("GEODE_GLM_BASE_URL"),
        default_base_url: Some("https://api.z.ai/api/paas/v4"),
        default_model: "glm-5.2",
    },
    AdapterSpec {
        name: "glm-coding-plan",
        family: Family::Glm,
        billing: Billing::Subscription,
        wire: "Chat Completions `POST {base}/chat/completions`",
        schema_on_wire: "`response_format: json_object` + the schema in the system prompt",
        mode_rule: ModeRule::Fixed(StructuredOutputMode::JsonMode),
        framework_tools: true,
        tools_with_schema: true,
        streaming: false,
        dialect: Dialect::Glm,
        limits: "JSON mode only; `tool_choice` auto only",
        credential: Credential::Env("ZAI_CODING_PLAN_KEY"),
        base_url_env: Some("GEODE_GLM_CODING_BASE_URL"),
        default_base_url: Some("https://api.z.ai/api/coding/paas/v4"),
        default_model: "glm-5.2",
    },
    AdapterSpec {
        name: "local",
        family: Family::Local,
        billing: Billing::Local,
        wire: "in-process llama.cpp on a GGUF file",
        schema_on_wire: "llguidance constrained decoding (schema, choice, regex, grammar)",
        mode_rule: ModeRule::Fixed(StructuredOutputMode::Constrained),
        framework_tools: false,
        tools_with_schema: false,
        streaming: false,
        dialect: Dialect::Local,
        limits: "keywords llguidance cannot compile fail closed",
        credential: Credential::ModelFile,
        base_url_env: None,
        default_base_url: None,
        default_model: "SmolLM2-135M-Instruct",
    },
];

/// The spec of the adapter named `name`.
pub fn spec(name: &str) -> Option<&'static AdapterSpec> {
    ADAPTERS.iter().find(|a| a.name == name)
}

/// What the machine offers: environment variables, files and executables. A trait so routing
/// tests can describe a machine without touching the real one.
pub trait Environment {
    /// An environment variable (non-empty values only).
    fn var(&self, name: &str) -> Option<String>;
    /// Whether a file exists.
    fn file_exists(&self, path: &std::path::Path) -> bool;
    /// Whether an executable is on `PATH`.
    fn on_path(&self, name: &str) -> bool;
}

/// The real process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl Environment for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
    fn file_exists(&self, path: &std::path::Path) -> bool {
        path.is_file()
    }
    fn on_path(&self, name: &str) -> bool {
        std::env::var_os("PATH")
            .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(name).is_file()))
    }
}

fn file_path(env: &dyn Environment, dir_env: Option<&str>, path: &str) -> Option<PathBuf> {
    if let Some(dir) = dir_env.and_then(|d| env.var(d)) {
        let file = std::path::Path::new(path)
            .file_name()
            .map(PathBuf::from)
            .unwrap_or_default();
        return Some(PathBuf::from(dir).join(file));
    }
    env.var("HOME").map(|h| PathBuf::from(h).join(path))
}

/// Where the local model is looked for: `GEODE_LOCAL_MODEL`, else the cache the Makefile fills.
pub fn local_model_path(env: &dyn Environment) -> Option<PathBuf> {
    if let Some(p) = env.var("GEODE_LOCAL_MODEL") {
        return Some(PathBuf::from(p));
    }
    let cache = env
        .var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| env.var("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(cache.join("geode/models/SmolLM2-135M-Instruct.Q4_1.gguf"))
}

impl AdapterSpec {
    /// The mode used for `schema` (`none` without one). `thinking` is whether extended thinking
    /// is on, which rules out Anthropic's forced tool.
    pub fn mode_for(
        &self,
        schema: Option<&ResponseSchema>,
        thinking: bool,
    ) -> StructuredOutputMode {
        let Some(schema) = schema else {
            return StructuredOutputMode::None;
        };
        match self.mode_rule {
            ModeRule::Fixed(m) => m,
            ModeRule::StrictOrHint => {
                if check_strict(schema.as_value()).compatible {
                    StructuredOutputMode::Strict
                } else {
                    StructuredOutputMode::Hint
                }
            }
            ModeRule::AnthropicLadder => {
                if crate::schema::dialect::anthropic_native_fits(schema).is_ok() {
                    StructuredOutputMode::Strict
                } else if !thinking {
                    StructuredOutputMode::Tool
                } else {
                    StructuredOutputMode::Prompt
                }
            }
        }
    }

    /// The modes this adapter can use, as a short text for tables (`strict / hint`).
    pub fn modes_text(&self) -> &'static str {
        match self.mode_rule {
            ModeRule::StrictOrHint => "strict / hint",
            ModeRule::AnthropicLadder => "strict / tool / prompt",
            ModeRule::Fixed(m) => m.as_str(),
        }
    }

    /// Whether this machine has what the adapter needs. Never reads a secret's value beyond
    /// checking that it is set.
    pub fn is_configured(&self, env: &dyn Environment) -> bool {
        match self.credential {
            Credential::Env(v) => env.var(v).is_some(),
            Credential::EnvOrFile {
                env: v,
                dir_env,
                path,
            } => {
                env.var(v).is_some()
                    || file_path(env, dir_env, path).is_some_and(|p| env.file_exists(&p))
            }
            Credential::File { dir_env, path } => {
                file_path(env, dir_env, path).is_some_and(|p| env.file_exists(&p))
            }
            Credential::Binary { env: v, name } => match env.var(v) {
                Some(p) => env.file_exists(std::path::Path::new(&p)),
                None => env.on_path(name),
            },
            Credential::ModelFile => local_model_path(env).is_some_and(|p| env.file_exists(&p)),
            Credential::None => true,
        }
    }

    /// The credential, in words (no values).
    pub fn credential_text(&self) -> String {
        match self.credential {
            Credential::Env(v) => format!("`{v}`"),
            Credential::EnvOrFile { env, path, .. } => format!("`{env}` or `~/{path}`"),
            Credential::File {
                dir_env: Some(d),
                path,
            } => {
                let file = path.rsplit('/').next().unwrap_or(path);
                format!("`${d}/{file}` (default `~/{path}`)")
            }
            Credential::File {
                dir_env: None,
                path,
            } => format!("`~/{path}`"),
            Credential::Binary { env, name } => format!("`{name}` on PATH or `{env}`"),
            Credential::ModelFile => "GGUF file (`GEODE_LOCAL_MODEL` or the cache)".to_owned(),
            Credential::None => "none".to_owned(),
        }
    }
}

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// The wiring table as Markdown, exactly as the README embeds it.
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| adapter | wire | `response_schema` on the wire | modes | guarantee (best) | framework tools | tools + schema | credentials |\n|---|---|---|---|---|---|---|---|\n",
    );
    for a in ADAPTERS {
        let best = match a.mode_rule {
            ModeRule::StrictOrHint | ModeRule::AnthropicLadder => StructuredOutputMode::Strict,
            ModeRule::Fixed(m) => m,
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} | {} | {} |\n",
            a.name,
            a.wire,
            a.schema_on_wire,
            a.modes_text(),
            best.level().as_str(),
            yes_no(a.framework_tools),
            yes_no(a.tools_with_schema),
            a.credential_text()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nine_adapters_with_unique_names() {
        assert_eq!(ADAPTERS.len(), 9);
        let mut names: Vec<_> = ADAPTERS.iter().map(|a| a.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 9);
    }

    #[test]
    fn openai_mode_follows_the_strict_check() {
        let strict = ResponseSchema::from_value(json!({"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false})).unwrap();
        let loose = ResponseSchema::from_value(
            json!({"type":"object","properties":{"a":{"type":"string"}}}),
        )
        .unwrap();
        let s = spec("openai-payg").unwrap();
        assert_eq!(
            s.mode_for(Some(&strict), false),
            StructuredOutputMode::Strict
        );
        assert_eq!(s.mode_for(Some(&loose), false), StructuredOutputMode::Hint);
        assert_eq!(s.mode_for(None, false), StructuredOutputMode::None);
        assert_eq!(
            spec("glm-payg").unwrap().mode_for(Some(&strict), false),
            StructuredOutputMode::JsonMode
        );
    }

    #[test]
    fn cli_adapters_do_not_forward_framework_tools() {
        for n in ["claude-cli", "codex-cli", "local"] {
            assert!(!spec(n).unwrap().framework_tools, "{n}");
        }
    }
}
