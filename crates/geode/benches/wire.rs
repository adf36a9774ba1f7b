//! Wire build benchmarks: the Responses request body (`wire::responses::build`) for a call with
//! 20 tools, a response schema and a 4 KB system prompt, serialised to bytes.
//!
//! GEODE's figure (its `build_responses_kwargs`, docs/benchmarks.md): 175 µs per
//! build. Target: at least 20× faster (≤ 8.75 µs).
//!
//! Also, to decide whether a hand JSON writer earned its place: the same body written by serde
//! from a `Value`, the Messages body (derived `Serialize` structs), and one whole `openai-payg`
//! call end to end through the generic HTTP adapter against a minimal server on 127.0.0.1.
//! Measured on the shared 2-core build machine under load: hand writer 13.4 µs,
//! serde from a `Value` 21.2 µs, derived structs 23.3 µs, a whole loopback call 300–355 µs.
//! The ~10 µs is about 3 % of a loopback call and nothing against a provider's latency, so all
//! three families now write bodies with serde; the build alone no longer meets the 20× target
//! (≤ 8.75 µs) on this machine.

use criterion::{Criterion, criterion_group, criterion_main};
use geode::llm::registry::SchemaRoute;
use geode::llm::request::{AdapterCallRequest, Message, ToolSpec};
use geode::llm::wire::responses::{self, Backend, Delivery, Options, Reasoning};
use geode::schema::ResponseSchema;
use serde_json::json;
use std::hint::black_box;

fn request() -> AdapterCallRequest {
    let system = "You are a careful analyst. Follow the rules below exactly. ".repeat(70);
    let mut r = AdapterCallRequest::new(
        "gpt-5.5",
        vec![
            Message::user("Decide whether to accept the proposal in a.md."),
            Message::tool_call("call_1", "read_document", json!({"path": "a.md"})),
            Message::tool_result(
                "call_1",
                "{\"text\": \"The proposal is to ship on Friday.\"}",
                false,
            ),
        ],
    );
    r.system_prompt = system[..4096].to_owned();
    r.tools = (0..20)
        .map(|i| ToolSpec {
            name: format!("tool_{i}"),
            description: format!("Tool number {i}: reads, searches or writes project files."),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "A project path."},
                    "query": {"type": ["string", "null"]},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100}
                },
                "required": ["path", "query", "limit"],
                "additionalProperties": false
            }),
        })
        .collect();
    r.response_schema = Some(
        ResponseSchema::from_value(json!({
            "title": "Decision",
            "type": "object",
            "properties": {
                "decision": {"type": "string", "enum": ["accept", "reject"]},
                "reason": {"type": "string"},
                "risks": {"type": "array", "items": {"type": "object",
                    "properties": {"name": {"type": "string"}, "severity": {"type": "integer"}},
                    "required": ["name", "severity"], "additionalProperties": false}}
            },
            "required": ["decision", "reason", "risks"],
            "additionalProperties": false
        }))
        .unwrap_or_else(|e| panic!("bench schema: {e}")),
    );
    r
}

fn bench_responses_build(c: &mut Criterion) {
    let req = request();
    let opts = platform_sse();
    c.bench_function("responses_build_20_tools_schema_4k_system", |b| {
        b.iter(|| {
            // The plan is part of a build's work, as in a call.
            let plan = SchemaRoute::OpenAiStrict.plan_call(black_box(&req), None);
            responses::build("bench", black_box(&req), black_box(&opts), &plan)
                .map(|built| built.body.len())
                .unwrap_or(0)
        })
    });
}

/// The Responses options of an API-key call: platform backend, reasoning on, SSE.
fn platform_sse() -> Options {
    Options {
        backend: Backend::Platform,
        reasoning: Reasoning::On,
        delivery: Delivery::Sse,
    }
}

fn bench_serde_bodies(c: &mut Criterion) {
    use geode::llm::wire::family::{BuildCx, Wire};
    let req = request();
    let opts = platform_sse();
    let plan = SchemaRoute::OpenAiStrict.plan_call(&req, None);
    let body: serde_json::Value = responses::build("bench", &req, &opts, &plan)
        .ok()
        .and_then(|b| serde_json::from_slice(&b.body).ok())
        .unwrap_or_default();
    c.bench_function(
        "responses_body_serde_value_20_tools_schema_4k_system",
        |b| b.iter(|| serde_json::to_vec(black_box(&body)).map_or(0, |v| v.len())),
    );
    let wire = geode::llm::wire::messages::MessagesWire;
    c.bench_function("messages_build_serde_20_tools_schema_4k_system", |b| {
        b.iter(|| {
            let plan = SchemaRoute::AnthropicLadder.plan_call(black_box(&req), None);
            let cx = BuildCx {
                adapter: "bench",
                default_model: "claude-sonnet-4-6",
                reasoning: false,
                identity: None,
                plan: &plan,
            };
            wire.build(black_box(&req), &cx)
                .map(|built| built.body.len())
                .unwrap_or(0)
        })
    });
}

/// Environment of the end-to-end bench: a key and the fake's base URL.
struct BenchEnv(String);

impl geode::llm::registry::Environment for BenchEnv {
    fn var(&self, name: &str) -> Option<String> {
        match name {
            "OPENAI_API_KEY" => Some("sk-bench".to_owned()),
            "GEODE_OPENAI_BASE_URL" => Some(self.0.clone()),
            _ => None,
        }
    }
    fn file_exists(&self, _: &std::path::Path) -> bool {
        false
    }
    fn on_path(&self, _: &str) -> bool {
        false
    }
}

/// A minimal keep-alive HTTP server on 127.0.0.1 answering every POST with one complete
/// Responses SSE stream (no recording, so memory stays flat however many calls the bench makes).
async fn sse_server() -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let event = json!({"type": "response.completed", "response": {"status": "completed",
        "output": [{"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": "{\"decision\":\"accept\"}"}]}],
        "usage": {"input_tokens": 10, "output_tokens": 5}}});
    let body = format!("event: response.completed\ndata: {event}\n\n");
    let reply = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let reply = reply.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 65536];
                loop {
                    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    while buf.len() < end + 4 + len {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    buf.drain(..end + 4 + len);
                    if sock.write_all(reply.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    Ok(format!("http://{addr}"))
}

fn bench_call_end_to_end(c: &mut Criterion) {
    use geode::llm::call::CallCx;
    let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    else {
        panic!("no tokio runtime for the bench");
    };
    let base = rt
        .block_on(sse_server())
        .unwrap_or_else(|e| panic!("loopback server: {e}"));
    let env = BenchEnv(base);
    let cfg = geode::llm::settings::AdapterSettings::default();
    let adapter = geode::llm::build::build("openai-payg", &cfg, &env)
        .unwrap_or_else(|e| panic!("build: {e}"));
    let req = request();
    c.bench_function("openai_payg_call_end_to_end_loopback", |b| {
        b.iter(|| {
            rt.block_on(adapter.call(req.clone(), &CallCx::new()))
                .map(|r| r.text.len())
                .unwrap_or_else(|e| panic!("call: {e}"))
        })
    });
}

criterion_group!(
    benches,
    bench_responses_build,
    bench_serde_bodies,
    bench_call_end_to_end
);
criterion_main!(benches);
