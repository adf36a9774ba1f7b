//! One call's decoding: sample token by token under the constraint's mask (`Sequence`); the
//! scheduler (`slots`) evaluates prompts and steps many sequences in one batch.
//!
//! Contract:
//! * Masking is done here with our own llguidance [`Matcher`], not with llama-cpp-2's llguidance
//!   sampler (which ignores matcher errors and would decode unconstrained). Any matcher error is
//!   [`LocalError::Matcher`]: the call fails closed.
//! * Sampling: the mask first, then top-k 40, top-p 0.95, temperature and a seeded draw
//!   (the settings the runtime was chosen with, docs/local-model.md). A temperature `<= 0`
//!   means greedy. In the last tokens of the budget the mask's tokens that close what is open
//!   are preferred (`closing`).
//! * Stops: an end-of-generation token of the model (`<|im_end|>` for SmolLM2; the EOG set comes
//!   from the model, never from token names) is [`FinishReason::EndTurn`]; the token budget or a
//!   full context is [`FinishReason::MaxTokens`]; a stop sequence is
//!   [`FinishReason::StopSequence`] (the sequence is cut from the text).

use crate::closing::{Tiers, reserve};
use crate::error::LocalError;
use geode::llm::call::TextSink;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::vocab::LlamaVocab;
use llguidance::Matcher;
use std::time::{Duration, Instant};
use toktrie::SimpleVob;

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
struct Streamed {
    sink: Option<TextSink>,
    sent: usize,
    hold: usize,
}

impl Streamed {
    fn new(options: &GenerateOptions) -> Self {
        Self {
            sink: options.on_text.clone(),
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
        let Some(sink) = &self.sink else { return };
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

/// What a sequence does after a sampling step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Evaluate this token and sample again from its logits.
    Feed(LlamaToken),
    /// The call is over.
    Done(FinishReason),
}

/// One call being decoded: its constraint, sampler, text so far and timings. The scheduler
/// ([`crate::slots`]) evaluates its prompt and feeds it the logits of each step.
pub(crate) struct Sequence {
    matcher: Option<Matcher>,
    sampler: LlamaSampler,
    /// Greedy sampling (temperature `<= 0`).
    greedy: bool,
    stop_sequences: Vec<String>,
    streamed: Streamed,
    out: Vec<u8>,
    generated: usize,
    budget: usize,
    prompt_tokens: usize,
    reused: usize,
    started: Instant,
    prompt_time: Option<Duration>,
    /// The closing tiers of the vocabulary, once the budget's reserve is reached.
    tiers: Option<Tiers>,
}

impl Sequence {
    /// A call on a prompt of `prompt_tokens` tokens of which `reused` come from the cache, in a
    /// context of `n_ctx` tokens (the budget never runs past it). The prompt clock starts now.
    pub(crate) fn new(
        matcher: Option<Matcher>,
        options: &GenerateOptions,
        prompt_tokens: usize,
        reused: usize,
        n_ctx: usize,
    ) -> Self {
        Self {
            matcher,
            sampler: sampler(options),
            greedy: is_greedy(options),
            stop_sequences: options.stop_sequences.clone(),
            streamed: Streamed::new(options),
            out: Vec::new(),
            generated: 0,
            budget: usize::try_from(options.max_tokens)
                .unwrap_or(usize::MAX)
                .min(n_ctx.saturating_sub(prompt_tokens)),
            prompt_tokens,
            reused,
            started: Instant::now(),
            prompt_time: None,
            tiers: None,
        }
    }

    /// Marks the prompt as evaluated: the prompt clock stops, the generation clock starts.
    pub(crate) fn prompt_done(&mut self) {
        if self.prompt_time.is_none() {
            self.prompt_time = Some(self.started.elapsed());
            self.started = Instant::now();
        }
    }

    /// One step: masks `logits` (the distribution after the last evaluated token) with the
    /// constraint, samples, and says what comes next. A matcher error fails the call closed.
    pub(crate) fn step(&mut self, vocab: &LlamaVocab, logits: &[f32]) -> Result<Next, LocalError> {
        if self.generated >= self.budget {
            return Ok(Next::Done(FinishReason::MaxTokens));
        }
        if self.greedy && self.matcher.is_none() {
            // Unconstrained greedy: the highest logit, without building a candidate array.
            let token = argmax(logits).ok_or_else(|| LocalError::Decode {
                message: "the model returned no logits".to_owned(),
            })?;
            return Ok(self.accept(vocab, token));
        }
        let closing = self.budget - self.generated <= reserve(self.budget);
        let mut candidates = match self.matcher.as_mut() {
            Some(m) => {
                let mask = m.compute_mask_or_eos().map_err(matcher_err)?;
                if closing {
                    let tiers = self.tiers.get_or_insert_with(|| Tiers::of(vocab));
                    candidates_of(logits, tiers.narrow(&mask))?
                } else {
                    allowed_candidates(logits, &mask)?
                }
            }
            None => LlamaTokenDataArray::new(
                logits
                    .iter()
                    .zip(0i32..)
                    .map(|(&logit, id)| LlamaTokenData::new(LlamaToken(id), logit, 0.0))
                    .collect(),
                false,
            ),
        };
        candidates.apply_sampler(&mut self.sampler);
        let token = candidates
            .selected_token()
            .ok_or_else(|| LocalError::Decode {
                message: "the sampler selected no token".to_owned(),
            })?;
        if let Some(m) = self.matcher.as_mut() {
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
        Ok(self.accept(vocab, token))
    }

    /// Appends the sampled `token` to the answer and says what comes next.
    fn accept(&mut self, vocab: &LlamaVocab, token: LlamaToken) -> Next {
        if vocab.is_eog(token) {
            return Next::Done(FinishReason::EndTurn);
        }
        self.out.extend(vocab.token_to_piece(token, false, None));
        self.generated += 1;
        if let Some(cut) = stop_sequence_end(&self.out, &self.stop_sequences) {
            self.out.truncate(cut);
            return Next::Done(FinishReason::StopSequence);
        }
        self.streamed.send(&self.out, false);
        if self.generated >= self.budget {
            return Next::Done(FinishReason::MaxTokens);
        }
        Next::Feed(token)
    }

    /// The call's result (the rest of the text is streamed).
    pub(crate) fn finish(mut self, finish: FinishReason) -> Generation {
        self.streamed.send(&self.out, true);
        let (prompt_time, generation_time) = match self.prompt_time {
            Some(p) => (p, self.started.elapsed()),
            None => (self.started.elapsed(), Duration::ZERO),
        };
        Generation {
            text: String::from_utf8_lossy(&self.out).into_owned(),
            finish,
            prompt_tokens: self.prompt_tokens,
            cached_prompt_tokens: self.reused,
            completion_tokens: self.generated,
            prompt_time,
            generation_time,
        }
    }
}

/// The candidates of these token ids (allowed by the mask); none is a matcher error.
fn candidates_of(logits: &[f32], ids: Vec<usize>) -> Result<LlamaTokenDataArray, LocalError> {
    let data: Vec<LlamaTokenData> = ids
        .into_iter()
        .filter_map(|id| {
            Some(LlamaTokenData::new(
                LlamaToken(i32::try_from(id).ok()?),
                *logits.get(id)?,
                0.0,
            ))
        })
        .collect();
    if data.is_empty() {
        return Err(matcher_err("the constraint allows no token of the model"));
    }
    Ok(LlamaTokenDataArray::new(data, false))
}

/// The candidates the mask allows, built from its set bits only (not all 49,152 logits with
/// the rest set to minus infinity). A mask that allows no token of the model is a matcher
/// error (fail closed).
fn allowed_candidates(logits: &[f32], mask: &SimpleVob) -> Result<LlamaTokenDataArray, LocalError> {
    let mut data = Vec::with_capacity(mask.num_set().min(logits.len()));
    mask.iter_set_entries(|id| {
        if let (Some(&logit), Ok(id)) = (logits.get(id), i32::try_from(id)) {
            data.push(LlamaTokenData::new(LlamaToken(id), logit, 0.0));
        }
    });
    if data.is_empty() {
        return Err(matcher_err("the constraint allows no token of the model"));
    }
    Ok(LlamaTokenDataArray::new(data, false))
}

/// Whether the options ask for greedy decoding (a temperature `<= 0`, or not a number).
fn is_greedy(options: &GenerateOptions) -> bool {
    let temperature = options.temperature.unwrap_or(DEFAULT_TEMPERATURE);
    temperature <= 0.0 || !temperature.is_finite()
}

/// The token with the highest logit (the first of equals).
fn argmax(logits: &[f32]) -> Option<LlamaToken> {
    let mut best: Option<(usize, f32)> = None;
    for (i, &logit) in logits.iter().enumerate() {
        if best.is_none_or(|(_, b)| logit > b) {
            best = Some((i, logit));
        }
    }
    best.and_then(|(i, _)| i32::try_from(i).ok())
        .map(LlamaToken)
}

/// The sampler chain for the options (the constraint mask is applied before it).
fn sampler(options: &GenerateOptions) -> LlamaSampler {
    let temperature = options.temperature.unwrap_or(DEFAULT_TEMPERATURE);
    if is_greedy(options) {
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

pub(crate) fn decode_err(e: impl std::fmt::Display) -> LocalError {
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
    fn argmax_takes_the_first_highest_logit() {
        assert_eq!(argmax(&[0.5, 2.0, -1.0, 2.0]), Some(LlamaToken(1)));
        assert_eq!(argmax(&[f32::NEG_INFINITY, -3.0]), Some(LlamaToken(1)));
        assert_eq!(argmax(&[]), None);
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
