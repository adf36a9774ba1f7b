//! `geode run`: one task through the worker, the JSON answer on stdout and the ledger on stderr.

use crate::resolve::resolve;
use clap::Args;
use geode::agent::worker::{WorkerRequest, run_worker};
use geode::client::stream::{ItemSource, stream_request};
use geode::config::Config;
use geode::ledger::Require;
use geode::llm::registry::ProcessEnv;
use geode::schema::validate::Validation;
use geode::schema::{ResponseSchema, TextConstraint};
use std::path::PathBuf;

#[derive(Clone, Copy, clap::ValueEnum)]
enum RequireArg {
    BestEffort,
    Wired,
    Enforced,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ValidationArg {
    Full,
    RequiredKeys,
}

#[derive(Args)]
pub(crate) struct RunArgs {
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
    #[arg(long, value_enum, default_value = "best-effort")]
    require: RequireArg,
    /// Which check decides the retry and success.
    #[arg(long, value_enum, default_value = "full")]
    validation: ValidationArg,
    /// A system prompt.
    #[arg(long)]
    system: Option<String>,
    /// Maximum output tokens per call.
    #[arg(long)]
    max_tokens: Option<u32>,
    /// Print the whole WorkerResult as JSON on stdout.
    #[arg(long, conflicts_with = "stream")]
    json: bool,
    /// Print events as JSON lines on stdout as the answer arrives: partial values with the
    /// pointers of their closed parts, closed list items, the retry, then the final value and
    /// its ledger (or an error event).
    #[arg(long)]
    stream: bool,
    /// The prompt.
    prompt: String,
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
fn text_constraint(args: &RunArgs) -> anyhow::Result<Option<TextConstraint>> {
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

pub(crate) fn run(args: RunArgs) -> anyhow::Result<u8> {
    let cfg = match Config::load(&std::env::current_dir()?, &ProcessEnv) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("geode: {e}");
            return Ok(crate::EXIT_USAGE);
        }
    };
    let mut req = WorkerRequest::new("run", args.prompt.clone());
    if let Some(path) = &args.schema {
        match ResponseSchema::from_file(path) {
            Ok(s) => req.response_schema = Some(s),
            Err(e) => {
                eprintln!("geode: {e}");
                return Ok(crate::EXIT_USAGE);
            }
        }
    }
    req.text_constraint = match text_constraint(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("geode: {e}");
            return Ok(crate::EXIT_USAGE);
        }
    };
    req.adapter = args.adapter.clone().unwrap_or_default();
    req.model = args.model.clone().unwrap_or_default();
    req.timeout_s = args
        .timeout
        .or(cfg.timeouts.request_s)
        .unwrap_or(req.timeout_s);
    req.agent_system_prompt = args.system.clone().unwrap_or_default();
    if let Some(m) = args.max_tokens {
        req.subagent_max_tokens = m;
    }
    req.require = match args.require {
        RequireArg::BestEffort => Require::BestEffort,
        RequireArg::Wired => Require::Wired,
        RequireArg::Enforced => Require::Enforced,
    };
    req.validation = match args.validation {
        ValidationArg::Full => Validation::Full,
        ValidationArg::RequiredKeys => Validation::RequiredKeys,
    };
    // A timeout from the config and the constraint are checked here, before any adapter exists.
    if let Err(e) = req.check() {
        eprintln!("geode: {e}");
        return Ok(crate::EXIT_USAGE);
    }
    let env = match resolve(&mut req, &cfg) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("geode: {e}");
            return Ok(crate::EXIT_USAGE);
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    if args.stream {
        return Ok(rt.block_on(stream_events(req, env)));
    }
    let result = rt.block_on(run_worker(&req, &env));
    if args.json {
        println!("{}", serde_json::to_string(&result)?);
    } else if result.ledger.attempts.is_empty() && !result.success {
        // Refused before any call: there is no run to summarise.
        eprintln!("geode: {}", result.error.as_deref().unwrap_or("refused"));
    } else {
        match (&result.answer, result.success) {
            (Some(answer), true) => println!("{answer}"),
            _ if result.success => println!("{}", result.output),
            _ => {}
        }
        eprintln!("{}", result.ledger.summary());
        if let Some(e) = &result.error {
            eprintln!("error: {e}");
        }
    }
    Ok(crate::exit_code(&result))
}

/// Prints the stream's events as JSON lines; the exit code of how it ended.
async fn stream_events(req: WorkerRequest, env: geode::agent::worker::WorkerEnv) -> u8 {
    use futures::StreamExt;
    let mut events = stream_request(req, env, ItemSource::Auto);
    let mut code = geode::agent::exit::VALID;
    while let Some(event) = events.next().await {
        let line = match event {
            Ok(e) => e.to_json(),
            Err(e) => {
                code = e.exit_code();
                e.to_json()
            }
        };
        println!("{line}");
    }
    code
}
