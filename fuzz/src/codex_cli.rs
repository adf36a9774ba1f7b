//! The `codex` CLI output reader (`geode::llm::adapters::codex_cli`).

use super::check::{one_line, same};
use geode::llm::adapters::codex_cli::{Outcome, interpret};

/// Reads `data` (invalid UTF-8 replaced) as codex's `--json` event stream.
///
/// Invariants: deterministic; a failure is a typed one-line error; appending a line that is not
/// JSON changes nothing.
pub fn run(data: &[u8]) {
    let stdout = String::from_utf8_lossy(data);
    let outcome = interpret(&stdout);
    same(&outcome, &interpret(&stdout), "the codex reader");
    same(
        &outcome,
        &interpret(&format!("{stdout}\nnot json\n")),
        "a trailing non-JSON line",
    );
    match outcome {
        Outcome::Failed(e) => one_line(&e),
        Outcome::Answer(_) | Outcome::NoTerminal => {}
    }
}
