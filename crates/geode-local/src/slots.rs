//! The scheduler: one decoding thread owns the llama.cpp context and runs every call in one of
//! its sequence slots, stepping all running calls together in one batch.
//!
//! Contract:
//! * A context has `slots` sequences (`n_seq_max`) over one unified KV cache. Each slot keeps
//!   the tokens whose keys/values it holds (`cached`), also after its call ended, for reuse.
//! * A new call takes a free slot (queued in arrival order when none is free). Its prompt reuses
//!   the longest common token prefix held by any slot: when another slot holds it (or taking
//!   that slot would drop tokens it keeps), those cells are shared into the least recently used
//!   free slot (`llama_memory_seq_cp`, no recomputation); the target's cells beyond the prefix
//!   are removed. At least the last prompt token is evaluated, for its logits. When the cache
//!   is full, what idle slots keep is dropped.
//! * Idle slots keep at most [`IDLE_KEEP_TOKENS`] tokens between them (the most recently used
//!   slot always keeps its own): every decoding step attends over the cache's used range, so a
//!   lone call would otherwise pay for every prompt idle slots remember.
//! * Each step samples the next token of every generating call (each with its own llguidance
//!   matcher), then evaluates those tokens and the next chunk of any prompt still being
//!   evaluated in one `llama_decode`, at most `n_batch` tokens.
//! * A call's error (a matcher error fails closed, a cancellation, a deadline) ends that call
//!   only; the others go on. A failed evaluation ends the calls of that batch and drops their
//!   uncertain cells. A call is admitted only while the running calls' prompts and budgets
//!   leave room for its own in the cache, so a full cache is not reached in practice.
//! * The thread ends when the engine is dropped (its job channel closes).

use crate::decode::{Interruption, Next, Sequence, decode_err};
use crate::error::LocalError;
use crate::prompt::{self, ChatTurn};
use crate::{GenerateOptions, Generation};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::{LlamaChatTemplate, LlamaModel};
use llama_cpp_2::token::LlamaToken;
use llguidance::Matcher;

/// The most tokens idle slots keep cached between them, beyond the most recently used one's
/// (measured with `make bench-peer`: with all 16 slots' prompts kept, raw decoding ran at 91-92%
/// of llama-server's; with one slot at 107%).
pub const IDLE_KEEP_TOKENS: usize = 512;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{Receiver, Sender};

/// The answer channel of one call.
pub(crate) type Reply = Sender<Result<Generation, LocalError>>;

/// A call handed to the decoding thread.
pub(crate) struct Job {
    /// The conversation to answer.
    pub turns: Vec<ChatTurn>,
    /// The compiled constraint (`None`: unconstrained).
    pub matcher: Option<Matcher>,
    /// Generation settings.
    pub options: GenerateOptions,
    /// Set by the caller to stop the call (see [`StopFlag`]).
    pub stop: Arc<StopFlag>,
    /// Where the result goes.
    pub reply: Reply,
}

/// An interruption check the decoding thread can call itself.
pub type SharedInterrupt = Arc<dyn Fn() -> Option<Interruption> + Send + Sync>;

/// Whether a call must stop, read by the decoding thread between steps: raised by a caller
/// that polls its own check, or a check the decoding thread calls.
#[derive(Default)]
pub(crate) struct StopFlag {
    raised: AtomicU8,
    check: Option<SharedInterrupt>,
}

impl StopFlag {
    /// A flag that also calls `check` (so its caller need not wake up to poll).
    pub fn with_check(check: SharedInterrupt) -> Self {
        Self {
            raised: AtomicU8::new(0),
            check: Some(check),
        }
    }

    /// Asks the decoding thread to end the call with `why`.
    pub fn raise(&self, why: Interruption) {
        let code = match why {
            Interruption::Cancelled => 1,
            Interruption::Timeout => 2,
        };
        self.raised.store(code, Ordering::Relaxed);
    }

    fn get(&self) -> Option<Interruption> {
        match self.raised.load(Ordering::Relaxed) {
            1 => Some(Interruption::Cancelled),
            2 => Some(Interruption::Timeout),
            _ => self.check.as_ref().and_then(|check| check()),
        }
    }
}

/// A call in a slot.
struct Running {
    sequence: Sequence,
    stop: Arc<StopFlag>,
    reply: Reply,
    /// Prompt tokens not evaluated yet.
    pending: VecDeque<LlamaToken>,
    /// The batch index of the logits to sample from next, after a decode.
    logits_at: Option<i32>,
    /// The token sampled this step, to evaluate.
    next: Option<LlamaToken>,
    /// The most KV cells the call can fill: its prompt and its token budget.
    reserve: usize,
}

/// A call waiting for a slot, with its prompt once tokenized.
struct Queued {
    job: Job,
    prompt: Option<Vec<LlamaToken>>,
}

/// One sequence of the context.
#[derive(Default)]
struct Slot {
    /// The tokens whose keys/values this sequence holds (positions `0..len`).
    cached: Vec<LlamaToken>,
    running: Option<Running>,
    /// When a call last used this slot (a step count), to reuse the least recent one.
    last_used: u64,
}

/// The decoding thread's state.
pub(crate) struct Scheduler<'m, 'c> {
    model: &'m LlamaModel,
    ctx: &'c mut LlamaContext<'m>,
    template: LlamaChatTemplate,
    slots: Vec<Slot>,
    queue: VecDeque<Queued>,
    clock: u64,
}

impl<'m, 'c> Scheduler<'m, 'c> {
    /// A scheduler over `ctx`, which must have been created with at least `slots` sequences.
    pub fn new(
        model: &'m LlamaModel,
        ctx: &'c mut LlamaContext<'m>,
        template: LlamaChatTemplate,
        slots: usize,
    ) -> Self {
        Self {
            model,
            ctx,
            template,
            slots: (0..slots.max(1)).map(|_| Slot::default()).collect(),
            queue: VecDeque::new(),
            clock: 0,
        }
    }

    /// Serves jobs until the channel closes and nothing is left to do.
    pub fn run(mut self, jobs: &Receiver<Job>) {
        let n_batch = usize::try_from(self.ctx.n_batch()).unwrap_or(512).max(1);
        let mut batch = LlamaBatch::new(n_batch, 1);
        loop {
            let busy = self.slots.iter().any(|s| s.running.is_some());
            if !busy && self.queue.is_empty() {
                match jobs.recv() {
                    Ok(job) => self.queue.push_back(Queued { job, prompt: None }),
                    Err(_) => return,
                }
            }
            while let Ok(job) = jobs.try_recv() {
                self.queue.push_back(Queued { job, prompt: None });
            }
            // A queued call stopped by its caller ends now, not when a slot frees.
            self.queue.retain(|queued| match queued.job.stop.get() {
                Some(why) => {
                    let _ = queued.job.reply.send(Err(why.into()));
                    false
                }
                None => true,
            });
            self.admit();
            self.sample();
            self.evaluate(&mut batch, n_batch);
        }
    }

    /// Moves queued jobs into free slots, preparing each slot's cache for the prompt. A job
    /// waits while the running calls could fill the KV cache with it (each counted at its
    /// prompt plus its token budget), so a full cache does not fail calls mid-answer.
    fn admit(&mut self) {
        let n_ctx = usize::try_from(self.ctx.n_ctx()).unwrap_or(usize::MAX);
        while self.slots.iter().any(|s| s.running.is_none()) {
            let Some(front) = self.queue.front_mut() else {
                return;
            };
            let prompt = match front.prompt.take() {
                Some(prompt) => Ok(prompt),
                None => tokenize(self.model, &self.template, &front.job.turns),
            };
            let prompt = match prompt {
                Ok(prompt) => prompt,
                Err(e) => {
                    if let Some(queued) = self.queue.pop_front() {
                        let _ = queued.job.reply.send(Err(e));
                    }
                    continue;
                }
            };
            let reserve = reserve(prompt.len(), front.job.options.max_tokens, n_ctx);
            let reserved: usize = self
                .slots
                .iter()
                .filter_map(|s| s.running.as_ref().map(|r| r.reserve))
                .sum();
            if reserved > 0 && reserved + reserve > n_ctx {
                front.prompt = Some(prompt);
                return;
            }
            let Some(Queued { job, .. }) = self.queue.pop_front() else {
                return;
            };
            if let Err(e) = self.start(prompt, job.matcher, &job.options, job.stop, &job.reply) {
                let _ = job.reply.send(Err(e));
            }
        }
    }

    fn start(
        &mut self,
        prompt: Vec<LlamaToken>,
        matcher: Option<Matcher>,
        options: &GenerateOptions,
        stop: Arc<StopFlag>,
        reply: &Reply,
    ) -> Result<(), LocalError> {
        let n_ctx = self.ctx.n_ctx();
        let n_ctx_usize = usize::try_from(n_ctx).unwrap_or(usize::MAX);
        if prompt.is_empty() || prompt.len() >= n_ctx_usize {
            return Err(LocalError::PromptTooLong {
                prompt_tokens: prompt.len(),
                n_ctx,
            });
        }
        let (target, reused) = self.place(&prompt)?;
        self.clock += 1;
        let slot = &mut self.slots[target];
        slot.last_used = self.clock;
        let sequence = Sequence::new(matcher, options, prompt.len(), reused, n_ctx_usize);
        slot.running = Some(Running {
            sequence,
            stop,
            reply: reply.clone(),
            pending: prompt[reused..].iter().copied().collect(),
            logits_at: None,
            next: None,
            reserve: reserve(prompt.len(), options.max_tokens, n_ctx_usize),
        });
        Ok(())
    }

    /// Picks a free slot for `prompt` and fills its cache with the longest prefix any slot
    /// holds. Returns the slot and the number of prompt tokens reused.
    fn place(&mut self, prompt: &[LlamaToken]) -> Result<(usize, usize), LocalError> {
        let common: Vec<usize> = self
            .slots
            .iter()
            .map(|s| common_prefix(&s.cached, prompt).min(prompt.len() - 1))
            .collect();
        let free = |i: &usize| self.slots[*i].running.is_none();
        let best = (0..self.slots.len())
            .max_by_key(|&i| (common[i], free(&i)))
            .unwrap_or(0);
        // Reuse the best slot itself only when that loses nothing it holds; otherwise share
        // its prefix into the least recently used free slot, keeping both for later calls.
        let loses_nothing = self.slots[best].cached.len() <= common[best] + 1;
        let lru = (0..self.slots.len())
            .filter(|i| free(i) && (*i != best || loses_nothing))
            .min_by_key(|&i| self.slots[i].last_used);
        let target = match lru {
            _ if free(&best) && loses_nothing => best,
            Some(i) => i,
            None if free(&best) => best,
            None => return Err(decode_err("no free sequence slot")),
        };
        let seq = slot_id(target)?;
        let mut reused = common[target];
        if common[best] > reused {
            reused = common[best];
            self.ctx
                .kv_cache_seq_rm(seq, None, None)
                .map_err(decode_err)?;
            let len = u32::try_from(reused).map_err(decode_err)?;
            self.ctx
                .kv_cache_seq_cp(slot_id(best)?, seq, Some(0), Some(len))
                .map_err(decode_err)?;
        } else {
            let keep = u32::try_from(reused).map_err(decode_err)?;
            if self.ctx.kv_cache_seq_rm(seq, Some(keep), None).is_err() {
                self.ctx
                    .kv_cache_seq_rm(seq, None, None)
                    .map_err(decode_err)?;
                reused = 0;
            }
        }
        self.slots[target].cached = prompt[..reused].to_vec();
        self.bound_idle(target);
        Ok((target, reused))
    }

    /// Drops what idle slots other than `target` keep once, newest first, they pass
    /// [`IDLE_KEEP_TOKENS`] (the newest keeps its own whatever its size).
    fn bound_idle(&mut self, target: usize) {
        let mut idle: Vec<usize> = (0..self.slots.len())
            .filter(|&i| {
                i != target && self.slots[i].running.is_none() && !self.slots[i].cached.is_empty()
            })
            .collect();
        idle.sort_by_key(|&i| std::cmp::Reverse(self.slots[i].last_used));
        let mut kept = 0usize;
        for (rank, i) in idle.into_iter().enumerate() {
            kept = kept.saturating_add(self.slots[i].cached.len());
            if rank > 0 && kept > IDLE_KEEP_TOKENS {
                let _ = self
                    .ctx
                    .kv_cache_seq_rm(i32::try_from(i).unwrap_or(i32::MAX), None, None);
                self.slots[i].cached.clear();
            }
        }
    }

    /// Ends stopped calls and samples the next token of every call whose logits are ready.
    fn sample(&mut self) {
        let vocab = self.model.vocab();
        for slot in &mut self.slots {
            let Some(run) = slot.running.as_mut() else {
                continue;
            };
            if let Some(why) = run.stop.get() {
                end(slot, Err(why.into()));
                continue;
            }
            let Some(at) = run.logits_at.take() else {
                continue;
            };
            let logits = self.ctx.get_logits_ith(at);
            match run.sequence.step(&vocab, logits) {
                Ok(Next::Feed(token)) => run.next = Some(token),
                Ok(Next::Done(finish)) => {
                    if let Some(run) = slot.running.take() {
                        let _ = run.reply.send(Ok(run.sequence.finish(finish)));
                    }
                }
                Err(e) => end(slot, Err(e)),
            }
        }
    }

    /// Evaluates the sampled tokens and the next prompt chunks in one batch.
    fn evaluate(&mut self, batch: &mut LlamaBatch, n_batch: usize) {
        batch.clear();
        // (slot, tokens added, whether the last one wants logits)
        let mut fed: Vec<(usize, usize, bool)> = Vec::new();
        let mut room = n_batch;
        for (i, slot) in self.slots.iter_mut().enumerate() {
            let Some(run) = slot.running.as_mut() else {
                continue;
            };
            if let Some(token) = run.next
                && room > 0
            {
                if let Err(e) = add(batch, token, slot.cached.len(), i, true) {
                    end(slot, Err(e));
                    continue;
                }
                room -= 1;
                fed.push((i, 1, true));
            }
        }
        for (i, slot) in self.slots.iter_mut().enumerate() {
            let Some(run) = slot.running.as_mut() else {
                continue;
            };
            if run.pending.is_empty() || room == 0 {
                continue;
            }
            let take = run.pending.len().min(room);
            let last = take == run.pending.len();
            let mut result = Ok(());
            for (j, &token) in run.pending.iter().take(take).enumerate() {
                let pos = slot.cached.len() + j;
                result = add(batch, token, pos, i, last && j + 1 == take);
                if result.is_err() {
                    break;
                }
            }
            if let Err(e) = result {
                end(slot, Err(e));
                continue;
            }
            room -= take;
            fed.push((i, take, last));
        }
        if fed.is_empty() {
            return;
        }
        let mut decoded = self.ctx.decode(batch);
        if decoded.is_err() {
            // The cache may be full of what idle slots keep: drop that and try once more.
            self.evict_idle();
            decoded = self.ctx.decode(batch);
        }
        let mut index = 0i32;
        for (i, n, wants_logits) in fed {
            let slot = &mut self.slots[i];
            index += i32::try_from(n).unwrap_or(i32::MAX);
            let Some(run) = slot.running.as_mut() else {
                continue;
            };
            if let Err(e) = &decoded {
                let failed = decode_err(e);
                let _ = self.ctx.kv_cache_seq_rm(
                    i32::try_from(i).unwrap_or(i32::MAX),
                    u32::try_from(slot.cached.len()).ok(),
                    None,
                );
                end(slot, Err(failed));
                continue;
            }
            if let Some(token) = run.next.take() {
                slot.cached.push(token);
            } else {
                slot.cached.extend(run.pending.drain(..n));
                if run.pending.is_empty() {
                    run.sequence.prompt_done();
                }
            }
            if wants_logits {
                run.logits_at = Some(index - 1);
            }
        }
    }

    /// Forgets what idle slots hold, freeing KV cells.
    fn evict_idle(&mut self) {
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if slot.running.is_none() && !slot.cached.is_empty() {
                let _ = self
                    .ctx
                    .kv_cache_seq_rm(i32::try_from(i).unwrap_or(i32::MAX), None, None);
                slot.cached.clear();
            }
        }
    }
}

/// The prompt's tokens, rendered with the model's chat template.
fn tokenize(
    model: &LlamaModel,
    template: &LlamaChatTemplate,
    turns: &[ChatTurn],
) -> Result<Vec<LlamaToken>, LocalError> {
    let text = prompt::render(model, template, turns)?;
    Ok(model.vocab().tokenize(text.as_bytes(), true, true))
}

/// The KV cells a call can fill: its prompt and its budget (which never runs past the context).
fn reserve(prompt: usize, max_tokens: u32, n_ctx: usize) -> usize {
    let budget = usize::try_from(max_tokens).unwrap_or(usize::MAX);
    prompt.saturating_add(budget).min(n_ctx)
}

/// Ends the slot's call with `result`.
fn end(slot: &mut Slot, result: Result<Generation, LocalError>) {
    if let Some(run) = slot.running.take() {
        let _ = run.reply.send(result);
    }
}

fn add(
    batch: &mut LlamaBatch,
    token: LlamaToken,
    pos: usize,
    slot: usize,
    logits: bool,
) -> Result<(), LocalError> {
    let pos = i32::try_from(pos).map_err(decode_err)?;
    batch
        .add(token, pos, &[slot_id(slot)?], logits)
        .map_err(decode_err)
}

fn slot_id(slot: usize) -> Result<i32, LocalError> {
    i32::try_from(slot).map_err(decode_err)
}

/// The length of the longest common prefix of `a` and `b`.
fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}
