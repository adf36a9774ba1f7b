//! The pipes of a running child: the tail kept of each output stream ([`TailBuffer`]), stdout
//! cut into lines for a listener ([`LineSplitter`]), the reading loop with its byte budget
//! ([`pump`]) and the stdin writer ([`feed`]).

use super::MAX_STREAMED_LINE;
use crate::llm::call::TextSink;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// Keeps the last `limit` bytes written to it.
pub(super) struct TailBuffer {
    buf: Vec<u8>,
    limit: usize,
    dropped: u64,
}

impl TailBuffer {
    pub(super) fn new(limit: usize) -> Self {
        Self {
            buf: Vec::new(),
            limit,
            dropped: 0,
        }
    }

    pub(super) fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
        // Compact only when twice the limit is held, so the cost stays linear.
        if self.buf.len() >= self.limit.saturating_mul(2) {
            let excess = self.buf.len() - self.limit;
            self.buf.drain(..excess);
            self.dropped += excess as u64;
        }
    }

    /// The tail, with partial UTF-8 characters at the cut removed.
    pub(super) fn into_tail(mut self) -> (Vec<u8>, u64) {
        if self.buf.len() > self.limit {
            let excess = self.buf.len() - self.limit;
            self.buf.drain(..excess);
            self.dropped += excess as u64;
        }
        if self.dropped > 0 {
            let skip = self
                .buf
                .iter()
                .take(3)
                .take_while(|b| (0x80..0xC0).contains(*b))
                .count();
            self.buf.drain(..skip);
            self.dropped += skip as u64;
        }
        (self.buf, self.dropped)
    }
}

/// Splits a byte stream into lines for a [`TextSink`], holding back the unfinished last line.
pub(super) struct LineSplitter {
    sink: TextSink,
    partial: Vec<u8>,
    /// The current line outgrew [`MAX_STREAMED_LINE`]: skip it up to its newline.
    skipping: bool,
}

impl LineSplitter {
    /// A splitter handing each complete line to `sink`.
    pub(super) fn new(sink: TextSink) -> Self {
        Self {
            sink,
            partial: Vec::new(),
            skipping: false,
        }
    }

    /// Takes the next bytes of the stream.
    pub(super) fn push(&mut self, mut bytes: &[u8]) {
        while let Some(nl) = bytes.iter().position(|&b| b == b'\n') {
            if !self.skipping && self.partial.len() + nl <= MAX_STREAMED_LINE {
                self.partial.extend_from_slice(&bytes[..nl]);
                self.sink.send(&String::from_utf8_lossy(&self.partial));
            }
            self.partial.clear();
            self.skipping = false;
            bytes = &bytes[nl + 1..];
        }
        if self.skipping || self.partial.len() + bytes.len() > MAX_STREAMED_LINE {
            self.partial.clear();
            self.skipping = true;
        } else {
            self.partial.extend_from_slice(bytes);
        }
    }
}

/// Reads `reader` into `sink` (and each line to `lines`) until EOF; with a `budget`, stops and
/// cancels its token once more than that many bytes were read.
pub(super) async fn pump(
    reader: Option<impl AsyncRead + Unpin>,
    sink: &mut TailBuffer,
    lines: Option<&TextSink>,
    budget: Option<(u64, &CancellationToken)>,
) {
    let Some(mut reader) = reader else { return };
    let mut lines = lines.map(|sink| LineSplitter::new(sink.clone()));
    let mut chunk = vec![0u8; 64 * 1024];
    let mut total: u64 = 0;
    loop {
        match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                sink.push(&chunk[..n]);
                if let Some(l) = &mut lines {
                    l.push(&chunk[..n]);
                }
                total = total.saturating_add(n as u64);
                if let Some((limit, overflow)) = budget
                    && total > limit
                {
                    overflow.cancel();
                    return;
                }
            }
        }
    }
}

/// Writes `bytes` to the child's stdin, then closes it.
pub(super) async fn feed(writer: Option<tokio::process::ChildStdin>, bytes: &[u8]) {
    if let Some(mut w) = writer {
        // A child that does not read its stdin closes the pipe: that is not an error here.
        let _ = w.write_all(bytes).await;
        let _ = w.shutdown().await;
    }
}
