//! The SSE reader (`geode::llm::sse`): the sans-IO parser under any chunking, and the async
//! reader over a byte stream.

use bytes::Bytes;
use geode::llm::call::{AdapterError, CallCx};
use geode::llm::sse::{DEFAULT_MAX_EVENT_BYTES, EventTooLarge, SseEvent, SseParser, SseReader};
use std::time::Duration;

/// The events a parser produced, and the error that stopped it, if any.
type Parsed = (Vec<SseEvent>, Option<EventTooLarge>);

/// The first byte picks the event size limit (bits 0-1) and a chunk size (bits 2-7, 1 to 64
/// bytes); the rest is the stream.
///
/// Invariants: the events (and the size error) are the same whether the stream is pushed whole,
/// in chunks of that size or byte by byte; no event name or id holds a line break and data
/// holds no `\r`; [`SseReader`] yields the same events and then `Truncated` (never a clean end).
pub fn run(data: &[u8]) {
    let Some((&control, stream)) = data.split_first() else {
        return;
    };
    let limit = [DEFAULT_MAX_EVENT_BYTES, 8, 64, 1024][usize::from(control & 3)];
    let chunk = usize::from(control >> 2) + 1;
    let whole = parse(stream, limit, stream.len().max(1));
    assert_eq!(
        parse(stream, limit, chunk),
        whole,
        "chunks of {chunk} differ"
    );
    assert_eq!(parse(stream, limit, 1), whole, "byte-by-byte differs");
    for ev in &whole.0 {
        assert!(!ev.event.contains(['\r', '\n']), "{ev:?}");
        assert!(!ev.data.contains('\r'), "{ev:?}");
        let id = ev.id.as_deref().unwrap_or_default();
        assert!(!id.contains(['\r', '\n', '\0']), "{ev:?}");
    }
    let expected = if limit == DEFAULT_MAX_EVENT_BYTES {
        whole.0
    } else {
        parse(stream, DEFAULT_MAX_EVENT_BYTES, stream.len().max(1)).0
    };
    assert_eq!(
        read(stream, chunk),
        expected,
        "the reader differs from the parser"
    );
}

/// Pushes `stream` into a parser `chunk` bytes at a time until it refuses one.
fn parse(stream: &[u8], limit: usize, chunk: usize) -> Parsed {
    let mut parser = SseParser::new(limit);
    let error = stream.chunks(chunk).find_map(|c| parser.push(c).err());
    let events = std::iter::from_fn(|| parser.pop()).collect();
    (events, error)
}

/// Reads `stream` through an [`SseReader`] in chunks; asserts it ends `Truncated`.
fn read(stream: &[u8], chunk: usize) -> Vec<SseEvent> {
    let chunks: Vec<Result<Bytes, std::io::Error>> = stream
        .chunks(chunk)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    let mut reader = SseReader::new(
        "fuzz",
        futures::stream::iter(chunks),
        Duration::from_secs(60),
    );
    let cx = CallCx::new();
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    else {
        panic!("no tokio runtime");
    };
    runtime.block_on(async {
        let mut events = Vec::new();
        loop {
            match reader.next_event(&cx).await {
                Ok(ev) => events.push(ev),
                Err(AdapterError::Truncated { .. }) => return events,
                Err(e) => panic!("the reader ended with {e:?}, not Truncated"),
            }
        }
    })
}
