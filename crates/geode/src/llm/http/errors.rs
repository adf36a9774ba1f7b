//! How a provider's error reply becomes an [`AdapterError`] (part of [`super`], in its own file
//! for size): the status mapping, the common JSON error-body shapes, the wait hint.

use super::MAX_ERROR_MESSAGE;
use crate::llm::call::AdapterError;
use reqwest::header::HeaderMap;
use serde_json::Value;
use std::time::Duration;

/// The provider's wait hint: `retry-after-ms` (milliseconds) or `retry-after` (seconds).
/// An HTTP-date `retry-after` is ignored (the backoff applies).
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let num = |name: &str| {
        headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    if let Some(ms) = num("retry-after-ms") {
        return Some(Duration::from_secs_f64(ms.min(86_400_000.0) / 1000.0));
    }
    num("retry-after").map(|s| Duration::from_secs_f64(s.min(86_400.0)))
}

/// The useful parts of a JSON error body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderError {
    /// The human message (`error.message`, `detail`, `message`, `error` as a string).
    pub message: String,
    /// The machine code (`error.code`, else `error.type`, else top-level `code`).
    pub code: Option<String>,
    /// The request field at fault (`error.param`).
    pub param: Option<String>,
}

/// Reads the common error-body shapes: OpenAI `{"error":{"message","type","param","code"}}`,
/// Anthropic `{"type":"error","error":{"type","message"}}`, ChatGPT `{"detail": ...}`, GLM
/// `{"error":{"code","message"}}`. `None` when the body is not JSON.
pub fn provider_error(body: &[u8]) -> Option<ProviderError> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let text = |v: Option<&Value>| -> Option<String> {
        match v? {
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Null | Value::String(_) => None,
            other => Some(other.to_string()),
        }
    };
    let err = v.get("error");
    let nested = err.filter(|e| e.is_object());
    let message = text(nested.and_then(|e| e.get("message")))
        .or_else(|| text(v.get("detail")))
        .or_else(|| text(v.get("message")))
        .or_else(|| text(err.filter(|e| e.is_string())))
        .unwrap_or_default();
    let code = text(nested.and_then(|e| e.get("code")))
        .or_else(|| text(nested.and_then(|e| e.get("type"))))
        .or_else(|| text(v.get("code")));
    let param = text(nested.and_then(|e| e.get("param")));
    Some(ProviderError {
        message,
        code,
        param,
    })
}

/// Maps a non-2xx reply to an [`AdapterError`] (table in the module docs); `rejects_schema`
/// judges a 400/422 (the wire family's [`crate::llm::wire::family::Wire::rejects_schema`]).
pub fn classify_status(
    adapter: &str,
    status: u16,
    retry_after: Option<Duration>,
    body: &[u8],
    rejects_schema: &dyn Fn(&ProviderError) -> bool,
) -> AdapterError {
    let parsed = provider_error(body);
    let message = match &parsed {
        Some(p) if !p.message.is_empty() => truncate(&p.message),
        Some(_) => format!("no message in the error body ({} bytes)", body.len()),
        None if body.is_empty() => "empty body".to_owned(),
        None => format!("non-JSON error body ({} bytes)", body.len()),
    };
    let adapter = adapter.to_owned();
    match status {
        401 | 403 => AdapterError::Auth {
            adapter,
            status,
            message,
        },
        429 => AdapterError::RateLimited {
            adapter,
            retry_after,
            message,
        },
        400 | 422 if parsed.as_ref().is_some_and(rejects_schema) => {
            let code = parsed
                .and_then(|p| p.code)
                .map(|c| truncate(&c))
                .unwrap_or_else(|| "-".to_owned());
            AdapterError::SchemaRejected {
                adapter,
                status,
                code,
                message,
            }
        }
        500..=599 => AdapterError::Server {
            adapter,
            status,
            message,
        },
        _ => AdapterError::BadRequest {
            adapter,
            status,
            message,
        },
    }
}

/// Provider text as an error message: scrubbed, one line, at most [`MAX_ERROR_MESSAGE`]
/// characters ([`crate::secret::clip`]).
pub fn truncate(text: &str) -> String {
    crate::secret::clip(text, MAX_ERROR_MESSAGE)
}
