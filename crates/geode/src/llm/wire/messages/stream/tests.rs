use super::*;
use crate::vocab::{ErrorKind, StopReason};
use serde_json::json;

fn start(input_tokens: u64) -> (String, String) {
    frame(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
        "role": "assistant", "content": [], "model": "m", "stop_reason": null,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1, "cache_read_input_tokens": 3}}}),
    )
}

fn frame(event: &str, data: Value) -> (String, String) {
    (event.to_owned(), data.to_string())
}

fn text_block(index: u64, parts: &[&str]) -> Vec<(String, String)> {
    let mut out = vec![frame(
        "content_block_start",
        json!({"type": "content_block_start", "index": index,
        "content_block": {"type": "text", "text": ""}}),
    )];
    for p in parts {
        out.push(frame(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index,
            "delta": {"type": "text_delta", "text": p}}),
        ));
    }
    out.push(frame(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    ));
    out
}

fn tool_block(
    index: u64,
    id: &str,
    name: &str,
    parts: &[&str],
    stop: bool,
) -> Vec<(String, String)> {
    let mut out = vec![frame(
        "content_block_start",
        json!({"type": "content_block_start", "index": index,
        "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
    )];
    for p in parts {
        out.push(frame(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index,
            "delta": {"type": "input_json_delta", "partial_json": p}}),
        ));
    }
    if stop {
        out.push(frame(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    out
}

fn end(stop_reason: &str, output_tokens: u64) -> Vec<(String, String)> {
    vec![
        frame(
            "message_delta",
            json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": output_tokens}}),
        ),
        frame("message_stop", json!({"type": "message_stop"})),
    ]
}

fn fold(
    frames: &[(String, String)],
    output_tool: Option<&str>,
) -> Result<AdapterResponse, ParseError> {
    let mut f = StreamFold::new();
    for (event, data) in frames {
        if f.push(Some(event), data)? == Flow::Done {
            break;
        }
    }
    f.finish(output_tool)
}

fn concat(parts: Vec<Vec<(String, String)>>) -> Vec<(String, String)> {
    parts.into_iter().flatten().collect()
}

#[test]
fn text_stream_folds_text_usage_and_stop() {
    let frames = concat(vec![
        vec![start(25), frame("ping", json!({"type": "ping"}))],
        text_block(0, &["Hello", " world"]),
        end("end_turn", 15),
    ]);
    let r = fold(&frames, None).unwrap();
    assert_eq!(r.text, "Hello world");
    assert_eq!(r.stop_reason, StopReason::EndTurn);
    assert_eq!(r.usage.token_counts(), (25, 15, 3));
}

#[test]
fn tool_input_json_is_assembled_from_deltas() {
    let frames = concat(vec![
        vec![start(5)],
        text_block(0, &["Checking."]),
        tool_block(
            1,
            "toolu_1",
            "get_weather",
            &["{\"ci", "ty\": \"Pa", "ris\"}"],
            true,
        ),
        tool_block(2, "toolu_2", "now", &[], true),
        end("tool_use", 30),
    ]);
    let r = fold(&frames, Some("emit_X")).unwrap();
    assert_eq!(r.stop_reason, StopReason::ToolUse);
    assert_eq!(r.tool_uses.len(), 2);
    assert_eq!(r.tool_uses[0].input, json!({"city": "Paris"}));
    assert_eq!(
        r.tool_uses[1].input,
        json!({}),
        "empty JSON means the start input"
    );
    assert_eq!(r.text, "Checking.");
}

/// A stream whose only block is the `emit_Decision` output tool sending `parts` (`closed`:
/// its block ends), ending with `stop_reason`, folded.
fn output_tool_stream(parts: &[&str], closed: bool, stop_reason: &str) -> AdapterResponse {
    let frames = concat(vec![
        vec![start(5)],
        tool_block(0, "toolu_9", "emit_Decision", parts, closed),
        end(stop_reason, 12),
    ]);
    fold(&frames, Some("emit_Decision")).unwrap()
}

#[test]
fn output_tool_stream_becomes_the_structured_answer() {
    let r = output_tool_stream(&["{\"decision\":", " \"accept\"}"], true, "tool_use");
    assert_eq!(r.text, r#"{"decision":"accept"}"#);
    assert_eq!(r.structured, Some(json!({"decision": "accept"})));
    assert!(r.tool_uses.is_empty());
    assert_eq!(r.stop_reason, StopReason::EndTurn);
}

#[test]
fn max_tokens_inside_the_output_tool_keeps_the_partial_text() {
    let r = output_tool_stream(&["{\"decision\": \"acc"], false, "max_tokens");
    assert_eq!(r.stop_reason, StopReason::MaxTokens);
    assert_eq!(r.text, "{\"decision\": \"acc");
    assert!(r.structured.is_none());
}

#[test]
fn refusal_is_reported_as_refusal() {
    let frames = concat(vec![
        vec![start(5)],
        text_block(0, &["I can't help with that."]),
        end("refusal", 8),
    ]);
    assert_eq!(
        fold(&frames, None).unwrap().stop_reason,
        StopReason::Refusal
    );
}

#[test]
fn missing_message_stop_is_truncated() {
    let frames = concat(vec![vec![start(5)], text_block(0, &["Hel"])]);
    assert_eq!(
        fold(&frames, None),
        Err(ParseError::Truncated {
            missing: "message_stop"
        })
    );
    let mut with_delta = frames.clone();
    with_delta.push(frame(
        "message_delta",
        json!({"type": "message_delta",
        "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
    ));
    assert!(matches!(
        fold(&with_delta, None),
        Err(ParseError::Truncated { .. })
    ));
}

#[test]
fn error_event_is_a_provider_error() {
    let frames = vec![
        start(5),
        frame(
            "error",
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
    ];
    assert_eq!(
        fold(&frames, None),
        Err(ParseError::Provider {
            kind: "overloaded_error".into(),
            message: "Overloaded".into()
        })
    );
}

#[test]
fn unknown_events_and_thinking_deltas_are_skipped() {
    let frames = concat(vec![
        vec![
            start(5),
            frame("future_event", json!({"type": "future_event", "x": 1})),
            frame(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "thinking", "thinking": ""}}),
            ),
            frame(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "hmm"}}),
            ),
            frame(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
        ],
        text_block(1, &["ok"]),
        end("end_turn", 3),
    ]);
    assert_eq!(fold(&frames, None).unwrap().text, "ok");
}

#[test]
fn event_name_is_used_when_data_has_no_type() {
    assert_eq!(classify(Some("message_stop"), "{}"), Ok(Event::MessageStop));
    assert_eq!(classify(Some("ping"), "{}"), Ok(Event::Ping));
}

#[test]
fn corrupt_known_events_are_errors() {
    assert!(matches!(
        classify(
            Some("content_block_delta"),
            "{\"type\":\"content_block_delta\"}"
        ),
        Err(ParseError::Corrupt { .. })
    ));
    assert!(matches!(
        classify(Some("message_start"), "not json"),
        Err(ParseError::Corrupt { .. })
    ));
    let delta_first = vec![frame(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 4,
        "delta": {"type": "text_delta", "text": "x"}}),
    )];
    assert!(matches!(
        fold(&delta_first, None),
        Err(ParseError::Corrupt { .. })
    ));
}

#[test]
fn frames_after_message_stop_are_ignored() {
    let mut f = StreamFold::new();
    assert_eq!(
        f.push(Some("message_stop"), "{\"type\":\"message_stop\"}"),
        Ok(Flow::Done)
    );
    assert_eq!(f.push(Some("error"), "garbage"), Ok(Flow::Done));
    assert!(f.is_done());
}

#[test]
fn text_and_tool_input_past_the_budget_are_too_large() {
    let push_all = |f: &mut StreamFold, frames: &[(String, String)]| {
        frames
            .iter()
            .try_for_each(|(e, d)| f.push(Some(e), d).map(|_| ()))
    };
    // 4 + 4 bytes of text fit a budget of 8; one more byte does not.
    let mut f = StreamFold::with_max_text_bytes(8);
    push_all(
        &mut f,
        &concat(vec![vec![start(1)], text_block(0, &["abcd", "efgh"])]),
    )
    .unwrap();
    let err = push_all(&mut f, &text_block(1, &["i"])).unwrap_err();
    assert_eq!(err, ParseError::TooLarge { limit: 8 });
    assert_eq!(
        crate::llm::wire::messages::adapter_error(err, "t").kind(),
        ErrorKind::ResponseTooLarge
    );

    // Tool input counts too.
    let mut f = StreamFold::with_max_text_bytes(8);
    let tool = tool_block(0, "t1", "f", &["{\"a\":", "\"long\"}"], true);
    let err = push_all(&mut f, &tool).unwrap_err();
    assert_eq!(err, ParseError::TooLarge { limit: 8 });
}
