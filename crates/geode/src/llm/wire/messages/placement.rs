//! Where the `response_schema` goes on a Messages request: one pure decision, [`place_schema`].
//!
//! | condition (checked in order) | placement | mode |
//! |---|---|---|
//! | no schema | nothing | `none` |
//! | the projected copy fits Anthropic's subset and the last turn is not an assistant prefill | `output_config.format` | `strict` |
//! | extended thinking is off and the schema's root is an object | a forced output tool | `tool` |
//! | otherwise | the schema in the system prompt | `prompt` |
//!
//! Native structured outputs work with extended thinking and with tools (the grammar covers the
//! final text only), but not with an assistant prefill. A forced tool (`tool_choice` `any` or
//! `tool`) is an error with extended thinking, hence the prompt fallback.

use crate::llm::request::{AdapterCallRequest, Role};
use crate::schema::ResponseSchema;
use crate::schema::dialect::{Dialect, anthropic_native_fits, project};
use crate::vocab::{StructuredOutputMode, Transform};
use serde_json::Value;

/// Prefix of the forced output tool's name; the rest is the schema's sanitised name.
pub const OUTPUT_TOOL_PREFIX: &str = "emit_";

/// The longest tool name Anthropic accepts.
const MAX_TOOL_NAME: usize = 64;

/// How the schema is put on the wire.
#[derive(Debug, Clone, PartialEq)]
pub enum Placement {
    /// No schema: nothing is added.
    None,
    /// `output_config: {format: {type: "json_schema", schema}}` with the projected copy.
    Native {
        /// The projected wire copy.
        schema: Value,
    },
    /// A forced tool whose `input_schema` is the schema; its input is the answer.
    OutputTool {
        /// The tool name, unique among the request's tools.
        name: String,
        /// The caller's schema (root made an explicit object when it had no `type`).
        input_schema: Value,
    },
    /// The schema rendered into the system prompt.
    Prompt,
}

/// The decision with its mode and the rewrites it implies.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    /// Where the schema goes.
    pub placement: Placement,
    /// The mode the ledger reports.
    pub mode: StructuredOutputMode,
    /// Rewrites of the caller's schema for this placement.
    pub transforms: Vec<Transform>,
}

/// Decides the placement for `req` (its schema, thinking budget, last turn and tool names).
pub fn place_schema(req: &AdapterCallRequest) -> Placed {
    let Some(schema) = &req.response_schema else {
        return Placed {
            placement: Placement::None,
            mode: StructuredOutputMode::None,
            transforms: Vec::new(),
        };
    };
    let prefill = req
        .messages
        .last()
        .is_some_and(|m| m.role == Role::Assistant);
    if !prefill && anthropic_native_fits(schema).is_ok() {
        let projection = project(schema, Dialect::Anthropic);
        return Placed {
            placement: Placement::Native {
                schema: projection.wire,
            },
            mode: StructuredOutputMode::Strict,
            transforms: projection.transforms,
        };
    }
    if req.thinking_budget == 0
        && let Some((input_schema, transforms)) = tool_input_schema(schema)
    {
        let taken: Vec<&str> = req.tools.iter().map(|t| t.name.as_str()).collect();
        return Placed {
            placement: Placement::OutputTool {
                name: output_tool_name(schema, &taken),
                input_schema,
            },
            mode: StructuredOutputMode::Tool,
            transforms,
        };
    }
    Placed {
        placement: Placement::Prompt,
        mode: StructuredOutputMode::Prompt,
        transforms: Vec::new(),
    }
}

/// The mode [`place_schema`] picks for `schema` on a plain request (no thinking, no prefill).
pub fn mode_for(schema: Option<&ResponseSchema>) -> StructuredOutputMode {
    mode_for_thinking(schema, false)
}

/// The mode [`place_schema`] picks for `schema` on a request without prefill, with extended
/// thinking on or off (the registry's `AnthropicLadder` rule is this function).
pub fn mode_for_thinking(schema: Option<&ResponseSchema>, thinking: bool) -> StructuredOutputMode {
    let mut req = AdapterCallRequest::new("", Vec::new());
    req.response_schema = schema.cloned();
    req.thinking_budget = u32::from(thinking);
    place_schema(&req).mode
}

/// The schema as a tool `input_schema`: the root must be an object (`type` absent is made
/// explicit, with a transform); a root of another type or a root union cannot be a tool input.
fn tool_input_schema(schema: &ResponseSchema) -> Option<(Value, Vec<Transform>)> {
    let obj = schema.as_object();
    match obj.get("type") {
        Some(Value::String(t)) if t == "object" => Some((schema.as_value().clone(), Vec::new())),
        None if !["anyOf", "oneOf", "allOf", "$ref"]
            .iter()
            .any(|k| obj.contains_key(*k)) =>
        {
            let mut copy = obj.clone();
            copy.insert("type".into(), Value::String("object".into()));
            let transform = Transform {
                pointer: String::new(),
                action: "added type object at the root (tool input schemas must be objects)".into(),
            };
            Some((Value::Object(copy), vec![transform]))
        }
        _ => None,
    }
}

/// `emit_<sanitised schema name>`, cut to 64 characters, with `_2`, `_3`, ... appended while it
/// collides with one of `taken`.
pub fn output_tool_name(schema: &ResponseSchema, taken: &[&str]) -> String {
    let base: String = format!("{OUTPUT_TOOL_PREFIX}{}", schema.openai_name())
        .chars()
        .take(MAX_TOOL_NAME)
        .collect();
    if !taken.contains(&base.as_str()) {
        return base;
    }
    (2u32..)
        .map(|n| {
            let suffix = format!("_{n}");
            let keep = MAX_TOOL_NAME.saturating_sub(suffix.len());
            format!("{}{suffix}", base.chars().take(keep).collect::<String>())
        })
        .find(|candidate| !taken.contains(&candidate.as_str()))
        .unwrap_or(base)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::request::{Message, ToolSpec};
    use serde_json::json;

    fn req_with(schema: Value) -> AdapterCallRequest {
        let mut req = AdapterCallRequest::new("m", vec![Message::user("hi")]);
        req.response_schema = Some(ResponseSchema::from_value(schema).unwrap());
        req
    }

    fn recursive() -> Value {
        json!({"title": "Tree", "type": "object",
               "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}})
    }

    #[test]
    fn no_schema_places_nothing() {
        let req = AdapterCallRequest::new("m", vec![Message::user("hi")]);
        assert_eq!(place_schema(&req).placement, Placement::None);
        assert_eq!(mode_for(None), StructuredOutputMode::None);
    }

    #[test]
    fn fitting_schema_goes_native_with_projection_transforms() {
        let req = req_with(json!({"type": "object",
            "properties": {"n": {"type": "integer", "maximum": 3}}, "required": ["n"]}));
        let placed = place_schema(&req);
        assert_eq!(placed.mode, StructuredOutputMode::Strict);
        let Placement::Native { schema } = &placed.placement else {
            panic!("expected native, got {placed:?}")
        };
        assert!(schema["properties"]["n"].get("maximum").is_none());
        assert!(
            placed
                .transforms
                .iter()
                .any(|t| t.action.contains("maximum"))
        );
    }

    #[test]
    fn native_is_kept_with_extended_thinking() {
        let mut req = req_with(json!({"type": "object", "properties": {}}));
        req.thinking_budget = 2048;
        assert_eq!(place_schema(&req).mode, StructuredOutputMode::Strict);
    }

    #[test]
    fn assistant_prefill_rules_out_native() {
        let mut req = req_with(json!({"type": "object", "properties": {}}));
        req.messages.push(Message::assistant("{"));
        assert_eq!(place_schema(&req).mode, StructuredOutputMode::Tool);
    }

    #[test]
    fn unfitting_schema_becomes_a_forced_output_tool_without_thinking() {
        let placed = place_schema(&req_with(recursive()));
        assert_eq!(placed.mode, StructuredOutputMode::Tool);
        match placed.placement {
            Placement::OutputTool { name, input_schema } => {
                assert_eq!(name, "emit_Tree");
                assert_eq!(input_schema, recursive());
            }
            other => panic!("expected output tool, got {other:?}"),
        }
    }

    #[test]
    fn unfitting_schema_with_thinking_goes_to_the_prompt() {
        let mut req = req_with(recursive());
        req.thinking_budget = 1024;
        let placed = place_schema(&req);
        assert_eq!(placed.placement, Placement::Prompt);
        assert_eq!(placed.mode, StructuredOutputMode::Prompt);
    }

    #[test]
    fn non_object_root_cannot_be_a_tool_and_goes_to_the_prompt() {
        let placed = place_schema(&req_with(
            json!({"anyOf": [{"type": "string"}, {"$ref": "#"}]}),
        ));
        assert_eq!(placed.mode, StructuredOutputMode::Prompt);
    }

    #[test]
    fn missing_root_type_is_made_explicit_with_a_transform() {
        let placed = place_schema(&req_with(
            json!({"properties": {"a": {"$ref": "https://example.invalid/a"}}}),
        ));
        let Placement::OutputTool { input_schema, .. } = placed.placement else {
            panic!("expected output tool")
        };
        assert_eq!(input_schema["type"], "object");
        assert_eq!(placed.transforms.len(), 1);
    }

    #[test]
    fn output_tool_name_avoids_framework_tool_names() {
        let mut req = req_with(recursive());
        req.tools = vec![ToolSpec {
            name: "emit_Tree".into(),
            description: String::new(),
            input_schema: json!({"type": "object"}),
        }];
        match place_schema(&req).placement {
            Placement::OutputTool { name, .. } => assert_eq!(name, "emit_Tree_2"),
            other => panic!("expected output tool, got {other:?}"),
        }
        let long = ResponseSchema::from_value(json!({"title": "x".repeat(80)})).unwrap();
        let name = output_tool_name(&long, &[]);
        assert_eq!(name.len(), 64);
        let taken = [name.as_str()];
        assert!(output_tool_name(&long, &taken).ends_with("_2"));
        assert_eq!(output_tool_name(&long, &taken).len(), 64);
    }
}
