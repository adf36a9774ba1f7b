//! The Responses wire family's reply readers (`geode::llm::wire::responses`): a whole response
//! object, and an SSE stream folded event by event.

use super::check::{one_line, same};
use geode::llm::call::AdapterError;
use geode::llm::request::AdapterResponse;
use geode::llm::sse::SseParser;
use geode::llm::wire::responses::{Fold, adapter_error, classify, parse_response};
use serde_json::Value;

/// What a reply amounted to: `None` when a stream ended before its terminal event.
type Outcome = Option<Result<AdapterResponse, AdapterError>>;

/// The first byte's low bit picks the reader: 0 a JSON response object, 1 an SSE stream (as the
/// adapters read it: [`classify`] each frame, [`Fold::push`] it until it gives an answer).
///
/// Invariants: deterministic; errors render as one line; every tool call's input is a JSON
/// object (text that is not one is kept as `{"_raw": text}`).
pub fn run(data: &[u8]) {
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    let read = if mode & 1 == 0 { whole } else { stream };
    let outcome = read(body);
    same(&outcome, &read(body), "the Responses reader");
    match outcome {
        None => {}
        Some(Err(e)) => one_line(&e),
        Some(Ok(resp)) => check_response(&resp),
    }
}

fn whole(body: &[u8]) -> Outcome {
    let value = serde_json::from_slice::<Value>(body).ok()?;
    Some(parse_response("fuzz", &value))
}

fn stream(body: &[u8]) -> Outcome {
    let mut parser = SseParser::default();
    let pushed = parser.push(body);
    let mut fold = Fold::default();
    while let Some(frame) = parser.pop() {
        let step = classify("fuzz", &frame)
            .map_err(|e| adapter_error(e, "fuzz"))
            .and_then(|event| fold.push("fuzz", event));
        match step {
            Ok(None) => {}
            Ok(Some(resp)) => return Some(Ok(resp)),
            Err(e) => return Some(Err(e)),
        }
    }
    pushed.err().map(|e| {
        Err(AdapterError::Protocol {
            adapter: "fuzz".into(),
            message: e.to_string(),
        })
    })
}

/// The invariant of an answer read from a Responses or Chat reply: tool inputs are objects.
pub(crate) fn check_response(resp: &AdapterResponse) {
    for tool in &resp.tool_uses {
        assert!(
            tool.input.is_object(),
            "tool input is not an object: {tool:?}"
        );
    }
}
