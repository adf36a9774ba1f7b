//! The schema as a system-prompt instruction, for wires that cannot carry it natively.
//!
//! Used by the Messages family in [`crate::vocab::StructuredOutputMode::Prompt`] and by the Chat
//! family in [`crate::vocab::StructuredOutputMode::JsonMode`]. The instruction carries the
//! caller's *original* schema (pretty JSON), not a projected copy: a prompt can hold every keyword,
//! and nothing is enforced by the provider, so the worker's validation is the only check.

use crate::schema::ResponseSchema;
use crate::schema::root::AnswerRoot;

/// The heading line of the instruction; tests and fakes look for it.
pub const INSTRUCTION_HEADING: &str = "Final answer format (JSON):";

/// The instruction text for `schema`: one heading, the rules, then the pretty schema. The answer
/// is named by the root the model is asked for ("JSON object", "JSON array", ...; see
/// [`AnswerRoot::asked`]).
pub fn schema_instruction(schema: &ResponseSchema) -> String {
    let what = AnswerRoot::asked(schema).describe();
    format!(
        "{INSTRUCTION_HEADING}\nYour final answer must be a single {what} that matches the \
         JSON Schema below. Reply with the {what} only: no prose, no code fences.\n\
         JSON Schema:\n{}",
        schema.to_pretty_json()
    )
}

/// `system` with the instruction for `schema` appended after a blank line (or alone when
/// `system` is empty).
pub fn append_to_system(system: &str, schema: &ResponseSchema) -> String {
    let instruction = schema_instruction(schema);
    if system.trim().is_empty() {
        instruction
    } else {
        format!("{system}\n\n{instruction}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_instruction_names_the_roots_type() {
        let object = ResponseSchema::from_value(json!({"type": "object"})).unwrap();
        let text = schema_instruction(&object);
        assert!(text.contains("a single JSON object that matches"), "{text}");
        assert!(text.contains("Reply with the JSON object only"), "{text}");
        let array =
            ResponseSchema::from_value(json!({"type": "array", "items": {"type": "integer"}}))
                .unwrap();
        let text = schema_instruction(&array);
        assert!(text.contains("a single JSON array that matches"), "{text}");
        assert!(!text.contains("JSON object"), "{text}");
    }

    #[test]
    fn instruction_carries_the_whole_original_schema() {
        let schema = ResponseSchema::from_value(json!({
            "type": "object",
            "properties": {"name": {"type": "string", "minLength": 3}},
            "required": ["name"]
        }))
        .unwrap();
        let text = schema_instruction(&schema);
        assert!(text.starts_with(INSTRUCTION_HEADING));
        assert!(text.contains("\"minLength\": 3"), "{text}");
        assert!(text.contains("JSON object only"));
    }

    #[test]
    fn appending_keeps_the_callers_system_prompt_first() {
        let schema = ResponseSchema::from_value(json!({"type": "object"})).unwrap();
        let out = append_to_system("Be terse.", &schema);
        assert!(out.starts_with("Be terse.\n\n"));
        assert!(out.contains(INSTRUCTION_HEADING));
        assert!(append_to_system("  ", &schema).starts_with(INSTRUCTION_HEADING));
    }
}
