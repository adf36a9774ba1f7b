//! [`SubTask`]: a unit of sub-agent work, its mapping to a [`WorkerRequest`], and running many
//! at once.
//!
//! [`run_subtasks`] runs tasks concurrently on tokio with a concurrency limit. Each task runs in
//! its own tokio task, so one that fails, or panics, yields a failed [`WorkerResult`] for that
//! task alone; the others finish normally. Results come back in input order.

use crate::agent::worker::WorkerEnv;
use crate::protocol::{PrepareError, WorkerRequest, WorkerResult, run_worker};
use crate::schema::validate::Validation;
use crate::schema::{ResponseSchema, TextConstraint};
use crate::vocab::Require;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;
use tokio::sync::Semaphore;

/// One unit of sub-agent work (GEODE's `SubTask`, docs/reference.md#the-delivery-path).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SubTask {
    /// The task id.
    pub task_id: String,
    /// The prompt text.
    pub description: String,
    /// The task type.
    pub task_type: String,
    /// Parameters appended to the prompt.
    #[serde(default)]
    pub args: Map<String, Value>,
    /// Agent definition override.
    #[serde(default)]
    pub agent: Option<String>,
    /// Built-in role.
    #[serde(default)]
    pub role: String,
    /// Adapter source or adapter name ("" = infer).
    #[serde(default)]
    pub source: String,
    /// Per-task model override.
    #[serde(default)]
    pub model: String,
    /// The schema of the final answer.
    #[serde(default)]
    pub response_schema: Option<ResponseSchema>,
    /// Per-task effort override.
    #[serde(default)]
    pub effort: String,
    /// geode: a choice/regex/grammar constraint.
    #[serde(default)]
    pub text_constraint: Option<TextConstraint>,
    /// geode: the guarantee required of the adapter.
    #[serde(default)]
    pub require: Require,
    /// geode: which check decides the retry.
    #[serde(default)]
    pub validation: Validation,
    /// geode: how full validation treats `format` (`assert` by default, or `annotate`).
    #[serde(default)]
    pub formats: crate::schema::formats::FormatMode,
    /// geode: let the declared repair tier read an answer that fails its check (default off).
    #[serde(default)]
    pub repair: bool,
    /// geode: `false` keeps this task away from the worker's response cache.
    #[serde(default)]
    pub cache: Option<bool>,
}

/// Settings of the manager that turns SubTasks into WorkerRequests.
#[derive(Debug, Clone, PartialEq)]
pub struct SubTaskDefaults {
    /// The worker's hard limit (GEODE's default 600 s).
    pub timeout_s: f64,
    /// The loop time budget (0 = none).
    pub time_budget_s: f64,
    /// The model when the task names none.
    pub default_model: String,
    /// The effort when the task names none.
    pub default_effort: String,
    /// Output token limit per call.
    pub subagent_max_tokens: u32,
    /// Extended-thinking budget.
    pub thinking_budget: u32,
}

impl Default for SubTaskDefaults {
    fn default() -> Self {
        Self {
            timeout_s: 600.0,
            time_budget_s: 0.0,
            default_model: String::new(),
            default_effort: "high".to_owned(),
            subagent_max_tokens: 32768,
            thinking_budget: 0,
        }
    }
}

impl SubTask {
    /// GEODE's mapping: the schema and source verbatim, model and effort overridden by
    /// the task when set, limits from the manager.
    pub fn to_worker_request(&self, d: &SubTaskDefaults) -> WorkerRequest {
        WorkerRequest {
            task_id: self.task_id.clone(),
            task_type: self.task_type.clone(),
            description: self.description.clone(),
            args: self.args.clone(),
            model: if self.model.is_empty() {
                d.default_model.clone()
            } else {
                self.model.clone()
            },
            source: self.source.clone(),
            response_schema: self.response_schema.clone(),
            timeout_s: d.timeout_s,
            time_budget_s: d.time_budget_s,
            effort: if self.effort.is_empty() {
                d.default_effort.clone()
            } else {
                self.effort.clone()
            },
            thinking_budget: d.thinking_budget,
            subagent_max_tokens: d.subagent_max_tokens,
            agent_name: self.agent.clone().unwrap_or_default(),
            text_constraint: self.text_constraint.clone(),
            require: self.require,
            validation: self.validation,
            formats: self.formats,
            repair: self.repair,
            cache: self.cache,
            ..WorkerRequest::default()
        }
    }
}

/// Chooses the environment (adapter, tools) for one request; an `Err` is that task's error.
pub type EnvResolver = Arc<dyn Fn(&WorkerRequest) -> Result<WorkerEnv, PrepareError> + Send + Sync>;

/// Runs many tasks at once, at most `concurrency` at a time. Results are in input order; a
/// task that fails to resolve or panics gives a failed result and does not affect the others.
pub async fn run_subtasks(
    tasks: Vec<SubTask>,
    defaults: &SubTaskDefaults,
    resolve: EnvResolver,
    concurrency: usize,
) -> Vec<WorkerResult> {
    let limit = Arc::new(Semaphore::new(concurrency.max(1)));
    let mut handles = Vec::with_capacity(tasks.len());
    for task in &tasks {
        let req = task.to_worker_request(defaults);
        let limit = limit.clone();
        let resolve = resolve.clone();
        handles.push(tokio::spawn(async move {
            let _permit = limit.acquire_owned().await;
            match resolve(&req) {
                Ok(env) => run_worker(&req, &env).await,
                Err(e) => WorkerResult::failed(&req.task_id, e.to_string()),
            }
        }));
    }
    let mut out = Vec::with_capacity(handles.len());
    for (task, handle) in tasks.iter().zip(handles) {
        out.push(match handle.await {
            Ok(r) => r,
            Err(e) if e.is_panic() => WorkerResult::failed(&task.task_id, "worker task panicked"),
            Err(_) => WorkerResult::failed(&task.task_id, "worker task was cancelled"),
        });
    }
    out
}

#[cfg(test)]
mod tests;
