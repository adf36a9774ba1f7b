//! The `claude-cli` adapter driving the REAL `claude` CLI (pinned 2.1.197, installed by
//! `scripts/install-clis.sh`) against the `geode-fakes` Messages server, inside a loopback-only
//! network namespace (see `cli_support`). HOME is a temp dir; non-essential traffic is off.

// Test helpers outside `#[test]` fns may unwrap too (tests are allowed to panic).
use geode_testkit as support;
use geode_testkit::cli as cli_support;
use geode_testkit::netns_test;

use geode::llm::adapters::claude_cli::{ClaudeCliAdapter, ClaudeCliConfig};
use geode::llm::call::AdapterError;
use geode::llm::request::{AdapterCallRequest, AdapterResponse, Message};
use geode::vocab::StructuredOutputMode;
use geode_fakes::{Kind, Reply, Script};
use serde_json::{Value, json};
use std::time::Duration;
use support::cli_rig::{CliRig, answer_schema, assert_version};

/// A fake Messages server, a temp HOME and work dir, and an adapter pointed at both.
type Rig = CliRig<ClaudeCliAdapter>;

fn schema() -> geode::schema::ResponseSchema {
    answer_schema("n", "integer")
}

async fn rig(script: Script, timeout: Duration) -> Rig {
    rig_with_max_turns(script, timeout, 10).await
}

async fn rig_with_max_turns(script: Script, timeout: Duration, max_turns: u32) -> Rig {
    Rig::start(Kind::Messages, script, |at| {
        let options = at
            .options(cli_support::claude_bin(), timeout)
            .env("ANTHROPIC_BASE_URL", at.server.base_url())
            .env("ANTHROPIC_API_KEY", "sk-ant-test-dummy")
            .env("ANTHROPIC_AUTH_TOKEN", "")
            .env("CLAUDE_CODE_OAUTH_TOKEN", "");
        ClaudeCliAdapter::new(ClaudeCliConfig {
            cli: options,
            max_turns,
            ..ClaudeCliConfig::default()
        })
    })
    .await
}

fn request() -> AdapterCallRequest {
    let mut req =
        AdapterCallRequest::new("claude-test-model", vec![Message::user("Give the answer")]);
    req.system_prompt = "You answer in JSON.".into();
    req.response_schema = Some(schema());
    req
}

/// The call every test makes, on the shared rig.
trait Calls {
    async fn call(&self) -> Result<AdapterResponse, AdapterError>;
}

impl Calls for Rig {
    async fn call(&self) -> Result<AdapterResponse, AdapterError> {
        self.call_with(request()).await
    }
}

fn run_failed_kind(e: &AdapterError) -> &str {
    match e {
        AdapterError::RunFailed { kind, .. } => kind,
        other => panic!("expected RunFailed, got {other:?}"),
    }
}

fn structured_call(input: Value) -> Reply {
    Reply::tool_call("StructuredOutput", input)
}

#[test]
fn claude_cli_is_the_pinned_version() {
    assert_version(&cli_support::claude_bin(), "2.1.197");
}

netns_test!(claude_valid_answer_is_the_structured_output, async {
    let rig = rig(
        Script::always(structured_call(json!({"answer": "fake", "n": 1}))),
        Duration::from_secs(60),
    )
    .await;
    let resp = rig.call().await.unwrap();
    assert_eq!(resp.text, r#"{"answer":"fake","n":1}"#);
    assert_eq!(resp.structured, Some(json!({"answer": "fake", "n": 1})));
    assert_eq!(resp.wire.mode, StructuredOutputMode::CliValidated);
    assert_eq!(resp.usage.input_tokens, 11, "the fake's default usage");
    assert_eq!(resp.usage.output_tokens, 7);
    assert!(resp.usage.cost_usd.is_some());
    assert!(resp.tool_uses.is_empty());

    // What reached the wire: our schema verbatim as the StructuredOutput tool, our model, our
    // system prompt, the transcript, and no other tool.
    let calls = rig.model_calls();
    assert_eq!(calls.len(), 1);
    let body = &calls[0];
    assert_eq!(body["model"], "claude-test-model");
    let tools = body["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "--tools \"\" leaves only StructuredOutput");
    assert_eq!(tools[0]["name"], "StructuredOutput");
    assert_eq!(&tools[0]["input_schema"], schema().as_value());
    assert!(body["system"].to_string().contains("You answer in JSON."));
    assert!(
        body["messages"]
            .to_string()
            .contains("[USER]\\nGive the answer")
    );
    rig.assert_no_process_left().await;
});

netns_test!(claude_bad_tool_input_then_good_succeeds, async {
    let rig = rig(
        Script::new([
            structured_call(json!({"answer": 5})),
            structured_call(json!({"answer": "second", "n": 2})),
        ]),
        Duration::from_secs(60),
    )
    .await;
    let resp = rig.call().await.unwrap();
    assert_eq!(resp.structured, Some(json!({"answer": "second", "n": 2})));
    let calls = rig.model_calls();
    assert_eq!(calls.len(), 2);
    // The CLI fed its own validation error back as an error tool_result.
    let feedback = calls[1]["messages"].to_string();
    assert!(feedback.contains("is_error"), "{feedback}");
    assert!(
        feedback.contains("must have required property"),
        "{feedback}"
    );
});

netns_test!(
    claude_model_that_never_calls_the_tool_is_not_success,
    async {
        let rig = rig(
            Script::always(Reply::text("{\"answer\":\"plain\",\"n\":2}")),
            Duration::from_secs(60),
        )
        .await;
        let err = rig.call().await.unwrap_err();
        assert_eq!(run_failed_kind(&err), "no_structured_output");
        // The CLI nudged once ([structured-output-enforce]) before giving up.
        let calls = rig.model_calls();
        assert_eq!(calls.len(), 2);
        assert!(
            calls[1]["messages"]
                .to_string()
                .contains("structured-output-enforce")
        );
    }
);

netns_test!(
    claude_an_invalid_input_then_an_ended_turn_is_an_answer_to_validate,
    async {
        // The model calls StructuredOutput with an invalid input, the CLI rejects it, and the
        // model then only writes text: the CLI reports success without structured_output. The
        // model did answer; its last input is the answer, for the caller's validation to fail
        // (and the worker to retry), not a provider failure.
        let bad = json!({"answer": 5});
        let rig = rig(
            Script::new([structured_call(bad.clone())])
                .then_default(Reply::text("I gave my answer above.")),
            Duration::from_secs(60),
        )
        .await;
        let resp = rig.call().await.unwrap();
        assert_eq!(serde_json::from_str::<Value>(&resp.text).unwrap(), bad);
        assert_eq!(resp.structured, None, "the CLI rejected it");
        assert_eq!(resp.wire.mode, StructuredOutputMode::CliValidated);
        // The input, its rejection answered in text, the CLI's one nudge answered in text.
        assert_eq!(rig.model_calls().len(), 3);
        rig.assert_no_process_left().await;
    }
);

netns_test!(
    claude_retry_exhaustion_hands_on_the_last_rejected_answer,
    async {
        // The model keeps breaking the schema until the CLI gives up (5 attempts); its last input
        // differs from the earlier ones so the test can tell which one is handed on.
        let last = json!({"answer": "last", "n": "not a number"});
        let rig = rig(
            Script::new((0..4).map(|_| structured_call(json!({"answer": 5}))))
                .then_default(structured_call(last.clone())),
            Duration::from_secs(90),
        )
        .await;
        let resp = rig.call().await.unwrap();
        // Not a provider failure: the model answered, and the caller's validation judges the answer.
        assert_eq!(serde_json::from_str::<Value>(&resp.text).unwrap(), last);
        assert_eq!(resp.structured, None, "the CLI rejected it");
        assert_eq!(resp.wire.mode, StructuredOutputMode::CliValidated);
        assert!(resp.usage.cost_usd.is_some());
        assert_eq!(
            rig.model_calls().len(),
            5,
            "the CLI tried 5 times, then gave up"
        );
        rig.assert_no_process_left().await;
    }
);

netns_test!(claude_max_turns_is_its_own_failure, async {
    // With --max-turns 1 a rejected StructuredOutput call cannot be retried.
    let rig = rig_with_max_turns(
        Script::always(structured_call(json!({"answer": 5}))),
        Duration::from_secs(60),
        1,
    )
    .await;
    let err = rig.call().await.unwrap_err();
    assert_eq!(run_failed_kind(&err), "max_turns");
    assert!(err.to_string().contains("maximum number of turns"), "{err}");
});

netns_test!(
    claude_cancellation_kills_the_cli_and_leaves_nothing,
    async {
        let rig = rig(Script::always(Reply::Hang), Duration::from_secs(60)).await;
        rig.cancel_mid_call(request(), || {}).await;
        rig.assert_no_process_left().await;
    }
);

netns_test!(claude_dropped_call_leaves_nothing_behind, async {
    let rig = rig(Script::always(Reply::Hang), Duration::from_secs(60)).await;
    rig.drop_mid_call(request()).await;
    rig.assert_no_process_left().await;
});
