//! The flags a task shares between `geode run` and `geode batch`: the adapter, model, constraint,
//! policy and limits, turned into a [`Task`] (`geode run`) or a template [`WorkerRequest`]
//! (`geode batch`, whose lines are requests).

use clap::Args;
use geode::config::Settings;
use geode::protocol::{PartRef, WorkerRequest};
use geode::schema::validate::Validation;
use geode::schema::{ResponseSchema, TextConstraint};
use geode::vocab::Require;
use geode::{Budgets, CallSettings, Output, Task};
use std::path::PathBuf;

#[derive(Clone, Copy, clap::ValueEnum)]
enum ValidationArg {
    Full,
    RequiredKeys,
}

impl From<ValidationArg> for Validation {
    fn from(v: ValidationArg) -> Self {
        match v {
            ValidationArg::Full => Validation::Full,
            ValidationArg::RequiredKeys => Validation::RequiredKeys,
        }
    }
}

/// The task flags of `geode run` and `geode batch`.
#[derive(Args)]
pub(crate) struct TaskArgs {
    /// The adapter (see `geode adapters`); default: routed from the model, the config, or `local`.
    #[arg(long)]
    adapter: Option<String>,
    /// The model.
    #[arg(long)]
    model: Option<String>,
    /// The worker's hard limit in seconds (WorkerRequest.timeout_s; the retry gate is at 50%).
    #[arg(long, value_parser = positive_seconds)]
    timeout: Option<f64>,
    /// A JSON Schema file the answer must match.
    #[arg(long, group = "constraint")]
    schema: Option<PathBuf>,
    /// The answer must be one of these comma-separated strings.
    #[arg(long, group = "constraint", value_delimiter = ',')]
    choice: Option<Vec<String>>,
    /// The answer must match this regular expression.
    #[arg(long, group = "constraint")]
    regex: Option<String>,
    /// The answer must follow this Lark grammar file.
    #[arg(long, group = "constraint")]
    grammar: Option<PathBuf>,
    /// The guarantee required of the adapter; refused before any request when unmet.
    #[arg(long, default_value = "best-effort")]
    require: Require,
    /// Which check decides the retry and success.
    #[arg(long, value_enum, default_value = "full")]
    validation: ValidationArg,
    /// How full validation checks `format`: asserted (default) or annotation-only.
    #[arg(long, value_enum, default_value = "assert")]
    formats: crate::cmd_validate::FormatsArg,
    /// A system prompt.
    #[arg(long)]
    system: Option<String>,
    /// Maximum output tokens per call (at least 1: 0 went on the wire as is and came back as a
    /// provider's 400).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    max_tokens: Option<u32>,
    /// Let the declared repair tier read an answer that fails its check (fences, quotes,
    /// trailing commas, ... each named in the ledger); never a cut-off answer, and never
    /// accepted under --require wired or enforced. Also `repair = true` in geode.toml.
    #[arg(long)]
    repair: bool,
    /// An image the model looks at (PNG, JPEG, GIF or WebP, read from its bytes): a file, an
    /// https URL (passed to a wire that takes URLs) or a data: URL. Repeatable.
    #[arg(long, value_name = "FILE|URL")]
    image: Vec<String>,
    /// A document the model reads (PDF or plain text): a file, an https URL or a data: URL.
    /// Repeatable.
    #[arg(long, value_name = "FILE|URL")]
    file: Vec<String>,
}

/// A positive, finite number of seconds (`NaN`, `inf`, `0` and negatives are usage errors).
fn positive_seconds(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 => Ok(s),
        Ok(_) => Err("must be a positive, finite number of seconds".to_owned()),
        Err(e) => Err(format!("not a number of seconds: {e}")),
    }
}

/// The `--choice`/`--regex`/`--grammar` constraint, with the grammar file read (its path named
/// when it cannot be).
fn text_constraint(args: &TaskArgs) -> anyhow::Result<Option<TextConstraint>> {
    Ok(if let Some(c) = &args.choice {
        Some(TextConstraint::Choice(c.clone()))
    } else if let Some(r) = &args.regex {
        Some(TextConstraint::Regex(r.clone()))
    } else if let Some(g) = &args.grammar {
        let lark = std::fs::read_to_string(g)
            .map_err(|e| anyhow::anyhow!("cannot read grammar file {}: {e}", g.display()))?;
        Some(TextConstraint::Grammar(lark))
    } else {
        None
    })
}

impl TaskArgs {
    /// The task these flags describe for `prompt`, checked (a constraint that does not compile
    /// is refused here, before any adapter exists).
    pub(crate) fn task(&self, settings: &Settings, prompt: &str) -> anyhow::Result<Task> {
        let mut task = Task::new(prompt);
        task.output = match (&self.schema, text_constraint(self)?) {
            (Some(path), _) => Output::Schema(ResponseSchema::from_file(path)?),
            (None, Some(c)) => {
                c.validate()
                    .map_err(|e| anyhow::anyhow!("unusable text_constraint: {e}"))?;
                Output::Constraint(c)
            }
            (None, None) => Output::Text,
        };
        for part in self.parts() {
            task.parts.push(part.load()?);
        }
        self.overrides(settings).apply(&mut task);
        task.formats = self.formats.into();
        task.validation = self.validation.into();
        Ok(task)
    }

    /// These flags laid over a contract's task ([`geode::config::contracts`]): each one given
    /// wins, as over any task; `--require` may raise the contract's requirement, never lower it
    /// (its default is the weakest).
    pub(crate) fn over_contract(&self, mut task: Task) -> anyhow::Result<Task> {
        CallSettings {
            adapter: self.adapter.clone(),
            model: self.model.clone(),
            timeout: self.timeout.map(Budgets::seconds),
            max_tokens: self.max_tokens,
            system: self.system.clone(),
            repair: self.repair.then_some(true),
            ..CallSettings::default()
        }
        .apply(&mut task);
        task.require = task.require.max(self.require);
        for part in self.parts() {
            task.parts.push(part.load()?);
        }
        task.formats = self.formats.into();
        task.validation = self.validation.into();
        Ok(task)
    }

    /// `--image` and `--file`, in that order.
    fn parts(&self) -> impl Iterator<Item = PartRef> + '_ {
        let images = self.image.iter().map(|s| PartRef::Image(s.clone()));
        images.chain(self.file.iter().map(|s| PartRef::Document(s.clone())))
    }

    /// What these flags change of a task, over the configured timeout and repair: the same
    /// overrides type the client, the Python package and the gateway fill.
    fn overrides(&self, settings: &Settings) -> CallSettings {
        CallSettings {
            adapter: self.adapter.clone(),
            model: self.model.clone(),
            require: Some(self.require),
            timeout: self.timeout.map(Budgets::seconds),
            max_tokens: self.max_tokens,
            system: self.system.clone(),
            repair: self.repair.then_some(true),
            ..CallSettings::default()
        }
        .over(CallSettings {
            timeout: settings.request_timeout,
            repair: Some(settings.repair),
            ..CallSettings::default()
        })
    }

    /// The request these flags describe, for `task_id` and `prompt`, checked (a bad timeout or
    /// a constraint that does not compile is refused here, before any adapter exists).
    pub(crate) fn request(
        &self,
        settings: &Settings,
        task_id: &str,
        prompt: &str,
    ) -> anyhow::Result<WorkerRequest> {
        let args = self;
        let mut req = WorkerRequest::new(task_id, prompt);
        if let Some(path) = &args.schema {
            req.response_schema = Some(ResponseSchema::from_file(path)?);
        }
        req.text_constraint = text_constraint(args)?;
        req.adapter = args.adapter.clone().unwrap_or_default();
        req.model = args.model.clone().unwrap_or_default();
        req.timeout_s = args
            .timeout
            .or(settings.request_timeout.map(|t| t.as_secs_f64()))
            .unwrap_or(req.timeout_s);
        req.agent_system_prompt = args.system.clone().unwrap_or_default();
        if let Some(m) = args.max_tokens {
            req.subagent_max_tokens = m;
        }
        req.require = args.require;
        req.formats = args.formats.into();
        req.repair = args.repair || settings.repair;
        req.validation = args.validation.into();
        req.parts = args.parts().collect();
        req.check()?;
        Ok(req)
    }
}
