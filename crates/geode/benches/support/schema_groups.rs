//! The schema benchmarks' groups, shared by `schema.rs` (the system allocator, as a library user
//! gets by default) and `schema_mimalloc.rs` (mimalloc, the allocator a long-lived library user
//! may choose); each names its groups with its `GROUP_PREFIX`.

use criterion::{BenchmarkId, Criterion, Throughput};
use geode::llm::registry::ADAPTERS;
use geode::schema::ResponseSchema;
use geode::schema::extract::{
    extract_answer, extract_answer_tape, extract_last_object, find_answer, find_last_object,
    top_level_spans,
};
use geode::schema::formats::FormatMode;
use geode::schema::preflight::Preflight;
use geode::schema::root::AnswerRoot;
use geode::schema::strict::{check_strict, check_strict_text};
use geode::schema::tape_json::TapeJson;
use geode::schema::validate::{CompiledSchema, missing_required_keys, shallow_check};
use serde_json::{Map, Value, json};
use std::hint::black_box;
use std::time::Duration;

#[path = "sized.rs"]
mod sized;

const SIZES: [(&str, usize); 3] = [
    ("1KB", 1024),
    ("100KB", 100 * 1024),
    ("10MB", 10 * 1024 * 1024),
];

/// The same answer inside prose and a code fence.
fn prose_and_fence(size: usize) -> String {
    format!(
        "Here is the result you asked for. I checked every candidate {{carefully}}.\n```json\n{}\n```\nLet me know if anything's off.",
        sized::decision_answer(size.saturating_sub(140))
    )
}

/// Many small objects (a log of steps), the answer last.
fn many_small_objects(size: usize) -> String {
    let mut s = String::with_capacity(size + 64);
    let mut i = 0u64;
    while s.len() + 64 < size {
        s.push_str(&format!("{{\"step\":{i},\"note\":\"ok\"}}\n"));
        i += 1;
    }
    s.push_str(r#"{"decision":"accept","reason":"done","items":[]}"#);
    s
}

/// A non-object answer of about `size` bytes: the items array of [`sized::decision_answer`] as
/// the root.
fn array_json(size: usize) -> String {
    let v: Value = serde_json::from_str(&sized::decision_answer(size)).unwrap_or_default();
    v["items"].to_string()
}

/// The array-root twin of [`answer_schema`]: its `items` schema as the root.
fn array_schema() -> ResponseSchema {
    let items = answer_schema().as_value()["properties"]["items"].clone();
    ResponseSchema::from_value(items).unwrap_or_default()
}

/// The contract's Decision with a required array of `items`.
fn answer_schema() -> ResponseSchema {
    let mut schema = contract_decision();
    schema["properties"]["items"] = json!({"type": "array", "items": {
        "type": "object",
        "properties": {
            "id": {"type": "integer", "minimum": 0},
            "name": {"type": "string"},
            "score": {"type": "number"},
            "ok": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["id", "name", "score", "ok", "tags"],
        "additionalProperties": false
    }});
    schema["required"] = json!(["decision", "reason", "items"]);
    ResponseSchema::from_value(schema).unwrap_or_else(|e| panic!("{e}"))
}

type Group<'a> = criterion::BenchmarkGroup<'a, criterion::measurement::WallTime>;

fn quick<'a>(c: &'a mut Criterion, name: &str) -> Group<'a> {
    let mut g = c.benchmark_group(format!("{}{name}", super::GROUP_PREFIX));
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(900));
    g
}

/// Benchmarks `f` on `text` as `id/label`, with the text's length as the throughput; `f` hands
/// what it computes to `black_box`.
fn on_text(g: &mut Group<'_>, id: &str, label: &str, text: &str, f: impl Fn(&str)) {
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_with_input(BenchmarkId::new(id, label), text, |b, t| {
        b.iter(|| f(black_box(t)))
    });
}

pub fn extraction(c: &mut Criterion) {
    let mut g = quick(c, "extract");
    let root = AnswerRoot::of(&array_schema());
    for (label, size) in SIZES {
        let inputs = [
            ("plain", sized::decision_answer(size)),
            ("prose_fence", prose_and_fence(size)),
            ("small_objects", many_small_objects(size)),
        ];
        for (kind, text) in &inputs {
            on_text(&mut g, &format!("scan/{kind}"), label, text, |t| {
                black_box(top_level_spans(t));
            });
            on_text(&mut g, &format!("find/{kind}"), label, text, |t| {
                black_box(find_last_object(t));
            });
        }
        on_text(&mut g, "extract_value/plain", label, &inputs[0].1, |t| {
            black_box(extract_last_object(t));
        });
        for (kind, text) in [
            ("array_root", array_json(size)),
            (
                "array_root_fenced",
                format!("Here:\n```json\n{}\n```\nDone.", array_json(size)),
            ),
        ] {
            on_text(&mut g, &format!("find/{kind}"), label, &text, |t| {
                black_box(find_answer(t, root));
            });
            on_text(
                &mut g,
                &format!("extract_value/{kind}"),
                label,
                &text,
                |t| {
                    black_box(extract_answer(t, root));
                },
            );
        }
    }
    g.finish();
}

pub fn shallow(c: &mut Criterion) {
    let schema = answer_schema();
    let array = array_schema();
    let mut g = quick(c, "shallow_check");
    for (label, size) in SIZES {
        let text = sized::decision_answer(size);
        // The syntax check alone: geode's scanner against serde_json's IgnoredAny parse.
        on_text(&mut g, "syntax/json_scan", label, &text, |t| {
            black_box(geode::schema::json_scan::scan_keys(t, &["decision"]));
        });
        on_text(&mut g, "syntax/serde_ignored", label, &text, |t| {
            black_box(serde_json::from_str::<serde::de::IgnoredAny>(t).is_ok());
        });
        for (kind, t) in [
            ("keys_only/prose_fence", prose_and_fence(size)),
            ("keys_only/small_objects", many_small_objects(size)),
            ("keys_only", text.clone()),
        ] {
            on_text(&mut g, kind, label, &t, |t| {
                black_box(shallow_check(&schema, t));
            });
        }
        on_text(&mut g, "via_value", label, &text, |t| {
            black_box(extract_last_object(t).map(|(_, v)| missing_required_keys(&schema, &v)));
        });
        on_text(&mut g, "array_root", label, &array_json(size), |t| {
            black_box(shallow_check(&array, t));
        });
    }
    g.finish();
}

pub fn full(c: &mut Criterion) {
    let compiled = CompiledSchema::compile(&answer_schema()).unwrap_or_else(|e| panic!("{e}"));
    let array = array_schema();
    let array_compiled = CompiledSchema::compile(&array).unwrap_or_else(|e| panic!("{e}"));
    let root = AnswerRoot::of(&array);
    let tape = |s: &ResponseSchema| {
        CompiledSchema::<TapeJson>::build(s, FormatMode::Assert, None)
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let (tape_compiled, array_tape) = (tape(&answer_schema()), tape(&array));
    let mut g = quick(c, "full_validation");
    for (label, size) in SIZES {
        let text = sized::decision_answer(size);
        on_text(&mut g, "extract_parse_validate", label, &text, |t| {
            black_box(extract_last_object(t).map(|(_, v)| compiled.validate(&v).len()));
        });
        // The same job with the answer read as a tape (geode validate's path).
        on_text(&mut g, "tape/extract_parse_validate", label, &text, |t| {
            let found = extract_answer_tape(t, AnswerRoot::Object);
            black_box(found.map(|(_, tape)| tape_compiled.validate(&tape).len()));
        });
        let array_text = array_json(size);
        let id = "array_root_extract_parse_validate";
        on_text(&mut g, id, label, &array_text, |t| {
            black_box(extract_answer(t, root).map(|(_, v)| array_compiled.validate(&v).len()));
        });
        on_text(&mut g, &format!("tape/{id}"), label, &array_text, |t| {
            let found = extract_answer_tape(t, root);
            black_box(found.map(|(_, tape)| array_tape.validate(&tape).len()));
        });
    }
    g.finish();
}

fn strict_object(props: Map<String, Value>) -> Value {
    let required: Vec<String> = props.keys().cloned().collect();
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

fn nested(levels: usize) -> Value {
    let mut v = json!({"type": "string"});
    for _ in 0..levels {
        let mut props = Map::new();
        props.insert("a".into(), v);
        props.insert("b".into(), json!({"type": ["string", "null"]}));
        v = strict_object(props);
    }
    v
}

/// The contract's `DECISION_SCHEMA` (`examples/decision.schema.json`).
fn contract_decision() -> Value {
    serde_json::from_str(include_str!("../../../../examples/decision.schema.json"))
        .unwrap_or_else(|e| panic!("examples/decision.schema.json: {e}"))
}

/// The schemas the strict check and `geode schema check` are measured on.
fn schema_cases() -> [(&'static str, Value); 4] {
    let props = |n: usize| -> Map<String, Value> {
        (0..n)
            .map(|i| (format!("field_{i}"), json!({"type": "string"})))
            .collect()
    };
    [
        ("decision", contract_decision()),
        ("200_properties", strict_object(props(200))),
        ("10_levels", nested(10)),
        ("5000_properties", strict_object(props(5000))),
    ]
}

pub fn strict(c: &mut Criterion) {
    let mut g = quick(c, "strict_check");
    for (name, schema) in &schema_cases() {
        g.bench_with_input(BenchmarkId::from_parameter(name), schema, |b, s| {
            b.iter(|| check_strict(black_box(s)).compatible)
        });
    }
    g.finish();
}

/// What `geode schema check FILE` does after reading the file, split in its steps: the text is
/// parsed (load), checked for OpenAI strict compatibility, compiled for validation, and
/// preflighted against every dialect's limits.
pub fn schema_check(c: &mut Criterion) {
    let mut g = quick(c, "schema_check");
    for (name, schema) in &schema_cases() {
        let text = schema.to_string();
        g.bench_with_input(BenchmarkId::new("load_strict", name), &text, |b, t| {
            b.iter(|| {
                ResponseSchema::from_json_str(black_box(t))
                    .map(|s| check_strict(s.as_value()).compatible)
            })
        });
        // The same job read from the text as a tape, no `Value` built.
        g.bench_with_input(BenchmarkId::new("text_strict", name), &text, |b, t| {
            b.iter(|| check_strict_text(black_box(t)).map(|v| v.compatible))
        });
        g.bench_with_input(BenchmarkId::new("load_compile", name), &text, |b, t| {
            b.iter(|| {
                ResponseSchema::from_json_str(black_box(t))
                    .map(|s| CompiledSchema::compile(&s).is_ok())
            })
        });
        g.bench_with_input(BenchmarkId::new("whole_command", name), &text, |b, t| {
            b.iter(|| {
                let s = ResponseSchema::from_json_str(black_box(t)).ok()?;
                CompiledSchema::compile(&s).ok()?;
                let strict = check_strict(s.as_value()).compatible;
                let preflight = Preflight::new(&s);
                let limits = ADAPTERS
                    .iter()
                    .filter(|a| a.schema_route.limit_violations(&preflight).is_empty())
                    .count();
                Some((strict, limits))
            })
        });
    }
    g.finish();
}
