use super::*;
use crate::vocab::ErrorKind;
use std::convert::Infallible;

fn parse_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
    let mut p = SseParser::default();
    let mut out = Vec::new();
    for c in chunks {
        p.push(c).unwrap();
        while let Some(e) = p.pop() {
            out.push(e);
        }
    }
    out
}

fn ev(event: &str, data: &str) -> SseEvent {
    SseEvent {
        event: event.into(),
        data: data.into(),
        id: None,
    }
}

#[test]
fn parser_reads_events_split_at_every_byte() {
    let text = b"event: a\ndata: {\"x\":1}\n\nevent: b\r\ndata: two\r\n\r\n";
    let whole = parse_all(&[text]);
    assert_eq!(whole, vec![ev("a", "{\"x\":1}"), ev("b", "two")]);
    let bytes: Vec<&[u8]> = text.chunks(1).collect();
    assert_eq!(parse_all(&bytes), whole);
}

#[test]
fn parser_joins_data_lines_skips_comments_and_defaults_the_event_name() {
    let events = parse_all(&[b"\xEF\xBB\xBF: keepalive\n\ndata:a\ndata: b\nid: 7\n\n"]);
    assert_eq!(
        events,
        vec![SseEvent {
            event: "message".into(),
            data: "a\nb".into(),
            id: Some("7".into()),
        }]
    );
}

/// Found by the `sse` fuzz target: a leading BOM split over two pushes was kept, so the first
/// line's field name became `\u{feff}data` and the event was lost.
#[test]
fn a_leading_bom_split_over_pushes_is_dropped_and_a_later_one_kept() {
    let split = parse_all(&[b"\xEF", b"\xBB", b"\xBFdata: x\n\n"]);
    assert_eq!(split, vec![ev("message", "x")]);
    assert_eq!(
        parse_all(&[b"\xEF\xBB\xBF\ndata: y\n\n"]),
        vec![ev("message", "y")]
    );
    // Only the stream's first line may start with the BOM: later, it is part of the field name.
    let later = parse_all(&[b"data: a\n\n\xEF\xBB\xBFdata: b\n\n"]);
    assert_eq!(later, vec![ev("message", "a")]);
}

#[test]
fn parser_handles_bare_cr_line_ends_and_drops_events_without_data() {
    let events = parse_all(&[b"event: nodata\r\rdata: x\r\r"]);
    assert_eq!(events, vec![ev("message", "x")]);
}

#[test]
fn parser_refuses_an_event_over_the_limit() {
    let mut p = SseParser::new(16);
    assert!(p.push(b"data: 0123456789").is_ok());
    assert_eq!(p.push(b"0123456789"), Err(EventTooLarge { limit: 16 }));
    // A dispatched event resets the count.
    let mut p = SseParser::new(16);
    for _ in 0..10 {
        p.push(b"data: 0123\n\n").unwrap();
    }
    assert_eq!(std::iter::from_fn(|| p.pop()).count(), 10);
}

fn reader(
    chunks: Vec<Result<Bytes, std::io::Error>>,
) -> SseReader<impl Stream<Item = Result<Bytes, std::io::Error>> + Unpin> {
    SseReader::new("t", futures::stream::iter(chunks), Duration::from_secs(5))
}

#[tokio::test]
async fn reader_yields_events_then_truncated_at_eof() {
    let mut r = reader(vec![Ok(Bytes::from_static(b"event: a\ndata: 1\n\n"))]);
    let cx = CallCx::new();
    assert_eq!(r.next_event(&cx).await.unwrap(), ev("a", "1"));
    let err = r.next_event(&cx).await.unwrap_err();
    assert!(matches!(err, AdapterError::Truncated { .. }), "{err:?}");
    // Still truncated when asked again.
    assert!(matches!(
        r.next_event(&cx).await,
        Err(AdapterError::Truncated { .. })
    ));
}

#[tokio::test]
async fn reader_discards_an_unterminated_event_at_eof() {
    let mut r = reader(vec![Ok(Bytes::from_static(b"data: {\"half"))]);
    let err = r.next_event(&CallCx::new()).await.unwrap_err();
    assert!(matches!(err, AdapterError::Truncated { .. }), "{err:?}");
}

#[tokio::test]
async fn reader_maps_a_broken_stream_to_truncated_with_the_cause() {
    let mut r = reader(vec![
        Ok(Bytes::from_static(b"data: 1\n\n")),
        Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset by peer",
        )),
    ]);
    let cx = CallCx::new();
    r.next_event(&cx).await.unwrap();
    let err = r.next_event(&cx).await.unwrap_err();
    assert!(err.to_string().contains("reset by peer"), "{err}");
    assert!(matches!(err, AdapterError::Truncated { .. }));
}

#[tokio::test(start_paused = true)]
async fn reader_idle_timeout_is_truncated() {
    let stream = futures::stream::pending::<Result<Bytes, Infallible>>();
    let mut r = SseReader::new("t", stream, Duration::from_secs(3));
    let err = r.next_event(&CallCx::new()).await.unwrap_err();
    assert!(matches!(err, AdapterError::Truncated { .. }), "{err:?}");
    assert!(err.to_string().contains("idle"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn reader_honours_the_deadline_and_cancellation() {
    let stream = futures::stream::pending::<Result<Bytes, Infallible>>();
    let mut r = SseReader::new("t", stream, Duration::from_secs(300));
    let cx = CallCx::new().with_timeout(Duration::from_secs(1));
    assert!(matches!(
        r.next_event(&cx).await,
        Err(AdapterError::Timeout { .. })
    ));
    let cx = CallCx::new();
    cx.cancel.cancel();
    assert!(matches!(
        r.next_event(&cx).await,
        Err(AdapterError::Cancelled { .. })
    ));
}

#[tokio::test]
async fn a_stream_that_never_ends_stops_at_the_byte_budget() {
    // 10 bytes per event, forever.
    let endless =
        futures::stream::repeat_with(|| Ok::<_, Infallible>(Bytes::from_static(b"data: xy\n\n")));
    let mut r = SseReader::new("t", endless, Duration::from_secs(5)).with_max_total_bytes(1000);
    let cx = CallCx::new();
    let mut events = 0;
    let err = loop {
        match r.next_event(&cx).await {
            Ok(_) => events += 1,
            Err(e) => break e,
        }
    };
    assert_eq!(events, 100, "every byte within the budget is read");
    assert!(
        matches!(err, AdapterError::ResponseTooLarge { limit: 1000, .. }),
        "{err:?}"
    );
    assert_eq!(err.kind(), ErrorKind::ResponseTooLarge);
    assert_eq!(err.retry_class(), crate::vocab::RetryClass::Fatal);
}

#[tokio::test]
async fn the_default_stream_budget_is_sixteen_mib() {
    // One keep-alive comment of exactly 1 MiB per chunk: 16 are read, the 17th is refused.
    let mut comment = vec![b'x'; 1 << 20];
    comment[0] = b':';
    comment[(1 << 20) - 1] = b'\n';
    let chunk = Bytes::from(comment);
    let mut count = 0;
    let endless = futures::stream::repeat_with(move || Ok::<_, Infallible>(chunk.clone()))
        .inspect(|_| count += 1);
    let mut r = SseReader::new("t", endless, Duration::from_secs(5));
    let err = r.next_event(&CallCx::new()).await.unwrap_err();
    drop(r);
    assert_eq!(count, 17);
    assert!(
        matches!(err, AdapterError::ResponseTooLarge { limit, .. } if limit == 16 << 20),
        "{err:?}"
    );
}
