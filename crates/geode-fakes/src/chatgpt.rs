//! The ChatGPT/Codex backend (`POST …/backend-api/codex/responses`, or any `…/responses`),
//! docs/wire.md#chatgpt-codex-backend.
//!
//! Model calls are answered with Responses SSE only (see [`crate::responses`]). Before a step
//! of the script is spent, the body is checked the way the real backend does (§3.3):
//!
//! | request | answer |
//! |---|---|
//! | no `authorization` header | 401 `{"detail":"Unauthorized"}` |
//! | no `chatgpt-account-id` header | 400 `{"detail":"Missing chatgpt-account-id header"}` |
//! | body not a JSON object (after zstd decoding) | 400 `{"detail":"Invalid JSON body"}` |
//! | `stream` not `true` | 400 `{"detail":"Stream must be set to true"}` |
//! | `store` not `false` | 400 `{"detail":"Store must be set to false"}` |
//! | has `max_output_tokens` | 400 `{"detail":"Unsupported parameter: max_output_tokens"}` |
//!
//! Side endpoints codex 0.171.0 hits in ChatGPT mode (§3.1, §3.5):
//! `POST …/oauth/token` (refresh grant → fresh unsigned JWT `id_token`/`access_token` with the
//! `chatgpt_account_id` claim and a rotated `refresh_token`; a refresh token starting with
//! [`REVOKED_REFRESH_PREFIX`] gets 401 `invalid_grant`), `GET …/wham/accounts/check`
//! (routing discovery pointing back at this server), other `GET …/wham/*` (`{}`),
//! `POST …/analytics-events/events` (`{}`), `GET …/models` (empty list). A WebSocket upgrade on
//! `GET …/responses` gets 404, which makes codex fall back to HTTPS POST.

use crate::plan::{Ids, Plan, Route, unix_now};
use crate::record::RecordedRequest;
use crate::responses;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

/// The account id the fake reports when the request names none.
pub const DEFAULT_ACCOUNT_ID: &str = "acct_fake_123";

/// A refresh token starting with this is refused by `POST /oauth/token` with a 401
/// `invalid_grant`, as the token service answers a spent or revoked refresh token.
pub const REVOKED_REFRESH_PREFIX: &str = "rt_revoked";

fn detail(status: u16, message: &str) -> Plan {
    Plan::json(status, json!({ "detail": message }))
}

/// Routes a request for [`crate::Kind::ChatGpt`]; `origin` is this server's base URL.
pub(crate) fn route(req: &RecordedRequest, origin: &str, ids: &Ids) -> Route {
    let path = req.route().trim_end_matches('/');
    match req.method.as_str() {
        "POST" if path.ends_with("/responses") => check_model_call(req),
        "POST" if path.ends_with("/oauth/token") => Route::Reply(refresh(req, ids)),
        "POST" if path.ends_with("/analytics-events/events") => {
            Route::Reply(Plan::json(200, json!({})))
        }
        "GET" if path.ends_with("/wham/accounts/check") => {
            Route::Reply(accounts_check(req, origin))
        }
        "GET" if path.contains("/wham/") => Route::Reply(Plan::json(200, json!({}))),
        "GET" if path.ends_with("/models") => Route::Reply(responses::models_list()),
        _ => Route::Reply(responses::not_found(req)),
    }
}

fn check_model_call(req: &RecordedRequest) -> Route {
    let body = &req.body;
    let rejection = if req.header("authorization").is_none() {
        Some(detail(401, "Unauthorized"))
    } else if req.header("chatgpt-account-id").is_none() {
        Some(detail(400, "Missing chatgpt-account-id header"))
    } else if !body.is_object() {
        Some(detail(400, "Invalid JSON body"))
    } else if body.get("stream") != Some(&json!(true)) {
        Some(detail(400, "Stream must be set to true"))
    } else if body.get("store") != Some(&json!(false)) {
        Some(detail(400, "Store must be set to false"))
    } else if body.get("max_output_tokens").is_some() {
        Some(detail(400, "Unsupported parameter: max_output_tokens"))
    } else {
        None
    };
    rejection.map_or(Route::Model, Route::Reply)
}

/// The backend's usual error body for `status`.
pub(crate) fn error_body(status: u16) -> Value {
    match status {
        401 => responses::openai_error(
            "Your authentication token has expired. Please try signing in again.",
            "invalid_request_error",
            None,
            Some("token_expired"),
        ),
        429 => json!({"error": {
            "type": "usage_limit_reached",
            "message": "The usage limit has been reached",
            "plan_type": "pro",
            "resets_in_seconds": 60,
        }}),
        400 => json!({"detail": "Bad Request"}),
        _ => responses::error_body(status),
    }
}

fn accounts_check(req: &RecordedRequest, origin: &str) -> Plan {
    let account = req
        .header("chatgpt-account-id")
        .unwrap_or(DEFAULT_ACCOUNT_ID);
    Plan::json(
        200,
        json!({
            "accounts": [{
                "id": account, "name": "Fake workspace", "structure": "personal",
                "workspace_backend_origin": origin, "account_routing_override": "NO_CONSTRAINT",
            }],
            "account_ordering": [account],
            "default_account_id": account,
        }),
    )
}

fn refresh(req: &RecordedRequest, ids: &Ids) -> Plan {
    let body = &req.body;
    let grant = body.get("grant_type").and_then(Value::as_str);
    let has_token = body.get("refresh_token").is_some_and(|t| !t.is_null());
    if grant != Some("refresh_token") || !has_token {
        return Plan::json(
            400,
            json!({"error": "invalid_request",
                   "error_description": "grant_type must be refresh_token and refresh_token is required"}),
        );
    }
    let token = body
        .get("refresh_token")
        .and_then(Value::as_str)
        .unwrap_or("");
    if token.starts_with(REVOKED_REFRESH_PREFIX) {
        return Plan::json(
            401,
            json!({"error": "invalid_grant",
                   "error_description": "The refresh token has been revoked."}),
        );
    }
    let mut tokens = fake_tokens(DEFAULT_ACCOUNT_ID, 3600);
    tokens["refresh_token"] = json!(ids.next("rt_refreshed"));
    Plan::json(200, tokens)
}

/// An unsigned JWT-shaped string (codex only base64-decodes the payload).
pub fn fake_jwt(claims: &Value) -> String {
    let part = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
    format!(
        "{}.{}.fakesig",
        part(&json!({"alg": "none", "typ": "JWT"})),
        part(claims)
    )
}

/// Fresh fake ChatGPT tokens (`id_token`, `access_token`, `refresh_token`) for `account_id`,
/// expiring `ttl_secs` from now (negative: already expired). Useful to write a codex
/// `auth.json` for tests.
pub fn fake_tokens(account_id: &str, ttl_secs: i64) -> Value {
    let now = i64::try_from(unix_now()).unwrap_or(i64::MAX);
    let exp = now.saturating_add(ttl_secs);
    let auth = json!({"chatgpt_account_id": account_id, "chatgpt_plan_type": "pro",
                      "chatgpt_user_id": "user-fake", "user_id": "user-fake"});
    let email = "fake@example.com";
    let id_token = fake_jwt(&json!({"email": email, "exp": exp, "iat": now,
                                    "https://api.openai.com/auth": auth}));
    let access_token = fake_jwt(
        &json!({"exp": exp, "iat": now, "https://api.openai.com/auth": auth,
                                        "https://api.openai.com/profile": {"email": email}}),
    );
    json!({"id_token": id_token, "access_token": access_token, "refresh_token": "rt_fake_original"})
}

/// A fake codex `auth.json` in ChatGPT mode, as `codex login` writes it: tokens for
/// [`DEFAULT_ACCOUNT_ID`], fresh for an hour, or (`stale`) expired and last refreshed 30 days ago.
pub fn codex_auth_json(stale: bool) -> serde_json::Value {
    let ttl = if stale { -600 } else { 3600 };
    let mut tokens = fake_tokens(DEFAULT_ACCOUNT_ID, ttl);
    tokens["account_id"] = DEFAULT_ACCOUNT_ID.into();
    let days_ago = if stale { 30 } else { 0 };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    serde_json::json!({
        "auth_mode": "chatgpt", "OPENAI_API_KEY": null, "tokens": tokens,
        "last_refresh": rfc3339(now.saturating_sub(days_ago * 86_400)),
    })
}

/// Writes [`codex_auth_json`] as `auth.json` into `codex_home` (made when missing), as the
/// tests' `CODEX_HOME`; returns the document written.
pub fn write_codex_auth(
    codex_home: &std::path::Path,
    stale: bool,
) -> std::io::Result<serde_json::Value> {
    let auth = codex_auth_json(stale);
    std::fs::create_dir_all(codex_home)?;
    std::fs::write(codex_home.join("auth.json"), auth.to_string())?;
    Ok(auth)
}

/// `YYYY-MM-DDTHH:MM:SSZ` for a Unix time (civil-from-days, proleptic Gregorian).
fn rfc3339(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn rfc3339_formats_known_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_796_034_031), "2026-11-30T10:20:31Z");
    }

    #[test]
    fn jwt_payload_decodes_to_the_claims() {
        let tokens = fake_tokens("acct_x", 60);
        let access = tokens["access_token"].as_str().unwrap();
        let payload = access.split('.').nth(1).unwrap();
        let claims: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
        assert_eq!(
            claims["https://api.openai.com/auth"]["chatgpt_account_id"],
            "acct_x"
        );
        assert!(claims["exp"].as_i64().unwrap() > claims["iat"].as_i64().unwrap());
    }
}
