//! Named contracts (`[contracts.NAME]`): a schema, a prompt template whose `{name}`s are typed
//! inputs, a route and a policy, defined once in `geode.toml` and run by name from every path:
//! `geode run --contract NAME --input k=v`, `geode mcp` (each contract a tool), and any program
//! holding the [`Settings`] ([`Settings::contract_task`]).
//!
//! ```toml
//! [contracts.review]
//! description = "Decide whether to merge a pull request"
//! schema = "schemas/decision.schema.json"   # a file beside geode.toml, or an inline table
//! prompt = "Decide whether to merge this pull request:\n{diff}"
//! adapter = "openai-payg"                   # or model = "...", and fallback = [...]
//! require = "enforced"                      # also repair, cache, system, max_tokens
//!
//! [contracts.review.inputs]                 # optional: every input is a string unless typed
//! diff = { type = "string", description = "the unified diff" }
//! ```
//!
//! Every contract is checked when the file is loaded, each problem naming its key: the name
//! (an MCP tool name: letters, digits, `_`, `-`, `.`), the schema (read and compiled; a path is
//! relative to the file's directory and, symlinks followed, may not leave it, so a project's
//! file cannot make a tool that reads `~/.ssh`), the template, every input (declared inputs the
//! prompt never uses are refused), and the route (known adapters only).
//!
//! Trust: a contract chooses an adapter, a model and a policy, which a project's file may
//! already do (`default_adapter`); where a key goes stays with `[adapters]` and `[providers]`,
//! and where cached answers come from with `[cache]`, both under [`super::trust`]. `cache =
//! false` only keeps one contract out of the configured cache.

mod inputs;
mod template;

pub use inputs::{
    Input, InputDecl, InputError, InputTable, InputType, MAX_INPUT_BYTES, input_schema,
};
pub use template::{MAX_INPUT_NAME_CHARS, Template, TemplateError, is_input_name};

use super::{Config, ConfigError, Settings};
use crate::agent::task::{Output, Route, Task};
use crate::schema::ResponseSchema;
use crate::schema::validate::CompiledSchema;
use crate::vocab::Require;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};

/// The JSON Schema dialect a contract's schema is read in when it names none (`$schema`).
pub const DEFAULT_DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// The largest schema file a contract may name.
pub const MAX_SCHEMA_FILE_BYTES: u64 = 4 << 20;

/// The longest contract name (an MCP tool name's limit).
pub const MAX_CONTRACT_NAME_CHARS: usize = 128;

/// One `[contracts.NAME]` table, as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContractConfig {
    /// What the contract does, for the people and models that pick it (a tool's description).
    #[serde(default)]
    pub description: String,
    /// The answer's JSON Schema: a file beside `geode.toml`, or an inline table.
    pub schema: SchemaSource,
    /// The user turn, with `{name}` for each input (`{{`, `}}`: literal braces).
    pub prompt: String,
    /// A system prompt.
    pub system: Option<String>,
    /// Types and descriptions of inputs (a string without an entry).
    #[serde(default)]
    pub inputs: BTreeMap<String, InputDecl>,
    /// The adapter (a registry name or a `[providers.NAME]`).
    pub adapter: Option<String>,
    /// The model (with `adapter`: that adapter's model; alone: routed by its family).
    pub model: Option<String>,
    /// Adapters tried in order when the routed one fails with a retryable error.
    pub fallback: Option<Vec<String>>,
    /// The least guarantee the route must give, checked before any request.
    pub require: Option<Require>,
    /// Whether the declared repair tier may read an answer (default: the file's `repair`).
    pub repair: Option<bool>,
    /// Whether the configured response cache may answer and keep answers (default: yes).
    pub cache: Option<bool>,
    /// Output tokens per call.
    pub max_tokens: Option<NonZeroU32>,
}

/// `schema = "path"` or `schema = { type = "object", ... }`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum SchemaSource {
    /// A file, relative to the directory of the config file.
    Path(PathBuf),
    /// The schema itself.
    Inline(Map<String, Value>),
}

/// A contract, checked: what every path runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Contract {
    /// Its name (`[contracts.NAME]`).
    pub name: String,
    /// What it does.
    pub description: String,
    /// The answer's schema, as written.
    pub schema: ResponseSchema,
    /// The prompt template.
    pub template: Template,
    /// Its inputs, in the order the prompt first names them.
    pub inputs: Vec<Input>,
    /// The system prompt.
    pub system: Option<String>,
    /// Where it runs.
    pub route: Route,
    /// Its own fallback chain, if it has one.
    pub fallback: Option<Vec<String>>,
    /// Its requirement, if it has one.
    pub require: Option<Require>,
    /// Its repair choice, if it makes one.
    pub repair: Option<bool>,
    /// Its cache choice, if it makes one.
    pub cache: Option<bool>,
    /// Its output token budget, if it has one.
    pub max_tokens: Option<NonZeroU32>,
}

impl Contract {
    /// The JSON Schema of the contract's inputs (an MCP tool's `inputSchema`).
    pub fn input_schema(&self) -> Value {
        input_schema(&self.inputs)
    }

    /// The answer's schema with its dialect stated: `$schema` as written, else
    /// [`DEFAULT_DIALECT`] (an MCP tool's `outputSchema`).
    pub fn output_schema(&self) -> Value {
        let mut schema = self.schema.as_object().clone();
        if !schema.contains_key("$schema") {
            schema.insert(
                "$schema".to_owned(),
                Value::String(DEFAULT_DIALECT.to_owned()),
            );
        }
        Value::Object(schema)
    }

    /// The prompt these arguments make, each checked against its input.
    pub fn prompt(&self, args: &Map<String, Value>) -> Result<String, InputError> {
        let texts = inputs::texts(&self.inputs, args)?;
        Ok(self.template.render(|name| {
            self.inputs
                .iter()
                .position(|i| i.name == name)
                .and_then(|at| texts.get(at))
                .map_or("", String::as_str)
        }))
    }

    /// `NAME=VALUE` pairs (`geode run --input`) as arguments, each read by its input's type.
    pub fn args_from_pairs(&self, pairs: &[String]) -> Result<Map<String, Value>, InputError> {
        inputs::from_pairs(&self.inputs, pairs)
    }

    /// The task these arguments make: the prompt, the schema, the contract's route and policy,
    /// over the file's timeout and repair choice.
    pub fn task(&self, args: &Map<String, Value>, settings: &Settings) -> Result<Task, InputError> {
        let mut task = Task::new(self.prompt(args)?);
        task.output = Output::Schema(self.schema.clone());
        task.route = self.route.clone();
        task.fallback = self.fallback.clone();
        task.require = self.require.unwrap_or_default();
        task.repair = self.repair.unwrap_or(settings.repair);
        task.cache = self.cache.unwrap_or(true);
        if let Some(system) = &self.system {
            task.system = system.clone();
        }
        if let Some(t) = settings.request_timeout {
            task.budgets.timeout = t;
        }
        if let Some(m) = self.max_tokens {
            task.budgets.max_tokens = m.get();
        }
        Ok(task)
    }
}

impl Settings {
    /// The task of the contract `name` for these arguments ([`Contract::task`]).
    pub fn contract_task(&self, name: &str, args: &Map<String, Value>) -> Result<Task, InputError> {
        self.contracts
            .get(name)
            .ok_or_else(|| InputError::UnknownContract(name.chars().take(128).collect()))?
            .task(args, self)
    }
}

/// Whether `name` may name a contract: 1 to [`MAX_CONTRACT_NAME_CHARS`] ASCII letters, digits,
/// `_`, `-` and `.` (the characters an MCP tool name may hold).
pub fn is_contract_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_CONTRACT_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Every contract of `cfg`, checked; `path` is the config file (its directory holds the schema
/// files). The first problem is an error naming its key.
pub(super) fn check_all(
    cfg: &Config,
    path: &str,
) -> Result<BTreeMap<String, Contract>, ConfigError> {
    cfg.contracts
        .iter()
        .map(|(name, table)| {
            check(cfg, path, name, table)
                .map(|c| (name.clone(), c))
                .map_err(|(key, message)| ConfigError::Setting {
                    path: path.to_owned(),
                    key: format!(
                        "[contracts.{name}]{}{key}",
                        if key.is_empty() { "" } else { " " }
                    ),
                    message: crate::secret::scrub(&message),
                })
        })
        .collect()
}

/// One contract checked, or the key at fault (relative to its table) and why.
fn check(
    cfg: &Config,
    path: &str,
    name: &str,
    table: &ContractConfig,
) -> Result<Contract, (String, String)> {
    let fail = |key: &str, message: String| (key.to_owned(), message);
    if !is_contract_name(name) {
        return Err(fail(
            "",
            format!(
                "a contract's name is its tool's name: 1 to {MAX_CONTRACT_NAME_CHARS} ASCII \
                 letters, digits, `_`, `-` or `.`"
            ),
        ));
    }
    let schema = match &table.schema {
        SchemaSource::Path(p) => read_schema(path, p).map_err(|m| fail("schema", m))?,
        SchemaSource::Inline(map) => ResponseSchema::from_value(Value::Object(map.clone()))
            .map_err(|e| fail("schema", e.to_string()))?,
    };
    CompiledSchema::compile(&schema).map_err(|e| fail("schema", e.to_string()))?;
    let template = Template::parse(&table.prompt).map_err(|e| fail("prompt", e.to_string()))?;
    if table.prompt.trim().is_empty() {
        return Err(fail(
            "prompt",
            "is empty: say what the model must do".to_owned(),
        ));
    }
    let names = template.inputs();
    if let Some(unused) = table.inputs.keys().find(|k| !names.contains(&k.as_str())) {
        return Err(fail(
            &format!("inputs.{unused}"),
            "the prompt has no `{...}` of this name: every input must appear in the prompt"
                .to_owned(),
        ));
    }
    let inputs = names
        .iter()
        .map(|n| Input::new(n, table.inputs.get(*n)))
        .collect();
    let known = |key: &str, adapter: &str| match cfg.spec(adapter) {
        Some(_) => Ok(()),
        None => Err(fail(key, format!("unknown adapter {adapter:?}"))),
    };
    if let Some(a) = &table.adapter {
        known("adapter", a)?;
    }
    for a in table.fallback.iter().flatten() {
        known("fallback", a)?;
    }
    if table.model.as_ref().is_some_and(|m| m.trim().is_empty()) {
        return Err(fail(
            "model",
            "is empty: name a model, or leave the key out for the adapter's default".to_owned(),
        ));
    }
    let route = match (&table.adapter, &table.model) {
        (Some(name), model) => Route::Adapter {
            name: name.clone(),
            model: model.clone(),
        },
        (None, Some(m)) => Route::Model(m.clone()),
        (None, None) => Route::Default,
    };
    Ok(Contract {
        name: name.to_owned(),
        description: table.description.clone(),
        schema,
        template,
        inputs,
        system: table.system.clone(),
        route,
        fallback: table.fallback.clone(),
        require: table.require,
        repair: table.repair,
        cache: table.cache,
        max_tokens: table.max_tokens,
    })
}

/// The schema file `file` names, relative to the directory of the config file at `config`: a
/// regular file inside that directory once every symlink is followed, of at most
/// [`MAX_SCHEMA_FILE_BYTES`].
fn read_schema(config: &str, file: &Path) -> Result<ResponseSchema, String> {
    use std::io::Read;
    if file.is_absolute() {
        return Err("must be a path relative to the directory of the config file".to_owned());
    }
    let dir = match Path::new(config).parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let cannot = |e: &dyn std::fmt::Display| format!("cannot read {}: {e}", file.display());
    let root = std::fs::canonicalize(&dir).map_err(|e| cannot(&e))?;
    let target = std::fs::canonicalize(dir.join(file)).map_err(|e| cannot(&e))?;
    if !target.starts_with(&root) {
        return Err(format!(
            "{} is outside the directory of the config file: a contract's schema must be \
             beside it",
            file.display()
        ));
    }
    let meta = std::fs::metadata(&target).map_err(|e| cannot(&e))?;
    if !meta.is_file() {
        return Err(cannot(&"not a regular file"));
    }
    if meta.len() > MAX_SCHEMA_FILE_BYTES {
        return Err(cannot(&format_args!(
            "more than the {MAX_SCHEMA_FILE_BYTES} bytes a schema file may have"
        )));
    }
    let mut text = String::new();
    std::fs::File::open(&target)
        .and_then(|f| f.take(MAX_SCHEMA_FILE_BYTES + 1).read_to_string(&mut text))
        .map_err(|e| cannot(&e))?;
    ResponseSchema::from_json_str(&text).map_err(|e| format!("{}: {e}", file.display()))
}

#[cfg(test)]
mod tests;
