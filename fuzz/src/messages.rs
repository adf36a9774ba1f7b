//! The Messages wire family's reply readers (`geode::llm::wire::messages`): a whole reply body,
//! and an SSE stream folded with `StreamFold`.

use super::check::{one_line, same};
use geode::llm::request::AdapterResponse;
use geode::llm::sse::SseParser;
use geode::llm::wire::messages::{Flow, StreamFold, parse_response};
use geode::llm::wire::parse_error::ParseError;

/// The output tool name the requests of this target use.
const OUTPUT_TOOL: &str = "emit_response";

/// The first byte picks the reader (bit 0: 0 a whole body, 1 an SSE stream, read as the
/// adapter reads it) and whether the request had an output tool (bit 1).
///
/// Invariants: deterministic; the adapter error is one line; a stream answers only after
/// `message_stop`; with an output tool, a call of it becomes the answer (its input as the text
/// and the structured value) and no call of it is left among the tool calls.
pub fn run(data: &[u8]) {
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    let output_tool = (mode & 2 != 0).then_some(OUTPUT_TOOL);
    let read = |body: &[u8]| {
        if mode & 1 == 0 {
            parse_response(&String::from_utf8_lossy(body), output_tool)
        } else {
            stream(body, output_tool)
        }
    };
    let outcome = read(body);
    same(&outcome, &read(body), "the Messages reader");
    match outcome {
        Ok(resp) => check_response(&resp, output_tool),
        Err(e) => one_line(&geode::llm::wire::messages::adapter_error(e, "fuzz")),
    }
}

fn stream(body: &[u8], output_tool: Option<&str>) -> Result<AdapterResponse, ParseError> {
    let mut parser = SseParser::default();
    let _ = parser.push(body);
    let mut fold = StreamFold::new();
    while let Some(frame) = parser.pop() {
        if fold.push(Some(&frame.event), &frame.data)? == Flow::Done {
            break;
        }
    }
    let done = fold.is_done();
    let result = fold.finish(output_tool);
    assert!(done || result.is_err(), "an answer without message_stop");
    result
}

fn check_response(resp: &AdapterResponse, output_tool: Option<&str>) {
    if let Some(value) = &resp.structured {
        assert!(
            output_tool.is_some(),
            "structured output without an output tool"
        );
        assert_eq!(
            resp.text,
            value.to_string(),
            "the text is not the structured value"
        );
        assert!(
            resp.tool_uses.is_empty(),
            "tool calls beside the output tool"
        );
    }
    if let Some(name) = output_tool {
        assert!(
            resp.tool_uses.iter().all(|t| t.name != name),
            "a call of the output tool was left as a tool call"
        );
    }
}
