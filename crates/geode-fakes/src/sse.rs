//! Server-sent events on the wire: frame encoding and the stream-cut rule.
//!
//! A frame is `event: <name>\ndata: <json>\n\n`, or `data: <json>\n\n` for data-only events
//! (Chat Completions). [`cut`] implements [`crate::Reply::StreamCut`]: it keeps the first half of
//! the frames, then the first half of the next frame, so the stream ends mid-event and never
//! reaches its terminal event.

use crate::plan::SseEvent;
use bytes::Bytes;

/// Encodes one event as a complete SSE frame.
pub(crate) fn frame(event: &SseEvent) -> Bytes {
    let mut out = String::with_capacity(event.data.len() + 64);
    if let Some(name) = &event.event {
        out.push_str("event: ");
        out.push_str(name);
        out.push('\n');
    }
    // Our data is compact JSON or `[DONE]`, so it never contains a newline.
    out.push_str("data: ");
    out.push_str(&event.data);
    out.push_str("\n\n");
    Bytes::from(out)
}

/// Keeps the first half of `frames`, then half of the following frame (never the last one).
pub(crate) fn cut(mut frames: Vec<Bytes>) -> Vec<Bytes> {
    let keep = frames.len() / 2;
    let partial = frames.get(keep).map(|f| f.slice(..f.len() / 2));
    frames.truncate(keep);
    frames.extend(partial.filter(|p| !p.is_empty()));
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_have_event_and_data_lines() {
        let named = SseEvent {
            event: Some("ping".into()),
            data: "{}".into(),
        };
        assert_eq!(&frame(&named)[..], b"event: ping\ndata: {}\n\n");
        assert_eq!(&frame(&SseEvent::data("[DONE]"))[..], b"data: [DONE]\n\n");
    }

    #[test]
    fn cut_drops_the_terminal_event_and_ends_mid_frame() {
        let frames: Vec<Bytes> = (0..4)
            .map(|i| frame(&SseEvent::data(format!("{{\"n\":{i}}}"))))
            .collect();
        let kept = cut(frames.clone());
        assert_eq!(kept.len(), 3);
        assert_eq!(kept[..2], frames[..2]);
        assert!(frames[2].starts_with(&kept[2]) && kept[2].len() < frames[2].len());
    }
}
