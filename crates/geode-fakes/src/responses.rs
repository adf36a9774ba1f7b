//! The OpenAI Responses API (`POST …/responses`), docs/wire.md#openai-responses-api.
//!
//! - `stream` false or absent: one `response` object as JSON; `stream: true`: SSE in the order
//!   codex 0.171.0 accepts (`response.created`, `response.in_progress`,
//!   `response.output_item.added`, `response.content_part.added`, `response.output_text.delta`…,
//!   `response.output_text.done`, `response.content_part.done`, `response.output_item.done`,
//!   `response.completed`), every event carrying `type` and `sequence_number`.
//! - Tool calls stream `response.function_call_arguments.delta/.done`; refusals stream
//!   `response.refusal.delta/.done`; a max-tokens answer ends with `response.incomplete` and
//!   `incomplete_details.reason = "max_output_tokens"`.
//! - Every finished response carries `usage` (`input_tokens`, `output_tokens`, details, total).
//! - Errors use OpenAI's `{"error": {message, type, param, code}}` body.
//!
//! Also serves `GET …/models` (an empty list) so clients that probe it keep going.
//! Reference: <https://platform.openai.com/docs/api-reference/responses>.

use crate::plan::{Call, Content, Plan, Route, SseEvent, halves, unix_now};
use crate::record::RecordedRequest;
use crate::script::TokenUsage;
use serde_json::{Value, json};

/// The events of a streamed text answer, in the order codex accepts
/// (docs/wire.md#openai-responses-api): the text
/// comes in two deltas.
pub const TEXT_EVENT_ORDER: [&str; 10] = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
];

/// The text [`crate::Reply::Auto`] answers with when no output schema is requested.
pub(crate) const AUTO_TEXT: &str = "Hello from the fake server.";

/// Routes a request for [`crate::Kind::Responses`].
pub(crate) fn route(req: &RecordedRequest) -> Route {
    let path = req.route().trim_end_matches('/');
    match req.method.as_str() {
        "POST" if path.ends_with("/responses") => Route::Model,
        "GET" if path.ends_with("/models") => Route::Reply(models_list()),
        _ => Route::Reply(not_found(req)),
    }
}

/// `GET …/models`: an empty list in both the OpenAI and the codex shapes.
pub(crate) fn models_list() -> Plan {
    Plan::json(200, json!({"object": "list", "data": [], "models": []}))
}

/// OpenAI's 404 for an unknown route.
pub(crate) fn not_found(req: &RecordedRequest) -> Plan {
    let message = format!("Invalid URL ({} {})", req.method, req.route());
    Plan::json(
        404,
        openai_error(&message, "invalid_request_error", None, None),
    )
}

/// What [`crate::Reply::Auto`] says: an instance of `text.format.schema` when the request asks
/// for `json_schema`, otherwise [`AUTO_TEXT`].
pub(crate) fn auto(body: &Value) -> Content {
    crate::instance::auto_answer(body.pointer("/text/format"), "/schema", AUTO_TEXT)
}

/// The OpenAI error envelope.
pub(crate) fn openai_error(
    message: &str,
    kind: &str,
    param: Option<&str>,
    code: Option<&str>,
) -> Value {
    json!({"error": {"message": message, "type": kind, "param": param, "code": code}})
}

/// OpenAI's usual error body for `status`.
pub(crate) fn error_body(status: u16) -> Value {
    match status {
        401 => openai_error(
            "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
            None,
            Some("invalid_api_key"),
        ),
        403 => openai_error(
            "You are not allowed to sample from this model",
            "invalid_request_error",
            None,
            None,
        ),
        404 => openai_error(
            "The model `fake-model` does not exist or you do not have access to it.",
            "invalid_request_error",
            None,
            Some("model_not_found"),
        ),
        429 => openai_error(
            "Rate limit reached for fake-model in organization org-fake on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.",
            "requests",
            None,
            Some("rate_limit_exceeded"),
        ),
        503 => openai_error(
            "The engine is currently overloaded, please try again later.",
            "server_error",
            None,
            None,
        ),
        s if s >= 500 => openai_error(
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            None,
            None,
        ),
        _ => openai_error("Bad request.", "invalid_request_error", None, None),
    }
}

/// The 400 body for a rejected `text.format` schema.
pub(crate) fn schema_rejection(message: &str) -> Value {
    openai_error(
        message,
        "invalid_request_error",
        Some("text.format.schema"),
        Some("invalid_json_schema"),
    )
}

/// The usage block of a finished response.
fn usage_block(usage: TokenUsage) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.input_tokens.saturating_add(usage.output_tokens),
    })
}

/// The finished output item for `content`, and the part inside it (for messages).
fn output_item(call: &Call, content: &Content) -> (Value, Option<Value>) {
    match content {
        Content::ToolCall { name, arguments } => {
            let item = json!({
                "type": "function_call", "id": call.ids.next("fc"), "status": "completed",
                "call_id": call.ids.next("call"), "name": name, "arguments": arguments.to_string(),
            });
            (item, None)
        }
        Content::Text(text) | Content::MaxTokens(text) => {
            let part = json!({"type": "output_text", "text": text, "annotations": []});
            (message_item(call, &part, content), Some(part))
        }
        Content::Refusal(text) => {
            let part = json!({"type": "refusal", "refusal": text});
            (message_item(call, &part, content), Some(part))
        }
    }
}

fn message_item(call: &Call, part: &Value, content: &Content) -> Value {
    let status = match content {
        Content::MaxTokens(_) => "incomplete",
        _ => "completed",
    };
    json!({"type": "message", "id": call.ids.next("msg"), "status": status,
           "role": "assistant", "content": [part]})
}

/// Answers a model call: JSON, or SSE when `stream` is true.
pub(crate) fn answer(call: &Call, content: &Content, stream: bool) -> Plan {
    let base = json!({
        "id": call.ids.next("resp"), "object": "response", "created_at": unix_now(),
        "status": "in_progress", "error": null, "incomplete_details": null,
        "model": call.model("fake-model"), "output": [], "usage": null,
    });
    let (item, part) = output_item(call, content);
    let mut done = base.clone();
    done["output"] = json!([item.clone()]);
    done["usage"] = usage_block(call.usage);
    let terminal = match content {
        Content::MaxTokens(_) => {
            done["status"] = json!("incomplete");
            done["incomplete_details"] = json!({"reason": "max_output_tokens"});
            "response.incomplete"
        }
        _ => {
            done["status"] = json!("completed");
            "response.completed"
        }
    };
    let plan = if stream {
        Plan::sse(stream_events(&base, &item, part.as_ref(), &done, terminal))
    } else {
        Plan::json(200, done)
    };
    plan.with_header("x-request-id", call.ids.next("req"))
}

/// A 200 reporting a failed response: a stream of `response.created` then the terminal
/// `response.failed`, or a JSON body with `status: "failed"`.
pub(crate) fn failed_response(call: &Call, message: &str, stream: bool) -> Plan {
    let error = json!({"code": "server_error", "message": message});
    let mut failed = json!({
        "id": call.ids.next("resp"), "object": "response", "created_at": unix_now(),
        "status": "failed", "error": error, "incomplete_details": null,
        "model": call.model("fake-model"), "output": [], "usage": null,
    });
    if !stream {
        return Plan::json(200, failed);
    }
    let mut created = failed.clone();
    created["status"] = json!("in_progress");
    created["error"] = Value::Null;
    let mut ev = Events { out: Vec::new() };
    ev.push("response.created", json!({ "response": created }));
    failed["usage"] = usage_block(call.usage);
    ev.push("response.failed", json!({ "response": failed }));
    Plan::sse(ev.out)
}

/// Numbers events and builds the SSE frames.
struct Events {
    out: Vec<SseEvent>,
}

impl Events {
    fn push(&mut self, name: &str, mut payload: Value) {
        payload["type"] = json!(name);
        payload["sequence_number"] = json!(self.out.len());
        self.out.push(SseEvent::named(name, &payload));
    }
}

fn stream_events(
    base: &Value,
    item: &Value,
    part: Option<&Value>,
    done: &Value,
    terminal: &str,
) -> Vec<SseEvent> {
    let mut ev = Events { out: Vec::new() };
    ev.push("response.created", json!({"response": base}));
    ev.push("response.in_progress", json!({"response": base}));
    let mut added = item.clone();
    added["status"] = json!("in_progress");
    let id = item.get("id").cloned().unwrap_or(Value::Null);
    match part {
        None => {
            let arguments = item
                .get("arguments")
                .and_then(Value::as_str)
                .unwrap_or("{}");
            added["arguments"] = json!("");
            ev.push(
                "response.output_item.added",
                json!({"output_index": 0, "item": added}),
            );
            for delta in halves(arguments) {
                ev.push(
                    "response.function_call_arguments.delta",
                    json!({"item_id": id, "output_index": 0, "delta": delta}),
                );
            }
            ev.push(
                "response.function_call_arguments.done",
                json!({"item_id": id, "output_index": 0, "name": item.get("name"),
                       "arguments": arguments}),
            );
        }
        Some(part) => {
            added["content"] = json!([]);
            ev.push(
                "response.output_item.added",
                json!({"output_index": 0, "item": added}),
            );
            let refusal = part.get("type").and_then(Value::as_str) == Some("refusal");
            let (key, kind) = if refusal {
                ("refusal", "response.refusal")
            } else {
                ("text", "response.output_text")
            };
            let full = part.get(key).and_then(Value::as_str).unwrap_or("");
            let mut empty = part.clone();
            empty[key] = json!("");
            let at = json!({"item_id": id, "output_index": 0, "content_index": 0});
            let with = |extra: Value| {
                let mut v = at.clone();
                if let (Some(v), Some(extra)) = (v.as_object_mut(), extra.as_object()) {
                    v.extend(extra.clone());
                }
                v
            };
            ev.push("response.content_part.added", with(json!({"part": empty})));
            for delta in halves(full) {
                ev.push(&format!("{kind}.delta"), with(json!({"delta": delta})));
            }
            ev.push(&format!("{kind}.done"), with(json!({ key: full })));
            ev.push("response.content_part.done", with(json!({"part": part})));
        }
    }
    ev.push(
        "response.output_item.done",
        json!({"output_index": 0, "item": item}),
    );
    ev.push(terminal, json!({"response": done}));
    ev.out
}

/// A 200 answer that reports a provider failure carrying `message`: an `error` event when
/// streamed, else a response object with `status: failed`.
pub(crate) fn in_band_error(call: &Call, message: &str, stream: bool) -> Plan {
    if stream {
        return Plan::sse(vec![SseEvent::named(
            "error",
            &json!({"type": "error", "code": "server_error", "message": message,
                    "param": null, "sequence_number": 0}),
        )]);
    }
    Plan::json(
        200,
        json!({"id": call.ids.next("resp"), "object": "response", "created_at": unix_now(),
               "status": "failed", "output": [], "usage": null,
               "error": {"code": "server_error", "message": message}}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Ids, PlanBody};

    fn events(content: &Content) -> Vec<(String, Value)> {
        let ids = Ids::default();
        let body = json!({"stream": true});
        let call = Call {
            body: &body,
            usage: TokenUsage::default(),
            ids: &ids,
        };
        let PlanBody::Sse(events) = answer(&call, content, true).body else {
            panic!("not SSE");
        };
        events
            .into_iter()
            .map(|e| {
                let data: Value = serde_json::from_str(&e.data).unwrap();
                (e.event.unwrap(), data)
            })
            .collect()
    }

    #[test]
    fn text_stream_has_the_order_codex_accepts_and_numbered_events() {
        let evs = events(&Content::Text("{\"a\":1}".into()));
        let names: Vec<&str> = evs.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, TEXT_EVENT_ORDER);
        for (i, (name, data)) in evs.iter().enumerate() {
            assert_eq!(data["type"], json!(name));
            assert_eq!(data["sequence_number"], json!(i));
        }
        let done = &evs.last().unwrap().1["response"];
        assert_eq!(done["status"], "completed");
        assert_eq!(done["usage"]["total_tokens"], 18);
        assert_eq!(done["output"][0]["content"][0]["text"], "{\"a\":1}");
    }

    #[test]
    fn max_tokens_stream_ends_with_response_incomplete() {
        let evs = events(&Content::MaxTokens("{\"a\":".into()));
        let (name, data) = evs.last().unwrap();
        assert_eq!(name, "response.incomplete");
        assert_eq!(
            data["response"]["incomplete_details"]["reason"],
            "max_output_tokens"
        );
    }
}
