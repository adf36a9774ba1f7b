//! [`LocalError`]: every way the local engine can fail, as one typed enum.
//!
//! The contract: a constraint the engine cannot enforce is an error ([`LocalError::Constraint`]),
//! never a silent fall-back to unconstrained decoding.

use std::path::PathBuf;

/// A failure of the local engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocalError {
    /// The model file does not exist (or is not a file).
    #[error(
        "local model not found at {}: fetch it with `python -m geode fetch-model` (the Python \
         package) or `scripts/fetch-model.sh` (the repository), or set GEODE_LOCAL_MODEL to a \
         GGUF file",
        path.display()
    )]
    ModelMissing {
        /// The path that was looked up.
        path: PathBuf,
    },
    /// A variable that sets the engine up (`GEODE_LOCAL_THREADS`, `GEODE_LOCAL_SLOTS`) has a
    /// bad value (not shown).
    #[error("bad environment variable {name}: {message}")]
    BadEnv {
        /// The variable.
        name: &'static str,
        /// What is wrong.
        message: String,
    },
    /// llama.cpp could not initialise or load the model.
    #[error("cannot load local model {}: {message}", path.display())]
    Load {
        /// The model path.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// llguidance cannot compile the constraint; the call is refused (fails closed).
    #[error("{kind} constraint rejected by llguidance: {reason}")]
    Constraint {
        /// Which constraint: `json_schema`, `choice`, `regex` or `grammar`.
        kind: &'static str,
        /// llguidance's reason.
        reason: String,
    },
    /// Every answer the schema allows is longer than the call's token budget can hold
    /// ([`crate::shortest`]): refused before any token instead of decoding to the budget.
    #[error(
        "json_schema constraint refused before decoding: every answer it allows is at least \
         {bytes} bytes ({cause}), at least {tokens} tokens of this model, more than max_tokens \
         {max_tokens}"
    )]
    AnswerTooLong {
        /// The lower bound on an answer's bytes.
        bytes: u64,
        /// The lower bound on its tokens.
        tokens: u64,
        /// The call's budget.
        max_tokens: u32,
        /// The keyword that makes it long, with its place (`minItems 1000000 at /`).
        cause: String,
    },
    /// The constraint matcher failed while decoding (the output is not trusted).
    #[error("constraint matcher failed during decoding: {reason}")]
    Matcher {
        /// llguidance's reason.
        reason: String,
    },
    /// The prompt does not fit in the context window.
    #[error("prompt has {prompt_tokens} tokens; the context holds {n_ctx}")]
    PromptTooLong {
        /// Tokens in the rendered prompt.
        prompt_tokens: usize,
        /// The context size.
        n_ctx: u32,
    },
    /// The request cannot be rendered into a prompt (e.g. a NUL byte in a message).
    #[error("cannot build the prompt: {message}")]
    Prompt {
        /// What was wrong.
        message: String,
    },
    /// llama.cpp failed while evaluating tokens.
    #[error("llama.cpp decode failed: {message}")]
    Decode {
        /// What failed.
        message: String,
    },
    /// The caller cancelled the call.
    #[error("cancelled")]
    Cancelled,
    /// The call's deadline passed.
    #[error("deadline passed")]
    Timeout,
}
