//! [`LocalEngine`]: one GGUF model loaded once, one llama.cpp context, calls serialised.
//!
//! Contract:
//! * The model is loaded once per engine; the llguidance token environment and parser factory are
//!   built once per engine (~0.1 s) and shared by every call.
//! * Calls are serialised on a mutex around the single context. A waiting call polls the lock and
//!   honours its cancellation/deadline while it waits, so no wait is unbounded.
//! * The KV cache is kept between calls. A new prompt reuses the longest common token prefix with
//!   what the cache holds (the previous prompt and its generated tokens); only the rest is
//!   evaluated. Usage reports the reused tokens as `cached_prompt_tokens`.
//! * Constraints are compiled before the lock is taken; one llguidance cannot compile is refused
//!   with its reason ([`LocalError::Constraint`]).

use crate::constraint::Constraint;
use crate::decode::{self, GenerateOptions, Generation, Interruption};
use crate::error::LocalError;
use crate::prompt::{self, ChatTurn};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatTemplate, LlamaModel};
use llama_cpp_2::token::LlamaToken;
use llguidance::ParserFactory;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, TryLockError};
use std::time::Duration;

/// The environment variable naming the GGUF model file.
pub const MODEL_ENV: &str = "GEODE_LOCAL_MODEL";
/// The environment variable overriding the thread count (a positive integer; default 2).
pub const THREADS_ENV: &str = "GEODE_LOCAL_THREADS";
/// The model file name in the cache directory.
pub const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// How long a queued call sleeps between attempts to take the context.
const LOCK_POLL: Duration = Duration::from_millis(2);

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
}

impl Default for EngineConfig {
    /// [`default_model_path`], a 4,096-token context, 2 threads (or `$GEODE_LOCAL_THREADS`).
    ///
    /// llama.cpp's worker threads spin at barriers: on a machine whose cores are busy with other
    /// work, 1 thread can be much faster than 2.
    fn default() -> Self {
        let threads = std::env::var(THREADS_ENV)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
            .filter(|t| *t > 0)
            .unwrap_or(2);
        Self {
            model_path: default_model_path(),
            n_ctx: 4096,
            threads,
        }
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

/// The mutable state behind the lock.
struct State {
    cell: ModelCell,
    /// The tokens whose keys/values are in the KV cache (sequence 0, positions 0..len).
    cached: Vec<LlamaToken>,
}

/// A loaded local model. Share it with `Arc`; calls are serialised internally.
pub struct LocalEngine {
    state: Mutex<State>,
    factory: ParserFactory,
    template: LlamaChatTemplate,
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
        let engine = Arc::new(Self::load(&EngineConfig::default())?);
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
        let params = LlamaContextParams::default()
            .with_n_ctx(Some(n_ctx))
            .with_n_batch(512)
            .with_n_threads(config.threads)
            .with_n_threads_batch(config.threads);
        let cell = ModelCell::try_new(model, |m| m.new_context(backend, params))
            .map_err(|e| load_err(format!("cannot create context: {e}")))?;
        Ok(Self {
            state: Mutex::new(State {
                cell,
                cached: Vec::new(),
            }),
            factory,
            template,
            path,
        })
    }

    /// The model file this engine loaded.
    pub fn model_path(&self) -> &Path {
        &self.path
    }

    /// Generates the assistant's answer to `turns` under `constraint`.
    ///
    /// `interrupt` is polled while waiting for the context and between tokens; when it returns
    /// an [`Interruption`] the call ends with [`LocalError::Cancelled`] or [`LocalError::Timeout`].
    pub fn generate(
        &self,
        turns: &[ChatTurn],
        constraint: &Constraint,
        options: &GenerateOptions,
        interrupt: &dyn Fn() -> Option<Interruption>,
    ) -> Result<Generation, LocalError> {
        let matcher = constraint.compile(&self.factory)?;
        let mut guard = self.lock(interrupt)?;
        let state = &mut *guard;
        let cached = &mut state.cached;
        let template = &self.template;
        let result = state.cell.with_dependent_mut(|model, ctx| {
            let text = prompt::render(model, template, turns)?;
            let tokens = model.vocab().tokenize(text.as_bytes(), true, true);
            decode::run(model, ctx, cached, &tokens, matcher, options, interrupt)
        });
        if result.is_err() {
            // The cache content is uncertain after a failed decode: start afresh next time.
            state.reset_cache();
        }
        result
    }

    /// Takes the context, polling so that cancellation and the deadline are honoured while queued.
    fn lock(
        &self,
        interrupt: &dyn Fn() -> Option<Interruption>,
    ) -> Result<MutexGuard<'_, State>, LocalError> {
        loop {
            match self.state.try_lock() {
                Ok(guard) => return Ok(guard),
                Err(TryLockError::Poisoned(poisoned)) => {
                    // A panic mid-call left the KV cache in an unknown state: clear it.
                    let mut guard = poisoned.into_inner();
                    guard.reset_cache();
                    self.state.clear_poison();
                    return Ok(guard);
                }
                Err(TryLockError::WouldBlock) => {
                    if let Some(why) = interrupt() {
                        return Err(why.into());
                    }
                    std::thread::sleep(LOCK_POLL);
                }
            }
        }
    }
}

impl State {
    fn reset_cache(&mut self) {
        self.cached.clear();
        self.cell.with_dependent_mut(|_, ctx| ctx.clear_kv_cache());
    }
}
