//! The incremental partial-JSON parser against re-parsing the accumulated text at every chunk:
//! a 100 KB Decision answer (the one the schema benchmarks read) fed in 4-byte chunks (what a
//! token stream looks like), the partial value and the complete pointers read after every chunk.
//!
//! `cargo bench -p geode --bench partial_json`. Re-parsing is quadratic (25,600 parses of a
//! growing prefix take over a minute at 100 KB), so at 100 KB it is measured as the cost of one
//! re-parse at the last chunk, and whole re-parsing streams are measured at 10 KB.

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use geode::partial_json::PartialJson;
use serde_json::Value;
use std::hint::black_box;
use std::time::Duration;

#[path = "support/sized.rs"]
mod sized;

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

/// The whole answer in 4-byte chunks, the partial value and pointers read after each chunk.
fn incremental(pieces: &[&str]) {
    let mut p = PartialJson::new();
    for piece in pieces {
        p.feed(piece).unwrap_or_default();
        black_box((p.value(), p.complete().len()));
    }
    assert!(p.is_done());
}

/// The same, re-parsing the accumulated text at every chunk (tolerant parser from scratch).
fn reparse_tolerant(text: &str, pieces: &[&str]) {
    let mut end = 0;
    for piece in pieces {
        end += piece.len();
        let mut p = PartialJson::new();
        p.feed(&text[..end]).unwrap_or_default();
        black_box((p.value(), p.complete().len()));
    }
}

/// The same with serde_json on the accumulated text (it fails until the end: no partials).
fn reparse_serde(text: &str, pieces: &[&str]) {
    let mut end = 0;
    for piece in pieces {
        end += piece.len();
        black_box(serde_json::from_str::<Value>(&text[..end]).ok());
    }
}

/// A group over a text cut in `pieces`, measured for `secs` seconds, holding the incremental
/// parser's whole stream to compare the others with.
fn stream_group<'a>(
    c: &'a mut Criterion,
    name: &str,
    pieces: &[&str],
    secs: u64,
) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(secs));
    let bytes: usize = pieces.iter().map(|p| p.len()).sum();
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function("incremental_whole_stream", |b| {
        b.iter(|| incremental(pieces))
    });
    g
}

fn bench(c: &mut Criterion) {
    // 100 KB: the whole incremental stream, against the cost of one re-parse of the whole
    // text (what re-parsing costs per chunk at the end of the stream; the whole re-parsing
    // stream costs about half of that times the 25,600 chunks).
    let text = sized::decision_answer(100 * 1024);
    let pieces = chunks(&text, 4);
    let mut g = stream_group(c, "partial_json_100KB_4B_chunks", &pieces, 2);
    g.bench_function("reparse_once_tolerant_last_chunk", |b| {
        b.iter(|| {
            let mut p = PartialJson::new();
            p.feed(&text).unwrap_or_default();
            black_box(p.value());
        })
    });
    g.bench_function("reparse_once_serde_last_chunk", |b| {
        b.iter(|| black_box(serde_json::from_str::<Value>(&text).ok()))
    });
    g.finish();

    // 10 KB: both whole streams measured (re-parsing is quadratic, so 100 KB takes minutes).
    let text = sized::decision_answer(10 * 1024);
    let pieces = chunks(&text, 4);
    let mut g = stream_group(c, "partial_json_10KB_4B_chunks", &pieces, 3);
    g.bench_function("reparse_accumulated_tolerant", |b| {
        b.iter(|| reparse_tolerant(&text, &pieces))
    });
    g.bench_function("reparse_accumulated_serde_json", |b| {
        b.iter(|| reparse_serde(&text, &pieces))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
