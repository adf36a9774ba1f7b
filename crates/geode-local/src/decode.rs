//! The decoding loop: evaluate the prompt (reusing the cached prefix), then sample token by token
//! under the constraint's mask.
//!
//! Contract:
//! * Masking is done here with our own llguidance [`Matcher`], not with llama-cpp-2's llguidance
//!   sampler (which ignores matcher errors and would decode unconstrained). Any matcher error is
//!   [`LocalError::Matcher`]: the call fails closed.
//! * Sampling: the mask first, then top-k 40, top-p 0.95, temperature and a seeded draw
//!   (the settings of `local-model.md` §1). A temperature `<= 0` means greedy.
//! * Stops: an end-of-generation token of the model (`<|im_end|>` for SmolLM2; the EOG set comes
//!   from the model, never from token names) is [`FinishReason::EndTurn`]; the token budget or a
//!   full context is [`FinishReason::MaxTokens`]; a stop sequence is
//!   [`FinishReason::StopSequence`] (the sequence is cut from the text).

use crate::error::LocalError;
use geode::llm::adapter::TextSink;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llguidance::Matcher;
use std::time::{Duration, Instant};

/// The default sampling temperature when a request sets none.
pub const DEFAULT_TEMPERATURE: f32 = 0.7;
/// The default seed when a request sets none: runs are reproducible on one build.
pub const DEFAULT_SEED: u32 = 1234;

/// Why a running call must stop early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interruption {
    /// The caller cancelled.
    Cancelled,
    /// The deadline passed.
    Timeout,
}

impl From<Interruption> for LocalError {
    fn from(why: Interruption) -> Self {
        match why {
            Interruption::Cancelled => LocalError::Cancelled,
            Interruption::Timeout => LocalError::Timeout,
        }
    }
}

/// Per-call generation settings.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateOptions {
    /// The most tokens to generate.
    pub max_tokens: u32,
    /// Sampling temperature; `None` is [`DEFAULT_TEMPERATURE`], `<= 0` is greedy.
    pub temperature: Option<f32>,
    /// The sampler's seed.
    pub seed: u32,
    /// Texts that end the answer when generated (cut from the result).
    pub stop_sequences: Vec<String>,
    /// Receives the answer text token by token (whole UTF-8 characters only; with stop
    /// sequences, text that could still become one is held back until it cannot).
    pub on_text: Option<TextSink>,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        Self {
            max_tokens: 256,
            temperature: None,
            seed: DEFAULT_SEED,
            stop_sequences: Vec::new(),
            on_text: None,
        }
    }
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// The model emitted an end-of-generation token.
    EndTurn,
    /// The token budget (or the context window) ran out: the text is truncated.
    MaxTokens,
    /// A stop sequence was generated.
    StopSequence,
}

/// The result of one call.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// The generated text (invalid UTF-8 is replaced).
    pub text: String,
    /// Why generation ended.
    pub finish: FinishReason,
    /// Tokens in the rendered prompt.
    pub prompt_tokens: usize,
    /// Prompt tokens whose KV entries were reused from the previous call.
    pub cached_prompt_tokens: usize,
    /// Tokens generated (the final end-of-generation token not included).
    pub completion_tokens: usize,
    /// Wall time spent evaluating the (uncached part of the) prompt.
    pub prompt_time: Duration,
    /// Wall time spent sampling and evaluating generated tokens.
    pub generation_time: Duration,
}

/// What of the answer was handed to [`GenerateOptions::on_text`] so far.
struct Streamed<'a> {
    sink: Option<&'a TextSink>,
    sent: usize,
    hold: usize,
}

impl<'a> Streamed<'a> {
    fn new(options: &'a GenerateOptions) -> Self {
        Self {
            sink: options.on_text.as_ref(),
            sent: 0,
            hold: options
                .stop_sequences
                .iter()
                .map(String::len)
                .max()
                .unwrap_or(0),
        }
    }

    /// Sends the whole characters of `out` past what was sent (all of it when `last`, else
    /// short of a possible stop sequence's start).
    fn send(&mut self, out: &[u8], last: bool) {
        let Some(sink) = self.sink else { return };
        let end = if last {
            out.len()
        } else {
            out.len().saturating_sub(self.hold)
        };
        if end <= self.sent {
            return;
        }
        let text = match std::str::from_utf8(&out[self.sent..end]) {
            Ok(t) => t,
            Err(e) => {
                let valid = e.valid_up_to();
                std::str::from_utf8(&out[self.sent..self.sent + valid]).unwrap_or_default()
            }
        };
        sink.send(text);
        self.sent += text.len();
    }
}

/// Runs one call on `ctx`; `cached` mirrors the KV cache of sequence 0 and is kept up to date.
pub(crate) fn run(
    model: &LlamaModel,
    ctx: &mut LlamaContext<'_>,
    cached: &mut Vec<LlamaToken>,
    prompt: &[LlamaToken],
    mut matcher: Option<Matcher>,
    options: &GenerateOptions,
    interrupt: &dyn Fn() -> Option<Interruption>,
) -> Result<Generation, LocalError> {
    let n_ctx = ctx.n_ctx();
    let n_ctx_usize = usize::try_from(n_ctx).unwrap_or(usize::MAX);
    if prompt.is_empty() || prompt.len() >= n_ctx_usize {
        return Err(LocalError::PromptTooLong {
            prompt_tokens: prompt.len(),
            n_ctx,
        });
    }
    let started = Instant::now();
    let (reused, mut logits_at) = eval_prompt(ctx, cached, prompt, interrupt)?;
    let prompt_time = started.elapsed();
    let started = Instant::now();

    let budget = usize::try_from(options.max_tokens)
        .unwrap_or(usize::MAX)
        .min(n_ctx_usize - prompt.len());
    let mut sampler = sampler(options);
    let mut batch = LlamaBatch::new(1, 1);
    let mut out: Vec<u8> = Vec::new();
    let mut generated = 0usize;
    let vocab = model.vocab();
    let mut streamed = Streamed::new(options);
    let finish = loop {
        if generated >= budget {
            break FinishReason::MaxTokens;
        }
        if let Some(why) = interrupt() {
            return Err(why.into());
        }
        let mut candidates = LlamaTokenDataArray::from_iter(ctx.candidates_ith(logits_at), false);
        if let Some(m) = matcher.as_mut() {
            let mask = m.compute_mask_or_eos().map_err(matcher_err)?;
            for item in &mut candidates.data {
                if !mask.is_allowed(item.id().0.cast_unsigned()) {
                    item.set_logit(f32::NEG_INFINITY);
                }
            }
        }
        candidates.apply_sampler(&mut sampler);
        let token = candidates
            .selected_token()
            .ok_or_else(|| LocalError::Decode {
                message: "the sampler selected no token".to_owned(),
            })?;
        if let Some(m) = matcher.as_mut() {
            // A stopped matcher (the constraint is complete) only allowed EOS, and consuming
            // into a stopped parser is an error; anything else must be consumed.
            if !m.is_stopped() {
                m.consume_token(token.0.cast_unsigned())
                    .map_err(matcher_err)?;
            } else if !vocab.is_eog(token) {
                return Err(matcher_err(
                    "a token was sampled after the constraint completed",
                ));
            }
        }
        if vocab.is_eog(token) {
            break FinishReason::EndTurn;
        }
        out.extend(vocab.token_to_piece(token, false, None));
        generated += 1;
        if let Some(cut) = stop_sequence_end(&out, &options.stop_sequences) {
            out.truncate(cut);
            break FinishReason::StopSequence;
        }
        streamed.send(&out, false);
        if generated >= budget {
            break FinishReason::MaxTokens;
        }
        batch.clear();
        let pos = i32::try_from(cached.len()).map_err(decode_err)?;
        batch.add(token, pos, &[0], true).map_err(decode_err)?;
        ctx.decode(&mut batch).map_err(decode_err)?;
        cached.push(token);
        logits_at = 0;
    };
    streamed.send(&out, true);
    Ok(Generation {
        text: String::from_utf8_lossy(&out).into_owned(),
        finish,
        prompt_tokens: prompt.len(),
        cached_prompt_tokens: reused,
        completion_tokens: generated,
        prompt_time,
        generation_time: started.elapsed(),
    })
}

/// Evaluates the part of `prompt` the cache does not hold. Returns the reused prefix length and
/// the batch index holding the last prompt token's logits (that token is always evaluated).
fn eval_prompt(
    ctx: &mut LlamaContext<'_>,
    cached: &mut Vec<LlamaToken>,
    prompt: &[LlamaToken],
    interrupt: &dyn Fn() -> Option<Interruption>,
) -> Result<(usize, i32), LocalError> {
    let common = cached
        .iter()
        .zip(prompt)
        .take_while(|(a, b)| a == b)
        .count();
    let mut reused = common.min(prompt.len() - 1);
    let keep = u32::try_from(reused).map_err(decode_err)?;
    if ctx.kv_cache_seq_rm(0, Some(keep), None).is_err() {
        ctx.clear_kv_cache();
        reused = 0;
    }
    cached.truncate(reused);
    let n_batch = usize::try_from(ctx.n_batch()).unwrap_or(512).max(1);
    let rest = &prompt[reused..];
    let mut batch = LlamaBatch::new(n_batch, 1);
    let chunks = rest.chunks(n_batch).count();
    for (i, chunk) in rest.chunks(n_batch).enumerate() {
        if let Some(why) = interrupt() {
            return Err(why.into());
        }
        batch.clear();
        let last_chunk = i + 1 == chunks;
        for (j, &token) in chunk.iter().enumerate() {
            let pos = i32::try_from(cached.len() + j).map_err(decode_err)?;
            let wants_logits = last_chunk && j + 1 == chunk.len();
            batch
                .add(token, pos, &[0], wants_logits)
                .map_err(decode_err)?;
        }
        ctx.decode(&mut batch).map_err(decode_err)?;
        cached.extend_from_slice(chunk);
    }
    let logits_at = i32::try_from(last_index_in_chunk(rest.len(), n_batch)).map_err(decode_err)?;
    Ok((reused, logits_at))
}

/// The index of the last of `len` tokens within its chunk, when evaluated in chunks of `n_batch`.
fn last_index_in_chunk(len: usize, n_batch: usize) -> usize {
    len.saturating_sub(1) % n_batch.max(1)
}

/// The sampler chain for the options (the constraint mask is applied before it).
fn sampler(options: &GenerateOptions) -> LlamaSampler {
    let temperature = options.temperature.unwrap_or(DEFAULT_TEMPERATURE);
    if temperature <= 0.0 || !temperature.is_finite() {
        return LlamaSampler::greedy();
    }
    LlamaSampler::chain_simple([
        LlamaSampler::top_k(40),
        LlamaSampler::top_p(0.95, 1),
        LlamaSampler::temp(temperature),
        LlamaSampler::dist(options.seed),
    ])
}

/// Where the text must be cut if it now contains a stop sequence.
fn stop_sequence_end(out: &[u8], stops: &[String]) -> Option<usize> {
    stops
        .iter()
        .filter(|s| !s.is_empty())
        .filter_map(|s| out.windows(s.len()).position(|w| w == s.as_bytes()))
        .min()
}

fn decode_err(e: impl std::fmt::Display) -> LocalError {
    LocalError::Decode {
        message: e.to_string(),
    }
}

fn matcher_err(e: impl std::fmt::Display) -> LocalError {
    LocalError::Matcher {
        reason: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_sequences_cut_at_the_earliest_match() {
        let stops = vec!["END".to_owned(), "\n\n".to_owned(), String::new()];
        assert_eq!(stop_sequence_end(b"abc", &stops), None);
        assert_eq!(stop_sequence_end(b"ab\n\ncdEND", &stops), Some(2));
        assert_eq!(stop_sequence_end(b"xEND", &stops), Some(1));
    }

    #[test]
    fn last_token_index_within_its_chunk() {
        assert_eq!(last_index_in_chunk(1, 512), 0);
        assert_eq!(last_index_in_chunk(512, 512), 511);
        assert_eq!(last_index_in_chunk(513, 512), 0);
        assert_eq!(last_index_in_chunk(700, 512), 187);
    }

    #[test]
    fn streamed_text_is_whole_characters_and_holds_back_a_possible_stop_sequence() {
        let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let sink_got = got.clone();
        let options = GenerateOptions {
            stop_sequences: vec!["END".to_owned()],
            on_text: Some(TextSink::new(move |t| {
                sink_got.lock().unwrap().push(t.to_owned());
            })),
            ..GenerateOptions::default()
        };
        let mut streamed = Streamed::new(&options);
        let text = "{\"a\": \"é€\"}".as_bytes();
        let mut out = Vec::new();
        // Byte by byte, as tokens may split a character.
        for b in text {
            out.push(*b);
            streamed.send(&out, false);
        }
        streamed.send(&out, true);
        let pieces = got.lock().unwrap().clone();
        assert_eq!(pieces.concat(), "{\"a\": \"é€\"}");
        assert!(pieces.len() > 3, "{pieces:?}");
        // Before the end, the last 3 bytes (a possible "END") were held back: the end sends
        // them, with the character they cut.
        let last = pieces.last().unwrap();
        assert_eq!(last, "€\"}", "{pieces:?}");
    }
}
