//! The fixtures every suite shares: the `Decision` schema (the suites' strict variant and the
//! contract's `examples/decision.schema.json`), a Decision answer, the `get_weather` tool and
//! batches of subtasks. Depends on `geode` and `serde_json` only, so crates without
//! `geode-fakes` (geode-local) include this file alone by `#[path]`.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use geode::schema::ResponseSchema;
use serde_json::{Value, json};

/// The `Decision` schema every suite uses: a strict object with an enum and a string.
pub fn decision() -> Value {
    json!({"title": "Decision", "type": "object",
           "properties": {"decision": {"type": "string", "enum": ["accept", "reject"]},
                          "reason": {"type": "string", "minLength": 3}},
           "required": ["decision", "reason"], "additionalProperties": false})
}

/// [`decision`] as a [`ResponseSchema`].
pub fn decision_schema() -> ResponseSchema {
    ResponseSchema::from_value(decision()).unwrap()
}

/// An answer that satisfies [`decision`].
pub fn decision_answer(reason: &str) -> Value {
    json!({"decision": "accept", "reason": reason})
}

/// The contract's Decision schema, `examples/decision.schema.json`.
pub fn example_decision_schema() -> ResponseSchema {
    let text = include_str!("../../../examples/decision.schema.json");
    ResponseSchema::from_value(serde_json::from_str(text).unwrap()).unwrap()
}

/// The `get_weather` tool the suites offer the model.
pub fn weather_tool() -> geode::llm::request::ToolSpec {
    geode::llm::request::ToolSpec {
        name: "get_weather".into(),
        description: "Weather for a city".into(),
        input_schema: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    }
}

/// `n` subtasks `t0`, `t1`, ... with `description` and `schema`, the rest defaulted.
pub fn subtasks(
    n: usize,
    description: &str,
    schema: ResponseSchema,
) -> Vec<geode::protocol::subtask::SubTask> {
    (0..n)
        .map(|i| geode::protocol::subtask::SubTask {
            task_id: format!("t{i}"),
            description: description.into(),
            response_schema: Some(schema.clone()),
            ..Default::default()
        })
        .collect()
}
