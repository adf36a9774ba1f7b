//! The registry: every adapter as data. A row ([`AdapterSpec`]) is the whole description of an
//! adapter, and the only one: its wire family ([`WireFamily`]), auth source ([`Auth`], with the
//! directory variables `CODEX_HOME` / `CLAUDE_CONFIG_DIR`), endpoint ([`Endpoint`]: path,
//! default base, `GEODE_*_BASE_URL`, the vendor SDK's variable), default model, model-name
//! patterns for routing and for reasoning models ([`ModelPattern`]), a vendor CLI's own facts
//! ([`CliSpec`]: the parent variables it may see, its default time limit), and capabilities (how
//! `response_schema` reaches the wire ([`SchemaRoute`]), framework tools, tools with a schema,
//! streaming).
//!
//! The rows are in `registry/rows.rs` ([`ADAPTERS`]); a new HTTP provider on an existing wire
//! family is one more row there. [`crate::llm::build`] builds adapters from rows; the README's
//! wiring table and `geode adapters` are generated from them ([`markdown_table`]; a test keeps
//! the README equal); `tests/capabilities.rs` checks every flag against what the adapter really
//! sends to the fakes.

use crate::llm::wire::chat::ChatTools;
use crate::llm::wire::responses::Backend;
use crate::media::Accepts;
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
    /// The pattern as a glob: `gpt-*`, `*v`, `*-codex-*`, `o1`, `oN*`.
    pub fn glob(self) -> String {
        match self {
            Self::Prefix(p) => format!("{p}*"),
            Self::PrefixDigit(p) => format!("{p}N*"),
            Self::Suffix(s) => format!("*{s}"),
            Self::Contains(s) => format!("*{s}*"),
            Self::Exact(s) => s.to_owned(),
        }
    }

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
    /// How `response_schema` goes on the wire: the modes, the subsets, the limits.
    pub schema_route: SchemaRoute,
    /// Whether the framework's own tools are forwarded.
    pub framework_tools: bool,
    /// Whether tools and the schema can share one request.
    pub tools_with_schema: bool,
    /// Whether replies are streamed (SSE). Checked against the recorded requests by
    /// `tests/capabilities.rs`.
    pub streaming: bool,
    /// The provider's schema limits, in words.
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
    /// What it takes beside text (images, documents), per model where models differ.
    pub inputs: Inputs,
}

/// What an adapter takes beside text: one [`Accepts`] for its models, and another for the
/// models a pattern names (GLM's vision models). The first pattern that matches wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inputs {
    /// What its models take.
    pub all: Accepts,
    /// What the models a pattern names take instead.
    pub by_model: &'static [(ModelPattern, Accepts)],
}

impl Inputs {
    /// Text only.
    pub const TEXT: Self = Self::all(Accepts::TEXT);

    /// The same for every model.
    pub const fn all(all: Accepts) -> Self {
        Self { all, by_model: &[] }
    }

    /// What `model` takes (trimmed and lowercased before it is matched).
    pub fn for_model(&self, model: &str) -> Accepts {
        let model = model.trim().to_ascii_lowercase();
        self.by_model
            .iter()
            .find(|(p, _)| p.matches(&model))
            .map_or(self.all, |(_, a)| *a)
    }

    /// In a few characters, for the terminal table: `text`, `text (*v: text+image+url)`.
    pub fn short(&self) -> String {
        let mut out = self.all.short();
        if let Some((p, a)) = self.by_model.first() {
            out.push_str(&format!(" ({}: {})", p.glob(), a.short()));
        }
        out
    }

    /// In words, for `geode adapters` and the README: `text` or `text, image (png, ...)`, and
    /// what pattern-named models take.
    pub fn words(&self) -> String {
        let mut out = self.all.words();
        let mut seen: Vec<Accepts> = Vec::new();
        for (_, a) in self.by_model {
            if seen.contains(a) {
                continue;
            }
            seen.push(*a);
            let names: Vec<String> = self
                .by_model
                .iter()
                .filter(|(_, b)| b == a)
                .map(|(p, _)| format!("`{}`", p.glob()))
                .collect();
            out.push_str(&format!("; {} models: {}", names.join(" "), a.words()));
        }
        out
    }
}

mod providers;
mod rows;
mod schema_route;

pub use providers::{
    InputKind, ProviderConfig, ProviderError, SchemaOnWire, WireKind, check_base_url,
};
pub use rows::{ADAPTERS, CLAUDE_CLI, CODEX_CLI};
pub use schema_route::{PlanCx, SchemaRoute};

/// The row a local engine serves, routing's embedded default when nothing else is configured:
/// the built-in row whose wire family is [`WireFamily::Local`] (found by what it is, never by its
/// name).
pub fn embedded() -> Option<&'static AdapterSpec> {
    ADAPTERS.iter().find(|a| a.wire_family == WireFamily::Local)
}

/// The spec of the built-in adapter named `name` (a provider from `geode.toml` is found through
/// [`crate::llm::settings::AdapterSettings::spec`]).
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

/// The user's config directory, where geode keeps `geode/`: `XDG_CONFIG_HOME` when it is an
/// absolute path (a relative one is ignored, as the XDG specification says: a repository's
/// directory could otherwise hold what the user alone should), else `$HOME/.config`; `None`
/// with neither.
pub fn user_config_dir(env: &dyn Environment) -> Option<std::path::PathBuf> {
    env.var("XDG_CONFIG_HOME")
        .map(std::path::PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            env.var("HOME")
                .map(|h| std::path::PathBuf::from(h).join(".config"))
        })
}

/// Whether `name` is a portable environment variable name: an ASCII letter or `_`, then ASCII
/// letters, digits or `_`. Anything else (`=`, NUL, spaces, a pasted value) is refused.
pub fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
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
        "| adapter | wire | `response_schema` on the wire | modes | guarantee (best) | framework tools | tools + schema | inputs | credentials |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for a in ADAPTERS {
        let best = a.schema_route.best_mode();
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            a.name,
            a.wire,
            a.schema_on_wire,
            a.schema_route.modes_text(),
            best.level().as_str(),
            yes_no(a.framework_tools),
            yes_no(a.tools_with_schema),
            a.inputs.words(),
            a.credential_text()
        ));
    }
    out
}

#[cfg(test)]
mod tests;
