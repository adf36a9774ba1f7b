//! geode's `local` adapter: a GGUF model run in-process by llama.cpp (via `llama-cpp-2`), with
//! llguidance constrained decoding, so the output cannot leave the constraint. GEODE, the
//! reference Python system (docs/reference.md), has no local adapter: this one is geode's own.
//!
//! | module | job |
//! |---|---|
//! | [`engine`] | [`LocalEngine`]: the model loaded once, one context, its decoding thread, KV prefix reuse |
//! | `slots` | the scheduler: concurrent calls in sequence slots, stepped together in one batch |
//! | [`tighten`] | the caller's schema narrowed for decoding (closed objects, compact whitespace, bounded strings, lists and map keys, narrowed further until its longest answer fits the call's `max_tokens`; keywords llguidance cannot compile left to validation), each change named |
//! | [`constraint`] | [`Constraint`]: JSON Schema, choice, regex, Lark grammar → llguidance matcher (fail closed) |
//! | [`shortest`] | a lower bound on any answer's length: a schema whose shortest answer cannot fit `max_tokens` is refused before decoding |
//! | [`prompt`] | chat turns from a request, rendered with the GGUF's chat template |
//! | [`decode`] | the masked sampling loop, stop reasons, usage |
//! | `closing` | in the last tokens of the budget, the mask's closing tokens preferred |
//! | [`adapter`] | [`LocalAdapter`]: geode's `Adapter` trait on top of the engine |
//! | [`error`] | [`LocalError`] |
//!
//! Design choices:
//! * **One context, several sequences.** A [`LocalEngine`] owns one llama.cpp context with
//!   [`EngineConfig::slots`] sequences, driven by one decoding thread: concurrent calls decode
//!   together, the next token of each in one batch per step (one matrix pass costs little more
//!   for 8 tokens than for 1 on this small model), each under its own llguidance matcher. More
//!   calls than slots queue (honouring their cancellation/deadline while queued). On two cores a
//!   second context would only split the same CPU.
//! * **Prefix reuse.** The KV cache survives between calls. A new prompt reuses the longest
//!   common token prefix held by any slot (typically the system prompt and the shared start of
//!   the user turn; all of it when the same prompt is sent again), sharing those cells rather
//!   than computing them again, so only the new tail is evaluated. Numerically a reused prefix,
//!   or a batch shared with other calls, can differ from a fresh evaluation in the last bits, so
//!   byte-identical outputs are only expected for identical call sequences.
//! * **Fail closed.** Masking uses our own llguidance `Matcher` (not llama-cpp-2's sampler, which
//!   ignores matcher errors). A constraint llguidance cannot compile, or a matcher error while
//!   decoding, is an error, never unconstrained output.
//! * **Choice** is compiled as a Lark alternation of JSON-string literals
//!   (`start: "accept" | "reject"`): the answer is exactly one option, unquoted.
//! * **Sampling** follows the settings the runtime was chosen with (docs/local-model.md):
//!   temperature 0.7 unless the request sets one (`<= 0` is greedy), top-k 40, top-p 0.95, a
//!   fixed default seed (1234) so runs are reproducible on one build. Two threads.
//!
//! The model comes from `GEODE_LOCAL_MODEL` or the cache path written by
//! `scripts/fetch-model.sh` ([`engine::default_model_path`]).

pub mod adapter;
mod closing;
pub mod constraint;
pub mod decode;
pub mod engine;
pub mod error;
pub mod prompt;
pub mod shortest;
mod slots;
pub mod tighten;
pub mod tool_call;

pub use adapter::LocalAdapter;
pub use constraint::Constraint;
pub use decode::{FinishReason, GenerateOptions, Generation, Interruption};
pub use engine::{EngineConfig, LocalEngine, default_model_path};
pub use error::LocalError;
pub use prompt::{ChatRole, ChatTurn};
pub use slots::IDLE_KEEP_TOKENS;

/// A [`geode::ClientBuilder`] that can build the `local` adapter: the process-wide
/// engine ([`LocalAdapter::shared`]), loaded once on the first call and reused by every call of
/// the client and its clones. Add `.adapter("local")` to use it for every call (otherwise
/// routing picks it when no provider is configured).
pub fn client_builder() -> geode::ClientBuilder {
    geode::Client::builder().adapter_factory("local", || {
        std::sync::Arc::new(LocalAdapter::shared())
            as std::sync::Arc<dyn geode::llm::adapter::Adapter>
    })
}

/// [`client_builder`] with `.adapter("local")`: every call runs on the embedded model, whatever
/// providers the environment configures.
///
/// ```no_run
/// # async fn demo() -> Result<(), geode::Error> {
/// let client = geode_local::local_client_builder().max_tokens(50).build()?;
/// let answer = client.choose(&["yes", "no"], "Is water wet?").await?;
/// println!("{}", answer.value);
/// # Ok(()) }
/// ```
pub fn local_client_builder() -> geode::ClientBuilder {
    client_builder().adapter("local")
}

/// A whole engine process's job (the `geode-engine` binary, and the Python package's
/// `geode._engine.main`): serves engine calls ([`geode::llm::engine::serve`]) from stdin to
/// stdout with the process-wide model until stdin closes. An error means the runtime could not
/// start or the parent went away (stdout closed).
pub fn serve_stdio() -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let adapter = LocalAdapter::shared();
    runtime.block_on(geode::llm::engine::serve(
        &adapter,
        tokio::io::stdin(),
        tokio::io::stdout(),
    ))
}
