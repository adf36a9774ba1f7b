//! AgenticLoop through the scripted adapter: every path, and the schema on every round.

use geode_testkit as support;

use geode::agent::agent_loop::{AgenticLoop, LoopOptions, SchemaOverride};
use geode::agent::tools::{FnTool, ToolRegistry};
use geode::llm::call::{AdapterError, CallCx};
use geode::llm::request::{AdapterResponse, ContentBlock, Message, ToolChoice, ToolUse};
use geode::llm::scripted::{ScriptedAdapter, Step};
use geode::schema::ResponseSchema;
use geode::vocab::StopReason;
use geode::vocab::TerminationReason;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn decision() -> ResponseSchema {
    support::example_decision_schema()
}

fn tools() -> Arc<ToolRegistry> {
    let mut r = ToolRegistry::new();
    r.register(Arc::new(FnTool::new(
        "read_document",
        "reads a document",
        json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}),
        |v| Ok(json!({"text": format!("contents of {}", v["path"].as_str().unwrap_or(""))})),
    )))
    .unwrap();
    Arc::new(r)
}

fn tool_call(id: &str, input: serde_json::Value) -> AdapterResponse {
    AdapterResponse {
        tool_uses: vec![ToolUse {
            id: id.into(),
            name: "read_document".into(),
            input,
        }],
        stop_reason: StopReason::ToolUse,
        ..AdapterResponse::default()
    }
}

fn options_with_schema() -> LoopOptions {
    LoopOptions {
        response_schema: Some(decision()),
        ..LoopOptions::default()
    }
}

#[tokio::test]
async fn schema_and_tools_travel_together_on_every_round() {
    let adapter = Arc::new(ScriptedAdapter::new(vec![
        Ok(tool_call("c1", json!({"path": "a.md"}))),
        Ok(tool_call("c2", json!({"path": "b.md"}))),
        Ok(AdapterResponse::text(
            r#"{"decision":"accept","reason":"ok"}"#,
        )),
    ]));
    let mut lp = AgenticLoop::new(adapter.clone(), options_with_schema(), tools());
    let r = lp.arun("Decide.", &CallCx::new()).await;
    assert_eq!(r.termination_reason, TerminationReason::Natural);
    assert_eq!(r.rounds, 3);
    assert_eq!(r.tool_calls.len(), 2);
    let reqs = adapter.requests();
    assert_eq!(reqs.len(), 3);
    for req in &reqs {
        assert_eq!(req.response_schema.as_ref(), Some(&decision()));
        assert_eq!(req.tools.len(), 1);
        assert_eq!(req.tools[0].name, "read_document");
        assert_eq!(req.tool_choice, ToolChoice::Auto);
    }
    // The tool result went back in the next request.
    let last = &reqs[2].messages;
    assert!(last.iter().any(|m| m.content.iter().any(|b| matches!(
        b,
        ContentBlock::ToolResult { tool_use_id, content, is_error: false } if tool_use_id == "c2" && content.contains("contents of b.md")
    ))));
}

#[tokio::test]
async fn a_bad_tool_call_goes_back_to_the_model_as_an_error_result() {
    let adapter = Arc::new(ScriptedAdapter::new(vec![
        Ok(tool_call("c1", json!({"path": 42}))),
        Ok(AdapterResponse::text(
            r#"{"decision":"reject","reason":"x"}"#,
        )),
    ]));
    let mut lp = AgenticLoop::new(adapter.clone(), options_with_schema(), tools());
    let r = lp.arun("Decide.", &CallCx::new()).await;
    assert_eq!(r.termination_reason, TerminationReason::Natural);
    assert!(r.tool_calls[0].is_error);
    let second = &adapter.requests()[1];
    let err = second
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .find_map(|b| match b {
            ContentBlock::ToolResult {
                content,
                is_error: true,
                ..
            } => Some(content.clone()),
            _ => None,
        })
        .expect("an error tool_result");
    assert!(err.contains("/path"), "{err}");
}

#[tokio::test]
async fn per_call_override_replaces_or_suppresses_the_loop_schema() {
    let planner = ResponseSchema::from_value(json!({"title": "Plan", "type": "object"})).unwrap();
    let adapter = Arc::new(ScriptedAdapter::new(vec![
        Ok(AdapterResponse::text("{}")),
        Ok(AdapterResponse::text("{}")),
        Ok(AdapterResponse::text("{}")),
    ]));
    let lp = AgenticLoop::new(adapter.clone(), options_with_schema(), tools());
    let cx = CallCx::new();
    let msgs = vec![Message::user("plan")];
    lp.call_llm(msgs.clone(), SchemaOverride::Replace(planner.clone()), &cx)
        .await
        .unwrap();
    lp.call_llm(msgs.clone(), SchemaOverride::Suppress, &cx)
        .await
        .unwrap();
    lp.call_llm(msgs, SchemaOverride::Inherit, &cx)
        .await
        .unwrap();
    let reqs = adapter.requests();
    assert_eq!(reqs[0].response_schema.as_ref(), Some(&planner));
    assert_eq!(reqs[1].response_schema, None);
    assert_eq!(reqs[2].response_schema.as_ref(), Some(&decision()));
    assert!(lp.history().is_empty(), "call_llm leaves the history alone");
}

#[tokio::test]
async fn max_rounds_stops_a_tool_loop_and_the_last_round_forces_text() {
    let adapter = Arc::new(ScriptedAdapter::new(vec![
        Ok(tool_call("c1", json!({"path": "a"}))),
        Ok(tool_call("c2", json!({"path": "b"}))),
        Ok(tool_call("c3", json!({"path": "c"}))),
    ]));
    let opts = LoopOptions {
        max_rounds: 2,
        ..options_with_schema()
    };
    let mut lp = AgenticLoop::new(adapter.clone(), opts, tools());
    let r = lp.arun("go", &CallCx::new()).await;
    assert_eq!(r.termination_reason, TerminationReason::MaxRounds);
    assert!(r.error.is_some());
    let reqs = adapter.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].tool_choice, ToolChoice::Auto);
    assert_eq!(reqs[1].tool_choice, ToolChoice::None);
}

#[tokio::test]
async fn a_text_answer_on_the_last_round_is_forced_text() {
    let adapter = Arc::new(ScriptedAdapter::new(vec![Ok(AdapterResponse::text("{}"))]));
    let opts = LoopOptions {
        max_rounds: 1,
        ..LoopOptions::default()
    };
    let mut lp = AgenticLoop::new(adapter, opts, tools());
    let r = lp.arun("go", &CallCx::new()).await;
    assert_eq!(r.termination_reason, TerminationReason::ForcedText);
    assert!(r.error.is_none());
}

#[tokio::test(start_paused = true)]
async fn the_time_budget_cuts_a_slow_call() {
    let adapter = Arc::new(ScriptedAdapter::with_steps(vec![Step {
        outcome: Ok(AdapterResponse::text("{}")),
        delay: Duration::from_secs(120),
    }]));
    let opts = LoopOptions {
        time_budget: Some(Duration::from_secs(30)),
        ..LoopOptions::default()
    };
    let mut lp = AgenticLoop::new(adapter, opts, tools());
    let r = lp.arun("go", &CallCx::new()).await;
    assert_eq!(r.termination_reason, TerminationReason::TimeBudgetExpired);
}

#[tokio::test(start_paused = true)]
async fn cancellation_ends_the_run_as_user_cancelled() {
    let adapter = Arc::new(ScriptedAdapter::with_steps(vec![Step {
        outcome: Ok(AdapterResponse::text("{}")),
        delay: Duration::from_secs(3600),
    }]));
    let mut lp = AgenticLoop::new(adapter, LoopOptions::default(), tools());
    let cx = CallCx::new();
    let token = cx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        token.cancel();
    });
    let r = lp.arun("go", &cx).await;
    assert_eq!(r.termination_reason, TerminationReason::UserCancelled);
    assert_eq!(r.text, "Interrupted.");
}

#[tokio::test]
async fn refusal_truncation_and_adapter_errors_are_distinct_terminations() {
    let cases: Vec<(Result<AdapterResponse, AdapterError>, TerminationReason)> = vec![
        (
            Ok(AdapterResponse {
                text: "I can't help with that.".into(),
                stop_reason: StopReason::Refusal,
                ..AdapterResponse::default()
            }),
            TerminationReason::ModelRefusal,
        ),
        (
            Ok(AdapterResponse {
                text: "{\"decision\":".into(),
                stop_reason: StopReason::MaxTokens,
                ..AdapterResponse::default()
            }),
            TerminationReason::Truncated,
        ),
        (
            Err(AdapterError::Server {
                adapter: "scripted".into(),
                status: 500,
                message: "boom".into(),
            }),
            TerminationReason::LlmError,
        ),
    ];
    for (outcome, expected) in cases {
        let adapter = Arc::new(ScriptedAdapter::new(vec![outcome]));
        let mut lp = AgenticLoop::new(adapter, options_with_schema(), tools());
        let r = lp.arun("go", &CallCx::new()).await;
        assert_eq!(r.termination_reason, expected);
        assert!(r.error.is_some());
    }
}

#[tokio::test]
async fn an_input_guard_blocks_before_any_call() {
    let adapter = Arc::new(ScriptedAdapter::new(vec![]));
    let mut lp = AgenticLoop::new(adapter.clone(), LoopOptions::default(), tools())
        .with_input_guard(Arc::new(|_| {
            Some("Blocked by UserPromptSubmit hook".into())
        }));
    let r = lp.arun("go", &CallCx::new()).await;
    assert_eq!(r.termination_reason, TerminationReason::InputBlocked);
    assert!(adapter.requests().is_empty());
}
