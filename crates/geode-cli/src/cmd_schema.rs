//! `geode schema check FILE [--adapter NAME]`: the strict verdict with reasons, or, for one
//! adapter, the plan `run` uses (mode, rewrites, residuals, why a weaker mode), from the same
//! function the adapter's body is built with ([`geode::llm::registry::SchemaRoute::plan`]).
//! For `local`, also how the engine decodes the schema (each narrowing, and each keyword left to
//! validation), from `geode-engine --narrow`.

use crate::resolve::limit_violations;
use clap::Subcommand;
use geode::llm::registry::{PlanCx, WireFamily};
use geode::schema::ResponseSchema;
use geode::schema::preflight::{LimitViolation, Preflight};
use geode::schema::root::AnswerRoot;
use geode::schema::strict::check_strict;
use geode::schema::validate::CompiledSchema;
use std::path::PathBuf;

#[derive(Subcommand)]
pub(crate) enum SchemaCommand {
    /// OpenAI strict verdict with reasons, and the provider-limit preflight `run` applies.
    /// Exit 0 strict-compatible and within every adapter's limits, 1 not, 2 unusable schema.
    Check {
        /// The schema file (a JSON object).
        file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Show the plan `run` uses on this adapter: the mode, every rewrite of the schema for
        /// its wire (wrap, removed keywords), what is checked locally, and why a weaker mode was
        /// used; for `local`, how the engine narrows the schema for decoding. Exit 0 when the
        /// adapter uses its strongest mode within its limits, 1 not.
        #[arg(long, value_name = "NAME")]
        adapter: Option<String>,
        /// With `--adapter local`: show the narrowing for answers of at most this many tokens
        /// (as `run --max-tokens` gives the engine; a large schema is narrowed further to fit).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        max_tokens: Option<u32>,
    },
}

pub(crate) fn run(cmd: SchemaCommand) -> anyhow::Result<u8> {
    match cmd {
        SchemaCommand::Check {
            file,
            json,
            adapter: None,
            ..
        } => check(&file, json),
        SchemaCommand::Check {
            file,
            json,
            adapter: Some(name),
            max_tokens,
        } => check_adapter(&file, json, &name, max_tokens),
    }
}

/// The schema in `file`, compiled once to prove it usable; `Err(exit code)` after the message.
fn load(file: &std::path::Path) -> Result<ResponseSchema, u8> {
    ResponseSchema::from_file(file)
        .and_then(|s| {
            CompiledSchema::compile(&s)?;
            Ok(s)
        })
        .map_err(|e| {
            eprintln!("geode: unusable schema: {e}");
            crate::EXIT_USAGE
        })
}

/// A JSON pointer as printed: `/` for the root.
fn shown(pointer: &str) -> &str {
    if pointer.is_empty() { "/" } else { pointer }
}

/// The refusal of the adapters `by` before the call, one violated limit a line.
fn print_refused(by: &str, violations: &[LimitViolation]) {
    println!("provider limits: refused before the call by {by}:");
    for v in violations {
        println!("  {v}");
    }
}

fn check_adapter(
    file: &std::path::Path,
    json: bool,
    name: &str,
    max_tokens: Option<u32>,
) -> anyhow::Result<u8> {
    let cfg = match crate::config() {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let Some(spec) = cfg.routing.adapters.spec(name) else {
        let names: Vec<&str> = cfg.routing.adapters.all().map(|a| a.name).collect();
        eprintln!(
            "geode: unknown adapter {name:?}; one of: {}",
            names.join(", ")
        );
        return Ok(crate::EXIT_USAGE);
    };
    let schema = match load(file) {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let plan = spec.schema_route.plan(Some(&schema), PlanCx::default());
    let violations = limit_violations(&schema, spec);
    let best = plan.weaker_because.is_empty() && violations.is_empty();
    let decoding =
        (spec.wire_family == WireFamily::Local).then(|| local_decoding(&schema, max_tokens));
    if json {
        let out = serde_json::json!({
            "adapter": spec.name,
            "name": schema.name(),
            "mode": plan.mode,
            "wrapped": plan.wrapped,
            "transforms": plan.transforms,
            "residuals": plan.residuals,
            "weaker_because": plan.weaker_because,
            "wire_schema": plan.wire,
            "preflight": {"refused": !violations.is_empty(), "violations": violations},
        });
        let mut out = out;
        match decoding {
            Some(Ok(d)) => out["decoding"] = d,
            Some(Err(e)) => out["decoding_error"] = e.into(),
            None => {}
        }
        println!("{out}");
    } else {
        println!(
            "schema {} on {}: mode {}{}",
            schema.name(),
            spec.name,
            plan.mode,
            if plan.wrapped {
                " (root wrapped under \"value\")"
            } else {
                ""
            }
        );
        for w in &plan.weaker_because {
            println!("  weaker mode because {w}");
        }
        for t in &plan.transforms {
            println!("  rewrite {}: {}", shown(&t.pointer), t.action);
        }
        for r in &plan.residuals {
            println!("  checked locally {r}");
        }
        match &decoding {
            Some(Ok(d)) => {
                for t in d["transforms"].as_array().into_iter().flatten() {
                    let at = t["pointer"]
                        .as_str()
                        .filter(|p| !p.is_empty())
                        .unwrap_or("/");
                    let action = t["action"].as_str().unwrap_or_default();
                    println!("  decoding {at}: {action}");
                }
            }
            Some(Err(e)) => println!("  decoding: unknown ({e})"),
            None => {}
        }
        if violations.is_empty() {
            println!("provider limits: within the limits of {}", spec.name);
        } else {
            print_refused(spec.name, &violations);
        }
    }
    Ok(if best { 0 } else { 1 })
}

/// How the local engine decodes `schema` (for answers of at most `max_tokens`, when given):
/// `geode-engine --narrow` (it links the engine's narrowing, which this binary does not) prints
/// the decoding schema and every narrowing.
fn local_decoding(
    schema: &ResponseSchema,
    max_tokens: Option<u32>,
) -> Result<serde_json::Value, String> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let program =
        geode::llm::engine::EngineProcess::default_program(&geode::llm::registry::ProcessEnv);
    let shown = program.display().to_string();
    let mut command = Command::new(&program);
    command.arg("--narrow");
    if let Some(n) = max_tokens {
        command.arg("--max-tokens").arg(n.to_string());
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {shown}: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(schema.as_value().to_string().as_bytes())
            .map_err(|e| format!("cannot write to {shown}: {e}"))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("{shown} failed: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("{shown} {}: {}", out.status, err.trim()));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("{shown} answered no JSON: {e}"))
}

fn check(file: &std::path::Path, json: bool) -> anyhow::Result<u8> {
    let schema = match load(file) {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    let cfg = match crate::config() {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let as_written = check_strict(schema.as_value());
    // The verdict is the plan `run` sends to OpenAI: strict only when that plan is (a schema
    // strict as written can still be sent as a hint, e.g. one that admits any value).
    let openai = cfg
        .routing
        .adapters
        .spec("openai-payg")
        .map(|spec| spec.schema_route.plan(Some(&schema), PlanCx::default()));
    let planned_strict = openai
        .as_ref()
        .is_some_and(|p| p.mode == geode::vocab::StructuredOutputMode::Strict);
    let compatible = as_written.compatible && planned_strict;
    let mut plan_reasons: Vec<String> = match &openai {
        Some(p) if as_written.compatible && !planned_strict => p.weaker_because.clone(),
        _ => Vec::new(),
    };
    if !planned_strict && AnswerRoot::of(&schema) == AnswerRoot::Any {
        plan_reasons.insert(
            0,
            "/: the root constrains no type (any JSON value passes it), and OpenAI strict needs a closed object root".to_owned(),
        );
    }
    // The preflight `run` applies, per adapter; adapters breaking the same limits are grouped.
    let preflight = Preflight::new(&schema);
    let mut refusals: Vec<(Vec<&str>, &[LimitViolation])> = Vec::new();
    for spec in cfg.routing.adapters.all() {
        let violations = spec.schema_route.limit_violations(&preflight);
        if violations.is_empty() {
            continue;
        }
        match refusals.iter_mut().find(|(_, v)| *v == violations) {
            Some((names, _)) => names.push(spec.name),
            None => refusals.push((vec![spec.name], violations)),
        }
    }
    if json {
        let preflight: Vec<_> = refusals
            .iter()
            .map(|(adapters, violations)| {
                serde_json::json!({"adapters": adapters, "violations": violations})
            })
            .collect();
        let out = serde_json::json!({
            "name": schema.name(),
            "openai_name": schema.openai_name(),
            "strict": {
                "compatible": compatible,
                "reasons": as_written.reasons,
                "plan_reasons": plan_reasons,
                "openai_plan": openai.as_ref().map(|p| serde_json::json!({
                    "mode": p.mode,
                    "wrapped": p.wrapped,
                    "rewrites": p.transforms.len(),
                    "weaker_because": p.weaker_because,
                })),
            },
            "preflight": {"refused": !refusals.is_empty(), "refusals": preflight},
        });
        println!("{out}");
    } else {
        println!(
            "schema {} (openai name {}): {}",
            schema.name(),
            schema.openai_name(),
            match (compatible, openai.as_ref().is_some_and(|p| p.wrapped)) {
                (true, true) => "strict-compatible (its root wrapped under \"value\" on the wire)",
                (true, false) => "strict-compatible",
                (false, _) => "NOT strict-compatible as written",
            }
        );
        for r in &as_written.reasons {
            println!("  {}: {}", shown(&r.pointer), r.rule);
        }
        for r in &plan_reasons {
            println!("  {r}");
        }
        match &openai {
            Some(p) if !compatible && planned_strict => println!(
                "  geode still sends it strict, after {} rewrite(s): `geode schema check --adapter openai-payg` shows them",
                p.transforms.len()
            ),
            Some(p) if !compatible => {
                println!("  geode sends it to OpenAI as a {} (strict=false)", p.mode)
            }
            _ => {}
        }
        if refusals.is_empty() {
            println!("provider limits: within the limits of every adapter");
        }
        for (adapters, violations) in &refusals {
            print_refused(&adapters.join(", "), violations);
        }
    }
    Ok(if compatible && refusals.is_empty() {
        0
    } else {
        1
    })
}
