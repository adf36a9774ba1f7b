//! Entry functions of geode's fuzz targets: one module per target, each with one `run(&[u8])`.
//!
//! A target in `fuzz_targets/` only calls its `run`. Every `run` turns the bytes into the input of
//! one geode entry point, calls it, and asserts the invariants that hold for every input (not
//! only "does not crash"): a panic is a finding. The same functions replay the committed seeds in
//! `seeds/<target>/` on the stable toolchain (`crates/geode/tests/fuzz_replay.rs` includes this
//! directory as a module), so they use geode's public API only.
//!
//! | target | entry point | invariants |
//! |---|---|---|
//! | [`extract`] | `schema::extract` | spans are ordered, disjoint, braced and match the byte-by-byte rule; what is returned parses and is the last span that does |
//! | [`schema`] | `CompiledSchema::compile` + `validate` | a typed error or a validator; `is_valid` agrees with `validate`; validation is deterministic |
//! | [`strict_placement`] | `check_strict`, `project`, `preflight`, `place_schema` | deterministic; reasons and residuals point into the schema; the placement follows its decision table |
//! | [`tape`] | `Tape::parse`, `check_strict_text`, `extract_answer_tape` | the tape takes what serde_json takes and reads the same value; the text's strict verdict and the extracted answer equal the `Value` path's |
//! | [`sse`] | `SseParser`, `SseReader` | the events do not depend on how the bytes are chunked; the reader ends in a typed error |
//! | [`responses`], [`messages`], [`chat`] | each wire family's reply parser (whole body and stream) | a response or a typed error whose text is one line; deterministic |
//! | [`worker_request`] | `parse_request_line`, `WorkerResult` serde | what parses survives a JSON round trip unchanged |
//! | [`claude_cli`], [`codex_cli`] | the CLI output readers | a response or a typed one-line error; the answer is the structured output when there is one |

pub mod chat;
pub mod claude_cli;
pub mod codex_cli;
pub mod extract;
pub mod messages;
pub mod responses;
pub mod schema;
pub mod sse;
pub mod strict_placement;
pub mod tape;
pub mod worker_request;

mod check;
