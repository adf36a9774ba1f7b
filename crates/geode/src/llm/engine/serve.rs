//! The engine side of the protocol: serve calls read from `input` with an adapter, writing
//! the lines to `output`, until `input` ends.

use super::{EngineCall, EngineLine};
use crate::llm::adapter::Adapter;
use crate::llm::call::{AdapterError, CallCx, TextSink};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Serves calls until `input` ends (`Ok`), or `output` can no longer be written (`Err`): the
/// parent is gone, and the call in progress is cancelled. A line that is not an [`EngineCall`]
/// is answered with [`EngineLine::Failed`] (a protocol error) and serving goes on.
pub async fn serve(
    adapter: &dyn Adapter,
    input: impl AsyncRead + Unpin,
    mut output: impl AsyncWrite + Unpin,
) -> std::io::Result<()> {
    let mut lines = BufReader::new(input).lines();
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        let call = match serde_json::from_str::<EngineCall>(&line) {
            Ok(call) => call,
            Err(e) => {
                let error = AdapterError::Protocol {
                    adapter: adapter.name().to_owned(),
                    message: format!("not an engine call: {e}"),
                };
                write_line(&mut output, &EngineLine::Failed { error }).await?;
                continue;
            }
        };
        serve_one(adapter, call, &mut output).await?;
    }
    Ok(())
}

/// Runs one call, writing its deltas as they come and then its end.
async fn serve_one(
    adapter: &dyn Adapter,
    call: EngineCall,
    output: &mut (impl AsyncWrite + Unpin),
) -> std::io::Result<()> {
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let mut cx = CallCx::new().with_max_response_bytes(call.max_response_bytes);
    if let Some(ms) = call.timeout_ms {
        cx = cx.with_timeout(Duration::from_millis(ms));
    }
    if call.stream {
        cx.on_text = Some(TextSink::new(move |delta| {
            let _ = tx.send(delta.to_owned());
        }));
    }
    let cancel = cx.cancel.clone();
    let run = adapter.call(call.request, &cx);
    tokio::pin!(run);
    let end = loop {
        tokio::select! {
            biased;
            Some(text) = rx.recv() => {
                if let Err(e) = write_line(output, &EngineLine::Text { text }).await {
                    cancel.cancel();
                    return Err(e);
                }
            }
            result = &mut run => break result,
        }
    };
    // Deltas sent just before the end.
    while let Ok(text) = rx.try_recv() {
        write_line(output, &EngineLine::Text { text }).await?;
    }
    let line = match end {
        Ok(response) => EngineLine::Done { response },
        Err(error) => EngineLine::Failed { error },
    };
    write_line(output, &line).await
}

async fn write_line(
    output: &mut (impl AsyncWrite + Unpin),
    line: &EngineLine,
) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(line).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    output.write_all(&bytes).await?;
    output.flush().await
}
