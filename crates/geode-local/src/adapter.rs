//! [`LocalAdapter`]: the `local` adapter, a [`LocalEngine`] behind geode's [`Adapter`] trait.
//!
//! Contract:
//! * `wire_mode` is [`StructuredOutputMode::Constrained`] for a schema (and every call with a
//!   schema or a text constraint reports `wire.mode = constrained`), `None` otherwise.
//! * The engine runs on a blocking thread (`spawn_blocking`); cancellation and the deadline of
//!   the [`CallCx`] are checked while queued for the model and between tokens.
//! * A constraint llguidance cannot compile is [`AdapterError::Unsupported`] with llguidance's
//!   reason, before any token is generated (fail closed). A missing model is
//!   [`AdapterError::Config`] naming the path and how to fetch it.
//! * The caller's tools are called in the grammar's format ([`crate::tool_call`]): a call is
//!   always well-formed, names an offered tool and matches its parameter schema; it comes back
//!   as a tool use (stop reason `tool_use`), and its text is never streamed as answer text.
//! * Sampling: `temperature` from the request (default 0.7, `<= 0` greedy), seed from
//!   `metadata.seed` (an unsigned integer; default 1234, so calls are reproducible on one build).
//! * A schema is decoded narrowed ([`crate::tighten`]), to fit the request's `max_tokens`
//!   ([`crate::tighten::tighten_within`]); the narrowings are the response's
//!   `wire.transforms`, so the ledger names them.
//! * The answer is not validated here; the worker validates it.

use crate::constraint::Constraint;
use crate::decode::{DEFAULT_SEED, FinishReason, GenerateOptions, Interruption};
use crate::engine::{EngineConfig, LocalEngine, SharedInterrupt};
use crate::error::LocalError;
use crate::prompt::turns_from_request;
use geode::llm::adapter::Adapter;
use geode::llm::call::{AdapterError, CallCx};
use geode::llm::request::{AdapterCallRequest, AdapterResponse, WireReport};
use geode::vocab::{StopReason, StructuredOutputMode, Usage};
use std::sync::{Arc, OnceLock};

/// The adapter's registry name.
pub const ADAPTER_NAME: &str = "local";

/// Where the adapter gets its engine.
#[derive(Debug, Clone)]
enum EngineSource {
    /// [`LocalEngine::shared`], loaded on the first call.
    Shared,
    /// An engine the caller loaded.
    Given(Arc<LocalEngine>),
    /// An engine loaded from this configuration on the first call that succeeds in loading it
    /// (a failed load is reported by the call and tried again by the next one).
    Lazy {
        config: EngineConfig,
        loaded: Arc<OnceLock<Arc<LocalEngine>>>,
    },
}

/// The `local` adapter.
#[derive(Debug, Clone)]
pub struct LocalAdapter {
    source: EngineSource,
}

impl LocalAdapter {
    /// An adapter on the process-wide engine ([`LocalEngine::shared`]), loaded lazily on the
    /// first call (a missing model is reported by that call).
    pub fn shared() -> Self {
        Self {
            source: EngineSource::Shared,
        }
    }

    /// An adapter on an engine the caller loaded.
    pub fn new(engine: Arc<LocalEngine>) -> Self {
        Self {
            source: EngineSource::Given(engine),
        }
    }

    /// An adapter that loads its own engine from `config` on the first call (a missing or
    /// corrupt model is reported by that call, as with [`LocalAdapter::shared`]).
    pub fn with_config(config: EngineConfig) -> Self {
        Self {
            source: EngineSource::Lazy {
                config,
                loaded: Arc::new(OnceLock::new()),
            },
        }
    }

    fn engine(&self) -> Result<Arc<LocalEngine>, LocalError> {
        match &self.source {
            EngineSource::Shared => LocalEngine::shared(),
            EngineSource::Given(engine) => Ok(Arc::clone(engine)),
            EngineSource::Lazy { config, loaded } => {
                if let Some(engine) = loaded.get() {
                    return Ok(Arc::clone(engine));
                }
                let engine = Arc::new(LocalEngine::load(config)?);
                Ok(Arc::clone(loaded.get_or_init(|| engine)))
            }
        }
    }
}

#[async_trait::async_trait]
impl Adapter for LocalAdapter {
    fn spec(&self) -> Option<&'static geode::llm::registry::AdapterSpec> {
        geode::llm::registry::spec(ADAPTER_NAME)
    }

    async fn call(
        &self,
        req: AdapterCallRequest,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        let constraint = Constraint::from_request(&req).map_err(to_adapter_error)?;
        let tools = matches!(constraint, Constraint::Tools { .. });
        let transforms = constraint.decoding_transforms(req.max_tokens);
        let options = GenerateOptions {
            max_tokens: req.max_tokens,
            temperature: req.temperature,
            seed: seed_from_metadata(&req),
            stop_sequences: req.stop_sequences.clone(),
            on_text: match &cx.on_text {
                Some(sink) if tools => Some(crate::tool_call::Hold::wrap(sink.clone())),
                sink => sink.clone(),
            },
        };
        let turns = turns_from_request(&req);
        let source = self.clone();
        let cancel = cx.cancel.clone();
        let deadline = cx.deadline.map(tokio::time::Instant::into_std);
        let job = tokio::task::spawn_blocking(move || {
            let interrupt: SharedInterrupt = Arc::new(move || {
                if cancel.is_cancelled() {
                    Some(Interruption::Cancelled)
                } else if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                    Some(Interruption::Timeout)
                } else {
                    None
                }
            });
            let engine = source.engine()?;
            engine.generate_shared(&turns, &constraint, &options, interrupt)
        });
        let generation = cx
            .run(ADAPTER_NAME, async {
                match job.await {
                    Ok(result) => result.map_err(to_adapter_error),
                    Err(e) => Err(AdapterError::RunFailed {
                        adapter: ADAPTER_NAME.to_owned(),
                        kind: "engine_panic".to_owned(),
                        message: e.to_string(),
                    }),
                }
            })
            .await?;
        let constrained = req.response_schema.is_some() || req.text_constraint.is_some();
        let call = tools
            .then(|| crate::tool_call::parse(&generation.text))
            .flatten();
        let (text, tool_uses) = match call {
            Some(call) => (String::new(), vec![call]),
            None => (generation.text, Vec::new()),
        };
        Ok(AdapterResponse {
            stop_reason: match generation.finish {
                _ if !tool_uses.is_empty() => StopReason::ToolUse,
                FinishReason::EndTurn => StopReason::EndTurn,
                FinishReason::MaxTokens => StopReason::MaxTokens,
                FinishReason::StopSequence => StopReason::StopSequence,
            },
            text,
            tool_uses,
            usage: Usage {
                input_tokens: count(generation.prompt_tokens),
                output_tokens: count(generation.completion_tokens),
                cached_input_tokens: count(generation.cached_prompt_tokens),
                cost_usd: None,
            },
            structured: None,
            wire: WireReport {
                mode: if constrained {
                    StructuredOutputMode::Constrained
                } else {
                    StructuredOutputMode::None
                },
                transforms,
                ..WireReport::default()
            },
        })
    }
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// `metadata.seed` when it is an unsigned integer that fits 32 bits, else [`DEFAULT_SEED`].
fn seed_from_metadata(req: &AdapterCallRequest) -> u32 {
    req.metadata
        .get("seed")
        .and_then(serde_json::Value::as_u64)
        .and_then(|s| u32::try_from(s).ok())
        .unwrap_or(DEFAULT_SEED)
}

/// Maps an engine error to geode's adapter error (one line, no secrets: there are none here).
pub fn to_adapter_error(e: LocalError) -> AdapterError {
    let adapter = ADAPTER_NAME.to_owned();
    let message = e.to_string();
    match e {
        LocalError::ModelMissing { .. } | LocalError::Load { .. } | LocalError::BadEnv { .. } => {
            AdapterError::Config { adapter, message }
        }
        LocalError::Constraint { .. }
        | LocalError::AnswerTooLong { .. }
        | LocalError::PromptTooLong { .. }
        | LocalError::Prompt { .. } => AdapterError::Unsupported { adapter, message },
        LocalError::Matcher { .. } => AdapterError::RunFailed {
            adapter,
            kind: "constraint_matcher".to_owned(),
            message,
        },
        LocalError::Decode { .. } => AdapterError::RunFailed {
            adapter,
            kind: "decode".to_owned(),
            message,
        },
        LocalError::Cancelled => AdapterError::Cancelled { adapter },
        LocalError::Timeout => AdapterError::Timeout { adapter },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use geode::llm::request::Message;
    use geode::schema::ResponseSchema;
    use geode::vocab::ErrorKind;
    use serde_json::json;
    use std::path::PathBuf;

    #[test]
    fn seed_comes_from_metadata() {
        let mut req = AdapterCallRequest::new("", vec![Message::user("hi")]);
        assert_eq!(seed_from_metadata(&req), DEFAULT_SEED);
        req.metadata.insert("seed".to_owned(), json!(7));
        assert_eq!(seed_from_metadata(&req), 7);
        req.metadata.insert("seed".to_owned(), json!("x"));
        assert_eq!(seed_from_metadata(&req), DEFAULT_SEED);
    }

    #[test]
    fn wire_mode_is_constrained_only_with_a_schema() {
        let a = LocalAdapter::shared();
        let s = ResponseSchema::from_value(json!({"type": "object"})).unwrap();
        assert_eq!(a.wire_mode(Some(&s)), StructuredOutputMode::Constrained);
        assert_eq!(a.wire_mode(None), StructuredOutputMode::None);
        assert!(a.supports_tools());
        assert_eq!(a.name(), "local");
    }

    #[test]
    fn missing_model_is_a_config_error_saying_how_to_fetch_it() {
        let e = to_adapter_error(LocalError::ModelMissing {
            path: PathBuf::from("/nowhere/m.gguf"),
        });
        let text = e.to_string();
        assert_eq!(e.kind(), ErrorKind::Config);
        assert!(text.contains("/nowhere/m.gguf"), "{text}");
        assert!(text.contains("scripts/fetch-model.sh"), "{text}");
        assert!(text.contains("python -m geode fetch-model"), "{text}");
    }

    #[tokio::test]
    async fn a_configured_engine_that_cannot_load_fails_each_call_typed() {
        let path = PathBuf::from("/nowhere/geode-missing.gguf");
        let adapter = LocalAdapter::with_config(EngineConfig {
            model_path: path.clone(),
            ..EngineConfig::default()
        });
        for _ in 0..2 {
            let req = AdapterCallRequest::new("", vec![Message::user("hi")]);
            let e = adapter.call(req, &CallCx::new()).await.err();
            let e = e.expect("a missing model cannot answer");
            assert_eq!(e.kind(), ErrorKind::Config);
            assert!(e.to_string().contains("/nowhere/geode-missing.gguf"), "{e}");
        }
    }

    #[test]
    fn rejected_constraint_is_unsupported_with_the_reason() {
        let e = to_adapter_error(LocalError::Constraint {
            kind: "json_schema",
            reason: "oneOf constraints are not supported".to_owned(),
        });
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert!(e.to_string().contains("oneOf"));
    }
}
