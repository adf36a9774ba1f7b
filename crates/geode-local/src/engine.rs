//! [`LocalEngine`]: one GGUF model loaded once, one llama.cpp context with several sequence
//! slots, driven by one decoding thread (`slots`).
//!
//! Contract:
//! * The model is loaded once per engine; the llguidance token environment and parser factory are
//!   built once per engine (~0.1 s) and shared by every call.
//! * Concurrent calls run together, up to [`EngineConfig::slots`] at once, each in its own
//!   sequence; the tokens of all of them are evaluated in one batch per step. Further calls
//!   queue. A waiting or running call polls its cancellation/deadline, so no wait is unbounded.
//! * The KV cache is kept between calls. A new prompt reuses the longest common token prefix with
//!   what any slot holds (earlier prompts and their generated tokens); only the rest is
//!   evaluated. Usage reports the reused tokens as `cached_prompt_tokens`.
//! * Constraints are compiled on the caller's thread; one llguidance cannot compile is refused
//!   with its reason ([`LocalError::Constraint`]).

use crate::constraint::Constraint;
use crate::decode::{GenerateOptions, Generation, Interruption};
use crate::error::LocalError;
use crate::prompt::ChatTurn;
pub use crate::slots::SharedInterrupt;
use crate::slots::{Job, Scheduler, StopFlag};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatTemplate, LlamaModel};
use llguidance::ParserFactory;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// The environment variable naming the GGUF model file.
pub const MODEL_ENV: &str = "GEODE_LOCAL_MODEL";
/// The environment variable overriding the thread count (1 to [`MAX_THREADS`]; default 2).
pub const THREADS_ENV: &str = "GEODE_LOCAL_THREADS";
/// The environment variable overriding the number of sequence slots (calls decoded at once;
/// 1 to [`MAX_SLOTS`]; default 16).
pub const SLOTS_ENV: &str = "GEODE_LOCAL_SLOTS";
/// The most threads: ggml's `GGML_MAX_N_THREADS` (100,000 aborted the engine with a C++
/// exception Rust cannot catch).
pub const MAX_THREADS: u32 = 512;
/// The most slots: llama.cpp's `LLAMA_MAX_SEQ` (1,000,000 failed to create the context with
/// "null reference from llama.cpp", naming nothing).
pub const MAX_SLOTS: u32 = 256;
/// The model file name in the cache directory.
pub const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// How often a waiting caller checks its cancellation and deadline.
const STOP_POLL: Duration = Duration::from_millis(5);

/// Where the model is looked up: `$GEODE_LOCAL_MODEL` when set and non-empty, else
/// `${XDG_CACHE_HOME:-$HOME/.cache}/geode/models/SmolLM2-135M-Instruct.Q4_1.gguf`
/// (the file `scripts/fetch-model.sh` writes).
pub fn default_model_path() -> PathBuf {
    if let Some(p) = std::env::var_os(MODEL_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    cache.join("geode").join("models").join(MODEL_FILE)
}

/// Engine settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineConfig {
    /// The GGUF file.
    pub model_path: PathBuf,
    /// Context window in tokens (prompt + completion).
    pub n_ctx: u32,
    /// CPU threads for prompt evaluation and generation.
    pub threads: i32,
    /// Sequence slots: how many calls are decoded at once (one batch per step); more queue.
    pub slots: u32,
}

impl Default for EngineConfig {
    /// [`default_model_path`], a 4,096-token context, 2 threads (or `$GEODE_LOCAL_THREADS`),
    /// 16 slots (or `$GEODE_LOCAL_SLOTS`).
    ///
    /// llama.cpp's worker threads spin at barriers: on a machine whose cores are busy with other
    /// work, 1 thread can be much faster than 2.
    /// A variable out of its range is ignored here; [`EngineConfig::from_env`] refuses it.
    fn default() -> Self {
        let env = |name, max| bounded_env(name, max).ok().flatten();
        Self {
            model_path: default_model_path(),
            n_ctx: 4096,
            threads: env(THREADS_ENV, MAX_THREADS).map_or(2, |t| i32::try_from(t).unwrap_or(2)),
            slots: env(SLOTS_ENV, MAX_SLOTS).unwrap_or(16),
        }
    }
}

impl EngineConfig {
    /// [`EngineConfig::default`], but a `GEODE_LOCAL_THREADS` or `GEODE_LOCAL_SLOTS` that is
    /// not an integer in its range is an error naming the variable (the documented rule for
    /// variables that override a setting), not a silent default.
    pub fn from_env() -> Result<Self, LocalError> {
        bounded_env(THREADS_ENV, MAX_THREADS)?;
        bounded_env(SLOTS_ENV, MAX_SLOTS)?;
        Ok(Self::default())
    }
}

type Ctx<'a> = LlamaContext<'a>;

self_cell::self_cell!(
    /// The model and the one context that borrows it.
    struct ModelCell {
        owner: LlamaModel,
        #[covariant]
        dependent: Ctx,
    }
);

/// A loaded local model. Share it with `Arc`; concurrent calls are decoded together.
pub struct LocalEngine {
    /// Hands calls to the decoding thread; dropping it ends that thread.
    jobs: Sender<Job>,
    factory: ParserFactory,
    path: PathBuf,
}

impl std::fmt::Debug for LocalEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEngine")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// The llama.cpp backend: initialised once per process (a second init is an error in llama.cpp).
fn backend() -> Result<&'static LlamaBackend, String> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(Clone::clone)
}

impl LocalEngine {
    /// The process-wide engine on [`EngineConfig::default`], loaded on first use. A failed load
    /// is not cached: a later call tries again (e.g. after the model was fetched).
    pub fn shared() -> Result<Arc<LocalEngine>, LocalError> {
        static SHARED: OnceLock<Arc<LocalEngine>> = OnceLock::new();
        static INIT: Mutex<()> = Mutex::new(());
        if let Some(engine) = SHARED.get() {
            return Ok(Arc::clone(engine));
        }
        let _guard = INIT.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(engine) = SHARED.get() {
            return Ok(Arc::clone(engine));
        }
        let engine = Arc::new(Self::load(&EngineConfig::from_env()?)?);
        Ok(Arc::clone(SHARED.get_or_init(|| engine)))
    }

    /// Loads the model, creates the context and the llguidance factory.
    pub fn load(config: &EngineConfig) -> Result<Self, LocalError> {
        let path = config.model_path.clone();
        if !path.is_file() {
            return Err(LocalError::ModelMissing { path });
        }
        let load_err = |message: String| LocalError::Load {
            path: path.clone(),
            message,
        };
        let backend = backend().map_err(load_err)?;
        let model = LlamaModel::load_from_file(backend, &path, &LlamaModelParams::default())
            .map_err(|e| load_err(e.to_string()))?;
        let template = match model.chat_template(None) {
            Ok(t) => t,
            Err(_) => LlamaChatTemplate::new("chatml").map_err(|e| load_err(e.to_string()))?,
        };
        let tok_env = llama_cpp_2::sampling::LlamaSampler::llguidance_tok_env(&model);
        let mut factory = ParserFactory::new_simple(&tok_env)
            .map_err(|e| load_err(format!("llguidance: {e:#}")))?;
        factory.quiet();
        let n_ctx = NonZeroU32::new(config.n_ctx).ok_or_else(|| load_err("n_ctx is 0".into()))?;
        // Out of llama.cpp's ranges the context is not created, or the process aborts.
        if !(1..=i64::from(MAX_THREADS)).contains(&i64::from(config.threads))
            || config.slots > MAX_SLOTS
        {
            return Err(load_err(format!(
                "threads must be 1 to {MAX_THREADS} and slots at most {MAX_SLOTS}"
            )));
        }
        let params = LlamaContextParams::default()
            .with_n_ctx(Some(n_ctx))
            .with_n_batch(512)
            .with_n_threads(config.threads)
            .with_n_threads_batch(config.threads);
        let slots = config.slots.max(1);
        let params = params
            .with_n_seq_max(slots)
            // One cache for all sequences: a shared prefix is stored once.
            .with_kv_unified(true);
        let mut cell = ModelCell::try_new(model, |m| m.new_context(backend, params))
            .map_err(|e| load_err(format!("cannot create context: {e}")))?;
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("geode-decode".to_owned())
            .spawn(move || {
                cell.with_dependent_mut(|model, ctx| {
                    let slots = usize::try_from(slots).unwrap_or(1);
                    Scheduler::new(model, ctx, template, slots).run(&queue);
                });
            })
            .map_err(|e| load_err(format!("cannot start the decoding thread: {e}")))?;
        Ok(Self {
            jobs,
            factory,
            path,
        })
    }

    /// The model file this engine loaded.
    pub fn model_path(&self) -> &Path {
        &self.path
    }

    /// Generates the assistant's answer to `turns` under `constraint`.
    ///
    /// `interrupt` is polled (every few milliseconds) while the call waits for a slot and while
    /// it runs; when it returns an [`Interruption`] the call ends with [`LocalError::Cancelled`]
    /// or [`LocalError::Timeout`]. [`LocalEngine::generate_shared`] avoids the polling.
    pub fn generate(
        &self,
        turns: &[ChatTurn],
        constraint: &Constraint,
        options: &GenerateOptions,
        interrupt: &dyn Fn() -> Option<Interruption>,
    ) -> Result<Generation, LocalError> {
        if let Some(why) = interrupt() {
            return Err(why.into());
        }
        let stop = Arc::new(StopFlag::default());
        let answer = self.submit(turns, constraint, options, Arc::clone(&stop))?;
        loop {
            match answer.recv_timeout(STOP_POLL) {
                Ok(result) => return result,
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(why) = interrupt() {
                        stop.raise(why);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return Err(thread_gone()),
            }
        }
    }

    /// As [`LocalEngine::generate`], but the decoding thread checks `interrupt` itself between
    /// steps, so the calling thread sleeps until the answer (no periodic wake-up competing for
    /// the cores llama.cpp's threads use).
    pub fn generate_shared(
        &self,
        turns: &[ChatTurn],
        constraint: &Constraint,
        options: &GenerateOptions,
        interrupt: SharedInterrupt,
    ) -> Result<Generation, LocalError> {
        if let Some(why) = interrupt() {
            return Err(why.into());
        }
        let stop = Arc::new(StopFlag::with_check(interrupt));
        let answer = self.submit(turns, constraint, options, stop)?;
        answer.recv().map_err(|_| thread_gone())?
    }

    /// Compiles the constraint and hands the call to the decoding thread.
    fn submit(
        &self,
        turns: &[ChatTurn],
        constraint: &Constraint,
        options: &GenerateOptions,
        stop: Arc<StopFlag>,
    ) -> Result<Receiver<Result<Generation, LocalError>>, LocalError> {
        let matcher = constraint.compile(&self.factory, options.max_tokens)?;
        let (reply, answer) = mpsc::channel();
        self.jobs
            .send(Job {
                turns: turns.to_vec(),
                matcher,
                options: options.clone(),
                stop,
                reply,
            })
            .map_err(|_| thread_gone())?;
        Ok(answer)
    }
}

fn thread_gone() -> LocalError {
    LocalError::Decode {
        message: "the decoding thread has stopped".to_owned(),
    }
}

/// The integer from 1 to `max` in the environment variable `name`; `None` when it is unset
/// or empty. Its value is never shown.
fn bounded_env(name: &'static str, max: u32) -> Result<Option<u32>, LocalError> {
    let Some(text) = std::env::var_os(name) else {
        return Ok(None);
    };
    let text = text.to_string_lossy();
    if text.trim().is_empty() {
        return Ok(None);
    }
    match text.trim().parse::<u32>() {
        Ok(n) if (1..=max).contains(&n) => Ok(Some(n)),
        _ => Err(LocalError::BadEnv {
            name,
            message: format!("must be an integer from 1 to {max}"),
        }),
    }
}
