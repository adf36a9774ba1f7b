//! Turns a [`Plan`] into an HTTP response, applying a delay and, for faults, how the body ends.
//!
//! | body | delay | [`Ending::Cut`] | [`Ending::CutThenHang`] | [`Ending::CutThenReset`] | [`Ending::Endless`] |
//! |---|---|---|---|---|---|
//! | SSE | headers at once, first event after the delay | first half of the events, then half an event, then a clean end | the same half, then silence | the same half, then an aborted connection | the events before the first text delta, then that delta forever |
//! | JSON | nothing is sent until the delay is over | headers, half the bytes, then the connection is aborted | headers, half the bytes, then silence | as `Cut` | the bytes before the answer text, then filler text forever |
//! | raw / empty | nothing is sent until the delay is over | (no effect) | (no effect) | (no effect) | (no effect) |
//!
//! An endless body is throttled to about 16 MB/s, so a client without a size budget grows
//! steadily rather than exhausting the machine at once.

use crate::plan::{Plan, PlanBody};
use crate::sse;
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty, Full, StreamBody};
use hyper::body::Frame;
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderName, HeaderValue};
use hyper::{Response, StatusCode};
use std::io;
use std::time::Duration;

/// The body type every response uses.
pub(crate) type Body = BoxBody<Bytes, io::Error>;

/// One endless batch; one batch is sent per [`ENDLESS_PAUSE`] (about 16 MB/s).
const ENDLESS_BATCH: usize = 32 << 10;
const ENDLESS_PAUSE: Duration = Duration::from_millis(2);

/// The text an endless answer repeats; protocol modules render it like any answer text.
pub(crate) const FILL_TEXT_UNIT: &str = "endless ";

/// Whether the answer is played whole, or how it goes wrong after it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// The whole answer.
    Complete,
    /// [`crate::Reply::StreamCut`].
    Cut,
    /// [`crate::Reply::HangMidBody`].
    CutThenHang,
    /// [`crate::Reply::ResetMidBody`].
    CutThenReset,
    /// [`crate::Reply::Endless`] (the plan's answer text is made of [`FILL_TEXT_UNIT`]).
    Endless,
}

/// What happens after the planned bytes are sent.
#[derive(Debug, Clone)]
enum Tail {
    End,
    Abort,
    Hang,
    Repeat(Bytes),
}

/// Builds the response for `plan`, waiting `delay` where the table above says.
pub(crate) async fn deliver(plan: Plan, delay: Duration, ending: Ending) -> Response<Body> {
    let status = StatusCode::from_u16(plan.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = match plan.body {
        PlanBody::Sse(events) => {
            let frames: Vec<Bytes> = events.iter().map(sse::frame).collect();
            let (frames, tail) = match ending {
                Ending::Complete => (frames, Tail::End),
                Ending::Cut => (sse::cut(frames), Tail::End),
                Ending::CutThenHang => (sse::cut(frames), Tail::Hang),
                Ending::CutThenReset => (sse::cut(frames), Tail::Abort),
                Ending::Endless => endless_frames(frames),
            };
            let mut response = Response::new(chunks(delay, frames, tail));
            let headers = response.headers_mut();
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            response
        }
        PlanBody::Json(value) => {
            tokio::time::sleep(delay).await;
            let text = value.to_string();
            let bytes = Bytes::from(text.clone());
            let half = || vec![bytes.slice(..bytes.len() / 2)];
            let body = match ending {
                Ending::Complete => full(bytes.clone()),
                Ending::Cut | Ending::CutThenReset => chunks(Duration::ZERO, half(), Tail::Abort),
                Ending::CutThenHang => chunks(Duration::ZERO, half(), Tail::Hang),
                Ending::Endless => {
                    let start = text.find(FILL_TEXT_UNIT).unwrap_or(text.len());
                    let prefix = bytes.slice(..start);
                    chunks(Duration::ZERO, vec![prefix], Tail::Repeat(filler()))
                }
            };
            let mut response = Response::new(body);
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            response
        }
        PlanBody::Raw {
            content_type,
            bytes,
        } => {
            tokio::time::sleep(delay).await;
            let mut response = Response::new(full(bytes));
            if let Ok(value) = HeaderValue::from_str(&content_type) {
                response.headers_mut().insert(CONTENT_TYPE, value);
            }
            response
        }
        PlanBody::Empty => {
            tokio::time::sleep(delay).await;
            Response::new(Empty::new().map_err(|never| match never {}).boxed())
        }
    };
    *response.status_mut() = status;
    for (name, value) in plan.headers {
        if let Ok(value) = HeaderValue::from_str(&value) {
            response
                .headers_mut()
                .append(HeaderName::from_static(name), value);
        }
    }
    response
}

/// A complete body with a `content-length`.
pub(crate) fn full(bytes: Bytes) -> Body {
    Full::new(bytes).map_err(|never| match never {}).boxed()
}

/// The frames before the first one carrying fill text, then that frame repeated (batched).
fn endless_frames(frames: Vec<Bytes>) -> (Vec<Bytes>, Tail) {
    let unit = FILL_TEXT_UNIT.as_bytes();
    let carries_fill = |f: &Bytes| f.windows(unit.len()).any(|w| w == unit);
    match frames.iter().position(carries_fill) {
        Some(i) => {
            let delta = frames[i].clone();
            let copies = (ENDLESS_BATCH / delta.len().max(1)).max(1);
            let batch: Vec<u8> = delta
                .iter()
                .copied()
                .cycle()
                .take(delta.len() * copies)
                .collect();
            (frames[..i].to_vec(), Tail::Repeat(Bytes::from(batch)))
        }
        None => (frames, Tail::Hang),
    }
}

/// One batch of fill text for an endless JSON string.
fn filler() -> Bytes {
    Bytes::from(FILL_TEXT_UNIT.repeat(ENDLESS_BATCH / FILL_TEXT_UNIT.len()))
}

/// A chunked body: waits `delay`, sends `frames`, then ends as `tail` says. An aborted body
/// makes the server drop the connection mid-body.
fn chunks(delay: Duration, frames: Vec<Bytes>, tail: Tail) -> Body {
    struct State {
        delay: Option<Duration>,
        frames: std::vec::IntoIter<Bytes>,
        tail: Tail,
    }
    let state = State {
        delay: Some(delay).filter(|d| !d.is_zero()),
        frames: frames.into_iter(),
        tail,
    };
    let stream = futures::stream::unfold(state, |mut state| async move {
        if let Some(delay) = state.delay.take() {
            tokio::time::sleep(delay).await;
        }
        if let Some(bytes) = state.frames.next() {
            return Some((Ok(Frame::data(bytes)), state));
        }
        match state.tail.clone() {
            Tail::End => None,
            Tail::Abort => {
                state.tail = Tail::End;
                // Let hyper flush what it has (headers, partial body) before the abort.
                tokio::task::yield_now().await;
                Some((Err(io::Error::other("stream cut by the fake")), state))
            }
            Tail::Hang => std::future::pending().await,
            Tail::Repeat(batch) => {
                tokio::time::sleep(ENDLESS_PAUSE).await;
                Some((Ok(Frame::data(batch)), state))
            }
        }
    });
    StreamBody::new(stream).boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endless_frames_repeat_the_first_fill_delta() {
        let frames = vec![
            Bytes::from_static(b"data: start\n\n"),
            Bytes::from(format!("data: {FILL_TEXT_UNIT}\n\n")),
            Bytes::from_static(b"data: end\n\n"),
        ];
        let (head, tail) = endless_frames(frames.clone());
        assert_eq!(head, frames[..1]);
        let Tail::Repeat(batch) = tail else {
            panic!("expected a repeating tail")
        };
        assert!(batch.len() >= ENDLESS_BATCH / 2);
        assert!(batch.starts_with(&frames[1]));
    }
}
