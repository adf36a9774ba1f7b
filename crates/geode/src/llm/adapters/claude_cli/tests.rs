use super::*;
use crate::llm::request::Message;
use crate::schema::ResponseSchema;
use crate::vocab::{RetryClass, StructuredOutputMode};
use serde_json::json;

// Trimmed copies of real claude 2.1.197 result objects, from runs against a fake provider.
const OK: &str = r#"{"type":"result","subtype":"success","is_error":false,"api_error_status":null,"num_turns":2,"result":"{\"answer\":\"fake\",\"n\":1}","stop_reason":"tool_use","session_id":"d4bd","total_cost_usd":0.000285,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":3,"output_tokens":9},"structured_output":{"answer":"fake","n":1},"terminal_reason":"completed"}"#;
const NOTOOL: &str = r#"{"type":"result","subtype":"success","is_error":false,"api_error_status":null,"num_turns":2,"result":"{\"answer\":\"plain\",\"n\":2}","stop_reason":"end_turn","total_cost_usd":0.00057,"usage":{"input_tokens":24,"output_tokens":18}}"#;
const RETRIES: &str = r#"{"type":"result","subtype":"error_max_structured_output_retries","is_error":true,"num_turns":6,"stop_reason":"tool_use","total_cost_usd":0.00114,"usage":{"input_tokens":48,"output_tokens":36},"errors":["Failed to provide valid structured output after 5 attempts"]}"#;
const MAX_TURNS: &str = r#"{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":3,"errors":["Reached maximum number of turns (2)"]}"#;
const HTTP400: &str = r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":400,"num_turns":1,"result":"API Error: 400 fake 400","stop_reason":"stop_sequence","total_cost_usd":0}"#;

fn schema() -> ResponseSchema {
    ResponseSchema::from_value(json!({
        "type":"object","properties":{"answer":{"type":"string"},"n":{"type":"integer"}},
        "required":["answer","n"],"additionalProperties":false
    }))
    .unwrap()
}

fn kind(e: AdapterError) -> String {
    match e {
        AdapterError::RunFailed { kind, .. } => kind,
        other => panic!("expected RunFailed, got {other:?}"),
    }
}

#[test]
fn structured_output_is_the_answer_with_usage_and_cost() {
    let r = interpret(last_result(OK).unwrap(), true).unwrap();
    assert_eq!(r.text, r#"{"answer":"fake","n":1}"#);
    assert_eq!(r.structured, Some(json!({"answer":"fake","n":1})));
    assert_eq!(r.usage.input_tokens, 12);
    assert_eq!(r.usage.output_tokens, 9);
    assert_eq!(r.usage.cached_input_tokens, 3);
    assert_eq!(r.usage.cost_usd, Some(0.000285));
    assert_eq!(
        r.stop_reason,
        StopReason::EndTurn,
        "the CLI's own tool call is not ours"
    );
    assert!(r.tool_uses.is_empty());
}

#[test]
fn success_subtype_without_structured_output_is_a_failure_when_a_schema_was_asked() {
    let e = interpret(last_result(NOTOOL).unwrap(), true).unwrap_err();
    assert_eq!(kind(e), "no_structured_output");
}

#[test]
fn without_a_schema_the_result_text_is_the_answer() {
    let r = interpret(last_result(NOTOOL).unwrap(), false).unwrap();
    assert_eq!(r.text, r#"{"answer":"plain","n":2}"#);
    assert_eq!(r.structured, None);
}

#[test]
fn each_failure_has_its_own_kind() {
    let kinds: Vec<String> = [RETRIES, MAX_TURNS, HTTP400]
        .iter()
        .map(|s| kind(interpret(last_result(s).unwrap(), true).unwrap_err()))
        .collect();
    assert_eq!(
        kinds,
        ["max_structured_output_retries", "max_turns", "api_error"]
    );
    let e = interpret(last_result(HTTP400).unwrap(), true).unwrap_err();
    assert!(e.to_string().contains("HTTP 400"), "{e}");
    assert_eq!(e.retry_class(), RetryClass::Fatal);
}

#[test]
fn api_error_statuses_map_to_auth_rate_limit_and_server() {
    let with_status = |s: u16| {
        let text = HTTP400.replace("400", &s.to_string());
        interpret(last_result(&text).unwrap(), true).unwrap_err()
    };
    assert!(matches!(
        with_status(401),
        AdapterError::Auth { status: 401, .. }
    ));
    assert!(matches!(with_status(429), AdapterError::RateLimited { .. }));
    assert!(matches!(
        with_status(529),
        AdapterError::Server { status: 529, .. }
    ));
    assert_eq!(with_status(529).retry_class(), RetryClass::Retryable);
}

#[test]
fn the_last_result_line_wins_in_stream_json() {
    let stream = format!(
        "{{\"type\":\"system\",\"subtype\":\"init\"}}\nnot json\n{{\"type\":\"assistant\"}}\n{OK}\n"
    );
    assert!(last_result(&stream).unwrap().structured_output.is_some());
    assert!(last_result("no json here\n").is_none());
}

/// A trimmed real `stream-json` run of claude 2.1.197 that gave up after 5 rejected inputs
/// (the last two attempts shown, the second with a different input).
fn retries_stream(last_input: &str) -> String {
    let assistant = |input: &str, parent: &str| {
        format!(
            r#"{{"type":"assistant","message":{{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-4-8","content":[{{"type":"tool_use","id":"toolu_1","name":"StructuredOutput","input":{input}}}],"stop_reason":null}},"parent_tool_use_id":{parent},"session_id":"c3bb"}}"#
        )
    };
    let rejected = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"Output does not match required schema: root: must have required property 'n', /answer: must be string","is_error":true,"tool_use_id":"toolu_1"}]},"parent_tool_use_id":null}"#;
    [
        r#"{"type":"system","subtype":"init","tools":["StructuredOutput"],"model":"claude-opus-4-8[1m]","apiKeySource":"ANTHROPIC_API_KEY"}"#.to_owned(),
        assistant(r#"{"answer":5}"#, "null"),
        rejected.to_owned(),
        assistant(last_input, "null"),
        // A subagent's call is not the main answer.
        assistant(r#"{"answer":"from a subagent","n":9}"#, "\"toolu_0\""),
        rejected.to_owned(),
        RETRIES.to_owned(),
    ]
    .join("\n")
}

#[test]
fn retry_exhaustion_hands_on_the_last_rejected_input_as_the_answer() {
    let stream = retries_stream(r#"{"answer":6,"extra":true}"#);
    let result = last_result(&stream).unwrap();
    let r = rejected_answer(&result, &stream, true).unwrap();
    assert_eq!(r.text, r#"{"answer":6,"extra":true}"#);
    assert_eq!(
        r.structured, None,
        "the CLI rejected it: not a validated answer"
    );
    assert_eq!(r.usage.input_tokens, 48);
    assert_eq!(r.usage.cost_usd, Some(0.00114));
    assert_eq!(
        last_structured_output_input(&stream),
        Some(json!({"answer": 6, "extra": true}))
    );
}

#[test]
fn retry_exhaustion_without_any_input_stays_a_run_failure() {
    let result = last_result(RETRIES).unwrap();
    assert!(rejected_answer(&result, RETRIES, true).is_none());
    assert_eq!(
        kind(interpret(result, true).unwrap_err()),
        "max_structured_output_retries"
    );
}

#[test]
fn other_endings_are_not_turned_into_answers() {
    let stream = retries_stream(r#"{"answer":6}"#);
    for text in [MAX_TURNS, HTTP400, OK] {
        let with_inputs = stream.replace(RETRIES, text);
        let result = last_result(&with_inputs).unwrap();
        assert!(
            rejected_answer(&result, &with_inputs, true).is_none(),
            "{text}"
        );
    }
    // A free-text run's tool calls are not an answer either; nor is a turn cut at max_tokens.
    let free = stream.replace(RETRIES, NOTOOL);
    assert!(rejected_answer(&last_result(&free).unwrap(), &free, false).is_none());
    let cut = stream.replace(
        RETRIES,
        &NOTOOL.replace(
            r#""stop_reason":"end_turn""#,
            r#""stop_reason":"max_tokens""#,
        ),
    );
    assert!(rejected_answer(&last_result(&cut).unwrap(), &cut, true).is_none());
}

#[test]
fn an_invalid_input_then_an_ended_turn_is_that_input_as_the_answer_not_a_provider_failure() {
    // The model called StructuredOutput with a rejected input, then ended its turn in text: the
    // CLI reports success without structured_output.
    let stream = retries_stream(r#"{"answer":7}"#).replace(RETRIES, NOTOOL);
    let result = last_result(&stream).unwrap();
    let r = rejected_answer(&result, &stream, true).unwrap();
    assert_eq!(r.text, r#"{"answer":7}"#);
    assert_eq!(r.structured, None, "not a validated answer");
    assert_eq!(r.stop_reason, StopReason::EndTurn);
    // Without any input in the stream it stays the provider failure it was.
    assert!(rejected_answer(&last_result(NOTOOL).unwrap(), NOTOOL, true).is_none());
}

#[test]
fn argv_has_the_schema_inline_and_compact_and_the_prompt_on_stdin() {
    let mut req = AdapterCallRequest::new("claude-x", vec![Message::user("Give the answer")]);
    req.system_prompt = "be terse".into();
    req.response_schema = Some(schema());
    let a = ClaudeCliAdapter::default();
    let spec = a.process_spec("/bin/claude".into(), &req, &ROW.wire_plan(&req), false);
    let args: Vec<String> = spec
        .arguments()
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let after = |flag: &str| {
        let i = args.iter().position(|a| a == flag).unwrap();
        args[i + 1].clone()
    };
    assert_eq!(
        &args[..5],
        [
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--no-session-persistence"
        ]
    );
    assert_eq!(after("--model"), "claude-x");
    assert_eq!(after("--max-turns"), "100");
    assert_eq!(after("--system-prompt"), "be terse");
    let inline = after("--json-schema");
    assert!(!inline.contains(' ') && !inline.contains('\n'));
    assert_eq!(
        serde_json::from_str::<Value>(&inline).unwrap(),
        *schema().as_value()
    );
    assert_eq!(
        &args[args.len() - 2..],
        ["--tools", ""],
        "variadic --tools goes last"
    );
    assert!(!args.iter().any(|a| a == "--include-partial-messages"));
    let partial: Vec<String> = a
        .process_spec("/bin/claude".into(), &req, &ROW.wire_plan(&req), true)
        .arguments()
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let at = |flag: &str| partial.iter().position(|a| a == flag).unwrap();
    assert!(at("--include-partial-messages") < at("--tools"));
    let names: Vec<&str> = spec.env_names().collect();
    assert!(names.contains(&"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"));
    assert_eq!(
        a.wire_mode(Some(&schema())),
        StructuredOutputMode::CliValidated
    );
    assert_eq!(a.wire_mode(None), StructuredOutputMode::None);
    assert!(!a.supports_tools());
}

#[test]
fn a_system_prompt_too_long_for_an_argument_goes_on_stdin() {
    let mut req = AdapterCallRequest::new("", vec![Message::user("q")]);
    req.system_prompt = "s".repeat(MAX_ARG_BYTES);
    let spec = ClaudeCliAdapter::default().process_spec(
        "/bin/claude".into(),
        &req,
        &ROW.wire_plan(&req),
        false,
    );
    assert!(!spec.arguments().iter().any(|a| a == "--system-prompt"));
    assert!(
        !spec.arguments().iter().any(|a| a == "--model"),
        "empty model: CLI default"
    );
    assert!(spec.check_sizes().is_ok());
}

fn huge_schema() -> ResponseSchema {
    let props: serde_json::Map<String, Value> = (0..6000)
        .map(|i| (format!("field_{i:05}"), json!({"type": "string"})))
        .collect();
    ResponseSchema::from_value(json!({"type": "object", "properties": props})).unwrap()
}

#[tokio::test]
async fn a_schema_too_long_for_one_argument_is_unsupported_before_spawning() {
    let schema = huge_schema();
    assert!(schema.to_compact_json().len() >= MAX_ARG_BYTES);
    let mut req = AdapterCallRequest::new("", vec![Message::user("q")]);
    req.response_schema = Some(schema);
    // A binary that would fail loudly if it were ever run.
    let mut config = ClaudeCliConfig::default();
    config.cli.bin = Some("/nonexistent/claude".into());
    let err = ClaudeCliAdapter::new(config)
        .call(req, &CallCx::new())
        .await
        .unwrap_err();
    assert!(matches!(err, AdapterError::Unsupported { .. }), "{err:?}");
    assert!(err.to_string().contains("argument"), "{err}");
}

#[tokio::test]
async fn a_missing_binary_is_a_config_error_naming_the_variable() {
    let mut config = ClaudeCliConfig::default();
    config.cli.bin = Some("/nonexistent/claude".into());
    let req = AdapterCallRequest::new("", vec![Message::user("q")]);
    let adapter = ClaudeCliAdapter::new(config);
    super::super::cli_common::tests::assert_missing_binary_is_named(&adapter, req, ROW.bin_env)
        .await;
}

#[test]
fn a_call_with_parts_goes_as_one_stream_json_user_message_of_blocks() {
    let pdf = crate::media::Media::from_bytes(b"%PDF-1.4\n", Some("a.pdf".into())).unwrap();
    let mut req = AdapterCallRequest::new("", vec![Message::user("Read it.")]);
    req.messages[0].content.insert(0, pdf.into());
    let spec = ClaudeCliAdapter::default().process_spec(
        "/bin/claude".into(),
        &req,
        &ROW.wire_plan(&req),
        false,
    );
    let args: Vec<String> = spec
        .arguments()
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let at = args.iter().position(|a| a == "--input-format").unwrap();
    assert_eq!(args[at + 1], "stream-json");
    let line: Value = serde_json::from_slice(spec.stdin_bytes()).unwrap();
    assert_eq!(line["type"], "user");
    let content = &line["message"]["content"];
    assert_eq!(content[0]["type"], "document");
    assert_eq!(content[0]["source"]["media_type"], "application/pdf");
    assert_eq!(content[0]["title"], "a.pdf");
    assert!(content[1]["text"].as_str().unwrap().contains("Read it."));
    // Text only: the transcript as it is, no input format.
    let plain = AdapterCallRequest::new("", vec![Message::user("q")]);
    let spec = ClaudeCliAdapter::default().process_spec(
        "/bin/claude".into(),
        &plain,
        &ROW.wire_plan(&plain),
        false,
    );
    assert!(!format!("{:?}", spec.arguments()).contains("--input-format"));
}
