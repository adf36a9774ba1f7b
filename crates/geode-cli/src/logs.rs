//! Log lines of the long-running commands (`geode serve`, `geode batch`), and of any command
//! that uses the response cache, on stderr.
//!
//! Without a subscriber the library's warnings (Redis unreachable, a task dead-lettered, a
//! garbage entry skipped) went nowhere. Every line passes through the secret scrubber before
//! it is written, as the CLI's error line does, so a key or a Redis password inside an error
//! never reaches the terminal. `GEODE_LOG` sets the filter (`tracing` directives; default
//! `warn,geode::batch=info`).

use std::io::{IsTerminal, Write};

/// Installs the stderr subscriber (once; later calls do nothing).
pub(crate) fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("GEODE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,geode::batch=info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(|| ScrubbedLine(Vec::new()))
        .try_init();
}

/// One formatted event, buffered and written to stderr scrubbed, in one write, when dropped.
struct ScrubbedLine(Vec<u8>);

impl Write for ScrubbedLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for ScrubbedLine {
    fn drop(&mut self) {
        let line = geode::secret::scrub(&String::from_utf8_lossy(&self.0));
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }
}
