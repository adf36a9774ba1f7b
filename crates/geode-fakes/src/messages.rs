//! The Anthropic Messages API (`POST /v1/messages`, query such as `?beta=true` ignored),
//! docs/wire.md#anthropic-messages-api, shaped exactly like the fake that drove `claude` 2.1.197.
//!
//! - `stream` false or absent: one `message` object as JSON; `stream: true`: SSE
//!   `message_start` (usage with `output_tokens: 1`), `ping`, per block `content_block_start`,
//!   `content_block_delta` (`text_delta`, or `input_json_delta` for `tool_use`),
//!   `content_block_stop`, then `message_delta` (`stop_reason`, `usage.output_tokens`) and
//!   `message_stop`.
//! - `stop_reason`: text `end_turn`, tool call `tool_use`, refusal `refusal`, max tokens
//!   `max_tokens`.
//! - Errors use `{"type":"error","error":{"type":…,"message":…}}`; every answer carries a
//!   `request-id` header.
//!
//! Side endpoints: `POST /v1/messages/count_tokens` (`{"input_tokens": 42}`), `GET /v1/models`
//! (empty list), `HEAD` on any path (200, the CLI's probe of `/`).
//! Reference: <https://docs.anthropic.com/en/api/messages>.

use crate::instance::instance;
use crate::plan::{Call, Content, Plan, PlanBody, Route, SseEvent, halves};
use crate::record::RecordedRequest;
use serde_json::{Value, json};

/// The tool name `claude -p --json-schema` offers for structured output.
pub const STRUCTURED_OUTPUT_TOOL: &str = "StructuredOutput";

/// The text [`crate::Reply::Auto`] answers with when nothing structured is asked for.
pub(crate) const AUTO_TEXT: &str = "Hello from the fake Anthropic server.";

/// Routes a request for [`crate::Kind::Messages`].
pub(crate) fn route(req: &RecordedRequest) -> Route {
    let path = req.route().trim_end_matches('/');
    match req.method.as_str() {
        "HEAD" => Route::Reply(Plan {
            status: 200,
            headers: Vec::new(),
            body: PlanBody::Empty,
        }),
        "POST" if path.ends_with("/v1/messages") => Route::Model,
        "POST" if path.ends_with("/v1/messages/count_tokens") => {
            Route::Reply(Plan::json(200, json!({"input_tokens": 42})))
        }
        "GET" if path.ends_with("/v1/models") => Route::Reply(Plan::json(
            200,
            json!({"data": [], "has_more": false, "first_id": null, "last_id": null}),
        )),
        _ => Route::Reply(Plan::json(
            404,
            anthropic_error(
                "not_found_error",
                &format!("not found: {} {}", req.method, req.route()),
            ),
        )),
    }
}

/// The Anthropic error envelope.
fn anthropic_error(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// Anthropic's usual error body for `status`.
pub(crate) fn error_body(status: u16) -> Value {
    let (kind, message) = match status {
        400 => ("invalid_request_error", "invalid request"),
        401 => ("authentication_error", "invalid x-api-key"),
        403 => (
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
        ),
        404 => ("not_found_error", "model: fake-model"),
        413 => (
            "request_too_large",
            "Request exceeds the maximum allowed size.",
        ),
        429 => (
            "rate_limit_error",
            "This request would exceed the rate limit for your organization.",
        ),
        529 => ("overloaded_error", "Overloaded"),
        _ => ("api_error", "Internal server error"),
    };
    anthropic_error(kind, message)
}

/// The 400 body for a rejected output schema.
pub(crate) fn schema_rejection(message: &str) -> Value {
    anthropic_error("invalid_request_error", message)
}

/// The schema of `output_config.format` (GA) or `output_format` (beta), if any.
fn native_schema(body: &Value) -> Option<&Value> {
    [
        body.pointer("/output_config/format"),
        body.get("output_format"),
    ]
    .into_iter()
    .flatten()
    .find(|f| f.get("type").and_then(Value::as_str) == Some("json_schema"))
    .and_then(|f| f.get("schema"))
}

/// True when the last message is a user turn carrying a `tool_result` block.
fn last_user_has_tool_result(body: &Value) -> bool {
    let Some(last) = body
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|m| m.last())
    else {
        return false;
    };
    last.get("role").and_then(Value::as_str) == Some("user")
        && last
            .get("content")
            .and_then(Value::as_array)
            .is_some_and(|blocks| {
                blocks
                    .iter()
                    .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            })
}

/// What [`crate::Reply::Auto`] says (the Python fake's `plan_reply`).
pub(crate) fn auto(body: &Value) -> Content {
    if let Some(schema) = native_schema(body) {
        return Content::Text(instance(schema).to_string());
    }
    let structured_tool = body
        .get("tools")
        .and_then(Value::as_array)
        .and_then(|tools| {
            tools
                .iter()
                .find(|t| t.get("name").and_then(Value::as_str) == Some(STRUCTURED_OUTPUT_TOOL))
        });
    match structured_tool {
        Some(tool) if !last_user_has_tool_result(body) => Content::ToolCall {
            name: STRUCTURED_OUTPUT_TOOL.to_owned(),
            arguments: instance(tool.get("input_schema").unwrap_or(&json!({}))),
        },
        _ => Content::Text(AUTO_TEXT.to_owned()),
    }
}

/// Answers a model call: JSON, or SSE when the request asks for `stream: true`.
pub(crate) fn answer(call: &Call, content: &Content) -> Plan {
    let (block, stop_reason) = match content {
        Content::Text(text) => (json!({"type": "text", "text": text}), "end_turn"),
        Content::Refusal(text) => (json!({"type": "text", "text": text}), "refusal"),
        Content::MaxTokens(text) => (json!({"type": "text", "text": text}), "max_tokens"),
        Content::ToolCall { name, arguments } => (
            json!({"type": "tool_use", "id": call.ids.next("toolu"), "name": name,
                   "input": arguments}),
            "tool_use",
        ),
    };
    let usage = json!({
        "input_tokens": call.usage.input_tokens, "output_tokens": call.usage.output_tokens,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
    });
    let message = json!({
        "id": call.ids.next("msg"), "type": "message", "role": "assistant",
        "model": call.model("claude-fake"), "content": [block], "stop_reason": stop_reason,
        "stop_sequence": null, "usage": usage,
    });
    let plan = if call.wants_stream() {
        Plan::sse(stream_events(&message, &block, stop_reason, &usage))
    } else {
        Plan::json(200, message)
    };
    plan.with_header("request-id", call.ids.next("req"))
}

fn stream_events(message: &Value, block: &Value, stop: &str, usage: &Value) -> Vec<SseEvent> {
    let mut out = Vec::new();
    let mut ev = |name: &str, mut payload: Value| {
        payload["type"] = json!(name);
        out.push(SseEvent::named(name, &payload));
    };
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["usage"]["output_tokens"] = json!(1);
    ev("message_start", json!({ "message": start }));
    ev("ping", json!({}));
    if block.get("type").and_then(Value::as_str) == Some("tool_use") {
        let mut empty = block.clone();
        empty["input"] = json!({});
        ev(
            "content_block_start",
            json!({"index": 0, "content_block": empty}),
        );
        let input = block.get("input").unwrap_or(&Value::Null).to_string();
        for part in halves(&input) {
            ev(
                "content_block_delta",
                json!({"index": 0, "delta": {"type": "input_json_delta", "partial_json": part}}),
            );
        }
    } else {
        ev(
            "content_block_start",
            json!({"index": 0, "content_block": {"type": "text", "text": ""}}),
        );
        let text = block.get("text").and_then(Value::as_str).unwrap_or("");
        for part in halves(text) {
            ev(
                "content_block_delta",
                json!({"index": 0, "delta": {"type": "text_delta", "text": part}}),
            );
        }
    }
    ev("content_block_stop", json!({"index": 0}));
    ev(
        "message_delta",
        json!({"delta": {"stop_reason": stop, "stop_sequence": null},
               "usage": {"output_tokens": usage.get("output_tokens")}}),
    );
    ev("message_stop", json!({}));
    out
}

/// A 200 answer that reports a provider failure carrying `message`: Anthropic's
/// `overloaded_error`, as an `error` event when streamed.
pub(crate) fn in_band_error(message: &str, stream: bool) -> Plan {
    let error = json!({"type": "error", "error": {"type": "overloaded_error", "message": message}});
    if stream {
        Plan::sse(vec![SseEvent::named("error", &error)])
    } else {
        Plan::json(200, error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_calls_structured_output_until_a_tool_result_arrives() {
        let schema =
            json!({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]});
        let first = json!({"tools": [{"name": "StructuredOutput", "input_schema": schema}],
                           "messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(
            auto(&first),
            Content::ToolCall {
                name: "StructuredOutput".into(),
                arguments: json!({"n": 1})
            }
        );
        let after = json!({"tools": [{"name": "StructuredOutput", "input_schema": schema}],
                           "messages": [{"role": "user", "content": [
                               {"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}]});
        assert_eq!(auto(&after), Content::Text(AUTO_TEXT.into()));
    }

    #[test]
    fn auto_answers_native_format_with_json_text() {
        let body = json!({"output_config": {"format": {"type": "json_schema",
            "schema": {"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"]}}}});
        assert_eq!(auto(&body), Content::Text("{\"a\":true}".into()));
    }
}
