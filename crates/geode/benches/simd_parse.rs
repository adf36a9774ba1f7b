//! A SIMD JSON parser (sonic-rs) against serde_json and geode's own scanner, on the two jobs of
//! issue 14 point 8: the shallow check of a 10 MB answer (syntax + top-level keys; object root
//! and array root) and loading a 5,000-property schema. `cargo bench -p geode --bench simd_parse`.
//! sonic-rs is a dev-dependency only: it is measured here, not used by the library (see the
//! README's benchmark table for the verdict).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use geode::schema::json_scan::scan_keys;
use serde_json::{Map, Value, json};
use std::hint::black_box;
use std::time::Duration;

const REQUIRED: [&str; 3] = ["decision", "reason", "items"];

/// The plain 10 MB Decision answer of `benches/schema.rs`.
fn plain_json(size: usize) -> String {
    let mut items = Vec::new();
    let mut len = 60;
    let mut i = 0u64;
    while len < size {
        let item = json!({
            "id": i,
            "name": format!("candidate {i}: a \"quoted\" name with {{braces}}"),
            "score": (i % 100) as f64 / 10.0,
            "ok": i.is_multiple_of(3),
            "tags": ["alpha", "beta"]
        });
        len += item.to_string().len() + 1;
        items.push(item);
        i += 1;
    }
    json!({"decision": "accept", "reason": "all candidates checked", "items": items}).to_string()
}

fn schema_5000() -> String {
    let props: Map<String, Value> = (0..5000)
        .map(|i| (format!("field_{i}"), json!({"type": "string"})))
        .collect();
    let keys: Vec<&String> = props.keys().collect();
    json!({"type": "object", "properties": props, "required": keys, "additionalProperties": false})
        .to_string()
}

/// The required keys present at the top level, by sonic-rs's lazy object iterator (values are
/// skipped, not built); `None` when the text is not one valid object.
fn sonic_keys(text: &str) -> Option<[bool; 3]> {
    let mut seen = [false; 3];
    for item in sonic_rs::to_object_iter(text) {
        let (k, _) = item.ok()?;
        if let Some(i) = REQUIRED.iter().position(|r| *r == k.as_ref()) {
            seen[i] = true;
        }
    }
    Some(seen)
}

fn quick<'a>(
    c: &'a mut Criterion,
    name: &str,
) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(900));
    g
}

fn answers(c: &mut Criterion) {
    let object = plain_json(10 * 1024 * 1024);
    let array = serde_json::from_str::<Value>(&object).unwrap_or_default()["items"].to_string();
    let mut g = quick(c, "simd_answer");
    for (kind, text) in [("object", &object), ("array", &array)] {
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_with_input(BenchmarkId::new("geode_json_scan", kind), text, |b, t| {
            b.iter(|| scan_keys(black_box(t), &REQUIRED))
        });
        g.bench_with_input(BenchmarkId::new("serde_ignored", kind), text, |b, t| {
            b.iter(|| serde_json::from_str::<serde::de::IgnoredAny>(black_box(t)).is_ok())
        });
        g.bench_with_input(BenchmarkId::new("sonic_ignored", kind), text, |b, t| {
            b.iter(|| sonic_rs::from_str::<serde::de::IgnoredAny>(black_box(t)).is_ok())
        });
        g.bench_with_input(BenchmarkId::new("serde_value", kind), text, |b, t| {
            b.iter(|| serde_json::from_str::<Value>(black_box(t)).is_ok())
        });
        g.bench_with_input(BenchmarkId::new("sonic_value", kind), text, |b, t| {
            b.iter(|| sonic_rs::from_str::<sonic_rs::Value>(black_box(t)).is_ok())
        });
    }
    g.throughput(Throughput::Bytes(object.len() as u64));
    g.bench_with_input(
        BenchmarkId::new("sonic_object_iter_keys", "object"),
        &object,
        |b, t| b.iter(|| sonic_keys(black_box(t))),
    );
    g.finish();
}

fn schema_load(c: &mut Criterion) {
    let text = schema_5000();
    let mut g = quick(c, "simd_schema_5000");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("serde_value", |b| {
        b.iter(|| serde_json::from_str::<Value>(black_box(&text)).is_ok())
    });
    g.bench_function("sonic_value", |b| {
        b.iter(|| sonic_rs::from_str::<sonic_rs::Value>(black_box(&text)).is_ok())
    });
    g.bench_function("sonic_to_serde_value", |b| {
        b.iter(|| sonic_rs::from_str::<Value>(black_box(&text)).is_ok())
    });
    g.finish();
}

/// What each parser says about invalid text (printed once): a parser that takes these as valid
/// cannot replace the syntax check.
fn strictness(_: &mut Criterion) {
    for bad in [
        r#"{"a": tru}"#,
        r#"{"a": [1,]}"#,
        r#"{"a": 1,}"#,
        r#"{"a": 01}"#,
        r#"{"a": "\x"}"#,
        "{\"a\": \"\u{1}\"}",
        r#"{"a": 1} x"#,
        r#"{"a": 1e400}"#,
    ] {
        eprintln!(
            "strictness {bad:?}: json_scan {} serde {} sonic_ignored {} sonic_iter {}",
            scan_keys(bad, &REQUIRED).is_some(),
            serde_json::from_str::<serde::de::IgnoredAny>(bad).is_ok(),
            sonic_rs::from_str::<serde::de::IgnoredAny>(bad).is_ok(),
            sonic_keys(bad).is_some()
        );
    }
}

criterion_group!(benches, strictness, answers, schema_load);
criterion_main!(benches);
