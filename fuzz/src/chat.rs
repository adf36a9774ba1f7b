//! The Chat Completions wire family's reply readers (`geode::llm::wire::chat`): a whole reply
//! body, and an SSE stream folded with `stream::StreamFold`.

use super::check::{one_line, same};
use super::responses::check_response;
use geode::llm::request::AdapterResponse;
use geode::llm::sse::SseParser;
use geode::llm::wire::chat::stream::{Flow, StreamFold};
use geode::llm::wire::chat::{parse_response, parse_value};
use geode::llm::wire::parse_error::ParseError;

/// Input that starts with `data:` is read as an SSE stream (as the adapter reads it), any other
/// as a reply body (invalid UTF-8 replaced).
///
/// Invariants: deterministic; a body that is JSON gives what [`parse_value`] gives on its value
/// (the HTTP transport's path); only a body cut short is `Truncated`; a stream answers only
/// after `[DONE]`; the adapter error is one line; tool inputs are objects.
pub fn run(data: &[u8]) {
    if data.starts_with(b"data:") {
        let outcome = stream(data);
        same(&outcome, &stream(data), "chat stream");
        match outcome {
            Ok(resp) => check_response(&resp),
            Err(e) => one_line(&geode::llm::wire::chat::adapter_error(e, "fuzz")),
        }
        return;
    }
    let body = String::from_utf8_lossy(data);
    let parsed = parse_response(&body);
    same(&parsed, &parse_response(&body), "chat::parse_response");
    match serde_json::from_str(&body) {
        Ok(value) => assert_eq!(parse_value(value), parsed, "parse_value differs"),
        Err(e) => assert_eq!(
            e.is_eof(),
            matches!(parsed, Err(ParseError::Truncated { .. })),
            "{parsed:?}"
        ),
    }
    match parsed {
        Ok(resp) => check_response(&resp),
        Err(e) => {
            one_line(&geode::llm::wire::chat::adapter_error(e.clone(), "fuzz"));
            let _ = e.to_string();
        }
    }
}

fn stream(body: &[u8]) -> Result<AdapterResponse, ParseError> {
    let mut parser = SseParser::default();
    let _ = parser.push(body);
    let mut fold = StreamFold::default();
    let mut done = false;
    while let Some(frame) = parser.pop() {
        if fold.push(&frame.data)? == Flow::Done {
            done = true;
            break;
        }
    }
    let result = fold.finish();
    assert!(done || result.is_err(), "an answer without [DONE]");
    result
}
