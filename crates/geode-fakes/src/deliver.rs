//! Turns a [`Plan`] into an HTTP response, applying a delay and, for stream cuts, truncation.
//!
//! | body | delay | cut | endless | hang / reset mid-body |
//! |---|---|---|---|---|
//! | SSE | headers at once, first event after the delay | first half of the events, then half an event, then a clean end | the events up to the first text delta, then that delta forever | the same half as a cut, then silence / an aborted connection |
//! | JSON | nothing is sent until the delay is over | headers, half the bytes, then the connection is aborted | the bytes up to the text, then the text forever (the JSON never closes) | headers and half the bytes, then silence / an aborted connection |
//! | raw / empty | nothing is sent until the delay is over | (no effect) | (no effect) | (no effect) |
//!
//! An endless answer is planned as the text [`ENDLESS_PIECE`] twice (protocol modules stream a
//! text in two halves), so the piece marks where the repetition starts.

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

/// Whether the answer is played whole or cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// The whole answer.
    Complete,
    /// [`crate::Reply::StreamCut`].
    Cut,
    /// [`crate::Reply::EndlessStream`].
    Endless,
    /// [`crate::Reply::HangMidBody`].
    CutThenHang,
    /// [`crate::Reply::ResetMidBody`].
    CutThenReset,
}

/// What a chunked body does after its frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tail {
    End,
    Abort,
    Hang,
}

/// The unit of an endless answer's text: 128 bytes with nothing to escape in JSON.
pub(crate) const ENDLESS_PIECE: &str = concat!(
    "endless endless endless endless endless endless endless endless ",
    "endless endless endless endless endless endless endless endless "
);

/// The text an endless answer is planned with (see the module docs).
pub(crate) fn endless_text() -> String {
    ENDLESS_PIECE.repeat(64)
}

/// Builds the response for `plan`, waiting `delay` where the table above says.
pub(crate) async fn deliver(plan: Plan, delay: Duration, ending: Ending) -> Response<Body> {
    let status = StatusCode::from_u16(plan.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = match plan.body {
        PlanBody::Sse(events) => {
            let frames: Vec<Bytes> = events.iter().map(sse::frame).collect();
            let body = match ending {
                Ending::Complete => chunks(delay, frames, Tail::End),
                Ending::Cut => chunks(delay, sse::cut(frames), Tail::End),
                Ending::CutThenHang => chunks(delay, sse::cut(frames), Tail::Hang),
                Ending::CutThenReset => chunks(delay, sse::cut(frames), Tail::Abort),
                Ending::Endless => {
                    let at = frames
                        .iter()
                        .position(|f| contains(f, endless_half().as_bytes()));
                    let at = at.unwrap_or(frames.len().saturating_sub(1));
                    let repeated = frames.get(at).cloned().unwrap_or_default();
                    endless(delay, frames[..at].to_vec(), repeated)
                }
            };
            let mut response = Response::new(body);
            let headers = response.headers_mut();
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            response
        }
        PlanBody::Json(value) => {
            tokio::time::sleep(delay).await;
            let bytes = Bytes::from(value.to_string());
            let half = || vec![bytes.slice(..bytes.len() / 2)];
            let body = match ending {
                Ending::Complete => full(bytes.clone()),
                Ending::Cut | Ending::CutThenReset => chunks(Duration::ZERO, half(), Tail::Abort),
                Ending::CutThenHang => chunks(Duration::ZERO, half(), Tail::Hang),
                Ending::Endless => {
                    let at = find(&bytes, endless_half().as_bytes()).unwrap_or(bytes.len());
                    let piece = Bytes::from(endless_half());
                    endless(Duration::ZERO, vec![bytes.slice(..at)], piece)
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

/// The first half of [`endless_text`], which the protocol modules send as one delta.
fn endless_half() -> String {
    ENDLESS_PIECE.repeat(32)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    find(haystack, needle).is_some()
}

/// A chunked body that never ends: waits `delay`, sends `first`, then `repeated` forever (as
/// fast as the client reads; nothing is buffered ahead).
fn endless(delay: Duration, first: Vec<Bytes>, repeated: Bytes) -> Body {
    StreamBody::new(endless_frames(delay, first, repeated)).boxed()
}

fn endless_frames(
    delay: Duration,
    first: Vec<Bytes>,
    repeated: Bytes,
) -> impl futures::Stream<Item = Result<Frame<Bytes>, io::Error>> + Send + Sync {
    use futures::StreamExt;
    futures::stream::once(async move {
        tokio::time::sleep(delay).await;
        futures::stream::iter(first)
    })
    .flatten()
    .chain(futures::stream::repeat(repeated))
    .map(|bytes| Ok(Frame::data(bytes)))
}

/// A chunked body: waits `delay`, sends `frames`, then ends as `tail` says: cleanly, with an
/// error (which makes the server drop the connection mid-body), or never.
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
        match state.tail {
            Tail::End => None,
            Tail::Abort => {
                state.tail = Tail::End;
                // Let hyper flush what it has (headers, partial body) before the abort.
                tokio::task::yield_now().await;
                Some((Err(io::Error::other("stream cut by the fake")), state))
            }
            Tail::Hang => std::future::pending().await,
        }
    });
    StreamBody::new(stream).boxed()
}
