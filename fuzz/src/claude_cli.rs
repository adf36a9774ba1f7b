//! The `claude` CLI output reader (`geode::llm::adapters::claude_cli`).

use super::check::{one_line, same};
use geode::llm::adapters::claude_cli::{interpret, last_result};

/// Reads `data` (invalid UTF-8 replaced) as the CLI's stdout, with and without a schema.
///
/// Invariants: deterministic; a failure is a typed one-line error; with a schema the answer is
/// the structured output (its JSON text), never free text.
pub fn run(data: &[u8]) {
    let stdout = String::from_utf8_lossy(data);
    for schema_requested in [false, true] {
        let read = || last_result(&stdout).map(|r| interpret(r, schema_requested));
        let outcome = read();
        same(&outcome, &read(), "the claude reader");
        match outcome {
            Some(Err(e)) => one_line(&e),
            Some(Ok(resp)) if schema_requested => match &resp.structured {
                Some(value) => assert_eq!(resp.text, value.to_string()),
                None => panic!("an answer to a schema request without structured output"),
            },
            Some(Ok(_)) | None => {}
        }
    }
}
