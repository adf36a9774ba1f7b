//! The incremental partial-JSON parser against re-parsing the accumulated text at every chunk:
//! a 100 KB answer fed in 4-byte chunks (what a token stream looks like), the partial value and
//! the complete pointers read after every chunk.
//!
//! `cargo bench -p geode --bench partial_json`. The re-parse baselines are quadratic (25,600
//! parses of a growing prefix), so they use few samples.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use geode::client::partial_json::PartialJson;
use serde_json::{Value, json};
use std::hint::black_box;
use std::time::Duration;

/// A report answer with `findings` grown until the JSON text reaches `size` bytes.
fn answer(size: usize) -> String {
    let mut findings = Vec::new();
    let mut len = 60;
    let mut i = 0u64;
    while len < size {
        let f = json!({
            "line": i,
            "note": format!("finding {i}: a \"quoted\" note with {{braces}} and \\ escapes \u{e9}"),
            "score": (i % 100) as f64 / 10.0,
            "fixed": i.is_multiple_of(3),
            "tags": ["style", null]
        });
        len += f.to_string().len() + 1;
        findings.push(f);
        i += 1;
    }
    json!({"title": "review", "findings": findings}).to_string()
}

/// `text` in pieces of 4 bytes (moved to char boundaries).
fn chunks(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push(&text[start..end]);
        start = end;
    }
    out
}

fn bench(c: &mut Criterion) {
    let text = answer(100 * 1024);
    let pieces = chunks(&text, 4);
    let mut g = c.benchmark_group("partial_json_100KB_4B_chunks");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    g.bench_function("incremental", |b| {
        b.iter(|| {
            let mut p = PartialJson::new();
            for piece in &pieces {
                p.feed(piece).unwrap_or_default();
                black_box((p.value(), p.complete().len()));
            }
            assert!(p.is_done());
        })
    });
    g.bench_function("reparse_accumulated_tolerant", |b| {
        b.iter(|| {
            let mut end = 0;
            for piece in &pieces {
                end += piece.len();
                let mut p = PartialJson::new();
                p.feed(&text[..end]).unwrap_or_default();
                black_box((p.value(), p.complete().len()));
            }
        })
    });
    g.bench_function("reparse_accumulated_serde_json", |b| {
        b.iter(|| {
            let mut end = 0;
            for piece in &pieces {
                end += piece.len();
                black_box(serde_json::from_str::<Value>(&text[..end]).ok());
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
