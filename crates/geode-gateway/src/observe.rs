//! What operators watch: one JSON access-log line per request on stderr, and `/metrics` in the
//! Prometheus text format. Neither holds a prompt, an answer or a key: routes, modes,
//! outcomes, token counts and times only.
//!
//! | metric | labels |
//! |---|---|
//! | `geode_gateway_requests_total` | `endpoint`, `adapter`, `mode`, `outcome` (`valid`, `text`, or the error code) |
//! | `geode_gateway_request_seconds` (histogram) | `endpoint` |
//! | `geode_gateway_upstream_errors_total` | `adapter`, `code` (failures that came from the provider) |
//! | `geode_gateway_tokens_total` | `adapter`, `direction` (`input`, `output`) |

use geode::GuaranteeLedger;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    endpoint: &'static str,
    adapter: String,
    mode: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndpointLabels {
    endpoint: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamLabels {
    adapter: String,
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    adapter: String,
    direction: &'static str,
}

fn latency_histogram() -> Histogram {
    // 1 ms to about 65 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// The gateway's metrics.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<EndpointLabels, Histogram, fn() -> Histogram>,
    upstream: Family<UpstreamLabels, Counter>,
    tokens: Family<TokenLabels, Counter>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<EndpointLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        let upstream = Family::<UpstreamLabels, Counter>::default();
        let tokens = Family::<TokenLabels, Counter>::default();
        registry.register(
            "geode_gateway_requests",
            "Requests by endpoint, adapter, mode and outcome",
            requests.clone(),
        );
        registry.register(
            "geode_gateway_request_seconds",
            "Request latency, retry included",
            latency.clone(),
        );
        registry.register(
            "geode_gateway_upstream_errors",
            "Failures that came from the provider",
            upstream.clone(),
        );
        registry.register(
            "geode_gateway_tokens",
            "Tokens over every attempt",
            tokens.clone(),
        );
        Self {
            registry,
            requests,
            latency,
            upstream,
            tokens,
        }
    }
}

impl Metrics {
    /// The text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// One request being served, logged and counted exactly once: when it ends, or, if the client
/// goes away first (the request's future or its stream is dropped), then, as `client_closed`.
#[derive(Debug)]
pub struct Access {
    endpoint: &'static str,
    model: String,
    stream: bool,
    started: Instant,
    metrics: Arc<Metrics>,
    /// What the client was sent before it left: 0 for nothing yet, 200 once a stream opened.
    sent: u16,
    logged: bool,
}

/// How a request ended.
#[derive(Debug)]
pub struct Ending<'a> {
    /// The HTTP status (200 for a stream that started, whatever its end).
    pub status: u16,
    /// `valid`, `text`, or the error code.
    pub outcome: &'a str,
    /// The run's ledger, when it ran or was refused with one.
    pub ledger: Option<&'a GuaranteeLedger>,
    /// Whether the failure came from the provider.
    pub upstream: bool,
}

impl<'a> Ending<'a> {
    /// A served answer.
    pub fn served(ledger: &'a GuaranteeLedger) -> Self {
        let outcome = if ledger.full_validation.is_some() {
            "valid"
        } else {
            "text"
        };
        Self {
            status: 200,
            outcome,
            ledger: Some(ledger),
            upstream: false,
        }
    }

    /// A refusal or failure (`status` is what the client got: 200 for a stream that had started).
    pub fn failed(e: &'a crate::error::ApiError, status: u16) -> Self {
        Self {
            status,
            outcome: e.code,
            ledger: e.ledger.as_deref(),
            upstream: e.code.starts_with("upstream_"),
        }
    }
}

impl Access {
    /// Starts the account of a request to `endpoint`, counted in `metrics`.
    pub fn start(endpoint: &'static str, metrics: &Arc<Metrics>) -> Self {
        Self {
            endpoint,
            model: String::new(),
            stream: false,
            started: Instant::now(),
            metrics: metrics.clone(),
            sent: 0,
            logged: false,
        }
    }

    /// The account, moved to a stream whose head (status 200) is going out; this one is then
    /// spent and logs nothing.
    pub fn into_stream(&mut self) -> Access {
        self.logged = true;
        Access {
            endpoint: self.endpoint,
            model: std::mem::take(&mut self.model),
            stream: true,
            started: self.started,
            metrics: self.metrics.clone(),
            sent: 200,
            logged: false,
        }
    }

    /// Names what the request asked for.
    pub fn asked(&mut self, model: &str, stream: bool) {
        // A name past the bound is refused; its log line holds only the bound's worth of it.
        self.model = model.chars().take(crate::route::MAX_MODEL_CHARS).collect();
        self.stream = stream;
    }

    /// Logs the request's line and counts it.
    pub fn finish(mut self, end: &Ending<'_>) {
        self.log(end);
    }

    fn log(&mut self, end: &Ending<'_>) {
        if std::mem::replace(&mut self.logged, true) {
            return;
        }
        let metrics = &*self.metrics;
        let elapsed = self.started.elapsed();
        let ledger = end.ledger;
        let adapter = ledger.map_or("", |l| l.adapter.as_str()).to_owned();
        let mode = ledger.map_or(String::new(), |l| l.wire_mode.to_string());
        let (input, output) = ledger.map_or((0, 0), |l| {
            l.attempts.iter().fold((0, 0), |(i, o), a| {
                (i + a.usage.input_tokens, o + a.usage.output_tokens)
            })
        });
        let line = json!({
            "endpoint": self.endpoint,
            "model": geode::secret::scrub(&self.model),
            "stream": self.stream,
            "status": end.status,
            "outcome": end.outcome,
            "adapter": adapter,
            "mode": mode,
            "guarantee": ledger.map(|l| l.wire_mode.level().as_str()),
            "validated": ledger.map(crate::ledger::validated),
            "attempts": ledger.map_or(0, |l| l.attempts.len()),
            "input_tokens": input,
            "output_tokens": output,
            "latency_ms": elapsed.as_secs_f64() * 1000.0,
        });
        // One write per line: formatting into stderr directly writes each token on its own.
        let mut text = line.to_string();
        text.push('\n');
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), text.as_bytes());
        metrics
            .requests
            .get_or_create(&RequestLabels {
                endpoint: self.endpoint,
                adapter: adapter.clone(),
                mode,
                outcome: end.outcome.to_owned(),
            })
            .inc();
        metrics
            .latency
            .get_or_create(&EndpointLabels {
                endpoint: self.endpoint,
            })
            .observe(elapsed.as_secs_f64());
        if end.upstream {
            metrics
                .upstream
                .get_or_create(&UpstreamLabels {
                    adapter: adapter.clone(),
                    code: end.outcome.to_owned(),
                })
                .inc();
        }
        for (direction, n) in [("input", input), ("output", output)] {
            if n > 0 {
                metrics
                    .tokens
                    .get_or_create(&TokenLabels {
                        adapter: adapter.clone(),
                        direction,
                    })
                    .inc_by(n);
            }
        }
    }
}

impl Drop for Access {
    fn drop(&mut self) {
        // 499: nginx's code for a request its client closed before the answer.
        let status = if self.sent == 0 { 499 } else { self.sent };
        self.log(&Ending {
            status,
            outcome: "client_closed",
            ledger: None,
            upstream: false,
        });
    }
}
