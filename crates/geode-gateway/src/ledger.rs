//! The ledger where an OpenAI client can read it: five response headers (readable through any
//! SDK's raw-response API) and the whole ledger under `geode` in the body (the official SDKs
//! keep unknown fields, so it survives `.parse()`).
//!
//! | header | value |
//! |---|---|
//! | `x-geode-adapter` | the adapter that served the answer |
//! | `x-geode-mode` | how the schema went on its wire (`strict`, `tool`, `json-mode`, `hint`, `constrained`, ...) |
//! | `x-geode-guarantee` | what that mode guarantees (`enforced`, `wired`, `best-effort`) |
//! | `x-geode-validated` | `true` when the answer passed full validation against the caller's schema, `false` when it failed or no whole answer could be checked (cut, refused, failed), `tool-arguments` for a turn that ended in calls to the client's tools (each call's arguments valid against its `parameters`; the answer's schema applies to the answer after them), `not-checked` for free text |
//! | `x-geode-attempts` | attempts made (2 when the one retry ran) |
//! | `x-geode-repairs` | only on a repaired answer: how many repairs the repair tier made (the body's ledger lists them) |
//! | `x-geode-replayed` | only on an answer replayed from the response cache (`[cache]`): when it was made (RFC 3339); no upstream request was made and its usage is zero |

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use geode::GuaranteeLedger;
use geode::ledger::WorkerCheck;
use serde_json::{Value, json};

/// `x-geode-validated` for `ledger`.
pub fn validated(ledger: &GuaranteeLedger) -> &'static str {
    match &ledger.full_validation {
        Some(v) if v.valid => "true",
        Some(_) => "false",
        None if ledger.caller_tool_calls > 0 => "tool-arguments",
        // Cut, refused or failed before a whole answer: checked, and not valid.
        None if matches!(ledger.worker_check, WorkerCheck::Fail { .. }) => "false",
        None => "not-checked",
    }
}

/// Puts the five ledger headers on a response.
pub fn put_headers(headers: &mut HeaderMap, ledger: &GuaranteeLedger) {
    let values = [
        ("x-geode-adapter", ledger.adapter.clone()),
        ("x-geode-mode", ledger.wire_mode.to_string()),
        (
            "x-geode-guarantee",
            ledger.wire_mode.level().as_str().to_owned(),
        ),
        ("x-geode-validated", validated(ledger).to_owned()),
        ("x-geode-attempts", ledger.attempts.len().to_string()),
    ];
    for (name, value) in values {
        if let Ok(v) = HeaderValue::from_str(&value) {
            headers.insert(HeaderName::from_static(name), v);
        }
    }
    if !ledger.repairs.is_empty() {
        headers.insert(
            HeaderName::from_static("x-geode-repairs"),
            HeaderValue::from(ledger.repairs.len()),
        );
    }
    if ledger.replayed
        && let Ok(v) = HeaderValue::from_str(ledger.cached_at.as_deref().unwrap_or("unknown"))
    {
        headers.insert(HeaderName::from_static("x-geode-replayed"), v);
    }
}

/// The body's `geode` object: the ledger, its one-line summary, and how usage was counted.
pub fn body(ledger: &GuaranteeLedger) -> Value {
    json!({
        "ledger": ledger,
        "summary": ledger.summary(),
        "usage_counted": if ledger.replayed {
            "none: replayed from the response cache with no request (the original run's usage is ledger.original_usage)"
        } else {
            "the sum over every attempt (the retry included)"
        },
    })
}
