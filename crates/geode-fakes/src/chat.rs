//! Chat Completions as GLM / Z.ai serve them (`POST …/chat/completions` under any prefix, e.g.
//! `/v1/chat/completions` or `/api/paas/v4/chat/completions`), docs/wire.md#zai-glm.
//!
//! - `stream` false or absent: one `chat.completion` object: `choices[0].message.content`,
//!   `tool_calls` with **string** `arguments`, `finish_reason`, and
//!   `usage.prompt_tokens/completion_tokens/total_tokens`.
//! - `stream: true`: `data:` chunks (`chat.completion.chunk`) with deltas, a last chunk with
//!   `finish_reason` and `usage`, then `data: [DONE]`.
//!
//! | content | message | `finish_reason` |
//! |---|---|---|
//! | text | `content` | `stop` |
//! | tool call | `content: null`, `tool_calls[0]` | `tool_calls` |
//! | refusal | `content: null`, `refusal` (the OpenAI shape) | `stop` |
//! | max tokens | partial `content` | `length` |
//!
//! Errors use GLM's `{"error": {"code": "<number as string>", "message": …}}` body (1000 auth,
//! 1214 bad parameter, 1302 rate limit, 500 internal). `GET …/models` returns an empty list.
//! Reference: <https://docs.z.ai/api-reference/llm/chat-completion>.

use crate::plan::{Call, Content, Plan, Route, SseEvent, halves, unix_now};
use crate::record::RecordedRequest;
use serde_json::{Value, json};

/// The text [`crate::Reply::Auto`] answers with when no schema is requested.
pub(crate) const AUTO_TEXT: &str = "Hello from the fake server.";

/// The `json_schema.name` of geode's `openai-compatible` probe.
pub const PROBE_SCHEMA_NAME: &str = "geode_probe";

/// Whether `body` is geode's `openai-compatible` probe (`response_format.json_schema.name` is
/// [`PROBE_SCHEMA_NAME`]); the fake answers it by its [`crate::server::SchemaSupport`].
pub fn is_probe(body: &Value) -> bool {
    body.pointer("/response_format/json_schema/name")
        .and_then(Value::as_str)
        == Some(PROBE_SCHEMA_NAME)
}

/// Routes a request for [`crate::Kind::Chat`].
pub(crate) fn route(req: &RecordedRequest) -> Route {
    let path = req.route().trim_end_matches('/');
    match req.method.as_str() {
        "POST" if path.ends_with("/chat/completions") => Route::Model,
        "GET" if path.ends_with("/models") => {
            Route::Reply(Plan::json(200, json!({"object": "list", "data": []})))
        }
        _ => Route::Reply(Plan::json(404, glm_error("404", "Not Found"))),
    }
}

fn glm_error(code: &str, message: &str) -> Value {
    json!({"error": {"code": code, "message": message}})
}

/// GLM's usual error body for `status`.
pub(crate) fn error_body(status: u16) -> Value {
    match status {
        401 => glm_error("1000", "Authentication Failed"),
        404 => glm_error("1211", "Unknown Model, please check the model code."),
        429 => glm_error(
            "1302",
            "High concurrency usage of this API, please reduce concurrency or contact customer service to increase limits",
        ),
        s if s >= 500 => glm_error("500", "Internal Error"),
        _ => glm_error("1214", "Invalid parameter."),
    }
}

/// The 400 body for a rejected `response_format` schema.
pub(crate) fn schema_rejection(message: &str) -> Value {
    glm_error("1214", message)
}

/// What [`crate::Reply::Auto`] says: an instance of `response_format.json_schema.schema` when
/// asked for, otherwise [`AUTO_TEXT`].
pub(crate) fn auto(body: &Value) -> Content {
    crate::instance::auto_answer(
        body.get("response_format"),
        "/json_schema/schema",
        AUTO_TEXT,
    )
}

/// Answers a model call: JSON, or SSE chunks when the request asks for `stream: true`.
pub(crate) fn answer(call: &Call, content: &Content) -> Plan {
    let (message, finish) = match content {
        Content::Text(text) => (json!({"role": "assistant", "content": text}), "stop"),
        Content::MaxTokens(text) => (json!({"role": "assistant", "content": text}), "length"),
        Content::Refusal(text) => (
            json!({"role": "assistant", "content": null, "refusal": text}),
            "stop",
        ),
        Content::ToolCall { name, arguments } => (
            json!({"role": "assistant", "content": null, "tool_calls": [{
                "index": 0, "id": call.ids.next("call"), "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()},
            }]}),
            "tool_calls",
        ),
    };
    let usage = json!({
        "prompt_tokens": call.usage.input_tokens, "completion_tokens": call.usage.output_tokens,
        "total_tokens": call.usage.input_tokens.saturating_add(call.usage.output_tokens),
    });
    let id = call.ids.next("chatcmpl");
    let head = json!({"id": id, "request_id": id, "created": unix_now(),
                      "model": call.model("glm-fake")});
    if call.wants_stream() {
        return Plan::sse(stream_chunks(&head, &message, finish, &usage));
    }
    let mut done = head;
    done["object"] = json!("chat.completion");
    done["choices"] = json!([{"index": 0, "message": message, "finish_reason": finish}]);
    done["usage"] = usage;
    Plan::json(200, done)
}

fn stream_chunks(head: &Value, message: &Value, finish: &str, usage: &Value) -> Vec<SseEvent> {
    let mut out = Vec::new();
    let mut chunk = |delta: Value, finish: Option<&str>, usage: Option<&Value>| {
        let mut c = head.clone();
        c["object"] = json!("chat.completion.chunk");
        c["choices"] = json!([{"index": 0, "delta": delta, "finish_reason": finish}]);
        if let Some(usage) = usage {
            c["usage"] = usage.clone();
        }
        out.push(SseEvent::data(c.to_string()));
    };
    chunk(json!({"role": "assistant", "content": ""}), None, None);
    if let Some(call) = message.pointer("/tool_calls/0") {
        let arguments = call
            .pointer("/function/arguments")
            .and_then(Value::as_str)
            .unwrap_or("{}");
        let mut first = call.clone();
        first["function"]["arguments"] = json!("");
        chunk(json!({ "tool_calls": [first] }), None, None);
        for part in halves(arguments) {
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}),
                None,
                None,
            );
        }
    } else {
        let (key, text) = match message.get("refusal").and_then(Value::as_str) {
            Some(refusal) => ("refusal", refusal),
            None => (
                "content",
                message.get("content").and_then(Value::as_str).unwrap_or(""),
            ),
        };
        for part in halves(text) {
            chunk(json!({ key: part }), None, None);
        }
    }
    chunk(json!({}), Some(finish), Some(usage));
    out.push(SseEvent::data("[DONE]"));
    out
}

/// A 200 answer that reports a provider failure carrying `message`: an `error` object, in a
/// `data:` chunk when streamed.
pub(crate) fn in_band_error(message: &str, stream: bool) -> Plan {
    let error = json!({"error": {"code": "1234", "message": message}});
    if stream {
        Plan::sse(vec![SseEvent::data(error.to_string())])
    } else {
        Plan::json(200, error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Ids, PlanBody};
    use crate::script::TokenUsage;

    #[test]
    fn tool_call_arguments_are_a_json_string() {
        let ids = Ids::default();
        let body = json!({});
        let call = Call {
            body: &body,
            usage: TokenUsage::default(),
            ids: &ids,
        };
        let content = Content::ToolCall {
            name: "f".into(),
            arguments: json!({"x": 1}),
        };
        let PlanBody::Json(v) = answer(&call, &content).body else {
            panic!("not JSON");
        };
        assert_eq!(
            v["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            "{\"x\":1}"
        );
        assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(v["usage"]["total_tokens"], 18);
    }
}
