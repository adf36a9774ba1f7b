//! `model: "contract/NAME"`: a request served by a `[contracts.NAME]` of `geode.toml`, so that
//! one definition serves the CLI, MCP and the OpenAI SDKs. The contract fixes the schema, the
//! route, `require`, `repair` and `cache`; the last user turn's text is a JSON object of its
//! inputs (what an MCP client's `tools/call` sends as `arguments`), rendered through its prompt
//! template. The request's earlier turns and images go with it; a format of the request's own
//! is refused, since the contract's schema is the one the answer is checked against.

use crate::error::ApiError;
use axum::http::StatusCode;
use geode::config::contracts::InputError;
use geode::{Output, Settings, Task};
use serde_json::{Map, Value};

/// The prefix of a `model` that names a contract.
pub const PREFIX: &str = "contract/";

/// The contract `model` names, if it names one.
pub fn named(model: &str) -> Option<&str> {
    model.trim().strip_prefix(PREFIX)
}

/// The contract's task for `request` (the task the request's fields made): its prompt from
/// the last user turn's arguments, with the request's history, parts and system prompt when the
/// contract sets none. `field` names the conversation's field for errors.
pub fn task(
    settings: &Settings,
    name: &str,
    request: Task,
    field: &'static str,
) -> Result<Task, ApiError> {
    if request.output != Output::Text {
        return Err(ApiError::unsupported(
            if field == "input" {
                "text.format"
            } else {
                "response_format"
            },
            format!("contract {name:?} fixes the schema; send no format of your own"),
        ));
    }
    let args = arguments(&request.prompt, field)?;
    let mut task = settings
        .contract_task(name, &args)
        .map_err(|e| refusal(e, field))?;
    task.history = request.history;
    task.parts = request.parts;
    if task.system.is_empty() {
        task.system = request.system;
    }
    Ok(task)
}

/// The last user turn as arguments: a JSON object, or nothing at all for a contract without
/// inputs.
fn arguments(prompt: &str, field: &'static str) -> Result<Map<String, Value>, ApiError> {
    let text = prompt.trim();
    if text.is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(args)) => Ok(args),
        _ => Err(ApiError::invalid(
            field,
            "a contract's last user turn is a JSON object of its inputs, e.g. {\"diff\": \"...\"}",
        )),
    }
}

/// An unknown contract is a 404 as an unknown model is; bad arguments a 400 naming the field.
fn refusal(e: InputError, field: &'static str) -> ApiError {
    match e {
        InputError::UnknownContract(_) => ApiError::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "model_not_found",
            e.to_string(),
        )
        .param("model"),
        other => ApiError::invalid(field, other.to_string()),
    }
}
