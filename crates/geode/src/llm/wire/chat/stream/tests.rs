//! One test per row of the module table, plus the budget, truncation and tool-call indexing.

use super::*;
use crate::vocab::StopReason;
use serde_json::json;

fn chunk(delta: Value, finish: Option<&str>) -> String {
    json!({"id": "c1", "object": "chat.completion.chunk", "model": "glm-x",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "usage": null})
    .to_string()
}

fn usage_chunk() -> String {
    json!({"id": "c1", "object": "chat.completion.chunk", "choices": [],
           "usage": {"prompt_tokens": 20, "completion_tokens": 7,
                     "prompt_tokens_details": {"cached_tokens": 5}}})
    .to_string()
}

fn fold(lines: &[String]) -> Result<AdapterResponse, ParseError> {
    let mut f = StreamFold::default();
    for line in lines {
        if f.push(line)? == Flow::Done {
            break;
        }
    }
    f.finish()
}

#[test]
fn content_deltas_append_and_reasoning_is_ignored() {
    let mut f = StreamFold::default();
    let lines = [
        chunk(
            json!({"role": "assistant", "content": "", "reasoning_content": "hm"}),
            None,
        ),
        chunk(json!({"content": "{\"a\":"}), None),
        chunk(json!({"reasoning_content": "more thought"}), None),
        chunk(json!({"content": "1}"}), None),
        chunk(json!({}), Some("stop")),
        usage_chunk(),
    ];
    let mut seen = Vec::new();
    for line in &lines {
        assert_eq!(f.push(line).unwrap(), Flow::Continue);
        seen.push(f.text_so_far().to_owned());
    }
    assert_eq!(seen[1], "{\"a\":");
    assert_eq!(f.push("[DONE]").unwrap(), Flow::Done);
    let r = f.finish().unwrap();
    assert_eq!(r.text, "{\"a\":1}");
    assert_eq!(r.stop_reason, StopReason::EndTurn);
    assert_eq!(r.usage.token_counts(), (20, 7, 5));
}

#[test]
fn usage_on_the_last_choice_chunk_is_read_too() {
    let mut last: Value = serde_json::from_str(&chunk(json!({}), Some("length"))).unwrap();
    last["usage"] = json!({"prompt_tokens": 3, "completion_tokens": 4});
    let r = fold(&[
        chunk(json!({"content": "cut"}), None),
        last.to_string(),
        "[DONE]".into(),
    ])
    .unwrap();
    assert_eq!(r.stop_reason, StopReason::MaxTokens);
    assert_eq!(r.usage.token_counts(), (3, 4, 0));
}

#[test]
fn tool_calls_open_by_index_and_arguments_append() {
    let r = fold(&[
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                   "function": {"name": "get_weather", "arguments": ""}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 1, "id": "call_2",
                                   "function": {"name": "now", "arguments": {"tz": "UTC"}}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Paris\"}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        "[DONE]".into(),
    ])
    .unwrap();
    assert_eq!(r.stop_reason, StopReason::ToolUse);
    let calls: Vec<(&str, &str, &Value)> = r
        .tool_uses
        .iter()
        .map(|t| (t.id.as_str(), t.name.as_str(), &t.input))
        .collect();
    assert_eq!(
        calls,
        [
            ("call_1", "get_weather", &json!({"city": "Paris"})),
            ("call_2", "now", &json!({"tz": "UTC"})),
        ]
    );
}

#[test]
fn a_tool_call_index_that_skips_ahead_is_corrupt() {
    let e = fold(&[chunk(
        json!({"tool_calls": [{"index": 2, "id": "x", "function": {"name": "f"}}]}),
        None,
    )])
    .unwrap_err();
    assert!(matches!(e, ParseError::Corrupt { .. }), "{e:?}");
}

#[test]
fn a_streamed_refusal_is_a_refusal() {
    let r = fold(&[
        chunk(
            json!({"role": "assistant", "content": null, "refusal": "No"}),
            None,
        ),
        chunk(json!({"refusal": "."}), None),
        chunk(json!({}), Some("stop")),
        "[DONE]".into(),
    ])
    .unwrap();
    assert_eq!(
        (r.text.as_str(), r.stop_reason),
        ("No.", StopReason::Refusal)
    );
}

#[test]
fn an_in_band_error_is_a_provider_error() {
    let err = json!({"error": {"code": "1302", "message": "slow down"}}).to_string();
    assert_eq!(
        fold(&[chunk(json!({"content": "x"}), None), err]).unwrap_err(),
        ParseError::Provider {
            kind: "1302".into(),
            message: "slow down".into()
        }
    );
    let net = fold(&[
        chunk(json!({"content": "x"}), Some("network_error")),
        "[DONE]".into(),
    ])
    .unwrap_err();
    assert!(
        matches!(&net, ParseError::Provider { kind, .. } if kind == "network_error"),
        "{net:?}"
    );
}

#[test]
fn unknown_objects_are_skipped_and_garbage_is_corrupt() {
    let r = fold(&[
        json!({"object": "keepalive"}).to_string(),
        chunk(json!({"content": "ok"}), Some("stop")),
        "[DONE]".into(),
    ])
    .unwrap();
    assert_eq!(r.text, "ok");
    for bad in [
        "<html>".to_owned(),
        json!({"choices": "nope"}).to_string(),
        json!({"choices": [{"index": 0, "delta": {"content": 5}}]}).to_string(),
    ] {
        let e = fold(std::slice::from_ref(&bad)).unwrap_err();
        assert!(matches!(e, ParseError::Corrupt { .. }), "{bad}: {e:?}");
    }
}

#[test]
fn other_choices_are_ignored() {
    let other = json!({"choices": [{"index": 1, "delta": {"content": "B"}}]}).to_string();
    let r = fold(&[
        other,
        chunk(json!({"content": "A"}), Some("stop")),
        "[DONE]".into(),
    ])
    .unwrap();
    assert_eq!(r.text, "A");
}

#[test]
fn a_stream_without_done_is_truncated() {
    let e = fold(&[chunk(json!({"content": "{\"a\":"}), None)]).unwrap_err();
    assert!(matches!(e, ParseError::Truncated { .. }), "{e:?}");
}

#[test]
fn text_and_arguments_past_the_budget_are_too_large() {
    let mut f = StreamFold::with_max_text_bytes(8);
    assert_eq!(
        f.push(&chunk(json!({"content": "12345"}), None)).unwrap(),
        Flow::Continue
    );
    let e = f
        .push(&chunk(
            json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": "6789"}}]}),
            None,
        ))
        .unwrap_err();
    assert_eq!(e, ParseError::TooLarge { limit: 8 });
}

#[test]
fn lines_after_done_change_nothing() {
    let mut f = StreamFold::default();
    f.push(&chunk(json!({"content": "x"}), Some("stop")))
        .unwrap();
    assert_eq!(f.push("[DONE]").unwrap(), Flow::Done);
    assert_eq!(f.push("<garbage>").unwrap(), Flow::Done);
    assert_eq!(f.finish().unwrap().text, "x");
}
