//! The live one-line progress of `geode run` on a terminal: adapter, model, tokens so far and
//! elapsed time, shown once a call has run for [`SHOW_AFTER`] and cleared when it ends. Nothing
//! is drawn when stderr is not a terminal, so piped output stays exactly the ledger.

use geode::llm::call::TextSink;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a call runs before the line appears (a quick answer draws nothing).
pub(crate) const SHOW_AFTER: Duration = Duration::from_secs(1);

/// The progress line of one `geode run`; dropping it clears it.
pub(crate) struct Progress {
    deltas: Arc<AtomicU64>,
    ticker: tokio::task::JoinHandle<()>,
    bar: ProgressBar,
}

impl Progress {
    /// Starts the line on stderr when stderr is a terminal; `None` otherwise.
    pub(crate) fn on_terminal(adapter: &str, model: &str) -> Option<Progress> {
        std::io::stderr()
            .is_terminal()
            .then(|| Progress::start(adapter, model, ProgressDrawTarget::stderr()))
    }

    fn start(adapter: &str, model: &str, target: ProgressDrawTarget) -> Progress {
        let deltas = Arc::new(AtomicU64::new(0));
        let bar = ProgressBar::with_draw_target(None, target)
            .with_style(ProgressStyle::default_spinner());
        let label = match model {
            "" => adapter.to_owned(),
            m => format!("{adapter} · {m}"),
        };
        let ticker = tokio::spawn({
            let (deltas, bar) = (deltas.clone(), bar.clone());
            async move {
                let started = Instant::now();
                tokio::time::sleep(SHOW_AFTER).await;
                bar.enable_steady_tick(Duration::from_millis(120));
                loop {
                    bar.set_message(line(
                        &label,
                        deltas.load(Ordering::Relaxed),
                        started.elapsed(),
                    ));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        });
        Progress {
            deltas,
            ticker,
            bar,
        }
    }

    /// Counts each streamed piece of answer text (one per token on every streaming wire).
    pub(crate) fn sink(&self) -> TextSink {
        let deltas = self.deltas.clone();
        TextSink::new(move |_| {
            deltas.fetch_add(1, Ordering::Relaxed);
        })
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.ticker.abort();
        self.bar.finish_and_clear();
    }
}

/// `openai-payg · gpt-4.1 · 37 tokens · 2.4s`.
fn line(label: &str, tokens: u64, elapsed: Duration) -> String {
    format!("{label} · {tokens} tokens · {:.1}s", elapsed.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_adapter_model_tokens_and_elapsed() {
        assert_eq!(
            line("local · smollm2", 12, Duration::from_millis(2_340)),
            "local · smollm2 · 12 tokens · 2.3s"
        );
    }

    #[tokio::test]
    async fn the_sink_counts_deltas() {
        let p = Progress::start("local", "", ProgressDrawTarget::hidden());
        let sink = p.sink();
        for piece in ["{\"a\"", ":", "1}"] {
            sink.send(piece);
        }
        assert_eq!(p.deltas.load(Ordering::Relaxed), 3);
    }
}
