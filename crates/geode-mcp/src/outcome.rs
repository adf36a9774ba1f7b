//! A run's outcome as an MCP tool result: a validated value as `structuredContent` with its
//! JSON text and the ledger, or `isError` with a message that says which failure it was and
//! never a `structuredContent`, which a client would check against the `outputSchema` and
//! refuse, hiding the real error.

use geode::config::contracts::InputError;
use geode::vocab::Transform;
use geode::{Answer, GuaranteeLedger, RunError};
use rmcp::model::{CallToolResult, ContentBlock, MetaObject, ProtocolVersion};
use serde_json::{Value, json};

/// The `_meta` key of the guarantee ledger (reverse DNS, as the specification asks of an
/// implementation's own keys).
pub const LEDGER_META: &str = "dev.geode/ledger";

/// The `_meta` key of the ledger's one-line summary.
pub const SUMMARY_META: &str = "dev.geode/summary";

/// The `_meta` key of a failure's code (`schema_validation_failed`, `schema_not_enforceable`, ...:
/// the gateway's codes).
pub const ERROR_META: &str = "dev.geode/error";

/// The key a non-object root is wrapped under for a peer that takes only objects.
pub const WRAP_KEY: &str = "value";

/// The result of a valid answer. `wrap`: the peer takes only objects and the schema's root is
/// not one, so the value goes under [`WRAP_KEY`] and the ledger says so.
pub fn success(answer: Answer, wrap: bool, version: Option<&ProtocolVersion>) -> CallToolResult {
    let Answer {
        value,
        text,
        mut ledger,
        ..
    } = answer;
    // The worker gives a value for every answer it accepted against a schema; a text that is
    // JSON is read rather than refused.
    let Some(value) = value.or_else(|| serde_json::from_str(&text).ok()) else {
        return error(
            "empty_answer",
            "the run ended without a JSON value",
            Some(&ledger),
        );
    };
    let structured = if wrap {
        ledger.transforms.push(Transform {
            pointer: String::new(),
            action: format!(
                "structuredContent wrapped under \"{WRAP_KEY}\": this peer's protocol version ({}) \
                 takes only objects there; its outputSchema is wrapped the same way",
                version.map_or("unknown", ProtocolVersion::as_str)
            ),
        });
        json!({ WRAP_KEY: value })
    } else {
        value
    };
    let mut result = CallToolResult::structured(structured);
    result.meta = Some(meta(&ledger));
    result
}

/// The result of a run that gave no valid answer.
pub fn failure(e: &RunError) -> CallToolResult {
    let message = geode::secret::scrub(&e.to_string());
    let (code, text) = match e {
        RunError::Route(_) | RunError::Refused { .. } => (
            refusal_code(e),
            format!("refused before any request: {message}"),
        ),
        RunError::Schema { .. } => (
            "invalid_schema",
            format!("the contract's schema does not compile: {message}"),
        ),
        RunError::Tools { .. } => ("invalid_tools", message),
        RunError::Invalid { last, .. } => (
            "schema_validation_failed",
            format!(
                "the answer does not match the contract's schema after the retry: {message}{}",
                errors(&last.ledger)
            ),
        ),
        RunError::Truncated { .. } => (
            "answer_truncated",
            format!("the answer was cut at the token limit: {message}"),
        ),
        RunError::ModelRefused { .. } => ("model_refused", format!("the model refused: {message}")),
        RunError::Ended { .. } => ("empty_answer", format!("no answer: {message}")),
        RunError::Adapter { .. } => ("upstream_error", format!("the provider failed: {message}")),
        _ => ("error", message),
    };
    error(code, &text, e.last().map(|a| &a.ledger))
}

/// The result of arguments that break the tool's `inputSchema`, for peers that take it as a
/// result ([`crate::tools::arguments_refused_as_result`]).
pub fn bad_arguments(e: &InputError) -> CallToolResult {
    error(
        "invalid_arguments",
        &format!("the arguments do not match the tool's inputSchema: {e}"),
        None,
    )
}

/// The result of a call beyond the concurrency bound.
pub fn busy(limit: usize) -> CallToolResult {
    error(
        "busy",
        &format!("geode mcp is running {limit} calls, its limit (--max-in-flight): try again"),
        None,
    )
}

/// `isError` with `text`, the code and the ledger (when a call was made) in `_meta`.
fn error(code: &str, text: &str, ledger: Option<&GuaranteeLedger>) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(text.to_owned())]);
    let mut m = ledger.map_or_else(|| MetaObject(Default::default()), meta);
    m.0.insert(ERROR_META.to_owned(), Value::String(code.to_owned()));
    result.meta = Some(m);
    result
}

/// The ledger and its summary, under geode's keys.
fn meta(ledger: &GuaranteeLedger) -> MetaObject {
    let mut m = serde_json::Map::new();
    m.insert(
        LEDGER_META.to_owned(),
        serde_json::to_value(ledger).unwrap_or(Value::Null),
    );
    m.insert(SUMMARY_META.to_owned(), Value::String(ledger.summary()));
    MetaObject(m)
}

/// The code of a refusal before any request, as the gateway names it.
fn refusal_code(e: &RunError) -> &'static str {
    match e {
        RunError::Refused {
            why: geode::Refusal::InputsNotTaken,
            ..
        } => "unsupported_input",
        RunError::Route(_) => "route_unavailable_or_not_enforceable",
        _ => "schema_not_enforceable",
    }
}

/// The first validation errors of `ledger`, one per line.
fn errors(ledger: &GuaranteeLedger) -> String {
    let Some(v) = &ledger.full_validation else {
        return String::new();
    };
    let lines: Vec<String> = v
        .errors
        .iter()
        .take(10)
        .map(|i| {
            let at = if i.instance_path.is_empty() {
                "/"
            } else {
                &i.instance_path
            };
            format!("\n- {at}: {}", geode::secret::scrub(&i.message))
        })
        .collect();
    lines.concat()
}
