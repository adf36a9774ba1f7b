//! The worker: one [`Task`] in, `Result<`[`Answer`]`, `[`RunError`]`>` out, with the one retry.
//!
//! The worker runs an [`AgenticLoop`] on the request, checks the answer ([`check_answer`]) and,
//! when the check fails, runs the loop **once** more with a feedback user turn — but only when the
//! first run took under half of the task's timeout, and never for intended non-JSON endings
//! (`input_blocked`, `user_cancelled`, `user_clarification_needed`,
//! `external_verification_required`), refusals, truncation, provider schema rejections,
//! configuration/auth errors, or a first answer whose mode fell below the task's `require`
//! during the call. Unlike GEODE, the retried answer is checked too,
//! and the run fails when it still fails. A task that asks for repair has each failed answer
//! read by the declared repair tier ([`check_with_repair`]) before that decision; a repaired
//! answer is named in the ledger, and refused like an invalid one under `require` `wired` or
//! `enforced`. The [`GuaranteeLedger`] records every step.
//!
//! Time is read from `tokio::time::Instant`, so tests control it with a paused runtime.

use crate::agent::agent_loop::{AgenticLoop, AgenticResult, LoopOptions};
use crate::agent::answer_check::{
    AnswerCheck, RepairPolicy, build_constraint_retry_prompt, build_schema_retry_prompt,
    check_with_repair,
};
use crate::agent::store::AnswerStore;
use crate::agent::task::{Answer, NO_RESPONSE, Output, Refusal, RunError, Task};
use crate::agent::tools::{ToolRegistry, ToolRegistryError};
use crate::ledger::{
    AnswerMode, AttemptRecord, CheckFailure, GuaranteeLedger, RetryDecision, WorkerCheck,
};
use crate::llm::adapter::Adapter;
use crate::llm::call::CallCx;
use crate::llm::request::ContentBlock;
use crate::schema::validate::CompiledSchema;
use crate::schema::{ResponseSchema, TextConstraint};
use crate::vocab::{StructuredOutputMode, TerminationReason};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// What a worker runs with: the adapter, the tools and a cancellation token.
#[derive(Clone)]
pub struct WorkerEnv {
    /// The adapter serving the calls.
    pub adapter: Arc<dyn Adapter>,
    /// The tools on offer.
    pub tools: Arc<ToolRegistry>,
    /// Cancels the run.
    pub cancel: CancellationToken,
    /// An optional guard on user turns (see [`crate::agent::agent_loop::InputGuard`]).
    pub input_guard: Option<crate::agent::agent_loop::InputGuard>,
    /// The response budget of every call ([`CallCx::max_response_bytes`]).
    pub max_response_bytes: u64,
    /// Receives the answer text of every call as it streams in ([`CallCx::on_text`]).
    pub on_text: Option<crate::llm::call::TextSink>,
    /// Receives the trigger (why the first answer failed its check) when the one retry starts,
    /// before its first call.
    pub on_retry: Option<crate::llm::call::TextSink>,
    /// The answer store consulted before the run and given its validated answer after (the
    /// response cache, [`crate::cache`]); `None`: none.
    pub store: Option<Arc<dyn AnswerStore>>,
}

impl WorkerEnv {
    /// An environment with no tools and a fresh token.
    pub fn new(adapter: Arc<dyn Adapter>) -> Self {
        Self {
            adapter,
            tools: Arc::new(ToolRegistry::new()),
            cancel: CancellationToken::new(),
            input_guard: None,
            max_response_bytes: crate::llm::call::DEFAULT_MAX_RESPONSE_BYTES,
            on_text: None,
            on_retry: None,
            store: None,
        }
    }
}

fn attempt_record(
    n: u32,
    r: &AgenticResult,
    elapsed: Duration,
    check: &AnswerCheck,
) -> AttemptRecord {
    AttemptRecord {
        attempt: n,
        termination_reason: r.termination_reason,
        stop_reason: r.stop_reason.clone(),
        rounds: r.rounds,
        usage: r.usage,
        elapsed_ms: elapsed.as_millis().try_into().unwrap_or(u64::MAX),
        check: check.verdict.clone(),
        error: r.error.clone(),
        error_kind: r.error_kind,
    }
}

/// Why a failed first answer is not retried, beyond the 50% gate; `None` means retry.
fn skip_reason(r: &AgenticResult) -> Option<String> {
    use crate::vocab::TerminationReason as T;
    if r.termination_reason.is_no_retry() {
        return Some(format!("intended ending {}", r.termination_reason));
    }
    match r.termination_reason {
        T::ModelRefusal => return Some("the model refused".to_owned()),
        T::Truncated => return Some("the answer was truncated at max_tokens".to_owned()),
        _ => {}
    }
    use crate::vocab::ErrorKind as K;
    match r.error_kind? {
        k @ (K::SchemaRejected
        | K::Auth
        | K::Config
        | K::Unsupported
        | K::BadRequest
        | K::ResponseTooLarge) => Some(format!("adapter error {k} cannot be fixed by a retry")),
        _ => None,
    }
}

/// The ledger of a task that made no call yet: the adapter and the model only.
fn bare_ledger(task: &Task, env: &WorkerEnv) -> GuaranteeLedger {
    GuaranteeLedger {
        adapter: env.adapter.name().to_owned(),
        model: task.route.model().to_owned(),
        inputs: task.part_records(),
        ..GuaranteeLedger::default()
    }
}

/// Images or documents the adapter cannot take, found before any call: nothing is dropped to
/// answer from the text alone.
fn input_refusal(task: &Task, adapter: &dyn Adapter) -> Option<(Refusal, String)> {
    let records = task.part_records();
    let accepts = adapter.accepts(task.route.model());
    accepts.check(&records).err().map(|e| {
        (
            Refusal::InputsNotTaken,
            format!(
                "{} cannot take this call's images or documents: {e}",
                adapter.name()
            ),
        )
    })
}

/// Why the task cannot run on this adapter, found before any call: a text constraint that does
/// not compile, or one the adapter does not enforce while `require` asks for more than best
/// effort.
fn refusal(task: &Task, adapter: &dyn Adapter) -> Option<(Refusal, String)> {
    let c = task.output.constraint()?;
    if let Err(e) = c.validate() {
        return Some((
            Refusal::UnusableConstraint,
            format!("unusable text_constraint: {e}"),
        ));
    }
    let mode = TextConstraint::mode_on(adapter.wire_mode(Some(&ResponseSchema::default())));
    (mode.level() < task.require).then(|| {
        let reason = format!(
            "require={}: {} does not enforce a {} constraint (its mode for it is {mode}, {}); \
             only an adapter that constrains decoding (local) can",
            task.require.as_str(),
            adapter.name(),
            c.kind(),
            mode.level().as_str()
        );
        (Refusal::RequireUnmet, reason)
    })
}

/// A schema `require` that the adapter's settled mode does not meet, found before the first
/// call (`openai-compatible` probes its server here). A failed probe is not a refusal: the
/// call reports that failure itself.
async fn schema_refusal(task: &Task, env: &WorkerEnv, cx: &CallCx) -> Option<String> {
    let schema = task.output.schema()?;
    if task.require == crate::vocab::Require::BestEffort {
        return None;
    }
    let mode = env
        .adapter
        .settle_mode(task.route.model(), Some(schema), cx)
        .await
        .ok()?;
    (mode.level() < task.require).then(|| {
        format!(
            "require={}: {}'s mode for this schema is {mode} ({}), below it",
            task.require.as_str(),
            env.adapter.name(),
            mode.level().as_str()
        )
    })
}

/// Why the retry is not sent when the first attempt's answer came back in a mode below the
/// task's `require`: the adapter learnt during the call that it cannot meet it (an
/// `openai-compatible` server caught answering outside the schema its probe said it enforces,
/// [`crate::llm::adapters::compat_probe::contradiction`]), and a retry would be served below
/// what the caller asked for.
fn fell_below_require(task: &Task, env: &WorkerEnv, first: &AgenticResult) -> Option<String> {
    let mode = first.wire.mode;
    (task.output.schema().is_some()
        && mode != StructuredOutputMode::None
        && mode.level() < task.require)
        .then(|| {
            format!(
                "require={}: {}'s mode for this schema fell to {mode} ({}) during the call; a \
                 retry would be served below it",
                task.require.as_str(),
                env.adapter.name(),
                mode.level().as_str()
            )
        })
}

/// Runs one task to completion. Never panics on bad input: a text constraint `require` does
/// not allow on this adapter, or a schema that cannot be compiled, is refused before any call.
/// Every string of the answer or the error (text, value, ledger, message) has passed through
/// [`crate::secret::scrub`].
///
/// With an answer store in `env` ([`WorkerEnv::store`]) and a task that allows it, a stored
/// answer is replayed without any call ([`AnswerStore::replay`]), and the answer of a run is
/// handed to the store. Tasks that run the worker's own tools are not stored: their answer
/// rests on what the tools did.
pub async fn run_task(task: &Task, env: &WorkerEnv) -> Result<Answer, RunError> {
    let store = env
        .store
        .as_deref()
        .filter(|_| task.cache && env.tools.is_empty());
    if let Some(answer) = match store {
        Some(s) => s.replay(task, env.adapter.as_ref()).await,
        None => None,
    } {
        if let Some(sink) = &env.on_text {
            sink.send(&crate::secret::scrub(&answer.text));
        }
        return Ok(scrub_answer(answer));
    }
    let run = run_unscrubbed(task, env)
        .await
        .map(scrub_answer)
        .map_err(scrub_error);
    if let (Some(s), Ok(answer)) = (store, &run) {
        s.keep(task, env.adapter.as_ref(), answer).await;
    }
    run
}

fn scrub_answer(mut a: Answer) -> Answer {
    use crate::secret::{scrub, scrub_serde};
    a.text = scrub(&a.text);
    a.value = a.value.map(scrub_serde);
    a.ledger = scrub_serde(a.ledger);
    a
}

fn scrub_error(e: RunError) -> RunError {
    use crate::secret::scrub;
    let last = |l: Box<Answer>| Box::new(scrub_answer(*l));
    match e {
        RunError::Refused {
            why,
            reason,
            last: l,
        } => RunError::Refused {
            why,
            reason: scrub(&reason),
            last: last(l),
        },
        RunError::Schema { source, last: l } => RunError::Schema {
            source,
            last: last(l),
        },
        RunError::Tools { source, last: l } => RunError::Tools {
            source,
            last: last(l),
        },
        RunError::Adapter {
            message,
            source,
            last: l,
        } => RunError::Adapter {
            message: scrub(&message),
            source,
            last: last(l),
        },
        RunError::Truncated { message, last: l } => RunError::Truncated {
            message: scrub(&message),
            last: last(l),
        },
        RunError::ModelRefused { message, last: l } => RunError::ModelRefused {
            message: scrub(&message),
            last: last(l),
        },
        RunError::Invalid { message, last: l } => RunError::Invalid {
            message: scrub(&message),
            last: last(l),
        },
        RunError::Ended { message, last: l } => RunError::Ended {
            message: scrub(&message),
            last: last(l),
        },
        route @ RunError::Route(_) => route,
    }
}

async fn run_unscrubbed(task: &Task, env: &WorkerEnv) -> Result<Answer, RunError> {
    let started = Instant::now();
    let timeout = task.budgets.timeout;
    let cx = CallCx {
        cancel: env.cancel.clone(),
        deadline: Some(started + timeout),
        max_response_bytes: env.max_response_bytes,
        on_text: env.on_text.clone(),
    };
    let refused = match input_refusal(task, env.adapter.as_ref())
        .or_else(|| refusal(task, env.adapter.as_ref()))
    {
        Some(refused) => Some(refused),
        None => schema_refusal(task, env, &cx)
            .await
            .map(|reason| (Refusal::RequireUnmet, reason)),
    };
    if let Some((why, reason)) = refused {
        return Err(RunError::Refused {
            why,
            reason,
            last: Box::new(Answer::empty(bare_ledger(task, env))),
        });
    }
    let tools = caller_tools(task, env)?;
    let schema = task.output.schema();
    let compiled = match schema.map(|s| CompiledSchema::compile_cached(s, task.formats)) {
        Some(Err(source)) => {
            return Err(RunError::Schema {
                source,
                last: Box::new(Answer::empty(bare_ledger(task, env))),
            });
        }
        Some(Ok(c)) => Some(c),
        None => None,
    };
    let schema_pair = schema.zip(compiled.as_deref());
    let constraint = task.output.constraint();
    let checked = task.output != Output::Text;
    let options = LoopOptions {
        model: task.route.model().to_owned(),
        system_prompt: task.system.clone(),
        max_rounds: task.budgets.max_rounds,
        max_tokens: task.budgets.max_tokens,
        thinking_budget: task.budgets.thinking,
        effort: task.effort,
        temperature: task.temperature,
        time_budget: task.budgets.time_budget,
        response_schema: schema.cloned(),
        text_constraint: constraint.cloned(),
        tool_choice: task.tool_choice.clone(),
    };
    let mut lp = AgenticLoop::new(env.adapter.clone(), options, tools)
        .with_history(task.history.clone())
        .with_parts(task.parts.iter().cloned().map(ContentBlock::from).collect());
    if let Some(g) = &env.input_guard {
        lp = lp.with_input_guard(g.clone());
    }
    let mut ledger = GuaranteeLedger {
        formats: compiled.as_deref().map(CompiledSchema::formats),
        unchecked_formats: compiled
            .as_ref()
            .map(|c| c.unchecked_formats().to_vec())
            .unwrap_or_default(),
        ..bare_ledger(task, env)
    };

    let first = lp.arun(&task.prompt, &cx).await;
    let elapsed = started.elapsed();
    let policy = RepairPolicy {
        enabled: task.repair,
        require: task.require,
    };
    let first_check = check_with_repair(&first, schema_pair, constraint, task.validation, policy);
    ledger
        .attempts
        .push(attempt_record(1, &first, elapsed, &first_check));

    let pending = first.termination_reason == TerminationReason::CallerToolCalls;
    let (last, last_check) = if !checked || pending {
        ledger.retry = RetryDecision::NotNeeded;
        (first, first_check)
    } else if first_check.passed() {
        ledger.retry = RetryDecision::FirstPassed;
        (first, first_check)
    } else if let Some(why) = skip_reason(&first) {
        ledger.retry = RetryDecision::Skipped { why };
        (first, first_check)
    } else if let Some(why) = fell_below_require(task, env, &first) {
        ledger.retry = RetryDecision::Skipped { why };
        (first, first_check)
    } else if elapsed.as_secs_f64() >= 0.5 * timeout.as_secs_f64() {
        ledger.retry = RetryDecision::Skipped {
            why: format!(
                "first run took {:.1}s, not under 50% of timeout_s={}",
                elapsed.as_secs_f64(),
                timeout.as_secs_f64()
            ),
        };
        (first, first_check)
    } else {
        ledger.retry = RetryDecision::Ran {
            trigger: first_check.trigger(),
        };
        if let Some(sink) = &env.on_retry {
            sink.send(&crate::secret::scrub(&first_check.trigger()));
        }
        let feedback = match schema {
            Some(s) => build_schema_retry_prompt(
                s,
                Some(&first.text),
                first_check.issues(),
                first_check.more_errors(),
                first.wire.wrapped_root,
            ),
            None => constraint
                .map(|c| build_constraint_retry_prompt(c, &first.text))
                .unwrap_or_default(),
        };
        let retry_started = Instant::now();
        let mut second = lp.arun(&feedback, &cx).await;
        let check = check_with_repair(&second, schema_pair, constraint, task.validation, policy);
        ledger
            .attempts
            .push(attempt_record(2, &second, retry_started.elapsed(), &check));
        let mut total = first.usage;
        total.add(&second.usage);
        second.usage = total;
        (second, check)
    };

    finish(task, ledger, last, last_check, checked, started.elapsed())
}

/// The worker's tools with the task's own (the caller's) added. A route whose adapter takes no
/// tools refuses a task that has some: they would be dropped.
fn caller_tools(task: &Task, env: &WorkerEnv) -> Result<Arc<ToolRegistry>, RunError> {
    if task.tools.is_empty() {
        return Ok(env.tools.clone());
    }
    let tools = if env.adapter.supports_tools() {
        env.tools.with_caller_tools(&task.tools)
    } else {
        Err(ToolRegistryError::NotTaken {
            adapter: env.adapter.name().to_owned(),
            count: task.tools.len(),
        })
    };
    tools.map(Arc::new).map_err(|source| RunError::Tools {
        source,
        last: Box::new(Answer::empty(bare_ledger(task, env))),
    })
}

/// The ledger's final entries, then the answer, or the error the last attempt ended in.
fn finish(
    task: &Task,
    mut ledger: GuaranteeLedger,
    last: AgenticResult,
    check: AnswerCheck,
    checked: bool,
    elapsed: Duration,
) -> Result<Answer, RunError> {
    ledger.wire_mode = last.wire.mode;
    if let Some(answered) = last.wire.adapters_tried.last() {
        ledger.adapter = answered.adapter.clone();
        if let Some(model) = &answered.model {
            ledger.model = model.clone();
        }
        ledger.adapters_tried = last.wire.adapters_tried.clone();
    }
    ledger.transforms = last.wire.transforms.clone();
    if let Some(c) = task.output.constraint()
        && ledger.wire_mode != StructuredOutputMode::Constrained
    {
        ledger.residuals.push(if c.checkable_locally() {
            format!(
                "{}: not enforced by {}; checked locally after the answer",
                c.kind(),
                ledger.adapter
            )
        } else {
            format!(
                "{}: unchecked (not enforced by {}, and no local check exists)",
                c.kind(),
                ledger.adapter
            )
        });
    }
    ledger.worker_check = check.verdict.clone();
    ledger.full_validation = check.full.clone();
    if !check.repairs.is_empty() {
        ledger.answer_mode = AnswerMode::Repaired;
        ledger.repairs = check.repairs.clone();
    }
    ledger.caller_tool_calls = last.caller_tool_calls.len() as u64;
    let pending = !last.caller_tool_calls.is_empty();
    let text_ok = !last.text.is_empty() || pending;
    let run_ok = last.error.is_none() && !last.termination_reason.is_failure();
    let intended = last.termination_reason.is_no_retry();
    let success = text_ok && run_ok && (!checked || check.passed() || intended);
    // The answer itself failed its check (not a failed run, which has its own cause).
    let answer_failed = matches!(
        &check.verdict,
        WorkerCheck::Fail { reason } if !matches!(reason, CheckFailure::FailedRun { .. })
    );
    let message = match &last.error {
        Some(e) => e.clone(),
        None if !text_ok => NO_RESPONSE.to_owned(),
        None => format!("answer failed the check: {}", check.trigger()),
    };
    let adapter_error = last.adapter_error.clone().map(|f| f.0);
    let answer = Box::new(Answer {
        text: last.text,
        value: check.object,
        tool_calls: last.caller_tool_calls,
        termination: last.termination_reason,
        usage: last.usage,
        elapsed,
        ledger,
    });
    if success {
        return Ok(*answer);
    }
    Err(match adapter_error {
        Some(source) => RunError::Adapter {
            message,
            source,
            last: answer,
        },
        None if answer.termination == TerminationReason::Truncated => RunError::Truncated {
            message,
            last: answer,
        },
        None if answer.termination == TerminationReason::ModelRefusal => RunError::ModelRefused {
            message,
            last: answer,
        },
        None if answer_failed => RunError::Invalid {
            message,
            last: answer,
        },
        None => RunError::Ended {
            message,
            last: answer,
        },
    })
}
