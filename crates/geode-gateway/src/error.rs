//! Every refusal and failure as OpenAI shapes it (`{"error": {"message", "type", "code",
//! "param"}}`), so the official SDKs raise their own typed exceptions for it. A run's
//! [`RunError`] maps by variant, never by its text:
//!
//! | what happened | status | `code` |
//! |---|---|---|
//! | the route cannot give the required guarantee for this schema (before any upstream call) | 400 | `schema_not_enforceable` |
//! | the schema breaks the provider's limits (before any upstream call) | 400 | `schema_not_enforceable` |
//! | the schema does not compile | 400 | `invalid_schema` |
//! | a tool's `parameters` do not compile, or two tools share a name | 400 | `invalid_tools` |
//! | the route's adapter takes no tools and the request offers some | 400 | `unsupported_parameter` |
//! | no route can take the request's images or documents (before any upstream call) | 400 | `unsupported_input` |
//! | the request is malformed or asks for something the gateway does not do | 400 | `invalid_request` / `unsupported_parameter` |
//! | no inbound key, or a wrong one | 401 | `invalid_api_key` |
//! | the `model` names no route | 404 | `model_not_found` |
//! | the answer still fails the schema after the retry | 422 | `schema_validation_failed` |
//! | the answer was cut at the token limit | 422 | `answer_truncated` |
//! | the model refused | 422 | `model_refused` |
//! | no answer text came back (a reasoning-only answer, a stopped loop) | 502 | `empty_answer` |
//! | the gateway is at its concurrency limit | 429 | `gateway_busy` (with `Retry-After`) |
//! | the upstream rate-limited the call past its retries | 429 | `upstream_rate_limited`, with the provider's `Retry-After` when it sent one |
//! | the upstream failed (auth, 5xx, transport, protocol) | 502 | `upstream_error` |
//! | the upstream or the request took longer than its limit | 504 | `upstream_timeout` |
//! | the route's adapter is not configured (a missing key), or no adapter of the model's family is | 503 | `route_unavailable` |
//!
//! Every message has passed through geode's scrubber: no key, token or inbound key is echoed;
//! a server-side one (5xx) names no path on the host either.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use geode::ErrorKind;
use geode::GuaranteeLedger;
use geode::RoutingError;
use geode::ToolRegistryError;
use geode::llm::call::AdapterError;
use geode::llm::routing::RejectionKind;
use geode::{Refusal, ResolveError, RunError};
use serde_json::{Value, json};
use std::borrow::Cow;

/// One error answer of the gateway.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// OpenAI's `type` (`invalid_request_error`, `authentication_error`, `server_error`, ...).
    pub kind: &'static str,
    /// The machine-readable code.
    pub code: &'static str,
    /// One scrubbed line.
    pub message: String,
    /// The request field at fault, if any (a field the gateway does not know is named as sent).
    pub param: Option<Cow<'static, str>>,
    /// Extra detail under `error.geode` (candidates, validation errors) and the ledger.
    pub detail: Option<Box<Value>>,
    /// The run's ledger, when it ran or was refused with one.
    pub ledger: Option<Box<GuaranteeLedger>>,
    /// Seconds for a `Retry-After` header.
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// An error with no detail.
    pub fn new(
        status: StatusCode,
        kind: &'static str,
        code: &'static str,
        message: impl Into<String>,
    ) -> Self {
        let mut message = geode::secret::scrub(&message.into());
        if status.is_server_error() {
            message = without_paths(&message);
        }
        Self {
            status,
            kind,
            code,
            message,
            param: None,
            detail: None,
            ledger: None,
            retry_after: None,
        }
    }

    /// The request outlived the gateway's time limit.
    pub fn timeout() -> Self {
        Self::new(
            StatusCode::GATEWAY_TIMEOUT,
            "server_error",
            "upstream_timeout",
            "the request took longer than the gateway allows",
        )
    }

    /// A malformed request (`invalid_request`), naming the field at fault.
    pub fn invalid(param: &'static str, message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "invalid_request",
            message,
        )
        .param(param)
    }

    /// A request asking for something this gateway does not do.
    pub fn unsupported(param: &'static str, message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "unsupported_parameter",
            message,
        )
        .param(param)
    }

    pub(crate) fn param(mut self, param: impl Into<Cow<'static, str>>) -> Self {
        self.param = Some(param.into());
        self
    }

    fn detail(mut self, detail: Value) -> Self {
        self.detail = Some(Box::new(detail));
        self
    }

    fn with_ledger(mut self, ledger: GuaranteeLedger) -> Self {
        self.ledger = Some(Box::new(ledger));
        self
    }

    /// The error of a failed run, by its variant.
    pub fn from_run(e: RunError) -> Self {
        let message = e.to_string();
        match e {
            RunError::Route(route) => Self::from_route(route, message),
            RunError::Refused {
                why: Refusal::RequireUnmet,
                last,
                ..
            } => Self::not_enforceable(message).with_ledger(last.ledger),
            RunError::Refused {
                why: Refusal::InputsNotTaken,
                last,
                ..
            } => Self::inputs_not_taken(message).with_ledger(last.ledger),
            RunError::Refused { last, .. } => {
                Self::invalid("text_constraint", message).with_ledger(last.ledger)
            }
            RunError::Schema { last, .. } => Self::new(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "invalid_schema",
                message,
            )
            .param("response_format")
            .with_ledger(last.ledger),
            RunError::Tools { source, last } => Self::new(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                match source {
                    ToolRegistryError::NotTaken { .. } => "unsupported_parameter",
                    _ => "invalid_tools",
                },
                message,
            )
            .param("tools")
            .with_ledger(last.ledger),
            RunError::Adapter { source, last, .. } => {
                let mut e = Self::upstream(source.kind(), message).with_ledger(last.ledger);
                // The provider's own wait, passed on so the client's SDK waits as long.
                if let AdapterError::RateLimited {
                    retry_after: Some(wait),
                    ..
                } = *source
                {
                    e.retry_after = Some(wait.as_secs_f64().ceil().max(1.0) as u64);
                }
                e
            }
            RunError::Truncated { last, .. } => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_response_error",
                "answer_truncated",
                format!("the answer was cut at the token limit: {message}"),
            )
            .with_ledger(last.ledger),
            RunError::ModelRefused { last, .. } => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_response_error",
                "model_refused",
                format!("the model refused: {message}"),
            )
            .with_ledger(last.ledger),
            RunError::Invalid { last, .. } => {
                let errors = last
                    .ledger
                    .full_validation
                    .as_ref()
                    .map(|v| json!(v.errors))
                    .unwrap_or(Value::Null);
                Self::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "invalid_response_error",
                    "schema_validation_failed",
                    message,
                )
                .detail(json!({ "validation_errors": errors }))
                .with_ledger(last.ledger)
            }
            RunError::Ended { last, .. } => Self::new(
                StatusCode::BAD_GATEWAY,
                "server_error",
                "empty_answer",
                message,
            )
            .with_ledger(last.ledger),
            other => Self::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
                "internal_error",
                other.to_string(),
            ),
        }
    }

    fn from_route(e: ResolveError, message: String) -> Self {
        match e {
            ResolveError::Routing(RoutingError::UnknownAdapter(_)) => Self::new(
                StatusCode::NOT_FOUND,
                "invalid_request_error",
                "model_not_found",
                message,
            )
            .param("model"),
            ResolveError::Routing(RoutingError::NoCandidate { reasons, .. }) => {
                let candidates: Vec<Value> = reasons
                    .iter()
                    .map(|r| json!({ "adapter": r.adapter, "reason": r.reason }))
                    .collect();
                // Nothing to do with the schema when every candidate only lacks its setup.
                let unconfigured = reasons
                    .iter()
                    .all(|r| r.kind == RejectionKind::NotConfigured);
                let inputs = reasons
                    .iter()
                    .any(|r| r.kind == RejectionKind::InputsNotTaken);
                let e = if inputs {
                    Self::inputs_not_taken(message)
                } else if unconfigured {
                    Self::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "server_error",
                        "route_unavailable",
                        message,
                    )
                } else {
                    Self::not_enforceable(message)
                };
                e.detail(json!({ "candidates": candidates }))
            }
            ResolveError::Preflight {
                adapter,
                violations,
            } => {
                let limits: Vec<String> = violations.iter().map(ToString::to_string).collect();
                Self::not_enforceable(message).detail(
                    json!({ "candidates": [{ "adapter": adapter, "reason": limits.join("; ") }] }),
                )
            }
            ResolveError::Build(_) => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "server_error",
                "route_unavailable",
                message,
            ),
            _ => Self::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
                "internal_error",
                message,
            ),
        }
    }

    fn inputs_not_taken(message: String) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "unsupported_input",
            message,
        )
    }

    fn not_enforceable(message: String) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "schema_not_enforceable",
            message,
        )
        .param("response_format")
    }

    fn upstream(kind: ErrorKind, message: String) -> Self {
        match kind {
            ErrorKind::RateLimited => Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_error",
                "upstream_rate_limited",
                message,
            ),
            ErrorKind::Timeout => Self::new(
                StatusCode::GATEWAY_TIMEOUT,
                "server_error",
                "upstream_timeout",
                message,
            ),
            ErrorKind::Config => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "server_error",
                "route_unavailable",
                message,
            ),
            ErrorKind::SchemaRejected | ErrorKind::Unsupported => Self::not_enforceable(message),
            ErrorKind::Cancelled => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "server_error",
                "cancelled",
                message,
            ),
            _ => Self::new(
                StatusCode::BAD_GATEWAY,
                "server_error",
                "upstream_error",
                message,
            ),
        }
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        let mut error = json!({
            "message": self.message,
            "type": self.kind,
            "code": self.code,
            "param": self.param,
        });
        if self.detail.is_some() || self.ledger.is_some() {
            let mut geode = self.detail.as_deref().cloned().unwrap_or_else(|| json!({}));
            if let Some(l) = &self.ledger {
                geode["ledger"] = json!(l);
            }
            error["geode"] = geode;
        }
        json!({ "error": error })
    }
}

/// `message` with each file path on this host cut to its last part: a server-side failure
/// (a missing model file, a CLI that would not start) names what is missing, never where the
/// host keeps it. Client errors keep their text: their `/a/b` are JSON pointers into the request.
fn without_paths(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for (i, word) in message.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let start = word
            .find(|c: char| !matches!(c, '`' | '"' | '\'' | '(' | '['))
            .unwrap_or(word.len());
        let (lead, rest) = word.split_at(start);
        let path = ["/", "~/", "./", "../"].iter().any(|p| rest.starts_with(p));
        match rest.rfind('/').filter(|_| path) {
            Some(cut) => {
                out.push_str(lead);
                out.push_str(&rest[cut + 1..]);
            }
            None => out.push_str(word),
        }
    }
    out
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body())).into_response();
        let headers = response.headers_mut();
        if let Some(l) = &self.ledger {
            crate::ledger::put_headers(headers, l);
        }
        if let Some(s) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::without_paths;

    #[test]
    fn a_server_side_message_keeps_file_names_and_loses_the_hosts_paths() {
        let m = "local model not found at /home/ana/.cache/geode/models/m.gguf: fetch it, or (`./bin/x.sh`) and ~/y/z";
        assert_eq!(
            without_paths(m),
            "local model not found at m.gguf: fetch it, or (`x.sh`) and z"
        );
        let url = "openai-payg: HTTP 502 from http://127.0.0.1:9/v1/responses";
        assert_eq!(without_paths(url), url, "a URL is not a path on this host");
    }
}
