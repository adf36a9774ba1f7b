//! `stream: true`: the Open Responses events, in the order the specification gives. The
//! `event:` line names each one's `type`, `sequence_number` counts from 0, and the stream
//! ends with the literal `[DONE]`. geode's one event of its own, the retry notice, is named
//! with geode's prefix (`geode:retry`), as the spec asks of an extension, so a client that
//! does not know it passes it by.

use super::object::{self, completed, function_call, message, message_id, shell, text_part};
use crate::convert::Reply;
use crate::stream::{Progress, Written};
use axum::response::sse::Event;
use serde_json::{Value, json};

fn event(w: &mut Written, kind: &str, mut data: Value) -> Event {
    data["type"] = json!(kind);
    data["sequence_number"] = json!(w.sequence());
    Event::default().event(kind).data(data.to_string())
}

/// The opening events: the response created and in progress. The message item opens with the
/// first text, so that a turn of tool calls alone has none.
pub fn opening(r: &Reply, w: &mut Written) -> Vec<Event> {
    vec![
        event(
            w,
            "response.created",
            json!({ "response": shell(r, "in_progress") }),
        ),
        event(
            w,
            "response.in_progress",
            json!({ "response": shell(r, "in_progress") }),
        ),
    ]
}

/// The message item and its text part added, once.
fn open_message(r: &Reply, w: &mut Written) -> Vec<Event> {
    if w.message_open {
        return Vec::new();
    }
    w.message_open = true;
    vec![
        event(
            w,
            "response.output_item.added",
            json!({ "output_index": 0, "item": message(r, "in_progress", "") }),
        ),
        event(
            w,
            "response.content_part.added",
            json!({
                "item_id": message_id(r), "output_index": 0, "content_index": 0,
                "part": text_part(""),
            }),
        ),
    ]
}

/// The events of one step of a streamed run: a text delta, the retry (`geode:retry`), the
/// end (the text, part and item done, the calls to the client's tools, then
/// `response.completed` with the ledger), or an `error` event and `response.failed`.
pub fn events(r: &Reply, step: Progress, w: &mut Written) -> Vec<Event> {
    let item = message_id(r);
    match step {
        Progress::Delta(delta) => {
            let mut events = open_message(r, w);
            w.text.push_str(&delta);
            events.push(event(
                w,
                "response.output_text.delta",
                json!({
                    "item_id": item, "output_index": 0, "content_index": 0, "delta": delta, "logprobs": [],
                }),
            ));
            events
        }
        Progress::Started => Vec::new(),
        Progress::Retry(why) => {
            w.text.clear();
            vec![event(
                w,
                "geode:retry",
                json!({
                    "reason": why, "note": "the text streamed so far is void; the retry follows",
                }),
            )]
        }
        Progress::Done(Ok(answer)) => {
            let with_message = w.message_open || answer.tool_calls.is_empty();
            let done = completed(r, &answer, with_message);
            let mut events = Vec::new();
            if with_message {
                events.extend(open_message(r, w));
                let text = r.content(&answer).unwrap_or_default();
                events.extend([
                    event(
                        w,
                        "response.output_text.done",
                        json!({
                            "item_id": item, "output_index": 0, "content_index": 0, "text": text, "logprobs": [],
                        }),
                    ),
                    event(
                        w,
                        "response.content_part.done",
                        json!({
                            "item_id": item, "output_index": 0, "content_index": 0, "part": text_part(&text),
                        }),
                    ),
                    event(
                        w,
                        "response.output_item.done",
                        json!({ "output_index": 0, "item": done["output"][0] }),
                    ),
                ]);
            }
            let first = usize::from(with_message);
            for (i, call) in answer.tool_calls.iter().enumerate() {
                let index = first + i;
                let mut opened = function_call(r, i, call, "in_progress");
                let call_item = opened["id"].clone();
                let arguments = call.input.to_string();
                opened["arguments"] = json!("");
                events.extend([
                    event(
                        w,
                        "response.output_item.added",
                        json!({ "output_index": index, "item": opened }),
                    ),
                    event(
                        w,
                        "response.function_call_arguments.delta",
                        json!({ "item_id": call_item, "output_index": index, "delta": arguments }),
                    ),
                    event(
                        w,
                        "response.function_call_arguments.done",
                        json!({ "item_id": call_item, "output_index": index, "arguments": arguments }),
                    ),
                    event(
                        w,
                        "response.output_item.done",
                        json!({ "output_index": index, "item": done["output"][index] }),
                    ),
                ]);
            }
            let kind = format!("response.{}", object::status(&answer));
            events.push(event(w, &kind, json!({ "response": done })));
            events.push(done_marker());
            events
        }
        Progress::Done(Err(e)) => {
            // The spec's `error` object, and OpenAI's fields beside it for its SDKs; the
            // ledger and detail under `geode`.
            let mut error = e.body()["error"].take();
            let geode = error.as_object_mut().and_then(|g| g.remove("geode"));
            let mut data = json!({
                "error": error, "code": e.code, "message": e.message, "param": e.param,
            });
            if let Some(geode) = geode {
                data["geode"] = geode;
            }
            vec![
                event(w, "error", data),
                event(
                    w,
                    "response.failed",
                    json!({ "response": object::failed(r, e.code, &e.message) }),
                ),
                done_marker(),
            ]
        }
    }
}

/// The stream's terminal data line.
fn done_marker() -> Event {
    Event::default().data("[DONE]")
}
