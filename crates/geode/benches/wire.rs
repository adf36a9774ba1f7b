//! Wire build benchmarks: the Responses request body (`wire::responses::build`) for a call with
//! 20 tools, a response schema and a 4 KB system prompt, serialised to bytes.
//!
//! Reference figure (the Python system's `build_responses_kwargs`, performance.md): 175 µs per
//! build. Target: at least 20× faster (≤ 8.75 µs).

use criterion::{Criterion, criterion_group, criterion_main};
use geode::llm::request::{AdapterCallRequest, ContentBlock, Message, Role, ToolSpec};
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
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::ToolUse {
                    id: "call_1".into(),
                    name: "read_document".into(),
                    input: json!({"path": "a.md"}),
                }],
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_use_id: "call_1".into(),
                    content: "{\"text\": \"The proposal is to ship on Friday.\"}".into(),
                    is_error: false,
                }],
            },
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
    let opts = Options {
        backend: Backend::Platform,
        reasoning: Reasoning::On,
        delivery: Delivery::Sse,
    };
    c.bench_function("responses_build_20_tools_schema_4k_system", |b| {
        b.iter(|| {
            responses::build("bench", black_box(&req), black_box(&opts))
                .map(|built| built.body.len())
                .unwrap_or(0)
        })
    });
}

criterion_group!(benches, bench_responses_build);
criterion_main!(benches);
