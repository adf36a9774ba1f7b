//! The worker: one [`WorkerRequest`] in, one [`WorkerResult`] out, with the one schema retry.
//!
//! The worker runs an [`AgenticLoop`] on the request, checks the answer ([`check_answer`]) and,
//! when the check fails, runs the loop **once** more with a feedback user turn — but only when the
//! first run took under 50% of `timeout_s`, and never for intended non-JSON endings
//! (`input_blocked`, `user_cancelled`, `user_clarification_needed`,
//! `external_verification_required`), refusals, truncation, provider schema rejections or
//! configuration/auth errors. Unlike the reference, the retried answer is checked too, and
//! `success` is false when it still fails. The [`GuaranteeLedger`] records every step.
//!
//! Time is read from `tokio::time::Instant`, so tests control it with a paused runtime.
//!
//! The JSON shapes keep the reference's field names (`reference-behaviour.md` §1.3-§1.4);
//! unknown input fields are ignored and named in the ledger.

use crate::agent::agent_loop::{AgenticLoop, AgenticResult, LoopOptions};
use crate::agent::answer_check::{
    AnswerCheck, build_constraint_retry_prompt, build_schema_retry_prompt, check_answer,
};
use crate::agent::tools::ToolRegistry;
use crate::ledger::{AttemptRecord, GuaranteeLedger, RetryDecision, StructuredOutputMode};
use crate::llm::adapter::Adapter;
use crate::llm::call::CallCx;
use crate::schema::validate::CompiledSchema;
use crate::schema::{ResponseSchema, TextConstraint};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use crate::agent::excerpt::excerpt;
pub use crate::agent::worker_input::{
    MAX_REQUEST_BYTES, UNKNOWN_TASK_ID, WorkerError, WorkerRequest, parse_request,
    parse_request_line, request_task_id,
};

/// The worker's answer. Field names are the reference's; `error` is omitted when absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerResult {
    /// The task id.
    pub task_id: String,
    /// True when the run ended well and (with a schema) the answer passed the check.
    pub success: bool,
    /// The final answer text.
    #[serde(default)]
    pub output: String,
    /// A summary (≤ 500 characters).
    #[serde(default)]
    pub summary: String,
    /// The error, when failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time in milliseconds.
    #[serde(default)]
    pub duration_ms: u64,
    /// Prompt tokens over all attempts.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Completion tokens over all attempts.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Cost in USD over all attempts (0 when unknown).
    #[serde(default)]
    pub usd_spent: f64,
    /// geode: the parsed JSON answer, when one was extracted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Value>,
    /// geode: how the last attempt ended.
    #[serde(default)]
    pub termination_reason: String,
    /// geode: the guarantee ledger.
    #[serde(default)]
    pub ledger: GuaranteeLedger,
}

impl WorkerResult {
    /// A failed result that carries only an error (bad input, routing failure, panic).
    pub fn failed(task_id: &str, error: impl Into<String>) -> Self {
        let error = crate::secret::scrub(&error.into());
        Self {
            task_id: task_id.to_owned(),
            success: false,
            summary: format!("Sub-agent failed: {error}")
                .chars()
                .take(500)
                .collect(),
            error: Some(error),
            ..Self::default()
        }
    }
}

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
        termination_reason: r.termination_reason.as_str(),
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
    use crate::agent::termination::TerminationReason as T;
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

/// Why the request cannot run on this adapter, found before any call: a failed
/// [`WorkerRequest::check`], or a text constraint the adapter does not enforce while
/// `require` asks for more than best effort.
fn refusal(req: &WorkerRequest, adapter: &dyn Adapter) -> Option<String> {
    if let Err(e) = req.check() {
        return Some(e.to_string());
    }
    let c = req.text_constraint.as_ref()?;
    let mode = TextConstraint::mode_on(adapter.wire_mode(Some(&ResponseSchema::default())));
    (mode.level() < req.require).then(|| {
        format!(
            "require={}: {} does not enforce a {} constraint (its mode for it is {mode}, {}); \
             only an adapter that constrains decoding (local) can",
            req.require.as_str(),
            adapter.name(),
            c.kind(),
            mode.level().as_str()
        )
    })
}

/// Runs one request to completion. Never panics on bad input; a request that cannot run (see
/// [`WorkerRequest::check`]), a text constraint `require` does not allow on this adapter, or a
/// schema that cannot be compiled is a failed result naming the problem, before any call.
/// Every string of the result (answer, summary, error, ledger) has passed through
/// [`crate::secret::scrub`].
pub async fn run_worker(req: &WorkerRequest, env: &WorkerEnv) -> WorkerResult {
    crate::secret::scrub_serde(run_worker_unscrubbed(req, env).await)
}

/// A schema `require` that the adapter's settled mode does not meet, found before the first
/// call (`openai-compatible` probes its server here). A failed probe is not a refusal: the
/// call reports that failure itself.
async fn schema_refusal(req: &WorkerRequest, env: &WorkerEnv, cx: &CallCx) -> Option<String> {
    let schema = req.response_schema.as_ref()?;
    if req.require == crate::vocab::Require::BestEffort {
        return None;
    }
    let mode = env
        .adapter
        .settle_mode(&req.model, Some(schema), cx)
        .await
        .ok()?;
    (mode.level() < req.require).then(|| {
        format!(
            "require={}: {}'s mode for this schema is {mode} ({}), below it",
            req.require.as_str(),
            env.adapter.name(),
            mode.level().as_str()
        )
    })
}

async fn run_worker_unscrubbed(req: &WorkerRequest, env: &WorkerEnv) -> WorkerResult {
    let started = Instant::now();
    let timeout = Duration::from_secs_f64(req.timeout_s.clamp(0.0, 1e9));
    let cx = CallCx {
        cancel: env.cancel.clone(),
        deadline: Some(started + timeout),
        max_response_bytes: env.max_response_bytes,
        on_text: env.on_text.clone(),
    };
    let refused = match refusal(req, env.adapter.as_ref()) {
        Some(why) => Some(why),
        None => schema_refusal(req, env, &cx).await,
    };
    if let Some(why) = refused {
        let mut refused = WorkerResult::failed(&req.task_id, why);
        refused.ledger.adapter = env.adapter.name().to_owned();
        refused.ledger.model = req.model.clone();
        return refused;
    }
    let schema = req.response_schema.clone();
    let compiled = match schema
        .as_ref()
        .map(|s| CompiledSchema::compile_with(s, req.formats))
    {
        Some(Err(e)) => {
            return WorkerResult::failed(&req.task_id, format!("unusable response_schema: {e}"));
        }
        Some(Ok(c)) => Some(c),
        None => None,
    };
    let schema_pair = schema.as_ref().zip(compiled.as_ref());
    let constraint = req.text_constraint.as_ref();
    let checked = schema.is_some() || constraint.is_some();
    let options = LoopOptions {
        model: req.model.clone(),
        system_prompt: req.agent_system_prompt.clone(),
        max_rounds: req.max_rounds,
        max_tokens: req.subagent_max_tokens,
        thinking_budget: req.thinking_budget,
        effort: req.effort.clone(),
        temperature: None,
        time_budget: (req.time_budget_s > 0.0)
            .then(|| Duration::from_secs_f64(req.time_budget_s.min(1e9))),
        response_schema: schema.clone(),
        text_constraint: req.text_constraint.clone(),
    };
    let mut lp = AgenticLoop::new(env.adapter.clone(), options, env.tools.clone());
    if let Some(g) = &env.input_guard {
        lp = lp.with_input_guard(g.clone());
    }
    let mut ledger = GuaranteeLedger {
        adapter: env.adapter.name().to_owned(),
        model: req.model.clone(),
        unknown_request_fields: req.unknown.keys().cloned().collect(),
        formats: compiled.as_ref().map(CompiledSchema::formats),
        unchecked_formats: compiled
            .as_ref()
            .map(|c| c.unchecked_formats().to_vec())
            .unwrap_or_default(),
        ..GuaranteeLedger::default()
    };

    let first = lp.arun(&req.prompt(), &cx).await;
    let elapsed = started.elapsed();
    let first_check = check_answer(&first, schema_pair, constraint, req.validation);
    ledger
        .attempts
        .push(attempt_record(1, &first, elapsed, &first_check));

    let (last, last_check) = if !checked {
        ledger.retry = RetryDecision::NotNeeded;
        (first, first_check)
    } else if first_check.passed() {
        ledger.retry = RetryDecision::FirstPassed;
        (first, first_check)
    } else if let Some(why) = skip_reason(&first) {
        ledger.retry = RetryDecision::Skipped { why };
        (first, first_check)
    } else if elapsed.as_secs_f64() >= 0.5 * req.timeout_s {
        ledger.retry = RetryDecision::Skipped {
            why: format!(
                "first run took {:.1}s, not under 50% of timeout_s={}",
                elapsed.as_secs_f64(),
                req.timeout_s
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
        let feedback = match &schema {
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
        let check = check_answer(&second, schema_pair, constraint, req.validation);
        ledger
            .attempts
            .push(attempt_record(2, &second, retry_started.elapsed(), &check));
        let mut total = first.usage;
        total.add(&second.usage);
        second.usage = total;
        (second, check)
    };

    finish(req, ledger, last, last_check, checked, started.elapsed())
}

fn finish(
    req: &WorkerRequest,
    mut ledger: GuaranteeLedger,
    last: AgenticResult,
    check: AnswerCheck,
    checked: bool,
    elapsed: Duration,
) -> WorkerResult {
    ledger.wire_mode = last.wire.mode;
    if let Some(answered) = last.wire.adapters_tried.last() {
        ledger.adapter = answered.adapter.clone();
        if let Some(model) = &answered.model {
            ledger.model = model.clone();
        }
        ledger.adapters_tried = last.wire.adapters_tried.clone();
    }
    ledger.transforms = last.wire.transforms.clone();
    if let Some(c) = &req.text_constraint
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
    let text_ok = !last.text.is_empty();
    let run_ok = last.error.is_none() && !last.termination_reason.is_failure();
    let intended = last.termination_reason.is_no_retry();
    let success = text_ok && run_ok && (!checked || check.passed() || intended);
    let error = if success {
        None
    } else if let Some(e) = &last.error {
        Some(e.clone())
    } else if !text_ok {
        Some("No response from sub-agent".to_owned())
    } else {
        Some(format!("answer failed the check: {}", check.trigger()))
    };
    let summary = if success {
        last.text.chars().take(500).collect()
    } else if !text_ok && last.error.is_none() {
        "No response from sub-agent".to_owned()
    } else {
        let mut parts = vec![error.clone().unwrap_or_default()];
        if last.termination_reason != crate::agent::termination::TerminationReason::Unknown {
            parts.push(format!("termination_reason={}", last.termination_reason));
        }
        format!("Sub-agent failed: {}", parts.join("; "))
            .chars()
            .take(500)
            .collect()
    };
    WorkerResult {
        task_id: req.task_id.clone(),
        success,
        output: last.text.clone(),
        summary,
        error,
        duration_ms: elapsed.as_millis().try_into().unwrap_or(u64::MAX),
        prompt_tokens: last.usage.input_tokens,
        completion_tokens: last.usage.output_tokens,
        usd_spent: last.usage.cost_usd.unwrap_or(0.0),
        answer: check.object,
        termination_reason: last.termination_reason.as_str(),
        ledger,
    }
}
