//! [`AgenticLoop`]: rounds of LLM calls and tool calls until a final answer.
//!
//! Each round calls the adapter with the tools and the *effective* schema, runs the tool calls the
//! model asks for (arguments validated against each tool's `input_schema`; a bad call goes back to
//! the model as an error result), and stops on a final answer or a [`TerminationReason`].
//!
//! The loop-level `response_schema` is sent on **every** call, tool rounds included, together with
//! the tools. [`AgenticLoop::call_llm`] takes a [`SchemaOverride`] that can replace the schema for
//! one call or, beyond GEODE, suppress it.
//!
//! | stop | termination | `error` |
//! |---|---|---|
//! | text answer | `natural` (`forced_text` on the last allowed round) | no |
//! | `max_rounds` reached | `max_rounds` | yes |
//! | time budget spent | `time_budget_expired` | yes |
//! | cancellation | `user_cancelled` | no |
//! | provider refusal | `model_refusal` | yes |
//! | output token limit | `truncated` | yes |
//! | adapter failure | `llm_error` | yes |
//! | valid calls to the caller's tools | `caller_tool_calls` | no |
//! | the same failed tool calls [`CONVERGENCE_ROUNDS`] rounds in a row | `convergence_detected` | yes |
//!
//! The caller's tools ([`ToolRegistry::register_caller`]) are not run here: when every call of
//! a response to one of them has valid arguments, the turn ends and hands those calls back
//! ([`AgenticResult::caller_tool_calls`]); the framework's own calls of that response run first.
//! When one of them is invalid, every call of the response gets a result (the invalid ones an
//! error naming the problem, the valid caller ones a request to send again) and the rounds go on.
//! An empty user turn continues a conversation whose history ends in the user's turn (the
//! caller's tool results) without adding one.

use crate::agent::tools::{ToolCallRecord, ToolRegistry};
use crate::llm::adapter::Adapter;
use crate::llm::call::{AdapterError, CallCx};
use crate::llm::request::{
    AdapterCallRequest, AdapterResponse, ContentBlock, Message, Role, ToolChoice, ToolUse,
    WireReport,
};
use crate::schema::{ResponseSchema, TextConstraint};
use crate::vocab::TerminationReason;
use crate::vocab::{ErrorKind, RetryClass, StopReason, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Rounds in a row whose tool calls are all the same failed calls (same tools, arguments and
/// errors, e.g. a server that keeps calling a tool nobody offered) after which the loop stops
/// with `convergence_detected`: the model was told the error twice and changed nothing, and
/// with `max_rounds` unlimited nothing else would end the turn before its timeout, each round
/// resending a longer history.
pub const CONVERGENCE_ROUNDS: u32 = 3;

/// Options of one loop. Defaults follow GEODE's `AgenticLoop`.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopOptions {
    /// The model id ("" lets the adapter choose).
    pub model: String,
    /// The system prompt.
    pub system_prompt: String,
    /// Maximum LLM rounds; 0 means unlimited.
    pub max_rounds: u32,
    /// Output token limit per call.
    pub max_tokens: u32,
    /// Extended-thinking budget.
    pub thinking_budget: u32,
    /// Reasoning effort.
    pub effort: crate::vocab::Effort,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Wall-time budget for one `arun`; `None` means no limit.
    pub time_budget: Option<Duration>,
    /// The schema sent on every call unless overridden.
    pub response_schema: Option<ResponseSchema>,
    /// A choice/regex/grammar constraint sent on every call.
    pub text_constraint: Option<TextConstraint>,
    /// How the model may use the tools (`none` on the last allowed round whatever this says).
    pub tool_choice: ToolChoice,
}

impl Default for LoopOptions {
    fn default() -> Self {
        Self {
            model: String::new(),
            system_prompt: String::new(),
            max_rounds: 0,
            max_tokens: 32768,
            thinking_budget: 0,
            effort: crate::vocab::Effort::High,
            temperature: None,
            time_budget: None,
            response_schema: None,
            text_constraint: None,
            tool_choice: ToolChoice::Auto,
        }
    }
}

/// How one call treats the loop-level schema.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum SchemaOverride {
    /// Use the loop's schema.
    #[default]
    Inherit,
    /// Use this schema for this call only.
    Replace(ResponseSchema),
    /// Send no schema on this call (GEODE cannot do this).
    Suppress,
}

/// The outcome of one [`AgenticLoop::arun`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgenticResult {
    /// The final answer text.
    pub text: String,
    /// The tool calls run, in order.
    pub tool_calls: Vec<ToolCallRecord>,
    /// LLM calls made.
    pub rounds: u32,
    /// The error, when the run failed.
    pub error: Option<String>,
    /// The adapter error's kind (`auth`, `schema_rejected`, ...) when an adapter call failed.
    pub error_kind: Option<ErrorKind>,
    /// That adapter error itself.
    #[serde(skip)]
    pub adapter_error: Option<AdapterFailure>,
    /// Whether that adapter error was retryable.
    pub error_retryable: bool,
    /// How the run ended.
    pub termination_reason: TerminationReason,
    /// The last stop reason reported by the adapter.
    pub stop_reason: Option<StopReason>,
    /// Usage summed over all calls.
    pub usage: Usage,
    /// How the constraint went on the wire on the last call.
    pub wire: WireReport,
    /// A structured answer the provider returned beside the text, if any.
    pub structured: Option<Value>,
    /// The calls to the caller's tools the turn ended in (`caller_tool_calls`), arguments valid.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caller_tool_calls: Vec<ToolUse>,
}

/// The adapter error a run ended in, shared by the run's result and the error made of it (an
/// [`AdapterError`] is not `Clone`). Two are equal when they say the same.
#[derive(Debug, Clone)]
pub struct AdapterFailure(pub Arc<AdapterError>);

impl PartialEq for AdapterFailure {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

/// A check run on every user turn before any call (GEODE's UserPromptSubmit hook):
/// `Some(reason)` blocks the turn, which ends as `input_blocked` with the reason as its text.
pub type InputGuard = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// An agent loop bound to one adapter, with its own conversation history.
pub struct AgenticLoop {
    adapter: Arc<dyn Adapter>,
    options: LoopOptions,
    tools: Arc<ToolRegistry>,
    history: Vec<Message>,
    parts: Vec<ContentBlock>,
    input_guard: Option<InputGuard>,
}

impl std::fmt::Debug for AgenticLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgenticLoop")
            .field("adapter", &self.adapter.name())
            .field("options", &self.options)
            .field("history_len", &self.history.len())
            .finish()
    }
}

impl AgenticLoop {
    /// A loop on `adapter` with `options` and `tools`.
    pub fn new(adapter: Arc<dyn Adapter>, options: LoopOptions, tools: Arc<ToolRegistry>) -> Self {
        Self {
            adapter,
            options,
            tools,
            history: Vec::new(),
            parts: Vec::new(),
            input_guard: None,
        }
    }

    /// Starts the conversation from earlier turns (the next user turn follows them).
    pub fn with_history(mut self, history: Vec<Message>) -> Self {
        self.history = history;
        self
    }

    /// Images and documents the next user turn shows the model, before its text.
    pub fn with_parts(mut self, parts: Vec<ContentBlock>) -> Self {
        self.parts = parts;
        self
    }

    /// Installs a guard run on every user turn before any call.
    pub fn with_input_guard(mut self, guard: InputGuard) -> Self {
        self.input_guard = Some(guard);
        self
    }

    /// The conversation so far (user turns, assistant turns, tool results).
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// The loop's options.
    pub fn options(&self) -> &LoopOptions {
        &self.options
    }

    /// The adapter's name.
    pub fn adapter_name(&self) -> &str {
        self.adapter.name()
    }

    /// Builds the request for one call with the effective schema.
    fn request(
        &self,
        messages: Vec<Message>,
        schema: &SchemaOverride,
        last_round: bool,
    ) -> AdapterCallRequest {
        let mut req = AdapterCallRequest::new(self.options.model.clone(), messages);
        req.system_prompt = self.options.system_prompt.clone();
        req.max_tokens = self.options.max_tokens;
        req.thinking_budget = self.options.thinking_budget;
        req.effort = self.options.effort;
        req.temperature = self.options.temperature;
        req.text_constraint = self.options.text_constraint.clone();
        req.response_schema = match schema {
            SchemaOverride::Inherit => self.options.response_schema.clone(),
            SchemaOverride::Replace(s) => Some(s.clone()),
            SchemaOverride::Suppress => None,
        };
        if self.adapter.supports_tools() && !self.tools.is_empty() {
            req.tools = self.tools.specs();
            req.tool_choice = if last_round {
                ToolChoice::None
            } else {
                self.options.tool_choice.clone()
            };
        }
        req
    }

    /// One LLM call outside the round structure (a planner or judge call), with a schema override.
    /// The conversation history is not changed.
    pub async fn call_llm(
        &self,
        messages: Vec<Message>,
        schema: SchemaOverride,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        let req = self.request(messages, &schema, false);
        self.adapter.call(req, cx).await
    }

    /// Runs rounds for one user turn until a final answer or a termination reason. Every string
    /// of the result (answer, errors, tool records) has passed through [`crate::secret::scrub`].
    pub async fn arun(&mut self, user_input: &str, cx: &CallCx) -> AgenticResult {
        crate::secret::scrub_serde(self.run_turn(user_input, cx).await)
    }

    async fn run_turn(&mut self, user_input: &str, cx: &CallCx) -> AgenticResult {
        let started = Instant::now();
        let budget_end = self.options.time_budget.map(|b| started + b);
        let continues =
            user_input.is_empty() && self.history.last().is_some_and(|m| m.role == Role::User);
        if !continues {
            let mut turn = Message::user(user_input);
            if !self.parts.is_empty() {
                let mut content = std::mem::take(&mut self.parts);
                content.append(&mut turn.content);
                turn.content = content;
            }
            self.history.push(turn);
        }
        let mut result = AgenticResult::default();
        if let Some(reason) = self.input_guard.as_ref().and_then(|g| g(user_input)) {
            result.text = reason;
            result.termination_reason = TerminationReason::InputBlocked;
            return result;
        }
        let mut round: u32 = 0;
        // The failed calls of the last round and how many rounds in a row made exactly them.
        let mut failed: (Vec<(String, Value, String)>, u32) = (Vec::new(), 0);
        loop {
            if cx.cancel.is_cancelled() {
                return finish(result, TerminationReason::UserCancelled, "Interrupted.");
            }
            if self.options.max_rounds > 0 && round >= self.options.max_rounds {
                return fail(result, TerminationReason::MaxRounds, "max_rounds reached");
            }
            if budget_end.is_some_and(|end| Instant::now() >= end) {
                return fail(
                    result,
                    TerminationReason::TimeBudgetExpired,
                    "time budget expired",
                );
            }
            let last_round = self.options.max_rounds > 0 && round + 1 == self.options.max_rounds;
            let req = self.request(self.history.clone(), &SchemaOverride::Inherit, last_round);
            let call_cx = CallCx {
                cancel: cx.cancel.clone(),
                deadline: match (cx.deadline, budget_end) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                },
                max_response_bytes: cx.max_response_bytes,
                on_text: cx.on_text.clone(),
            };
            result.rounds += 1;
            round += 1;
            let response = match self.adapter.call(req, &call_cx).await {
                Ok(r) => r,
                Err(e) => return self.adapter_failed(result, e, budget_end),
            };
            result.usage.add(&response.usage);
            result.stop_reason = Some(response.stop_reason.clone());
            result.wire = response.wire.clone();
            let mut blocks = Vec::new();
            if !response.text.is_empty() {
                blocks.push(ContentBlock::Text {
                    text: response.text.clone(),
                });
            }
            for t in &response.tool_uses {
                blocks.push(ContentBlock::ToolUse {
                    id: t.id.clone(),
                    name: t.name.clone(),
                    input: t.input.clone(),
                });
            }
            if !blocks.is_empty() {
                self.history.push(Message {
                    role: Role::Assistant,
                    content: blocks,
                });
            }
            match response.stop_reason {
                StopReason::Refusal => {
                    result.text = response.text.trim().to_owned();
                    return fail(result, TerminationReason::ModelRefusal, "the model refused");
                }
                StopReason::MaxTokens => {
                    result.text = response.text.trim().to_owned();
                    return fail(
                        result,
                        TerminationReason::Truncated,
                        "output truncated at max_tokens",
                    );
                }
                _ => {}
            }
            if response.tool_uses.is_empty() {
                result.text = response.text.trim().to_owned();
                result.structured = response.structured;
                let reason = if last_round {
                    TerminationReason::ForcedText
                } else {
                    TerminationReason::Natural
                };
                result.termination_reason = reason;
                return result;
            }
            let for_caller: Vec<&ToolUse> = response
                .tool_uses
                .iter()
                .filter(|t| self.tools.is_caller(&t.name))
                .collect();
            let hand_back =
                !for_caller.is_empty() && for_caller.iter().all(|c| self.tools.check(c).is_ok());
            let mut results = Vec::with_capacity(response.tool_uses.len());
            let mut round_failed = Vec::new();
            for call in &response.tool_uses {
                if hand_back && self.tools.is_caller(&call.name) {
                    continue;
                }
                let rec = self.tools.execute(call).await;
                results.push(rec.to_block());
                if rec.is_error {
                    round_failed.push((rec.name.clone(), rec.input.clone(), rec.output.clone()));
                }
                result.tool_calls.push(rec);
            }
            if !hand_back && !round_failed.is_empty() && round_failed.len() == results.len() {
                let repeats = if round_failed == failed.0 {
                    failed.1 + 1
                } else {
                    1
                };
                failed = (round_failed, repeats);
            } else {
                failed = (Vec::new(), 0);
            }
            if failed.1 >= CONVERGENCE_ROUNDS {
                let (name, _, error) = &failed.0[0];
                return fail(
                    result,
                    TerminationReason::ConvergenceDetected,
                    &format!(
                        "the same tool call failed {CONVERGENCE_ROUNDS} rounds in a row \
                         (`{name}`: {error})"
                    ),
                );
            }
            if !results.is_empty() {
                self.history.push(Message {
                    role: Role::User,
                    content: results,
                });
            }
            if hand_back {
                result.text = response.text.trim().to_owned();
                result.caller_tool_calls = for_caller.into_iter().cloned().collect();
                result.termination_reason = TerminationReason::CallerToolCalls;
                return result;
            }
        }
    }

    fn adapter_failed(
        &mut self,
        mut result: AgenticResult,
        e: AdapterError,
        budget_end: Option<Instant>,
    ) -> AgenticResult {
        result.error_kind = Some(e.kind());
        result.error_retryable = e.retry_class() == RetryClass::Retryable;
        let e = Arc::new(e);
        result.adapter_error = Some(AdapterFailure(e.clone()));
        match e.as_ref() {
            AdapterError::Cancelled { .. } => {
                finish(result, TerminationReason::UserCancelled, "Interrupted.")
            }
            AdapterError::Timeout { .. } if budget_end.is_some_and(|end| Instant::now() >= end) => {
                fail(
                    result,
                    TerminationReason::TimeBudgetExpired,
                    "time budget expired",
                )
            }
            other => {
                let msg = other.to_string();
                fail(result, TerminationReason::LlmError, &msg)
            }
        }
    }
}

fn finish(mut r: AgenticResult, reason: TerminationReason, text: &str) -> AgenticResult {
    r.termination_reason = reason;
    if r.text.is_empty() {
        r.text = text.to_owned();
    }
    r
}

fn fail(mut r: AgenticResult, reason: TerminationReason, error: &str) -> AgenticResult {
    r.termination_reason = reason;
    r.error = Some(error.to_owned());
    r
}
