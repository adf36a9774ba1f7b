//! The `openai-compatible` adapter's json_schema probe against hostile servers, through the real
//! `geode` binary and a scriptable Chat Completions server on 127.0.0.1.
//!
//! What it proves:
//! - a server that answers the probe exactly and then ignores the schema on the real calls gets
//!   its answer validated, retried once with the validator's feedback, and reported invalid
//!   (exit 1), and the ledger does not claim the enforcement it did not get: the verdict is
//!   withdrawn (`wire_mode` `hint`, the reason in `transforms`) as soon as an answer contradicts
//!   it, and under `--require enforced` the retry is not sent in a weaker mode;
//! - a near-miss probe answer (wrong type, extra key, duplicate key, fenced, prose around it, an
//!   array, a cut answer that went on past the nonce, a key that is almost the probe's) never
//!   makes geode conclude that the server enforces schemas: `--require enforced` is refused
//!   before any real call;
//! - a server that answers with tool calls instead of content, to the probe and to the real
//!   call, ends with a clear outcome and no panic.
//!
//! No key is ever shown, and nothing leaves 127.0.0.1.

use crate::support;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use support::{DECIDE, Outcome, SECRET, Sandbox, bad_enum_answer, good_answer};

/// What the hostile server says to one request: the assistant message's `content`, its tool
/// calls, and the `finish_reason`.
#[derive(Clone, Debug)]
struct Said {
    content: Option<String>,
    tool_calls: Vec<(String, Value)>,
    finish: &'static str,
}

impl Said {
    fn text(text: impl Into<String>) -> Said {
        Said {
            content: Some(text.into()),
            tool_calls: Vec::new(),
            finish: "stop",
        }
    }

    fn json(value: &Value) -> Said {
        Said::text(value.to_string())
    }

    /// A text cut at the token limit (`finish_reason: length`).
    fn cut(text: impl Into<String>) -> Said {
        Said {
            finish: "length",
            ..Said::text(text)
        }
    }

    /// One tool call and no content.
    fn tool_call(name: &str, arguments: Value) -> Said {
        Said {
            content: None,
            tool_calls: vec![(name.to_owned(), arguments)],
            finish: "tool_calls",
        }
    }
}

/// How the server answers: `probe` gets the probe's nonce, `call` the number of the real call
/// (0-based).
type Probe = dyn Fn(&str) -> Said + Send + Sync;
type Call = dyn Fn(usize) -> Said + Send + Sync;

struct Behaviour {
    probe: Box<Probe>,
    call: Box<Call>,
    seen: Mutex<Vec<Value>>,
}

/// A Chat Completions server on 127.0.0.1 that answers as its [`Behaviour`] says and records
/// every request body. One JSON body per answer, even to `stream: true` (geode reads it whole;
/// the fault matrix's "JSON body to a stream request" row).
struct Hostile {
    base: String,
    state: Arc<Behaviour>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The probe's nonce in a request body, when the body is geode's probe.
fn nonce_of(body: &Value) -> Option<String> {
    geode_fakes::chat::is_probe(body)
        .then(|| {
            body.pointer("/response_format/json_schema/schema/properties/geode_probe/const")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .flatten()
}

async fn answer(State(b): State<Arc<Behaviour>>, uri: Uri, body: axum::body::Bytes) -> Response {
    if !uri.path().ends_with("/chat/completions") {
        return (StatusCode::NOT_FOUND, "no such route").into_response();
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let said = {
        let mut seen = b.seen.lock().unwrap();
        let said = match nonce_of(&body) {
            Some(nonce) => (b.probe)(&nonce),
            None => {
                let n = seen.iter().filter(|r| nonce_of(r).is_none()).count();
                (b.call)(n)
            }
        };
        seen.push(body);
        said
    };
    let tool_calls: Vec<Value> = said
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| {
            json!({"index": i, "id": format!("call_{i}"), "type": "function",
                   "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": said.content});
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    axum::Json(json!({
        "id": "chatcmpl-hostile", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": said.finish}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
    }))
    .into_response()
}

impl Hostile {
    async fn start(
        probe: impl Fn(&str) -> Said + Send + Sync + 'static,
        call: impl Fn(usize) -> Said + Send + Sync + 'static,
    ) -> Hostile {
        let state = Arc::new(Behaviour {
            probe: Box::new(probe),
            call: Box::new(call),
            seen: Mutex::new(Vec::new()),
        });
        let app = Router::new()
            .fallback(answer)
            .with_state(Arc::clone(&state));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/v1", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Hostile { base, state, task }
    }

    /// The probe requests received.
    fn probes(&self) -> Vec<Value> {
        let seen = self.state.seen.lock().unwrap();
        seen.iter()
            .filter(|b| nonce_of(b).is_some())
            .cloned()
            .collect()
    }

    /// The real model calls received (the probe left out).
    fn calls(&self) -> Vec<Value> {
        let seen = self.state.seen.lock().unwrap();
        seen.iter()
            .filter(|b| nonce_of(b).is_none())
            .cloned()
            .collect()
    }

    /// A sandbox pointed at this server, with a key the output must never show.
    fn sandbox(&self) -> Sandbox {
        let mut sb = Sandbox::new();
        sb.var("GEODE_OPENAI_COMPAT_BASE_URL", &self.base);
        sb.var("GEODE_OPENAI_COMPAT_API_KEY", SECRET);
        sb
    }
}

/// The exact probe answer: what a server that enforces the schema writes.
fn exact(nonce: &str) -> Said {
    Said::json(&json!({ "geode_probe": nonce }))
}

/// `geode run --adapter openai-compatible --schema <Decision> EXTRA... Decide.`
async fn run(sb: &Sandbox, extra: &[&str]) -> Outcome {
    let out = sb.run_decision("openai-compatible", extra, DECIDE).await;
    out.assert_hides(SECRET);
    assert!(!out.stderr.contains("panicked"), "{}", out.dump());
    out
}

/// The system message of a recorded Chat request.
fn system_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "system"))
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

/// Every user-visible text of a recorded Chat request, joined.
fn all_text(body: &Value) -> String {
    body["messages"].to_string()
}

const PROSE: &str = "I would accept this change, the tests look fine.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_honest_probe_then_ignored_schemas_is_retried_with_feedback_reported_invalid_and_not_claimed_enforced()
 {
    let server = Hostile::start(exact, |_| Said::text(PROSE)).await;
    let sb = server.sandbox();
    let out = run(&sb, &["--json"]).await;
    out.assert_exit(1);
    let result = out.json();
    assert_eq!(result["success"], false, "{result}");
    let ledger = &result["ledger"];
    assert_eq!(ledger["retry"]["decision"], "ran", "{ledger}");
    assert_eq!(ledger["attempts"].as_array().unwrap().len(), 2, "{ledger}");
    assert_eq!(ledger["worker_check"]["verdict"], "fail", "{ledger}");
    // The probe said "enforced", the answers said otherwise: the ledger keeps the answers' word.
    assert_eq!(
        ledger["wire_mode"], "hint",
        "a schema the server ignored is not enforced: {ledger}"
    );
    let transforms = ledger["transforms"].to_string();
    assert!(
        transforms.contains("withdrawn") && transforms.contains("outside"),
        "the ledger says why the verdict went: {transforms}"
    );

    assert_eq!(server.probes().len(), 1, "one probe per process");
    let calls = server.calls();
    assert_eq!(calls.len(), 2, "the first call and one retry: {calls:#?}");
    // The first call went as the probe allowed: strict, the schema not in the prompt.
    assert_eq!(
        calls[0]["response_format"]["type"], "json_schema",
        "{}",
        calls[0]
    );
    assert!(!system_text(&calls[0]).contains("additionalProperties"));
    // The retry carries the validator's feedback and, the verdict withdrawn, the schema in the
    // prompt as well (hint).
    let retry = all_text(&calls[1]);
    assert!(retry.contains(PROSE), "the first answer is quoted: {retry}");
    assert!(
        system_text(&calls[1]).contains("additionalProperties"),
        "hint: the schema in the system prompt: {}",
        calls[1]
    );

    // The human summary agrees.
    let text = run(&sb, &[]).await;
    text.assert_exit(1)
        .assert_stderr_has(&["wire_mode=hint", "no parseable JSON object"]);
    assert!(!text.stderr.contains("wire_mode=strict"), "{}", text.dump());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_breaks_the_schema_after_an_honest_probe_withdraws_the_verdict_even_when_the_retry_is_valid()
 {
    // The first answer is JSON with a value the enum forbids (no grammar-constrained decoder
    // writes it); the retry is valid. The answer is kept, the claim of enforcement is not.
    let server = Hostile::start(exact, |n| {
        if n == 0 {
            Said::json(&bad_enum_answer())
        } else {
            Said::json(&good_answer())
        }
    })
    .await;
    let out = run(&server.sandbox(), &["--json"]).await;
    out.assert_exit(0);
    let result = out.json();
    assert_eq!(result["answer"], good_answer(), "{result}");
    let ledger = &result["ledger"];
    assert_eq!(ledger["retry"]["decision"], "ran", "{ledger}");
    assert_eq!(ledger["wire_mode"], "hint", "{ledger}");
    let calls = server.calls();
    assert_eq!(calls.len(), 2, "{calls:#?}");
    assert!(all_text(&calls[1]).contains("Accept"), "feedback quotes it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_enforced_does_not_retry_in_a_weaker_mode_once_the_server_is_caught_ignoring_the_schema()
 {
    let server = Hostile::start(exact, |_| Said::text(PROSE)).await;
    let out = run(&server.sandbox(), &["--require", "enforced", "--json"]).await;
    // The probe passed, so the call was made; its answer broke the schema, so the server does not
    // enforce it, and a retry (now hint) would serve this task below `enforced`.
    out.assert_exit(1);
    let ledger = &out.json()["ledger"];
    assert_eq!(ledger["wire_mode"], "hint", "{ledger}");
    assert_eq!(ledger["retry"]["decision"], "skipped", "{ledger}");
    let why = ledger["retry"]["why"].as_str().unwrap_or_default();
    assert!(
        why.contains("require=enforced") && why.contains("hint"),
        "{ledger}"
    );
    assert_eq!(server.calls().len(), 1, "no retry below the requirement");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_answer_after_an_honest_probe_does_not_withdraw_the_verdict() {
    // A cut answer (finish_reason length) is the token budget, not a server that ignores the
    // schema: the probe's verdict stands (and a truncation is not retried).
    let server = Hostile::start(exact, |_| Said::cut("{\"decision\": \"acc")).await;
    let out = run(&server.sandbox(), &["--json"]).await;
    out.assert_exit(1);
    let result = out.json();
    assert_eq!(result["termination_reason"], "truncated", "{result}");
    let ledger = &result["ledger"];
    assert_eq!(ledger["wire_mode"], "strict", "{ledger}");
    assert!(
        !ledger["transforms"].to_string().contains("withdrawn"),
        "{ledger}"
    );
    assert_eq!(ledger["retry"]["decision"], "skipped", "{ledger}");
    assert_eq!(server.calls().len(), 1);
}

/// Near-miss answers to the probe: each one almost matches `{"geode_probe": "<nonce>"}`.
fn near_misses() -> Vec<(&'static str, Box<Probe>)> {
    vec![
        (
            "wrong type (number)",
            Box::new(|_: &str| Said::json(&json!({"geode_probe": 123_456_789_012_u64}))),
        ),
        (
            "wrong type (array of the nonce)",
            Box::new(|n: &str| Said::json(&json!({ "geode_probe": [n] }))),
        ),
        (
            "extra key",
            Box::new(|n: &str| Said::json(&json!({"geode_probe": n, "note": "hi"}))),
        ),
        (
            "duplicate key",
            Box::new(|n: &str| {
                Said::text(format!(r#"{{"geode_probe": "x", "geode_probe": "{n}"}}"#))
            }),
        ),
        (
            "fenced",
            Box::new(|n: &str| Said::text(format!("```json\n{{\"geode_probe\": \"{n}\"}}\n```"))),
        ),
        (
            "prose around it",
            Box::new(|n: &str| {
                Said::text(format!(
                    "Sure! {{\"geode_probe\": \"{n}\"}} Hope that helps."
                ))
            }),
        ),
        ("an array root", Box::new(|n: &str| Said::json(&json!([n])))),
        (
            "the nonce upper-cased",
            Box::new(|n: &str| Said::json(&json!({"geode_probe": n.to_uppercase()}))),
        ),
        (
            "cut at the limit, an extra key after the nonce",
            Box::new(|n: &str| Said::cut(format!("{{\"geode_probe\": \"{n}\", \"more\": \"aaaa"))),
        ),
        (
            "cut at the limit, a space inside the key",
            Box::new(|n: &str| Said::cut(format!("{{\"geode _probe\": \"{n}\""))),
        ),
        (
            "cut at the limit, prose before it",
            Box::new(|n: &str| Said::cut(format!("Here: {{\"geode_probe\": \"{n}\""))),
        ),
        (
            "a tool call carrying the exact object",
            Box::new(|n: &str| Said::tool_call("geode_probe", json!({ "geode_probe": n }))),
        ),
        ("empty content", Box::new(|_: &str| Said::text(""))),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_near_miss_probe_answer_never_concludes_that_the_server_enforces_schemas() {
    for (name, probe) in near_misses() {
        let server = Hostile::start(move |n: &str| probe(n), |_| Said::json(&good_answer())).await;
        let sb = server.sandbox();
        // Under --require enforced the verdict decides before any real call.
        let out = run(&sb, &["--require", "enforced"]).await;
        assert_eq!(out.code, Some(2), "{name}: {}", out.dump());
        assert!(
            out.stderr.contains("require=enforced") && out.stderr.contains("hint"),
            "{name}: {}",
            out.dump()
        );
        assert_eq!(server.probes().len(), 1, "{name}");
        assert!(server.calls().is_empty(), "{name}: no real call");
        // Without it the call runs as a hint: the schema also in the prompt.
        let out = run(&sb, &["--json"]).await;
        assert_eq!(out.code, Some(0), "{name}: {}", out.dump());
        let ledger = &out.json()["ledger"];
        assert_eq!(ledger["wire_mode"], "hint", "{name}: {ledger}");
        assert!(
            ledger["transforms"].to_string().contains("not enforced"),
            "{name}: {ledger}"
        );
        let calls = server.calls();
        assert_eq!(calls.len(), 1, "{name}");
        assert!(
            system_text(&calls[0]).contains("additionalProperties"),
            "{name}: {}",
            calls[0]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_exact_probe_answer_and_its_whitespace_cut_still_mean_enforced() {
    // The counterpart of the near misses: the two shapes an enforcing server writes.
    let cases: Vec<(&str, Box<Probe>)> = vec![
        ("exact", Box::new(exact)),
        (
            "cut in trailing whitespace",
            Box::new(|n: &str| Said::cut(format!("{{\n  \"geode_probe\" : \"{n}\"\n\n\n"))),
        ),
    ];
    for (name, probe) in cases {
        let server = Hostile::start(move |n: &str| probe(n), |_| Said::json(&good_answer())).await;
        let out = run(&server.sandbox(), &["--require", "enforced", "--json"]).await;
        assert_eq!(out.code, Some(0), "{name}: {}", out.dump());
        assert_eq!(out.json()["ledger"]["wire_mode"], "strict", "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_instead_of_content_end_clearly_to_the_probe_and_to_the_real_call() {
    // No tool was offered, yet the server calls one, to the probe and to every real call.
    let server = Hostile::start(
        |n: &str| Said::tool_call("answer", json!({ "geode_probe": n })),
        |_| Said::tool_call("answer", good_answer()),
    )
    .await;
    let sb = server.sandbox();
    let out = run(&sb, &["--json"]).await;
    out.assert_exit(1);
    let result = out.json();
    assert_eq!(result["success"], false, "{result}");
    assert_eq!(
        result["termination_reason"], "convergence_detected",
        "{result}"
    );
    let ledger = &result["ledger"];
    assert_eq!(
        ledger["wire_mode"], "hint",
        "a tool call is not the nonce: {ledger}"
    );
    let error = result["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("`answer`") && error.contains("unknown tool"),
        "the error names the tool nobody offered: {result}"
    );
    // Three rounds per attempt, the first attempt and the one retry: not one round per
    // millisecond until the timeout.
    let calls = server.calls();
    assert_eq!(calls.len(), 6, "{calls:#?}");
    assert_eq!(ledger["retry"]["decision"], "ran", "{ledger}");

    // `--require enforced`: refused after the probe, before any real call.
    let out = run(&sb, &["--require", "enforced"]).await;
    out.assert_exit(2)
        .assert_stderr_has(&["require=enforced", "hint"]);
}
