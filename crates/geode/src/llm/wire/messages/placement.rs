//! Where the `response_schema` goes on a Messages request: one pure decision, [`place_schema`].
//!
//! | condition (checked in order) | placement | mode |
//! |---|---|---|
//! | no schema | nothing | `none` |
//! | the projected copy fits Anthropic's subset and the last turn is not an assistant prefill | `output_config.format` | `strict` |
//! | extended thinking is off | a forced output tool, its `input_schema` the schema with an object root ([`crate::schema::subset::ANTHROPIC_TOOL`]: `type:"object"` added to a typeless object root, any other root wrapped under `value`) | `tool` |
//! | otherwise | the schema in the system prompt | `prompt` |
//!
//! Native structured outputs work with extended thinking and with tools (the grammar covers the
//! final text only), but not with an assistant prefill. A forced tool (`tool_choice` `any` or
//! `tool`) is an error with extended thinking, hence the prompt fallback.

use crate::llm::request::AdapterCallRequest;
use crate::schema::ResponseSchema;
use crate::schema::projection::{anthropic_native_fits, project_anthropic};
use crate::schema::subset::{ANTHROPIC_TOOL, WirePlan, object_root};
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
        /// The caller's schema with an object root (`type` added, or the root wrapped).
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
    /// True when the root was wrapped under `value` (a forced tool for a non-object root).
    pub wrapped: bool,
    /// Why a stronger placement was not used (empty for native).
    pub weaker_because: Vec<String>,
}

/// The ladder of the module's table for `schema`: the plan of
/// [`crate::llm::registry::SchemaRoute::AnthropicLadder`]. The native copy is the Anthropic
/// projection, its residuals checked locally; the tool's copy has an object root.
pub fn ladder(schema: &ResponseSchema, thinking: bool, prefill: bool) -> WirePlan {
    let mut weaker_because = Vec::new();
    if prefill {
        weaker_because.push("native: an assistant prefill rules out output_config.format".into());
    } else {
        match anthropic_native_fits(schema) {
            Ok(()) => {
                let projection = project_anthropic(schema);
                return WirePlan {
                    wire: Some(projection.wire),
                    transforms: projection.transforms,
                    residuals: projection.residuals,
                    ..WirePlan::identity(StructuredOutputMode::Strict, None)
                };
            }
            Err(why) => weaker_because.extend(why.into_iter().map(|w| format!("native: {w}"))),
        }
    }
    if !thinking {
        return WirePlan {
            weaker_because,
            ..object_root(schema, &ANTHROPIC_TOOL, StructuredOutputMode::Tool)
        };
    }
    weaker_because.push("tool: extended thinking rules out a forced tool".into());
    WirePlan {
        weaker_because,
        ..WirePlan::identity(StructuredOutputMode::Prompt, None)
    }
}

/// Where `plan` puts the schema of `req` on a Messages request (the output tool named apart
/// from the request's own tools).
pub fn placement(plan: &WirePlan, req: &AdapterCallRequest) -> Placement {
    let Some(schema) = &req.response_schema else {
        return Placement::None;
    };
    let copy = || {
        plan.wire
            .clone()
            .unwrap_or_else(|| schema.as_value().clone())
    };
    match plan.mode {
        StructuredOutputMode::None => Placement::None,
        StructuredOutputMode::Strict => Placement::Native { schema: copy() },
        StructuredOutputMode::Tool => {
            let taken: Vec<&str> = req.tools.iter().map(|t| t.name.as_str()).collect();
            Placement::OutputTool {
                name: output_tool_name(schema, &taken),
                input_schema: copy(),
            }
        }
        _ => Placement::Prompt,
    }
}

/// The ladder's decision for `req` (its schema, thinking budget, last turn and tool names).
pub fn place_schema(req: &AdapterCallRequest) -> Placed {
    let plan = match &req.response_schema {
        Some(s) => ladder(s, req.thinking_budget > 0, req.ends_with_prefill()),
        None => WirePlan::none(),
    };
    Placed {
        placement: placement(&plan, req),
        mode: plan.mode,
        transforms: plan.transforms,
        wrapped: plan.wrapped,
        weaker_because: plan.weaker_because,
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
    fn a_non_object_root_outside_native_becomes_a_wrapped_tool() {
        let root = json!({"anyOf": [{"type": "string"}, {"$ref": "#"}]});
        let placed = place_schema(&req_with(root.clone()));
        assert_eq!(placed.mode, StructuredOutputMode::Tool);
        assert!(placed.wrapped);
        assert!(placed.weaker_because[0].contains("recursive"), "{placed:?}");
        let Placement::OutputTool { input_schema, .. } = placed.placement else {
            panic!("expected output tool")
        };
        assert_eq!(input_schema["type"], "object");
        assert_eq!(
            input_schema["properties"]["value"]["anyOf"][1]["$ref"],
            "#/properties/value"
        );
        // With extended thinking the prompt takes it, unwrapped: the prompt asks for the root.
        let mut req = req_with(root);
        req.thinking_budget = 1024;
        let placed = place_schema(&req);
        assert_eq!(placed.mode, StructuredOutputMode::Prompt);
        assert!(!placed.wrapped);
    }

    #[test]
    fn an_array_root_inside_the_subset_goes_native_unwrapped() {
        let placed = place_schema(&req_with(
            json!({"type": "array", "items": {"type": "integer"}}),
        ));
        assert_eq!(placed.mode, StructuredOutputMode::Strict);
        assert!(!placed.wrapped && placed.weaker_because.is_empty());
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
