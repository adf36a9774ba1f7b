use super::*;
use crate::llm::request::{
    AdapterResponse, ContentBlock, Message, Role, ToolChoice, ToolSpec, ToolUse,
};
use crate::llm::sse::SseEvent;
use crate::llm::wire::parse_error::ParseError;
use crate::schema::ResponseSchema;
use crate::vocab::{ErrorKind, StopReason, Usage};
use serde_json::Value;
use serde_json::json;

const PLATFORM: Options = Options {
    backend: Backend::Platform,
    reasoning: Reasoning::Off,
    delivery: Delivery::Sse,
};
const CODEX: Options = Options {
    backend: Backend::Codex,
    reasoning: Reasoning::On,
    delivery: Delivery::Sse,
};

fn strict_schema() -> ResponseSchema {
    ResponseSchema::from_value(json!({
        "title": "Decision Result", "type": "object",
        "properties": {"decision": {"type": "string", "enum": ["accept", "reject"]},
                       "reason": {"type": "string"}},
        "required": ["decision", "reason"], "additionalProperties": false
    }))
    .unwrap()
}

/// A map: strict mode cannot take it (its `additionalProperties` is a schema).
fn loose_schema() -> ResponseSchema {
    ResponseSchema::from_value(
        json!({"type": "object", "properties": {"a": {"type": "string"}},
        "additionalProperties": {"type": "integer"}}),
    )
    .unwrap()
}

/// A trimmed capture of a real codex request (the path below); missing is a loud failure.
fn capture(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/captures")
        .join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("capture {} is missing: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// `req` built with the plan its adapter would make for it.
fn planned(req: &AdapterCallRequest, opts: &Options) -> Result<Built, AdapterError> {
    let plan = crate::llm::registry::SchemaRoute::OpenAiStrict.plan_call(req, None);
    build("t", req, opts, &plan)
}

fn body(req: &AdapterCallRequest, opts: &Options) -> Value {
    let built = planned(req, opts).unwrap();
    serde_json::from_slice(&built.body).unwrap()
}

fn base() -> AdapterCallRequest {
    let mut r = AdapterCallRequest::new("gpt-5.5", vec![Message::user("Decide.")]);
    r.system_prompt = "You decide.".into();
    r
}

#[test]
fn schema_goes_to_text_format_with_strict_verdict_and_mode() {
    let mut r = base();
    r.response_schema = Some(strict_schema());
    let built = planned(&r, &PLATFORM).unwrap();
    assert_eq!(built.wire.mode, StructuredOutputMode::Strict);
    let b: Value = serde_json::from_slice(&built.body).unwrap();
    assert_eq!(
        b["text"],
        json!({"format": {"type": "json_schema", "name": "Decision_Result", "strict": true,
                          "schema": strict_schema().as_value()}})
    );
    r.response_schema = Some(loose_schema());
    let built = planned(&r, &PLATFORM).unwrap();
    assert_eq!(built.wire.mode, StructuredOutputMode::Hint);
    let b: Value = serde_json::from_slice(&built.body).unwrap();
    assert_eq!(b["text"]["format"]["strict"], json!(false));
    assert_eq!(b["text"]["format"]["name"], json!("response"));
    assert_eq!(&b["text"]["format"]["schema"], loose_schema().as_value());
}

#[test]
fn optional_properties_go_strict_as_required_and_nullable() {
    let mut r = base();
    let optional = json!({"type": "object", "required": ["a"],
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}});
    r.response_schema = Some(ResponseSchema::from_value(optional).unwrap());
    let built = planned(&r, &PLATFORM).unwrap();
    let b: Value = serde_json::from_slice(&built.body).unwrap();
    assert_eq!(built.wire.mode, StructuredOutputMode::Strict);
    assert_eq!(b["text"]["format"]["strict"], true);
    let wire = json!({"type": "object", "additionalProperties": false, "required": ["a", "b"],
        "properties": {"a": {"type": "string"}, "b": {"type": ["integer", "null"]}}});
    assert_eq!(b["text"]["format"]["schema"], wire);
    let root = &built.wire.absent_nulls.nodes[0];
    assert_eq!(root.drop_if_null, vec!["b".to_owned()]);
}

#[test]
fn the_schema_is_the_only_difference_and_absent_without_one() {
    let r = base();
    let mut with = base();
    with.response_schema = Some(strict_schema());
    let (mut a, mut b) = (body(&r, &CODEX), body(&with, &CODEX));
    assert!(a.get("text").is_none());
    assert_eq!(
        planned(&r, &CODEX).unwrap().wire.mode,
        StructuredOutputMode::None
    );
    b.as_object_mut().unwrap().remove("text");
    a.as_object_mut().unwrap().remove("text");
    assert_eq!(a, b);
}

#[test]
fn backend_invariants_store_stream_instructions_and_max_tokens() {
    let mut r = base();
    r.system_prompt.clear();
    let p = body(&r, &PLATFORM);
    let c = body(&r, &CODEX);
    for b in [&p, &c] {
        assert_eq!(b["store"], json!(false));
        assert_eq!(b["stream"], json!(true));
        assert!(b.get("prompt_cache_key").is_none());
    }
    // Nothing the caller did not write goes to the platform API.
    assert!(p.get("instructions").is_none(), "{p}");
    assert_eq!(c["instructions"], json!(DEFAULT_INSTRUCTIONS));
    assert_eq!(p["max_output_tokens"], json!(8192));
    assert!(c.get("max_output_tokens").is_none());
    let json_only = Options {
        delivery: Delivery::Json,
        ..PLATFORM
    };
    assert_eq!(body(&r, &json_only)["stream"], json!(false));
}

#[test]
fn reasoning_models_get_reasoning_and_no_temperature() {
    let mut r = base();
    r.temperature = Some(0.3);
    r.effort = crate::vocab::Effort::from_label("max");
    let c = body(&r, &CODEX);
    assert_eq!(
        c["reasoning"],
        json!({"effort": "xhigh", "summary": "auto"})
    );
    assert_eq!(c["include"], json!(["reasoning.encrypted_content"]));
    assert!(c.get("temperature").is_none());
    let p = body(&r, &PLATFORM);
    assert!(p.get("reasoning").is_none() && p.get("include").is_none());
    assert!((p["temperature"].as_f64().unwrap() - 0.3).abs() < 1e-6);
}

fn tool_spec(name: &str, params: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("{name} tool"),
        input_schema: params,
    }
}

#[test]
fn tools_are_flat_with_explicit_strict_and_choice_mapping() {
    let mut r = base();
    let strict_params = json!({"type": "object", "properties": {"path": {"type": "string"}},
                               "required": ["path"], "additionalProperties": false});
    r.tools = vec![
        tool_spec("read", strict_params.clone()),
        tool_spec("loose", json!({"type": "object", "properties": {}})),
        tool_spec("none", Value::Null),
    ];
    let b = body(&r, &PLATFORM);
    assert_eq!(
        b["tools"][0],
        json!({"type": "function", "name": "read", "description": "read tool",
               "parameters": strict_params, "strict": false})
    );
    assert_eq!(b["tools"][1]["strict"], json!(false));
    assert_eq!(
        b["tools"][2]["parameters"],
        json!({"type": "object", "properties": {}})
    );
    assert!(b["tools"][0].get("function").is_none());
    assert_eq!(b["tool_choice"], json!("auto"));
    assert_eq!(b["parallel_tool_calls"], json!(true));
    for (choice, wire) in [
        (ToolChoice::Any, json!("required")),
        (ToolChoice::None, json!("none")),
        (
            ToolChoice::Tool("read".into()),
            json!({"type": "function", "name": "read"}),
        ),
    ] {
        r.tool_choice = choice;
        assert_eq!(body(&r, &PLATFORM)["tool_choice"], wire);
    }
    let no_tools = body(&base(), &PLATFORM);
    for k in ["tools", "tool_choice", "parallel_tool_calls"] {
        assert!(no_tools.get(k).is_none(), "{k}");
    }
}

#[test]
fn too_many_tools_is_unsupported() {
    let mut r = base();
    r.tools = (0..=MAX_TOOLS)
        .map(|i| tool_spec(&format!("t{i}"), json!({})))
        .collect();
    assert!(matches!(
        planned(&r, &PLATFORM),
        Err(AdapterError::Unsupported { .. })
    ));
}

#[test]
fn tool_rounds_replay_as_function_call_items_like_codex() {
    let mut r = base();
    r.messages = vec![
        Message::user("Reply with the answer JSON"),
        Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Text {
                    text: "Let me look.".into(),
                },
                ContentBlock::ToolUse {
                    id: "call_1".into(),
                    name: "exec_command".into(),
                    input: json!({"cmd": "echo hi-from-tool"}),
                },
                ContentBlock::ToolUse {
                    id: "call_2".into(),
                    name: "broken".into(),
                    input: json!({"_raw": "{oops"}),
                },
            ],
        },
        Message {
            role: Role::User,
            content: vec![
                ContentBlock::ToolResult {
                    tool_use_id: "call_1".into(),
                    content: "hi-from-tool\n".into(),
                    is_error: false,
                },
                ContentBlock::ToolResult {
                    tool_use_id: "call_2".into(),
                    content: "bad arguments".into(),
                    is_error: true,
                },
                ContentBlock::Text {
                    text: "go on".into(),
                },
            ],
        },
    ];
    let input = body(&r, &CODEX)["input"].clone();
    assert_eq!(
        input,
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Reply with the answer JSON"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me look."}]},
            {"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": "{\"cmd\":\"echo hi-from-tool\"}"},
            {"type": "function_call", "call_id": "call_2", "name": "broken", "arguments": "{oops"},
            {"type": "function_call_output", "call_id": "call_1", "output": "hi-from-tool\n"},
            {"type": "function_call_output", "call_id": "call_2", "output": "bad arguments"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go on"}]}
        ])
    );
    // Same keys as the codex capture's function items (minus the ids/status codex adds).
    let capture = capture("codex-0.171.0-toolcall-second-request-input-tail.json");
    for (ours, theirs) in [(&input[2], &capture[1]), (&input[4], &capture[2])] {
        for (k, _) in ours.as_object().unwrap() {
            assert!(theirs.get(k).is_some(), "capture lacks {k}");
        }
        assert_eq!(ours["type"], theirs["type"]);
    }
}

#[test]
fn empty_input_gets_a_placeholder_user_message() {
    let mut r = base();
    r.messages.clear();
    assert_eq!(
        body(&r, &PLATFORM)["input"],
        json!([{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}])
    );
}

#[test]
fn prompt_cache_key_is_stable_across_the_dynamic_suffix() {
    let a = prompt_cache_key("static part<dynamic_context>one").unwrap();
    let b = prompt_cache_key("static part<dynamic_context>two").unwrap();
    let c = prompt_cache_key("other static<dynamic_context>one").unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert!(a.starts_with("geode-") && a.len() == 22, "{a}");
    assert_eq!(prompt_cache_key(""), None);
    // Pinned: the key must not change across releases or platforms (it keys the provider cache).
    assert_eq!(
        prompt_cache_key("You are a careful analyst.").unwrap(),
        "geode-af75cdca1e2a29bc"
    );
    let long = "x".repeat(100);
    assert_ne!(prompt_cache_key(&long), prompt_cache_key(&long[..99]));
}

// ---- responses ----

#[test]
fn parse_reads_text_tool_calls_and_cached_usage() {
    let resp = json!({
        "id": "resp_1", "status": "completed",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "{\"a\":", "annotations": []},
                {"type": "output_text", "text": "1}"}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "f", "arguments": "{\"x\":2}"}
        ],
        "usage": {"input_tokens": 81, "input_tokens_details": {"cached_tokens": 64},
                  "output_tokens": 11, "total_tokens": 92}
    });
    let r = parse_response("t", &resp).unwrap();
    assert_eq!(r.text, "{\"a\":1}");
    assert_eq!(
        r.tool_uses,
        vec![ToolUse::from_json_arguments("call_9", "f", "{\"x\":2}")]
    );
    assert_eq!(r.stop_reason, StopReason::ToolUse);
    assert_eq!(r.usage.token_counts(), (81, 11, 64));
}

/// Found by the `responses` fuzz target: arguments that parse as JSON but not as an object
/// (`[1,2]`, `7`) became the tool input as they were; every tool input is an object.
#[test]
fn non_object_arguments_are_kept_raw() {
    let resp = json!({"status": "completed", "output": [
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "[1,2]"},
        {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "7"},
        {"type": "function_call", "call_id": "c3", "name": "h", "arguments": " "}
    ]});
    let r = parse_response("t", &resp).unwrap();
    let inputs: Vec<&Value> = r.tool_uses.iter().map(|t| &t.input).collect();
    assert_eq!(
        inputs,
        [&json!({"_raw": "[1,2]"}), &json!({"_raw": "7"}), &json!({})]
    );
}

#[test]
fn refusal_and_truncation_are_not_collapsed() {
    let refusal = json!({"status": "completed", "output": [{"type": "message", "content": [
        {"type": "refusal", "refusal": "I can't help with that."}]}]});
    let r = parse_response("t", &refusal).unwrap();
    assert_eq!(r.stop_reason, StopReason::Refusal);
    assert_eq!(r.text, "I can't help with that.");
    let cut = json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
                     "output": [{"type": "message", "content": [{"type": "output_text", "text": "{\"a\":"}]}]});
    let r = parse_response("t", &cut).unwrap();
    assert_eq!(
        (r.stop_reason, r.text.as_str()),
        (StopReason::MaxTokens, "{\"a\":")
    );
    let filtered =
        json!({"status": "incomplete", "incomplete_details": {"reason": "content_filter"}});
    assert_eq!(
        parse_response("t", &filtered).unwrap().stop_reason,
        StopReason::ContentFilter
    );
}

#[test]
fn failed_and_unfinished_responses_are_errors() {
    let failed = json!({"status": "failed", "error": {"code": "server_error", "message": "oops"}});
    assert!(matches!(
        parse_response("t", &failed),
        Err(AdapterError::RunFailed { .. })
    ));
    let limited =
        json!({"status": "failed", "error": {"code": "rate_limit_exceeded", "message": "slow"}});
    assert!(matches!(
        parse_response("t", &limited),
        Err(AdapterError::RateLimited { .. })
    ));
    let pending = json!({"status": "in_progress"});
    assert!(matches!(
        parse_response("t", &pending),
        Err(AdapterError::Protocol { .. })
    ));
}

/// Found by the `responses` fuzz target: the provider's error code went into the error as it
/// came, so a code holding `\r\n` (or 10 KB) made a multi-line (or huge) error.
#[test]
fn error_codes_are_cut_to_one_line() {
    for code in ["invalid_json\r\nschema", "server\nerror"] {
        let resp = json!({"status": "failed", "error": {"code": code, "message": "m"}});
        let err = parse_response("t", &resp).unwrap_err();
        assert!(!err.to_string().contains(['\n', '\r']), "{err}");
    }
    let long = "x".repeat(10_000);
    let resp = json!({"status": "failed", "error": {"code": long, "message": "m"}});
    assert!(parse_response("t", &resp).unwrap_err().to_string().len() < 1_000);
}

fn frame(event: &str, data: Value) -> SseEvent {
    SseEvent {
        event: event.into(),
        data: data.to_string(),
        id: None,
    }
}

fn fold_all(frames: &[SseEvent]) -> Result<Option<AdapterResponse>, AdapterError> {
    let mut f = Fold::default();
    for fr in frames {
        let event = classify("t", fr).map_err(|e| adapter_error(e, "t"))?;
        if let Some(done) = f.push("t", event)? {
            return Ok(Some(done));
        }
    }
    Ok(None)
}

#[test]
fn fold_takes_the_minimal_codex_stream() {
    let frames = [
        frame(
            "response.output_item.done",
            json!({"type": "response.output_item.done",
            "item": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "{\"ok\":true}"}]}}),
        ),
        frame(
            "response.completed",
            json!({"type": "response.completed", "response": {"id": "resp_min"}}),
        ),
    ];
    let r = fold_all(&frames).unwrap().unwrap();
    assert_eq!(r.text, "{\"ok\":true}");
    assert_eq!(r.stop_reason, StopReason::EndTurn);
    assert_eq!(r.usage, Usage::default());
}

#[test]
fn fold_uses_text_deltas_when_no_items_arrived() {
    let frames = [
        frame(
            "response.created",
            json!({"type": "response.created", "response": {}}),
        ),
        frame(
            "response.output_text.delta",
            json!({"type": "response.output_text.delta", "delta": "{\"a\""}),
        ),
        frame("keepalive", json!({"type": "keepalive"})),
        frame(
            "response.output_text.delta",
            json!({"type": "response.output_text.delta", "delta": ":1}"}),
        ),
        frame(
            "response.completed",
            json!({"type": "response.completed",
            "response": {"status": "completed", "output": [], "usage": {"input_tokens": 3, "output_tokens": 4}}}),
        ),
    ];
    let r = fold_all(&frames).unwrap().unwrap();
    assert_eq!(r.text, "{\"a\":1}");
    assert_eq!(r.usage.output_tokens, 4);
}

#[test]
fn fold_reports_refusal_deltas_tool_items_and_incomplete() {
    let refusal = [
        frame(
            "response.refusal.delta",
            json!({"type": "response.refusal.delta", "delta": "No."}),
        ),
        frame(
            "response.completed",
            json!({"type": "response.completed", "response": {}}),
        ),
    ];
    let r = fold_all(&refusal).unwrap().unwrap();
    assert_eq!(
        (r.stop_reason, r.text.as_str()),
        (StopReason::Refusal, "No.")
    );
    let tool = [
        frame(
            "x",
            json!({"type": "response.output_item.done", "item":
            {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{\"p\":1}"}}),
        ),
        frame(
            "x",
            json!({"type": "response.completed", "response": {"status": "completed"}}),
        ),
    ];
    let r = fold_all(&tool).unwrap().unwrap();
    assert_eq!(r.stop_reason, StopReason::ToolUse);
    assert_eq!(r.tool_uses[0].input, json!({"p": 1}));
    let cut = [frame(
        "x",
        json!({"type": "response.incomplete", "response":
        {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}}),
    )];
    assert_eq!(
        fold_all(&cut).unwrap().unwrap().stop_reason,
        StopReason::MaxTokens
    );
}

#[test]
fn fold_without_terminal_event_yields_nothing() {
    let frames = [frame(
        "x",
        json!({"type": "response.output_text.delta", "delta": "{"}),
    )];
    assert_eq!(fold_all(&frames).unwrap(), None);
}

#[test]
fn error_and_failed_events_are_errors() {
    let e = [frame(
        "error",
        json!({"type": "error", "code": "invalid_json_schema",
        "message": "bad schema", "param": "text.format.schema"}),
    )];
    assert!(matches!(
        fold_all(&e),
        Err(AdapterError::SchemaRejected { status: 200, .. })
    ));
    let f = [frame(
        "x",
        json!({"type": "response.failed", "response":
        {"status": "failed", "error": {"code": "server_error", "message": "boom"}}}),
    )];
    match fold_all(&f) {
        Err(AdapterError::RunFailed { kind, message, .. }) => {
            assert_eq!((kind.as_str(), message.as_str()), ("server_error", "boom"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_events_pass_and_corrupt_known_events_fail() {
    let u = classify(
        "t",
        &frame(
            "response.future_thing",
            json!({"type": "response.future_thing"}),
        ),
    );
    assert_eq!(u.unwrap(), Event::Unknown("response.future_thing".into()));
    let bad = SseEvent {
        event: "response.completed".into(),
        data: "{not json".into(),
        id: None,
    };
    assert!(matches!(
        classify("t", &bad),
        Err(ParseError::Corrupt { .. })
    ));
    let e = adapter_error(classify("t", &bad).unwrap_err(), "t");
    assert!(matches!(e, AdapterError::Protocol { .. }), "{e:?}");
    let missing = frame("x", json!({"type": "response.output_text.delta"}));
    assert!(matches!(
        classify("t", &missing),
        Err(ParseError::Corrupt { .. })
    ));
}

#[test]
fn fold_refuses_text_past_its_budget() {
    let mut f = Fold::with_max_text_bytes(10);
    assert!(
        f.push("t", Event::TextDelta("12345".into()))
            .unwrap()
            .is_none()
    );
    assert!(
        f.push("t", Event::RefusalDelta("12345".into()))
            .unwrap()
            .is_none()
    );
    let err = f.push("t", Event::TextDelta("x".into())).unwrap_err();
    assert!(
        matches!(err, AdapterError::ResponseTooLarge { limit: 10, .. }),
        "{err:?}"
    );
    let mut f = Fold::default();
    let big = "x".repeat((16 << 20) + 1);
    let err = f.push("t", Event::TextDelta(big)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ResponseTooLarge);
}
