//! The bodies of the fault replies that are not a normal answer: garbage and an HTML page, the
//! same on every wire. A provider failure reported inside a 200 answer is each wire's own
//! ([`Kind::in_band_error`]):
//!
//! | reply | Responses / ChatGPT | Messages | Chat |
//! |---|---|---|---|
//! | [`crate::Reply::InBandError`], streamed | `error` event, code `server_error` | `error` event, `overloaded_error` | `data:` chunk with an `error` object |
//! | same, not streamed | 200 response object, `status: failed` | 200 `{"type":"error",...}` | 200 `{"error": {"code": "1234", ...}}` |
//! | [`crate::Reply::Garbage`] | `data:` lines of non-UTF-8 bytes | same | same |
//! | [`crate::Reply::Html`] | `text/html` proxy page | same | same |

#[cfg(doc)]
use crate::kind::Kind;
use crate::plan::{Call, Plan, PlanBody};
use bytes::Bytes;

/// The bytes of a garbage body: 64 lines of `data: ` and 48 pseudo-random bytes that are never
/// a line end (so an SSE reader frames them into events), with invalid UTF-8 throughout.
pub(crate) fn garbage(call: &Call) -> Plan {
    let mut out = Vec::with_capacity(64 * 64);
    let mut x: u32 = 0x9e37_79b9;
    for _ in 0..64 {
        out.extend_from_slice(b"data: ");
        for _ in 0..48 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let b = (x >> 24) as u8;
            out.push(if b == b'\n' || b == b'\r' {
                0xff
            } else {
                b | 0x80
            });
        }
        out.extend_from_slice(b"\n\n");
    }
    raw(content_type(call), Bytes::from(out))
}

/// A proxy's HTML error page, sent with status 200.
pub(crate) fn html() -> Plan {
    raw(
        "text/html; charset=utf-8",
        Bytes::from_static(
            b"<!DOCTYPE html><html><head><title>Service Unavailable</title></head>\
              <body><h1>Upstream unavailable</h1><p>Please try again later.</p></body></html>\n",
        ),
    )
}

fn content_type(call: &Call) -> &'static str {
    if call.wants_stream() {
        "text/event-stream"
    } else {
        "application/json"
    }
}

fn raw(content_type: &str, bytes: Bytes) -> Plan {
    Plan {
        status: 200,
        headers: Vec::new(),
        body: PlanBody::Raw {
            content_type: content_type.to_owned(),
            bytes,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Ids;
    use crate::script::TokenUsage;
    use serde_json::json;

    #[test]
    fn garbage_is_framed_but_neither_utf8_nor_json() {
        let body = json!({"stream": true});
        let ids = Ids::default();
        let call = Call {
            body: &body,
            usage: TokenUsage::default(),
            ids: &ids,
        };
        let PlanBody::Raw {
            content_type,
            bytes,
        } = garbage(&call).body
        else {
            panic!("garbage is a raw body")
        };
        assert_eq!(content_type, "text/event-stream");
        assert!(std::str::from_utf8(&bytes).is_err());
        assert_eq!(
            bytes
                .split(|b| *b == b'\n')
                .filter(|l| l.starts_with(b"data: "))
                .count(),
            64
        );
    }
}
