//! [`TerminationReason`]: how a loop run ended, spelled as GEODE spells it.

use serde::{Deserialize, Serialize};

/// How a loop run ended. GEODE's values plus `truncated`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TerminationReason {
    /// A final answer.
    Natural,
    /// A final answer forced on the last allowed round.
    ForcedText,
    /// `max_rounds` was reached.
    MaxRounds,
    /// The loop's time budget ran out.
    TimeBudgetExpired,
    /// The session's time budget asks for a hand-off.
    SessionTimeBudgetHandoff,
    /// The session's time budget ran out.
    SessionTimeBudgetExpired,
    /// The context window could not be recovered.
    ContextExhausted,
    /// The cost budget ran out.
    CostBudgetExceeded,
    /// A billing error.
    BillingError,
    /// The operator must act (credentials, bad request).
    ModelActionRequired,
    /// The model refused.
    ModelRefusal,
    /// The model asked the user a question.
    UserClarificationNeeded,
    /// The same tool error repeated.
    ConvergenceDetected,
    /// Tools succeed but nothing progresses.
    RepeatedSuccessNoProgress,
    /// A hook blocked the input.
    InputBlocked,
    /// The user cancelled.
    UserCancelled,
    /// A partial but usable answer.
    ActionablePartial,
    /// The loop yielded after a tool round.
    ToolUseYield,
    /// An external check must confirm the result.
    ExternalVerificationRequired,
    /// An adapter call failed.
    LlmError,
    /// The answer was cut by the output token limit (geode; GEODE cannot see this).
    Truncated,
    /// The model called the caller's tools: the turn waits for their results (geode).
    CallerToolCalls,
    /// Not known.
    #[default]
    Unknown,
}

impl TerminationReason {
    /// GEODE's failure terminations (`FAILURE_TERMINATION_REASONS`), plus `truncated`.
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            Self::ModelActionRequired
                | Self::ContextExhausted
                | Self::LlmError
                | Self::BillingError
                | Self::CostBudgetExceeded
                | Self::ConvergenceDetected
                | Self::ExternalVerificationRequired
                | Self::Truncated
        )
    }

    /// Intended non-JSON endings that the worker never retries.
    pub fn is_no_retry(self) -> bool {
        matches!(
            self,
            Self::InputBlocked
                | Self::UserCancelled
                | Self::UserClarificationNeeded
                | Self::ExternalVerificationRequired
        )
    }

    /// Every reason.
    pub const ALL: [TerminationReason; 23] = [
        Self::Natural,
        Self::ForcedText,
        Self::MaxRounds,
        Self::TimeBudgetExpired,
        Self::SessionTimeBudgetHandoff,
        Self::SessionTimeBudgetExpired,
        Self::ContextExhausted,
        Self::CostBudgetExceeded,
        Self::BillingError,
        Self::ModelActionRequired,
        Self::ModelRefusal,
        Self::UserClarificationNeeded,
        Self::ConvergenceDetected,
        Self::RepeatedSuccessNoProgress,
        Self::InputBlocked,
        Self::UserCancelled,
        Self::ActionablePartial,
        Self::ToolUseYield,
        Self::ExternalVerificationRequired,
        Self::LlmError,
        Self::Truncated,
        Self::CallerToolCalls,
        Self::Unknown,
    ];

    /// The snake_case name, as GEODE spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Natural => "natural",
            Self::ForcedText => "forced_text",
            Self::MaxRounds => "max_rounds",
            Self::TimeBudgetExpired => "time_budget_expired",
            Self::SessionTimeBudgetHandoff => "session_time_budget_handoff",
            Self::SessionTimeBudgetExpired => "session_time_budget_expired",
            Self::ContextExhausted => "context_exhausted",
            Self::CostBudgetExceeded => "cost_budget_exceeded",
            Self::BillingError => "billing_error",
            Self::ModelActionRequired => "model_action_required",
            Self::ModelRefusal => "model_refusal",
            Self::UserClarificationNeeded => "user_clarification_needed",
            Self::ConvergenceDetected => "convergence_detected",
            Self::RepeatedSuccessNoProgress => "repeated_success_no_progress",
            Self::InputBlocked => "input_blocked",
            Self::UserCancelled => "user_cancelled",
            Self::ActionablePartial => "actionable_partial",
            Self::ToolUseYield => "tool_use_yield",
            Self::ExternalVerificationRequired => "external_verification_required",
            Self::LlmError => "llm_error",
            Self::Truncated => "truncated",
            Self::CallerToolCalls => "caller_tool_calls",
            Self::Unknown => "unknown",
        }
    }
}

impl std::str::FromStr for TerminationReason {
    type Err = super::UnknownName;

    /// The snake_case name, as [`Self::as_str`] writes it.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        super::by_name(&Self::ALL, Self::as_str, "termination reason", text)
    }
}

impl std::fmt::Display for TerminationReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_reference_alphabet() {
        for (r, s) in [
            (TerminationReason::Natural, "natural"),
            (TerminationReason::TimeBudgetExpired, "time_budget_expired"),
            (
                TerminationReason::UserClarificationNeeded,
                "user_clarification_needed",
            ),
            (TerminationReason::LlmError, "llm_error"),
            (TerminationReason::Truncated, "truncated"),
            (TerminationReason::CallerToolCalls, "caller_tool_calls"),
        ] {
            assert_eq!(r.as_str(), s);
            let back: TerminationReason = serde_json::from_value(serde_json::json!(s)).unwrap();
            assert_eq!(back, r);
        }
    }

    /// `as_str` is written out by hand (no serde round trip); it must say what serde says, and
    /// `FromStr` must read it back, for every reason.
    #[test]
    fn every_name_is_serde_s_and_reads_back() {
        for r in TerminationReason::ALL {
            assert_eq!(serde_json::to_value(r).unwrap(), r.as_str(), "{r:?}");
            assert_eq!(r.as_str().parse::<TerminationReason>().unwrap(), r);
        }
        assert!("nope".parse::<TerminationReason>().is_err());
    }

    #[test]
    fn the_reference_failure_catalogue_has_seven_entries_plus_truncated() {
        let all = TerminationReason::ALL;
        let failures: Vec<_> = all.iter().filter(|r| r.is_failure()).collect();
        assert_eq!(failures.len(), 8);
        assert_eq!(all.iter().filter(|r| r.is_no_retry()).count(), 4);
    }
}
