//! What a fake remembers about each request, with secrets masked.
//!
//! Contract: every request the server reads (model calls, side endpoints, rejected and 404
//! requests alike) becomes one [`RecordedRequest`], in arrival order, before it is answered.
//! Credentials never reach a record:
//! - headers `authorization` / `proxy-authorization` keep only their scheme (`"Bearer ***"`);
//!   `x-api-key`, `api-key`, `cookie`, `set-cookie` and any header whose name contains `token`,
//!   `secret` or `api-key` become `"***"`;
//! - JSON body fields named like credentials (`refresh_token`, `access_token`, `id_token`,
//!   `client_secret`, `api_key`, `password`) become `"***"` at any depth;
//! - query parameters named `key`, `api_key`, `token` or `access_token` become `***`.
//!
//! `chatgpt-account-id` is an identifier, not a credential, and is kept so tests can check it.

use serde::Serialize;
use serde_json::Value;
use std::io::Read;

/// One request as the fake saw it (after body decompression, with secrets masked).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedRequest {
    /// The HTTP method (`POST`, `GET`, `HEAD`, …).
    pub method: String,
    /// The path with its query string, e.g. `/v1/messages?beta=true` (masked query values).
    pub path: String,
    /// The headers in arrival order, names lower-cased, secrets masked.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (secret fields masked), or `Null` when empty or not JSON.
    pub body: Value,
    /// The body length in bytes as received (before any decompression).
    pub raw_body_len: usize,
}

impl RecordedRequest {
    /// The first value of the header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The path without its query string.
    pub fn route(&self) -> &str {
        self.path.split('?').next().unwrap_or(&self.path)
    }
}

const MASK: &str = "***";
const SECRET_FIELDS: &[&str] = &[
    "refresh_token",
    "access_token",
    "id_token",
    "client_secret",
    "api_key",
    "password",
];
const SECRET_QUERY: &[&str] = &["key", "api_key", "token", "access_token"];

/// Masks one header value according to the module rules.
pub(crate) fn mask_header(name: &str, value: &str) -> String {
    let name = name.to_ascii_lowercase();
    if name == "authorization" || name == "proxy-authorization" {
        return match value.split_once(' ') {
            Some((scheme, _)) => format!("{scheme} {MASK}"),
            None => MASK.to_owned(),
        };
    }
    let secret = matches!(
        name.as_str(),
        "x-api-key" | "api-key" | "cookie" | "set-cookie"
    ) || name.contains("token")
        || name.contains("secret")
        || name.contains("api-key");
    if secret {
        MASK.to_owned()
    } else {
        value.to_owned()
    }
}

/// Masks secret query parameter values in `path_and_query`.
pub(crate) fn mask_path(path_and_query: &str) -> String {
    let Some((path, query)) = path_and_query.split_once('?') else {
        return path_and_query.to_owned();
    };
    let masked: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if SECRET_QUERY.contains(&key.to_ascii_lowercase().as_str()) => {
                format!("{key}={MASK}")
            }
            _ => pair.to_owned(),
        })
        .collect();
    format!("{path}?{}", masked.join("&"))
}

/// Masks secret fields anywhere in a JSON value.
pub(crate) fn mask_body(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, field) in map.iter_mut() {
                if SECRET_FIELDS.contains(&key.to_ascii_lowercase().as_str()) && !field.is_null() {
                    *field = Value::String(MASK.to_owned());
                } else {
                    mask_body(field);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask_body),
        _ => {}
    }
}

/// The largest decompressed body accepted (protects against decompression bombs).
const MAX_DECODED: u64 = 64 << 20;

/// Decodes a request body according to its `content-encoding` (`zstd` or none). Returns `None`
/// when the encoding is unknown or the data is corrupt.
pub(crate) fn decode_body(encoding: Option<&str>, raw: &[u8]) -> Option<Vec<u8>> {
    match encoding.map(str::trim) {
        None | Some("") | Some("identity") => Some(raw.to_vec()),
        Some(enc) if enc.eq_ignore_ascii_case("zstd") => {
            let decoder = ruzstd::decoding::StreamingDecoder::new(raw).ok()?;
            let mut out = Vec::new();
            decoder.take(MAX_DECODED).read_to_end(&mut out).ok()?;
            Some(out)
        }
        Some(_) => None,
    }
}

/// Parses a decoded body as JSON (unmasked); `Null` when absent, empty or not JSON.
pub(crate) fn parse_json(decoded: Option<&[u8]>) -> Value {
    match decoded.filter(|b| !b.is_empty()) {
        Some(bytes) => serde_json::from_slice(bytes).unwrap_or(Value::Null),
        None => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn authorization_keeps_only_its_scheme() {
        assert_eq!(mask_header("Authorization", "Bearer sk-123"), "Bearer ***");
        assert_eq!(mask_header("authorization", "sk-123"), "***");
        assert_eq!(mask_header("x-api-key", "sk-ant-1"), "***");
        assert_eq!(mask_header("Cookie", "a=b"), "***");
        assert_eq!(mask_header("x-goog-api-key", "k"), "***");
        assert_eq!(mask_header("chatgpt-account-id", "acct_1"), "acct_1");
        assert_eq!(
            mask_header("content-type", "application/json"),
            "application/json"
        );
    }

    #[test]
    fn secret_body_fields_and_query_values_are_masked() {
        let mut body = json!({"grant_type": "refresh_token", "refresh_token": "rt_secret",
                              "nested": [{"access_token": "at"}], "id_token": null});
        mask_body(&mut body);
        assert_eq!(
            body,
            json!({"grant_type": "refresh_token", "refresh_token": "***",
                   "nested": [{"access_token": "***"}], "id_token": null})
        );
        assert_eq!(
            mask_path("/v1/x?key=abc&beta=true"),
            "/v1/x?key=***&beta=true"
        );
        assert_eq!(mask_path("/v1/messages"), "/v1/messages");
    }

    #[test]
    fn zstd_bodies_are_decoded_and_garbage_is_not_json() {
        let raw = br#"{"a":1}"#;
        let packed = ruzstd::encoding::compress_to_vec(
            &raw[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        let decoded = decode_body(Some("zstd"), &packed);
        assert_eq!(parse_json(decoded.as_deref()), json!({"a": 1}));
        assert_eq!(decode_body(Some("zstd"), b"not zstd"), None);
        assert_eq!(decode_body(Some("br"), raw), None);
        assert_eq!(parse_json(Some(b"not json")), Value::Null);
        assert_eq!(parse_json(Some(b"")), Value::Null);
    }
}
