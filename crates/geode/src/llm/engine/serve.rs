//! The engine side of the protocol: serve calls read from `input` with an adapter, writing
//! the lines to `output`, until `input` ends and the calls in progress are answered.
//!
//! Calls with an `id` run concurrently (their lines carry the id; a [`EngineCancel`] line
//! cancels one); a call without one is answered before the next line is read, as before ids.

use super::{EngineCall, EngineCancel, EngineLine, EngineReply};
use crate::llm::adapter::Adapter;
use crate::llm::call::{AdapterError, CallCx, TextSink};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use std::collections::HashMap;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Serves calls until `input` ends and every call read is answered (`Ok`), or `output` can no
/// longer be written (`Err`): the parent is gone, and the calls in progress are cancelled. A
/// line that is neither an [`EngineCall`] nor an [`EngineCancel`] is answered with
/// [`EngineLine::Failed`] (a protocol error) and serving goes on.
pub async fn serve(
    adapter: &dyn Adapter,
    input: impl AsyncRead + Unpin,
    mut output: impl AsyncWrite + Unpin,
) -> std::io::Result<()> {
    let mut lines = BufReader::new(input).lines();
    let (deltas, mut delta_rx) = mpsc::unbounded_channel::<(Option<u64>, String)>();
    let mut running = FuturesUnordered::new();
    let mut cancels: HashMap<u64, CancellationToken> = HashMap::new();
    let mut reading = true;
    // An id-less call holds the input until it is answered.
    let mut waiting_for_anonymous = false;
    let result = loop {
        if !reading && running.is_empty() {
            break Ok(());
        }
        tokio::select! {
            biased;
            Some((id, text)) = delta_rx.recv() => {
                if let Err(e) = write_line(&mut output, id, EngineLine::Text { text }).await {
                    break Err(e);
                }
            }
            Some((id, end)) = running.next(), if !running.is_empty() => {
                // Deltas sent just before the end.
                let mut failed = None;
                while let Ok((delta_id, text)) = delta_rx.try_recv() {
                    if let Err(e) = write_line(&mut output, delta_id, EngineLine::Text { text }).await {
                        failed = Some(e);
                        break;
                    }
                }
                if let Some(e) = failed {
                    break Err(e);
                }
                match id {
                    Some(id) => {
                        cancels.remove(&id);
                    }
                    None => waiting_for_anonymous = false,
                }
                if let Err(e) = write_line(&mut output, id, end).await {
                    break Err(e);
                }
            }
            line = lines.next_line(), if reading && !waiting_for_anonymous => {
                let line = match line {
                    Ok(Some(line)) => line,
                    Ok(None) => {
                        reading = false;
                        continue;
                    }
                    Err(e) => break Err(e),
                };
                if line.trim().is_empty() {
                    continue;
                }
                if let Ok(EngineCancel { cancel }) = serde_json::from_str::<EngineCancel>(&line) {
                    if let Some(token) = cancels.get(&cancel) {
                        token.cancel();
                    }
                    continue;
                }
                let call = match serde_json::from_str::<EngineCall>(&line) {
                    Ok(call) => call,
                    Err(e) => {
                        let error = AdapterError::Protocol {
                            adapter: adapter.name().to_owned(),
                            message: format!("not an engine call: {e}"),
                        };
                        if let Err(e) = write_line(&mut output, None, EngineLine::Failed { error }).await {
                            break Err(e);
                        }
                        continue;
                    }
                };
                let id = call.id;
                let cx = call_cx(&call, id, &deltas);
                match id {
                    Some(id) => {
                        cancels.insert(id, cx.cancel.clone());
                    }
                    None => waiting_for_anonymous = true,
                }
                running.push(async move {
                    let end = match adapter.call(call.request, &cx).await {
                        Ok(response) => EngineLine::Done { response },
                        Err(error) => EngineLine::Failed { error },
                    };
                    (id, end)
                });
            }
        }
    };
    if result.is_err() {
        // The parent is gone: stop what runs (the adapter polls its cancellation).
        for token in cancels.values() {
            token.cancel();
        }
        while running.next().await.is_some() {}
    }
    result
}

/// The context of one call: its budget, deadline and (when streaming) a sink tagging deltas
/// with the call's id.
fn call_cx(
    call: &EngineCall,
    id: Option<u64>,
    deltas: &mpsc::UnboundedSender<(Option<u64>, String)>,
) -> CallCx {
    let mut cx = CallCx::new().with_max_response_bytes(call.max_response_bytes);
    if let Some(ms) = call.timeout_ms {
        cx = cx.with_timeout(Duration::from_millis(ms));
    }
    if call.stream {
        let deltas = deltas.clone();
        cx.on_text = Some(TextSink::new(move |delta| {
            let _ = deltas.send((id, delta.to_owned()));
        }));
    }
    cx
}

async fn write_line(
    output: &mut (impl AsyncWrite + Unpin),
    id: Option<u64>,
    line: EngineLine,
) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(&EngineReply { id, line }).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    output.write_all(&bytes).await?;
    output.flush().await
}
