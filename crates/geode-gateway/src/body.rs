//! The one reader every request body goes through. It runs only once the request holds its
//! in-flight slot, so at most [`Limits::max_in_flight`] bodies are in memory, each at most
//! [`Limits::max_body_bytes`]; a declared length past the bound is refused before a byte is
//! read, and a client that stops sending for [`Limits::client_timeout`] is answered 408.

use crate::Limits;
use crate::error::ApiError;
use axum::body::{Body, Bytes, HttpBody};
use axum::http::StatusCode;
use http_body_util::BodyExt;

/// The whole body, or the 413 or 408 that says why not.
pub async fn read(body: Body, limits: &Limits) -> Result<Bytes, ApiError> {
    let max = limits.max_body_bytes;
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            "request_too_large",
            format!("the request body is larger than the gateway's {max} bytes"),
        )
    };
    let declared = body.size_hint().lower();
    if usize::try_from(declared).map_or(true, |n| n > max) {
        return Err(too_large());
    }
    let mut body = body;
    let mut read = Vec::with_capacity(usize::try_from(declared).unwrap_or(0));
    loop {
        let frame = match tokio::time::timeout(limits.client_timeout, body.frame()).await {
            Err(_) => return Err(stalled(limits)),
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err(ApiError::invalid(
                    "body",
                    format!("the request body could not be read: {e}"),
                ));
            }
            Ok(Some(Ok(frame))) => frame,
        };
        if let Ok(data) = frame.into_data() {
            if read.len() + data.len() > max {
                return Err(too_large());
            }
            read.extend_from_slice(&data);
        }
    }
    Ok(Bytes::from(read))
}

fn stalled(limits: &Limits) -> ApiError {
    ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        "invalid_request_error",
        "request_timeout",
        format!(
            "the client sent nothing for {} s in the middle of the request body",
            limits.client_timeout.as_secs_f64()
        ),
    )
}
