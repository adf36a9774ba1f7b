//! Answers of a chosen size for the benchmarks (included by path: `#[path = "support/sized.rs"]`).

use serde_json::{Value, json};

/// A Decision answer with an `items` array grown until the JSON text reaches `size` bytes (names
/// with escaped quotes and braces, as JSON answers have).
pub fn decision_answer(size: usize) -> String {
    let items = items_until(size, |i| {
        json!({
            "id": i,
            "name": format!("candidate {i}: a \"quoted\" name with {{braces}}"),
            "score": (i % 100) as f64 / 10.0,
            "ok": i.is_multiple_of(3),
            "tags": ["alpha", "beta"]
        })
    });
    json!({"decision": "accept", "reason": "all candidates checked", "items": items}).to_string()
}

/// The items `item(0)`, `item(1)`, ... until their JSON text, with the answer around them
/// (about 60 bytes), reaches `size` bytes.
fn items_until(size: usize, item: impl Fn(u64) -> Value) -> Vec<Value> {
    let mut items = Vec::new();
    let mut len = 60;
    let mut i = 0u64;
    while len < size {
        let v = item(i);
        len += v.to_string().len() + 1;
        items.push(v);
        i += 1;
    }
    items
}
