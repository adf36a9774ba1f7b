//! The balanced-JSON-object finder (STUB: to be completed with the §4.1 conformance table).

use serde_json::Value;

/// Finds the last balanced top-level `{…}` in `text` that parses as a JSON object, returning
/// the exact substring and the parsed value.
pub fn extract_last_object(text: &str) -> Option<(&str, Value)> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let (mut depth, mut in_string, mut escape, mut start) = (0usize, false, false, 0usize);
    for (i, &b) in bytes.iter().enumerate() {
        if depth == 0 {
            if b == b'{' {
                start = i;
                depth = 1;
            }
            continue;
        }
        if escape {
            escape = false;
        } else if in_string {
            match b {
                b'\\' => escape = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        spans.push((start, i + 1));
                    }
                }
                _ => {}
            }
        }
    }
    spans.iter().rev().find_map(|&(s, e)| {
        let slice = &text[s..e];
        match serde_json::from_str::<Value>(slice) {
            Ok(v @ Value::Object(_)) => Some((slice, v)),
            _ => None,
        }
    })
}
