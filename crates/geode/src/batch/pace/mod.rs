//! Pacing one adapter across a whole batch: requests and tokens per minute, and a rate limit
//! answered by slowing every task on that adapter, not just the one that met it.
//!
//! | rule | what [`Pacer`] does |
//! |---|---|
//! | `rpm` | a call waits until a request is available; requests refill evenly over the minute (no burst beyond one second's share) |
//! | `tpm` | a call waits while the token budget is spent; it is charged an estimate of its prompt (4 characters a token) before, and its real usage after |
//! | a 429 | every caller waits until `retry-after` (else a backoff doubling from 1 s, at most 60 s) has passed, and the request rate is halved; each success gives 5% of the configured rate back |
//!
//! [`PacedAdapter`] wraps any adapter with a shared pacer; a call that still ends `RateLimited`
//! after the transport's own retries is paused and tried again (at most [`MAX_RATE_RETRIES`]
//! times) instead of failing the task.

use crate::llm::adapter::{Adapter, Wraps};
use crate::llm::call::{AdapterError, CallCx};
use crate::llm::request::{AdapterCallRequest, AdapterResponse};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// How many times a call that ends `RateLimited` is paused and tried again.
pub const MAX_RATE_RETRIES: u32 = 5;

/// The limits of one adapter in a batch (`None`: unlimited).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Requests per minute.
    pub rpm: Option<u32>,
    /// Tokens (prompt and completion) per minute.
    pub tpm: Option<u64>,
}

#[derive(Debug)]
struct State {
    /// Requests available now (may be fractional).
    requests: f64,
    /// Tokens available now (negative after a call used more than it was charged).
    tokens: f64,
    /// The current request rate per second (lowered by 429s).
    rate: f64,
    refilled: Instant,
    paused_until: Option<Instant>,
    backoff: Duration,
    rate_limited: u64,
}

/// The shared pace of one adapter. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Pacer {
    limits: Limits,
    state: Arc<Mutex<State>>,
}

const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(60);

impl Pacer {
    /// A pacer with these limits, full at the start.
    pub fn new(limits: Limits) -> Self {
        let rate = limits
            .rpm
            .map_or(f64::INFINITY, |r| f64::from(r.max(1)) / 60.0);
        Self {
            limits,
            state: Arc::new(Mutex::new(State {
                requests: 1.0,
                tokens: limits.tpm.map_or(f64::INFINITY, |t| t as f64),
                rate,
                refilled: Instant::now(),
                paused_until: None,
                backoff: FIRST_BACKOFF,
                rate_limited: 0,
            })),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The configured request rate per second (infinite without `rpm`).
    fn configured_rate(&self) -> f64 {
        self.limits
            .rpm
            .map_or(f64::INFINITY, |r| f64::from(r.max(1)) / 60.0)
    }

    /// Waits until a request charged `estimate` tokens may start, and takes it.
    pub async fn acquire(&self, estimate: u64) {
        loop {
            let wait = {
                let mut s = self.lock();
                let now = Instant::now();
                self.refill(&mut s, now);
                match s.paused_until {
                    Some(until) if until > now => until - now,
                    _ => {
                        let need_request = if s.rate.is_finite() {
                            (1.0 - s.requests).max(0.0) / s.rate
                        } else {
                            0.0
                        };
                        let need_tokens = match self.limits.tpm {
                            Some(tpm) if s.tokens < 0.0 || (s.tokens < 1.0 && tpm > 0) => {
                                (1.0 - s.tokens) / (tpm as f64 / 60.0)
                            }
                            _ => 0.0,
                        };
                        let need = need_request.max(need_tokens);
                        if need <= 0.0 {
                            if s.rate.is_finite() {
                                s.requests -= 1.0;
                            }
                            if self.limits.tpm.is_some() {
                                s.tokens -= estimate as f64;
                            }
                            return;
                        }
                        Duration::from_secs_f64(need.min(60.0))
                    }
                }
            };
            tokio::time::sleep(wait).await;
        }
    }

    fn refill(&self, s: &mut State, now: Instant) {
        let secs = (now - s.refilled).as_secs_f64();
        s.refilled = now;
        if s.rate.is_finite() {
            s.requests = (s.requests + secs * s.rate).min(s.rate.max(1.0));
        }
        if let Some(tpm) = self.limits.tpm {
            s.tokens = (s.tokens + secs * tpm as f64 / 60.0).min(tpm as f64);
        }
    }

    /// Settles a finished call's real token use against the `estimate` it was charged, and
    /// gives back some of the rate a 429 took.
    pub fn settle(&self, estimate: u64, used: u64) {
        let mut s = self.lock();
        if self.limits.tpm.is_some() {
            s.tokens -= used as f64 - estimate as f64;
        }
        let full = self.configured_rate();
        if s.rate < full {
            s.rate = (s.rate + full * 0.05).min(full);
        }
        s.backoff = FIRST_BACKOFF;
    }

    /// A 429: every caller waits `retry_after` (else the current backoff, which then doubles)
    /// and the request rate is halved.
    pub fn rate_limited(&self, retry_after: Option<Duration>) {
        let mut s = self.lock();
        let pause = retry_after.unwrap_or(s.backoff).min(MAX_BACKOFF);
        s.backoff = (s.backoff * 2).min(MAX_BACKOFF);
        let until = Instant::now() + pause;
        s.paused_until = Some(s.paused_until.map_or(until, |u| u.max(until)));
        if s.rate.is_finite() {
            s.rate = (s.rate / 2.0).max(1.0 / 60.0);
        }
        s.rate_limited += 1;
    }

    /// How many 429s this pacer has seen.
    pub fn rate_limited_count(&self) -> u64 {
        self.lock().rate_limited
    }
}

/// The tokens a request is charged before it runs: its text at 4 characters a token.
pub fn estimate_tokens(req: &AdapterCallRequest) -> u64 {
    let chars: usize =
        req.system_prompt.len() + req.messages.iter().map(|m| m.text().len()).sum::<usize>();
    (chars / 4) as u64 + 1
}

/// An adapter whose calls go through a shared [`Pacer`].
pub struct PacedAdapter {
    inner: Arc<dyn Adapter>,
    pacer: Pacer,
}

impl PacedAdapter {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Adapter>, pacer: Pacer) -> Self {
        Self { inner, pacer }
    }
}

#[async_trait::async_trait]
impl Wraps for PacedAdapter {
    fn inner(&self) -> &dyn Adapter {
        &*self.inner
    }

    async fn call_through(
        &self,
        req: AdapterCallRequest,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        let estimate = estimate_tokens(&req);
        let mut tries = 0;
        loop {
            cx.run(self.inner.name(), async {
                self.pacer.acquire(estimate).await;
                Ok(())
            })
            .await?;
            match self.inner.call(req.clone(), cx).await {
                Err(AdapterError::RateLimited { retry_after, .. }) if tries < MAX_RATE_RETRIES => {
                    tries += 1;
                    self.pacer.rate_limited(retry_after);
                }
                Err(e) => {
                    if let AdapterError::RateLimited { retry_after, .. } = &e {
                        self.pacer.rate_limited(*retry_after);
                    }
                    return Err(e);
                }
                Ok(resp) => {
                    let used = resp.usage.input_tokens + resp.usage.output_tokens;
                    self.pacer.settle(estimate, used);
                    return Ok(resp);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
