#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::llm::request::AdapterResponse;
use crate::llm::scripted::ScriptedAdapter;
use crate::vocab::StructuredOutputMode;
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
struct Finding {
    line: u32,
    note: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
struct Report {
    title: String,
    findings: Vec<Finding>,
}

fn scripted(answers: &[&str], chunk: Option<usize>, mode: StructuredOutputMode) -> Client {
    let mut adapter = ScriptedAdapter::new(
        answers
            .iter()
            .map(|a| Ok(AdapterResponse::text(*a)))
            .collect(),
    )
    .with_mode(mode);
    if let Some(c) = chunk {
        adapter = adapter.streaming(c);
    }
    crate::client::tests::on(Arc::new(adapter), Require::default())
}

fn collect<T, E>(
    s: BoxStream<'static, Result<StreamEvent<T, E>, Error>>,
) -> Vec<Result<StreamEvent<T, E>, Error>> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(s.collect::<Vec<_>>())
}

const REPORT: &str = r#"{"title": "lint", "findings": [{"line": 3, "note": "unused"}, {"line": 9, "note": "shadowed \"x\""}]}"#;

#[test]
fn partials_agree_with_the_final_value_and_items_arrive_validated() {
    let c = scripted(&[REPORT], Some(4), StructuredOutputMode::Hint);
    let events = collect(c.stream::<Report>("review"));
    let last: Value = serde_json::from_str(REPORT).unwrap();
    let mut partials = 0;
    let mut items = Vec::new();
    let mut last_partial = None;
    for e in &events[..events.len() - 1] {
        match e.as_ref().unwrap() {
            StreamEvent::Partial {
                value,
                complete,
                guarantee,
            } => {
                partials += 1;
                assert_eq!(*guarantee, PartialGuarantee::Unchecked);
                for p in complete {
                    assert_eq!(value.pointer(p), last.pointer(p), "{p}");
                }
                last_partial = Some(value.clone());
            }
            StreamEvent::Item { index, value } => items.push((*index, value.clone())),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(partials > 10, "{partials}");
    assert_eq!(last_partial.unwrap(), last);
    assert_eq!(
        items,
        vec![
            (0, last["findings"][0].clone()),
            (1, last["findings"][1].clone())
        ]
    );
    let Ok(StreamEvent::Final(done)) = events.last().unwrap() else {
        panic!("no final");
    };
    assert_eq!(done.value.findings[1].line, 9);
}

#[test]
fn a_list_root_streams_typed_items_and_an_element_failing_its_schema_is_never_yielded() {
    let first = r#"{"value": [{"line": 1, "note": "a"}, {"line": "two", "note": "b"}, {"line": 3, "note": "c"}]}"#;
    let second = r#"{"value": [{"line": 4, "note": "d"}]}"#;
    let c = scripted(&[first, second], Some(5), StructuredOutputMode::Strict);
    let events = collect(c.stream_items::<Vec<Finding>, Finding>("go", ItemSource::Auto));
    let mut seen = Vec::new();
    for e in &events {
        match e.as_ref().unwrap() {
            StreamEvent::Item { index, value } => seen.push(format!("item {index} {}", value.line)),
            StreamEvent::Retry { reason } => seen.push(format!("retry {}", !reason.is_empty())),
            StreamEvent::Final(x) => seen.push(format!("final {}", x.value.len())),
            StreamEvent::Partial { guarantee, .. } => {
                assert_eq!(*guarantee, PartialGuarantee::Enforced)
            }
        }
    }
    assert_eq!(
        seen,
        ["item 0 1", "item 2 3", "retry true", "item 0 4", "final 1"]
    );
}

#[test]
fn the_one_named_array_field_is_the_item_source() {
    let c = scripted(&[REPORT], Some(7), StructuredOutputMode::Hint);
    let events =
        collect(c.stream_items::<Report, Finding>("go", ItemSource::Field("findings".into())));
    let items: Vec<u32> = events
        .iter()
        .filter_map(|e| match e {
            Ok(StreamEvent::Item { value, .. }) => Some(value.line),
            _ => None,
        })
        .collect();
    assert_eq!(items, [3, 9]);
    let c = scripted(&[REPORT], Some(7), StructuredOutputMode::Hint);
    let none = collect(c.stream_items::<Report, Finding>("go", ItemSource::None));
    assert!(
        !none
            .iter()
            .any(|e| matches!(e, Ok(StreamEvent::Item { .. })))
    );
}

#[test]
fn a_wire_that_does_not_stream_gives_one_final() {
    let c = scripted(&[REPORT], None, StructuredOutputMode::Hint);
    let events = collect(c.stream::<Report>("go"));
    assert_eq!(events.len(), 1);
    assert!(matches!(&events[0], Ok(StreamEvent::Final(x)) if x.value.title == "lint"));
}

#[test]
fn required_is_enforced_at_the_end_even_if_partials_never_showed_the_field() {
    let partial_only = r#"{"title": "x"}"#;
    let c = scripted(
        &[partial_only, partial_only],
        Some(3),
        StructuredOutputMode::Hint,
    );
    let events = collect(c.stream::<Report>("go"));
    let last = events.last().unwrap();
    let Err(Error::Invalid { errors, ledger }) = last else {
        panic!("{last:?}");
    };
    assert!(!errors.is_empty());
    assert_eq!(ledger.attempts.len(), 2);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Ok(StreamEvent::Retry { .. })))
    );
    assert!(events.iter().any(
        |e| matches!(e, Ok(StreamEvent::Partial { value, .. }) if *value == json!({"title": "x"}))
    ));
}

#[test]
fn a_refused_request_is_one_error_event() {
    let (c, adapter) = crate::client::tests::enforced_on_silent();
    let events = collect(c.stream::<Report>("go"));
    assert!(matches!(
        events.as_slice(),
        [Err(Error::NotEnforceable { .. })]
    ));
    assert!(adapter.requests().is_empty());
}

#[test]
fn a_raw_schema_streams_too_and_events_print_as_json_lines() {
    let c = scripted(&[REPORT], Some(6), StructuredOutputMode::Hint);
    let schema = json!({"type": "object",
        "properties": {"title": {"type": "string"},
                       "findings": {"type": "array", "items": {"type": "object", "required": ["line"]}}},
        "required": ["title", "findings"]});
    let events = collect(c.stream_json(&schema, "go"));
    let lines: Vec<Value> = events
        .iter()
        .map(|e| e.as_ref().unwrap().to_json())
        .collect();
    let last = lines.last().unwrap();
    assert_eq!(last["event"], "final");
    assert_eq!(
        last["value"],
        serde_json::from_str::<Value>(REPORT).unwrap()
    );
    assert_eq!(last["ledger"]["adapter"], "scripted");
    let items: Vec<&Value> = lines.iter().filter(|l| l["event"] == "item").collect();
    assert_eq!(items.len(), 2);
    assert_eq!(items[1]["index"], 1);
    assert_eq!(items[1]["value"]["line"], 9);
    let partial = lines.iter().find(|l| l["event"] == "partial").unwrap();
    assert_eq!(partial["guarantee"], "unchecked");
    assert!(partial["complete"].is_array());
    // A schema that is not an object is refused before any call, as one error event.
    let errors = collect(c.stream_json(&json!([1]), "go"));
    let [Err(e)] = errors.as_slice() else {
        panic!("{errors:?}");
    };
    assert_eq!(e.to_json()["event"], "error");
    assert_eq!(e.to_json()["exit_code"], 2);
}
