//! The response object, complete as the Open Responses specification requires it: every
//! required field, with the value that was used (the request's, else the default every route
//! runs at), in each event that carries it and in the final answer.

use crate::convert::Reply;
use geode::{Answer, ToolUse};
use serde_json::{Map, Value, json};

/// The request's fields that a response echoes, each with its default when not sent.
pub fn echo(sent: &Map<String, Value>, stored: bool) -> Map<String, Value> {
    let got = |name: &str| sent.get(name).filter(|v| !v.is_null());
    let or = |name: &str, default: Value| got(name).cloned().unwrap_or(default);
    let text = got("text");
    let reasoning = got("reasoning");
    let mut out = Map::new();
    for (k, v) in [
        (
            "previous_response_id",
            or("previous_response_id", Value::Null),
        ),
        ("instructions", or("instructions", Value::Null)),
        ("tools", tools(got("tools"))),
        ("tool_choice", or("tool_choice", json!("auto"))),
        ("truncation", or("truncation", json!("disabled"))),
        (
            "parallel_tool_calls",
            or("parallel_tool_calls", json!(true)),
        ),
        (
            "text",
            json!({
                "format": format(text.and_then(|t| t.get("format"))),
                "verbosity": text.and_then(|t| t.get("verbosity")).filter(|v| !v.is_null()).cloned().unwrap_or(json!("medium")),
            }),
        ),
        ("top_p", json!(1.0)),
        ("presence_penalty", json!(0.0)),
        ("frequency_penalty", json!(0.0)),
        ("top_logprobs", json!(0)),
        ("temperature", or("temperature", json!(1.0))),
        (
            "reasoning",
            json!({
                "effort": reasoning.and_then(|r| r.get("effort")).cloned().unwrap_or(Value::Null),
                "summary": Value::Null,
            }),
        ),
        ("max_output_tokens", or("max_output_tokens", Value::Null)),
        ("max_tool_calls", Value::Null),
        ("store", json!(stored)),
        ("background", json!(false)),
        ("service_tier", json!("default")),
        ("metadata", or("metadata", json!({}))),
        ("safety_identifier", or("safety_identifier", Value::Null)),
        ("prompt_cache_key", or("prompt_cache_key", Value::Null)),
    ] {
        out.insert(k.to_owned(), v);
    }
    out
}

/// The request's function tools as the response lists them.
fn tools(sent: Option<&Value>) -> Value {
    let list = sent
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let field = |t: &Value, k: &str| t.get(k).cloned().unwrap_or(Value::Null);
    Value::Array(
        list.iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "name": field(t, "name"),
                    "description": field(t, "description"),
                    "parameters": field(t, "parameters"),
                    "strict": field(t, "strict"),
                })
            })
            .collect(),
    )
}

/// The request's `text.format` as the response states it. A schema's body is not repeated: the
/// specification's published Python types take only null there, and the client has it.
fn format(sent: Option<&Value>) -> Value {
    let sent = sent.filter(|f| !f.is_null());
    match sent.and_then(|f| f.get("type")).and_then(Value::as_str) {
        Some("json_schema") => {
            let f = sent.unwrap_or(&Value::Null);
            json!({
                "type": "json_schema",
                "name": f.get("name").cloned().unwrap_or(json!("response")),
                "description": f.get("description").cloned().unwrap_or(Value::Null),
                "schema": Value::Null,
                "strict": f.get("strict").and_then(Value::as_bool).unwrap_or(false),
            })
        }
        Some("json_object") => json!({ "type": "json_object" }),
        _ => json!({ "type": "text" }),
    }
}

/// `item` as the list of input items shows it: with an id, and a message's string content as
/// one text part.
pub fn input_item(mut item: Value, id: &str) -> Value {
    let Some(obj) = item.as_object_mut() else {
        return item;
    };
    obj.entry("type").or_insert_with(|| json!("message"));
    let kind = obj.get("type").and_then(Value::as_str).unwrap_or("");
    let prefix = match kind {
        "function_call" => "fc",
        "function_call_output" => "fco",
        _ => "msg",
    };
    if kind == "message" {
        let part = match obj.get("role").and_then(Value::as_str) {
            Some("assistant") => "output_text",
            _ => "input_text",
        };
        if let Some(Value::String(text)) = obj.get("content") {
            let text = text.clone();
            obj.insert("content".into(), json!([{ "type": part, "text": text }]));
        }
        obj.entry("status").or_insert_with(|| json!("completed"));
    }
    obj.entry("id")
        .or_insert_with(|| json!(format!("{prefix}_{id}")));
    item
}

/// The response in `status`, with no output yet.
pub fn shell(r: &Reply, status: &str) -> Value {
    let mut out = Map::new();
    for (k, v) in [
        ("id", json!(format!("resp_{}", r.id))),
        ("object", json!("response")),
        ("created_at", json!(r.created_at)),
        ("completed_at", Value::Null),
        ("status", json!(status)),
        ("incomplete_details", Value::Null),
        ("model", json!(r.model)),
        ("output", json!([])),
        ("error", Value::Null),
        ("usage", Value::Null),
    ] {
        out.insert(k.to_owned(), v);
    }
    out.extend(r.echo.iter().map(|(k, v)| (k.clone(), v.clone())));
    Value::Object(out)
}

/// The completed response for `answer`.
pub fn response(r: &Reply, answer: &Answer) -> Value {
    let with_message = answer.tool_calls.is_empty() || !r.beside_calls(answer).is_null();
    completed(r, answer, with_message)
}

/// The finished response, with the message item or without it: `completed`, or `incomplete`
/// for free text cut at the output limit ([`crate::convert::settle`]).
pub fn completed(r: &Reply, answer: &Answer, with_message: bool) -> Value {
    let usage = &answer.usage;
    let status = status(answer);
    let mut out = shell(r, status);
    if crate::convert::cut(answer) {
        out["incomplete_details"] = json!({ "reason": "max_output_tokens" });
    } else {
        out["completed_at"] = json!(crate::convert::now());
    }
    let mut items = Vec::new();
    if with_message {
        items.push(message(r, status, &r.content(answer).unwrap_or_default()));
    }
    items.extend(
        answer
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, t)| function_call(r, i, t, "completed")),
    );
    out["output"] = json!(items);
    out["usage"] = json!({
        "input_tokens": usage.input_tokens,
        "input_tokens_details": { "cached_tokens": usage.cached_input_tokens },
        "output_tokens": usage.output_tokens,
        "output_tokens_details": { "reasoning_tokens": 0 },
        "total_tokens": usage.input_tokens + usage.output_tokens,
    });
    out["geode"] = r.geode(answer);
    out
}

/// The status of the response that ends with `answer`.
pub fn status(answer: &Answer) -> &'static str {
    if crate::convert::cut(answer) {
        "incomplete"
    } else {
        "completed"
    }
}

/// The response failed with `error` (its code and message).
pub fn failed(r: &Reply, code: &str, message: &str) -> Value {
    let mut out = shell(r, "failed");
    out["error"] = json!({ "code": code, "message": message });
    out
}

/// The message item's id.
pub fn message_id(r: &Reply) -> String {
    format!("msg_{}", r.id)
}

/// An output text part.
pub fn text_part(text: &str) -> Value {
    json!({ "type": "output_text", "text": text, "annotations": [], "logprobs": [] })
}

/// The answer's message item in `status`.
pub fn message(r: &Reply, status: &str, text: &str) -> Value {
    let content = if status == "in_progress" {
        json!([])
    } else {
        json!([text_part(text)])
    };
    json!({
        "type": "message",
        "id": message_id(r),
        "status": status,
        "role": "assistant",
        "content": content,
    })
}

/// The `i`th call to the client's tools as an output item.
pub fn function_call(r: &Reply, i: usize, call: &ToolUse, status: &str) -> Value {
    json!({
        "type": "function_call",
        "id": format!("fc_{}_{i}", r.id),
        "call_id": call.id,
        "name": call.name,
        "arguments": call.input.to_string(),
        "status": status,
    })
}
