//! Image and file content parts, as the two endpoints spell them, into geode's parts
//! ([`geode::media::Media`]): the type is read from the bytes, and only data URLs, base64 and
//! `https` URLs are taken. A path is never read and a URL never fetched by the gateway: a URL
//! goes on to a wire that takes URLs, or routing refuses the request.
//!
//! | part | where the bytes are |
//! |---|---|
//! | Chat `{"type": "image_url", "image_url": {"url"}}` | a data URL or an `https` URL |
//! | Chat `{"type": "file", "file": {"file_data", "filename"}}` | a data URL or bare base64 |
//! | Responses `{"type": "input_image", "image_url"}` | a data URL or an `https` URL |
//! | Responses `{"type": "input_file", "file_data" \| "file_url", "filename"}` | a data URL or bare base64; an `https` URL |
//! | `file_id` (either) | refused: the gateway has no Files API |

use crate::error::ApiError;
use geode::media::{Media, MediaError, MediaKind};
use serde_json::Value;

/// The part `p` of type `kind` (`image_url`, `input_image`, `file`, `input_file`).
pub fn part(p: &Value, kind: &str, field: &'static str) -> Result<Media, ApiError> {
    let bad = |e: MediaError| ApiError::invalid(field, format!("a {kind} part: {e}"));
    let file_id = match kind {
        "file" => p.pointer("/file/file_id"),
        _ => p.get("file_id"),
    };
    if file_id.is_some_and(|v| !v.is_null()) {
        return Err(ApiError::unsupported(
            field,
            "file ids are not served (the gateway has no Files API): send the bytes as a data URL, or a URL",
        ));
    }
    let media = match kind {
        "image_url" | "input_image" => {
            let url = match kind {
                "image_url" => s(p.pointer("/image_url/url")).or(s(p.get("image_url"))),
                _ => s(p.get("image_url")),
            }
            .ok_or_else(|| {
                ApiError::invalid(field, format!("a {kind} part needs its image_url"))
            })?;
            let media = from_url(url, MediaKind::Image).map_err(bad)?;
            media.expect(MediaKind::Image, "the image").map_err(bad)?
        }
        _ => {
            let f = if kind == "file" {
                p.get("file")
            } else {
                Some(p)
            };
            let title = s(f.and_then(|f| f.get("filename"))).map(str::to_owned);
            let data = s(f.and_then(|f| f.get("file_data")));
            let url = s(f.and_then(|f| f.get("file_url")));
            let media = match (data, url) {
                (Some(data), _) if data.starts_with("data:") => {
                    Media::from_data_url(data, title).map_err(bad)?
                }
                (Some(data), _) => {
                    let url = format!("data:application/octet-stream;base64,{data}");
                    Media::from_data_url(&url, title).map_err(bad)?
                }
                (None, Some(url)) => Media::from_url(url, MediaKind::Document).map_err(bad)?,
                (None, None) => {
                    return Err(ApiError::invalid(
                        field,
                        format!("a {kind} part needs file_data or file_url"),
                    ));
                }
            };
            media.expect(MediaKind::Document, "the file").map_err(bad)?
        }
    };
    Ok(media)
}

/// A string field, trimmed.
fn s(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str).map(str::trim)
}

/// A data URL decoded, anything else taken as a URL to pass on.
fn from_url(url: &str, kind: MediaKind) -> Result<Media, MediaError> {
    if url.starts_with("data:") {
        Media::from_data_url(url, None)
    } else {
        Media::from_url(url, kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PNG_URL: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAAC0lEQVR42mP4DwQACfsD/Wj6HMwAAAAASUVORK5CYII=";
    const PDF_B64: &str = "JVBERi0xLjQKJSVFT0YK";

    #[test]
    fn both_spellings_of_an_image_and_a_file_are_read() {
        let chat = part(
            &json!({"type": "image_url", "image_url": {"url": PNG_URL}}),
            "image_url",
            "messages",
        )
        .unwrap();
        let resp = part(
            &json!({"type": "input_image", "image_url": PNG_URL, "detail": "auto"}),
            "input_image",
            "input",
        )
        .unwrap();
        assert_eq!(chat, resp);
        assert_eq!(chat.record().media_type.as_deref(), Some("image/png"));
        let file = part(&json!({"type": "file", "file": {"filename": "a.pdf", "file_data": format!("data:application/pdf;base64,{PDF_B64}")}}), "file", "messages").unwrap();
        let bare = part(
            &json!({"type": "input_file", "filename": "a.pdf", "file_data": PDF_B64}),
            "input_file",
            "input",
        )
        .unwrap();
        assert_eq!(file, bare);
        assert_eq!(file.title.as_deref(), Some("a.pdf"));
        let url = part(
            &json!({"type": "input_file", "file_url": "https://x.example/c.pdf"}),
            "input_file",
            "input",
        )
        .unwrap();
        assert_eq!(url.record().source, "url");
    }

    #[test]
    fn ids_paths_lies_and_missing_bytes_are_400s() {
        let cases = [
            (
                json!({"type": "input_image", "file_id": "file-1"}),
                "input_image",
                "unsupported_parameter",
            ),
            (
                json!({"type": "input_image", "image_url": "/etc/passwd"}),
                "input_image",
                "invalid_request",
            ),
            (
                json!({"type": "input_image", "image_url": "file:///etc/passwd"}),
                "input_image",
                "invalid_request",
            ),
            (
                json!({"type": "input_image", "image_url": format!("data:image/png;base64,{PDF_B64}")}),
                "input_image",
                "invalid_request",
            ),
            (
                json!({"type": "input_file", "filename": "x.pdf"}),
                "input_file",
                "invalid_request",
            ),
            (
                json!({"type": "file", "file": {"file_data": "not base64!"}}),
                "file",
                "invalid_request",
            ),
        ];
        for (p, kind, code) in cases {
            let e = part(&p, kind, "input").unwrap_err();
            assert_eq!(e.code, code, "{p}: {}", e.message);
            assert!(!e.message.contains("passwd"), "{}", e.message);
        }
    }
}
