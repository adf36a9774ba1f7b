//! Answers of a chosen size for the benchmarks (included by path: `#[path = "support/sized.rs"]`).

use serde_json::Value;

/// The items `item(0)`, `item(1)`, ... until their JSON text, with the answer around them
/// (about 60 bytes), reaches `size` bytes.
pub fn items_until(size: usize, item: impl Fn(u64) -> Value) -> Vec<Value> {
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
