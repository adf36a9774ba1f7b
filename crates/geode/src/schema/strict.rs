//! The OpenAI strict-compatibility check (STUB: to be completed with reasons and the §3 table).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One reason a schema is not strict-compatible.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StrictReason {
    /// JSON Pointer into the schema.
    pub pointer: String,
    /// The rule broken, in words.
    pub rule: String,
}

/// The verdict of [`check_strict`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StrictVerdict {
    /// True when OpenAI strict mode can take the schema as it is.
    pub compatible: bool,
    /// Why not, when not.
    pub reasons: Vec<StrictReason>,
}

/// Checks a schema against OpenAI's strict-mode rules as the contract states them.
pub fn check_strict(schema: &Value) -> StrictVerdict {
    let mut reasons = Vec::new();
    walk(schema, "", &mut reasons);
    StrictVerdict {
        compatible: reasons.is_empty(),
        reasons,
    }
}

fn walk(s: &Value, ptr: &str, out: &mut Vec<StrictReason>) {
    let Value::Object(m) = s else { return };
    if m.get("type").and_then(Value::as_str) == Some("object")
        && m.get("additionalProperties") != Some(&Value::Bool(false))
    {
        {
            out.push(StrictReason {
                pointer: ptr.to_owned(),
                rule: "additionalProperties must be false".to_owned(),
            });
        }
    }
    if let Some(Value::Object(props)) = m.get("properties") {
        for (k, v) in props {
            walk(v, &format!("{ptr}/properties/{k}"), out);
        }
    }
    if let Some(items) = m.get("items") {
        walk(items, &format!("{ptr}/items"), out);
    }
}
