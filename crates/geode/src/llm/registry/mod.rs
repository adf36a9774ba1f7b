//! The registry: every adapter as data. A row ([`AdapterSpec`]) is the whole description of an
//! adapter, and the only one: its wire family ([`WireFamily`]), auth source ([`Auth`], with the
//! directory variables `CODEX_HOME` / `CLAUDE_CONFIG_DIR`), endpoint ([`Endpoint`]: path,
//! default base, `GEODE_*_BASE_URL`, the vendor SDK's variable), default model, model-name
//! patterns for routing and for reasoning models ([`ModelPattern`]), a vendor CLI's own facts
//! ([`CliSpec`]: the parent variables it may see, its default time limit), and capabilities (how
//! `response_schema` reaches the wire per schema ([`ModeRule`], [`AdapterSpec::mode_for`]),
//! framework tools, tools with a schema, streaming, the schema dialect).
//!
//! The rows are in `registry/rows.rs` ([`ADAPTERS`]); a new HTTP provider on an existing wire
//! family is one more row there. [`crate::llm::build`] builds adapters from rows; the README's
//! wiring table and `geode adapters` are generated from them ([`markdown_table`]; a test keeps
//! the README equal); `tests/capabilities.rs` checks every flag against what the adapter really
//! sends to the fakes.

use crate::llm::wire::chat::ChatTools;
use crate::llm::wire::responses::Backend;
use crate::schema::ResponseSchema;
use crate::schema::dialect::Dialect;
use crate::schema::subset::{self, WirePlan};
use crate::vocab::StructuredOutputMode;
use std::path::PathBuf;
use std::time::Duration;

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
    /// Whatever an OpenAI-compatible server serves (llama-server, Ollama, vLLM, LM Studio); no
    /// model name routes here.
    Compatible,
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
    /// `codex-cli`: `cli-flag` when OpenAI's strict mode takes the schema (after the strict
    /// fit's rewrites), else `prompt`. codex sends `--output-schema` as `strict: true` whatever
    /// the schema (seen with codex 0.171.0, docs/wire.md#the-codex-cli), and OpenAI answers a
    /// schema strict mode cannot take (a map, an optional property under `anyOf`) with 400
    /// `invalid_json_schema`; such a schema goes in the prompt instead, and the worker's
    /// validation is the check.
    CliFlagOrPrompt,
    /// Found per server and model by a probe (`openai-compatible`): `strict` when the server
    /// enforces `json_schema`, `hint` when it answers but ignores it, `json-mode` when it
    /// refuses it. Before the probe the row claims `strict`, its best; the worker probes before
    /// the first call and refuses a `require` the verdict does not meet.
    Probed,
}

/// The wire an adapter speaks: which JSON family (and so which [`crate::llm::wire`] module)
/// builds its body and reads its reply, or which non-HTTP path serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFamily {
    /// The OpenAI Responses family ([`crate::llm::wire::responses`]) on this server.
    Responses(Backend),
    /// The Anthropic Messages family ([`crate::llm::wire::messages`]).
    Messages,
    /// The Chat Completions family ([`crate::llm::wire::chat`]), with what the server accepts
    /// of tools (GLM's limits are GLM's rows only).
    Chat(ChatTools),
    /// A vendor CLI run as a subprocess (its binary is the row's [`Auth::Binary`]).
    Cli(CliSpec),
    /// The in-process local model (the `geode-local` crate).
    Local,
}

/// The vendor CLIs geode drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CliTool {
    /// `claude -p`.
    Claude,
    /// `codex exec`.
    Codex,
}

/// What a vendor-CLI row says beyond how its binary is found ([`Auth::Binary`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CliSpec {
    /// Which CLI (and so which adapter code runs it).
    pub tool: CliTool,
    /// Parent variables the CLI may see: its credentials and knobs (docs/wire.md#the-claude-cli,
    /// docs/wire.md#the-codex-cli).
    /// Anything else it needs is named in `geode.toml` (`[adapters.<name>] pass_env = [...]`).
    pub pass_env: &'static [&'static str],
    /// The default time limit of one call (GEODE's).
    pub timeout: Duration,
}

impl WireFamily {
    /// Whether the generic HTTP adapter serves it.
    pub fn is_http(self) -> bool {
        matches!(self, Self::Responses(_) | Self::Messages | Self::Chat(_))
    }
}

/// How the API key travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyHeader {
    /// `authorization: Bearer <key>`.
    Bearer,
    /// `x-api-key: <key>`.
    XApiKey,
}

/// Where an adapter's credentials come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// An API key in an environment variable.
    ApiKey {
        /// The variable.
        env: &'static str,
        /// The header that carries it.
        header: KeyHeader,
    },
    /// The codex login: `$CODEX_HOME/auth.json` (default `~/.codex/auth.json`), refreshed at the
    /// token service when expired ([`crate::llm::credentials::CodexAuthFile`]).
    CodexLogin {
        /// The variable naming the directory of the file.
        dir_env: &'static str,
        /// The path under `$HOME`.
        path: &'static str,
        /// The variable overriding the token service base URL.
        token_url_env: &'static str,
        /// The token service base URL (the refresh goes to `{it}/oauth/token`).
        default_token_url: &'static str,
    },
    /// A Claude subscription token: the variable, else Claude Code's credentials file
    /// `$CLAUDE_CONFIG_DIR/.credentials.json` (default `~/.claude/.credentials.json`).
    ClaudeLogin {
        /// The variable holding a token directly.
        token_env: &'static str,
        /// The variable naming Claude Code's config directory.
        dir_env: &'static str,
        /// The path under `$HOME`.
        path: &'static str,
    },
    /// An executable: the variable's path, else the name on `PATH` (its own login).
    Binary {
        /// The variable overriding the path.
        env: &'static str,
        /// The executable name.
        name: &'static str,
    },
    /// A model file (the local adapter).
    ModelFile,
    /// No credentials: the server wants none (a provider from `geode.toml` without `key_env`).
    None,
    /// An API key in an environment variable when the server wants one (a local server has
    /// none). The adapter counts as configured when its endpoint's base URL variable is set.
    OptionalApiKey {
        /// The variable.
        env: &'static str,
        /// The header that carries it.
        header: KeyHeader,
    },
}

/// Where an HTTP adapter's requests go: `{base}{path}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    /// The path after the base URL, e.g. `/v1/responses`.
    pub path: &'static str,
    /// The default base URL ("" when there is none: the base must be configured).
    pub default_base: &'static str,
    /// geode's variable overriding the base URL (same meaning as the config file's `base_url`).
    pub base_env: &'static str,
    /// The vendor SDK's own base-URL variable, honoured after `base_env`.
    pub sdk_base: Option<SdkBase>,
}

/// A vendor SDK's base-URL variable. Its value may end earlier or later than geode's base
/// (`OPENAI_BASE_URL` ends in `/v1`), so it has its own path: the request goes to
/// `{value}{path}`, as the SDK would send it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SdkBase {
    /// The variable, e.g. `OPENAI_BASE_URL`.
    pub env: &'static str,
    /// The path after its value, e.g. `/responses`.
    pub path: &'static str,
}

/// A model-name pattern (matched on the lowercased, trimmed name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelPattern {
    /// The name starts with this.
    Prefix(&'static str),
    /// The name starts with this and a digit follows (`o` → `o1`, `o3-mini`).
    PrefixDigit(&'static str),
    /// The name ends with this.
    Suffix(&'static str),
    /// The name contains this.
    Contains(&'static str),
    /// The name is exactly this.
    Exact(&'static str),
}

impl ModelPattern {
    /// Whether `model` (already lowercased and trimmed) matches.
    pub fn matches(self, model: &str) -> bool {
        match self {
            Self::Prefix(p) => model.starts_with(p),
            Self::PrefixDigit(p) => model
                .strip_prefix(p)
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit())),
            Self::Suffix(s) => model.ends_with(s),
            Self::Contains(s) => model.contains(s),
            Self::Exact(s) => model == s,
        }
    }
}

/// Whether any of `patterns` matches `model` (case and surrounding space ignored).
pub fn model_matches(patterns: &[ModelPattern], model: &str) -> bool {
    let m = model.trim().to_ascii_lowercase();
    !m.is_empty() && patterns.iter().any(|p| p.matches(&m))
}

/// One adapter: everything geode knows about it. The generic HTTP adapter
/// ([`crate::llm::adapters::http_adapter`]) is built from this row alone.
#[derive(Debug, Clone, PartialEq)]
pub struct AdapterSpec {
    /// The registry name.
    pub name: &'static str,
    /// The provider family.
    pub family: Family,
    /// How it is paid for.
    pub billing: Billing,
    /// The wire family (which body builder and reply reader).
    pub wire_family: WireFamily,
    /// The transport, in words (the README table).
    pub wire: &'static str,
    /// Where `response_schema` goes on the wire, in words.
    pub schema_on_wire: &'static str,
    /// How the structured-output mode is decided.
    pub mode_rule: ModeRule,
    /// Whether the framework's own tools are forwarded.
    pub framework_tools: bool,
    /// Whether tools and the schema can share one request.
    pub tools_with_schema: bool,
    /// Whether replies are streamed (SSE). Checked against the recorded requests by
    /// `tests/capabilities.rs`.
    pub streaming: bool,
    /// The schema dialect (for projection and preflight).
    pub dialect: Dialect,
    /// Dialect limits, in words.
    pub limits: &'static str,
    /// Where the credentials come from.
    pub auth: Auth,
    /// Where requests go (HTTP adapters only).
    pub endpoint: Option<Endpoint>,
    /// Headers every request carries besides the wire family's (a provider's own, from
    /// `geode.toml`; never a credential).
    pub headers: &'static [(&'static str, &'static str)],
    /// The model used when none is named.
    pub default_model: &'static str,
    /// Model names this adapter's family serves (model-name routing).
    pub models: &'static [ModelPattern],
    /// Model names that are reasoning models (`reasoning` sent, no temperature).
    pub reasoning_models: &'static [ModelPattern],
}

mod providers;
mod rows;

pub use providers::{ProviderConfig, ProviderError, SchemaOnWire, WireKind};
pub use rows::{ADAPTERS, CLAUDE_CLI, CODEX_CLI};

/// The spec of the built-in adapter named `name` (a provider from `geode.toml` is found through
/// [`crate::config::Config::spec`]).
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

/// `$dir_env/<file name of path>` when `dir_env` is set, else `$HOME/path`.
fn file_path(env: &dyn Environment, dir_env: &str, path: &str) -> Option<PathBuf> {
    if let Some(dir) = env.var(dir_env) {
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
    /// is on, which rules out Anthropic's forced tool. This is [`Self::plan_for`]'s mode.
    pub fn mode_for(
        &self,
        schema: Option<&ResponseSchema>,
        thinking: bool,
    ) -> StructuredOutputMode {
        self.plan_for(schema, thinking).mode
    }

    /// How `schema` goes on this adapter's wire: the mode, the copy sent (wrapped, stripped),
    /// the rewrites and why a weaker mode was used. The same functions of
    /// [`crate::schema::subset`] (and the Messages placement) build the bodies, so what `run`
    /// sends and what `geode schema check --adapter` shows cannot disagree.
    pub fn plan_for(&self, schema: Option<&ResponseSchema>, thinking: bool) -> WirePlan {
        let Some(schema) = schema else {
            return WirePlan::none();
        };
        match (self.mode_rule, self.dialect) {
            (ModeRule::StrictOrHint, _) => subset::openai_strict(schema),
            // Strict until the probe settles it (`Adapter::settle_mode`); the server takes any root.
            (ModeRule::Probed, _) => WirePlan::identity(StructuredOutputMode::Strict, Some(schema)),
            (ModeRule::AnthropicLadder, _) => {
                crate::llm::wire::messages::plan_for_thinking(schema, thinking)
            }
            (ModeRule::CliFlagOrPrompt, _) => {
                let strict = subset::openai_strict(schema);
                if strict.weaker_because.is_empty() {
                    return WirePlan {
                        mode: StructuredOutputMode::CliFlag,
                        ..strict
                    };
                }
                let mut plan = WirePlan::identity(StructuredOutputMode::Prompt, None);
                plan.weaker_because = strict.weaker_because;
                plan.weaker_because.push(
                    "codex sends --output-schema as strict: true, which OpenAI refuses for this \
                     schema (400 invalid_json_schema): the schema goes in the prompt"
                        .to_owned(),
                );
                plan
            }
            (ModeRule::Fixed(m), Dialect::ClaudeCli) => {
                subset::object_root(schema, &subset::ANTHROPIC_TOOL, m)
            }
            // JSON mode answers an object, on any Chat server.
            (ModeRule::Fixed(m @ StructuredOutputMode::JsonMode), _) => {
                subset::object_root(schema, &subset::GLM_JSON_OBJECT, m)
            }
            (ModeRule::Fixed(m), _) => WirePlan::identity(m, Some(schema)),
        }
    }

    /// The strongest mode this adapter can use (its guarantee at best: a probed row before
    /// its probe).
    pub fn best_mode(&self) -> StructuredOutputMode {
        match self.mode_rule {
            ModeRule::StrictOrHint | ModeRule::AnthropicLadder | ModeRule::Probed => {
                StructuredOutputMode::Strict
            }
            ModeRule::Fixed(m) => m,
            ModeRule::CliFlagOrPrompt => StructuredOutputMode::CliFlag,
        }
    }

    /// The modes this adapter can use, as a short text for tables (`strict / hint`).
    pub fn modes_text(&self) -> &'static str {
        match self.mode_rule {
            ModeRule::StrictOrHint => "strict / hint",
            ModeRule::AnthropicLadder => "strict / tool / prompt",
            ModeRule::Fixed(m) => m.as_str(),
            ModeRule::CliFlagOrPrompt => "cli-flag / prompt",
            ModeRule::Probed => "strict / hint / json-mode (probed)",
        }
    }

    /// Whether this machine has what the adapter needs. Never reads a secret's value beyond
    /// checking that it is set.
    pub fn is_configured(&self, env: &dyn Environment) -> bool {
        let file_exists = |p: Option<PathBuf>| p.is_some_and(|p| env.file_exists(&p));
        match self.auth {
            Auth::ApiKey { env: v, .. } => env.var(v).is_some(),
            Auth::ClaudeLogin { token_env, .. } => {
                env.var(token_env).is_some() || file_exists(self.credential_file(env))
            }
            Auth::CodexLogin { .. } => file_exists(self.credential_file(env)),
            Auth::Binary { env: v, name } => match env.var(v) {
                Some(p) => env.file_exists(std::path::Path::new(&p)),
                None => env.on_path(name),
            },
            Auth::ModelFile => file_exists(local_model_path(env)),
            Auth::None => true,
            Auth::OptionalApiKey { .. } => {
                self.endpoint.is_some_and(|e| env.var(e.base_env).is_some())
            }
        }
    }

    /// The credentials file this adapter reads on this machine (`$CODEX_HOME/auth.json`,
    /// `$CLAUDE_CONFIG_DIR/.credentials.json`, or their defaults under `$HOME`); `None` when
    /// it reads none or neither variable nor `HOME` is set.
    pub fn credential_file(&self, env: &dyn Environment) -> Option<PathBuf> {
        match self.auth {
            Auth::CodexLogin { dir_env, path, .. } | Auth::ClaudeLogin { dir_env, path, .. } => {
                file_path(env, dir_env, path)
            }
            _ => None,
        }
    }

    /// The credential, in words (no values).
    pub fn credential_text(&self) -> String {
        let file = |d: &str, path: &str| {
            let name = path.rsplit('/').next().unwrap_or(path);
            format!("`${d}/{name}` (default `~/{path}`)")
        };
        match self.auth {
            Auth::ApiKey { env, .. } => format!("`{env}`"),
            Auth::ClaudeLogin {
                token_env,
                dir_env,
                path,
            } => format!("`{token_env}` or {}", file(dir_env, path)),
            Auth::CodexLogin { dir_env, path, .. } => file(dir_env, path),
            Auth::Binary { env, name } => format!("`{name}` on PATH or `{env}`"),
            Auth::ModelFile => "GGUF file (`GEODE_LOCAL_MODEL` or the cache)".to_owned(),
            Auth::None => "none".to_owned(),
            Auth::OptionalApiKey { env, .. } => match self.endpoint {
                Some(e) => format!("`{}`; `{env}` if the server wants a key", e.base_env),
                None => format!("`{env}` if the server wants a key"),
            },
        }
    }

    /// Whether `model` names a reasoning model of this adapter (`reasoning` is sent, no
    /// temperature).
    pub fn is_reasoning_model(&self, model: &str) -> bool {
        model_matches(self.reasoning_models, model)
    }
}

/// The provider family a model name belongs to, from the rows' [`AdapterSpec::models`].
pub fn family_of_model(model: &str) -> Option<Family> {
    ADAPTERS
        .iter()
        .find(|a| model_matches(a.models, model))
        .map(|a| a.family)
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
        let best = a.best_mode();
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
mod tests;
