use super::*;
use crate::schema::ResponseSchema;
use crate::vocab::StructuredOutputMode;
use serde_json::json;

#[test]
fn ten_adapters_with_unique_names() {
    assert_eq!(ADAPTERS.len(), 10);
    let mut names: Vec<_> = ADAPTERS.iter().map(|a| a.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 10);
}

#[test]
fn openai_mode_follows_the_strict_check() {
    let strict = ResponseSchema::from_value(json!({"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false})).unwrap();
    // A map: strict mode cannot take it (an optional property or an open object it can).
    let loose = ResponseSchema::from_value(
        json!({"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{"type":"string"}}),
    )
    .unwrap();
    let s = spec("openai-payg").unwrap().schema_route;
    assert_eq!(s.mode(Some(&strict)), StructuredOutputMode::Strict);
    assert_eq!(s.mode(Some(&loose)), StructuredOutputMode::Hint);
    assert_eq!(s.mode(None), StructuredOutputMode::None);
    assert_eq!(
        spec("glm-payg").unwrap().schema_route.mode(Some(&strict)),
        StructuredOutputMode::JsonMode
    );
}

#[test]
fn cli_adapters_do_not_forward_framework_tools() {
    for n in ["claude-cli", "codex-cli"] {
        assert!(!spec(n).unwrap().framework_tools, "{n}");
    }
}

#[test]
fn reasoning_models_are_recognised_from_the_rows() {
    let s = spec("openai-payg").unwrap();
    for m in ["gpt-5.5", "gpt-5-mini", "o3", "o4-mini", "O1", "codex-mini"] {
        assert!(s.is_reasoning_model(m), "{m}");
    }
    for m in ["gpt-4.1", "gpt-4o", "omni-x", ""] {
        assert!(!s.is_reasoning_model(m), "{m}");
    }
    assert!(
        !spec("anthropic-payg")
            .unwrap()
            .is_reasoning_model("claude-opus")
    );
}

#[test]
fn model_names_route_to_their_family_from_the_rows() {
    for (m, f) in [
        ("gpt-5.5", Some(Family::OpenAi)),
        ("o1", Some(Family::OpenAi)),
        ("o3-mini", Some(Family::OpenAi)),
        ("gpt-5-codex", Some(Family::OpenAi)),
        (" Claude-Sonnet-4-6 ", Some(Family::Anthropic)),
        ("glm-5.2", Some(Family::Glm)),
        ("o2", None),
        ("llama-3", None),
        ("", None),
    ] {
        assert_eq!(family_of_model(m), f, "{m}");
    }
}

#[test]
fn every_http_row_has_an_endpoint_and_no_other_row_has_one() {
    for a in ADAPTERS {
        assert_eq!(a.endpoint.is_some(), a.wire_family.is_http(), "{}", a.name);
    }
}

#[test]
fn an_array_root_plan_per_adapter() {
    let ints =
        ResponseSchema::from_value(json!({"type": "array", "items": {"type": "integer"}})).unwrap();
    for a in ADAPTERS {
        let plan = a.schema_route.plan(Some(&ints), PlanCx::default());
        assert_eq!(plan.mode, a.schema_route.mode(Some(&ints)), "{}", a.name);
        let (mode, wrapped) = match a.schema_route {
            // openai-compatible: strict until its probe says otherwise, any root as-is.
            SchemaRoute::Probed => (StructuredOutputMode::Strict, false),
            SchemaRoute::OpenAiStrict => (StructuredOutputMode::Strict, true),
            SchemaRoute::AnthropicLadder => (StructuredOutputMode::Strict, false),
            SchemaRoute::ClaudeCliTool => (StructuredOutputMode::CliValidated, true),
            SchemaRoute::CodexOutputSchema => (StructuredOutputMode::CliFlag, true),
            SchemaRoute::JsonObject => (StructuredOutputMode::JsonMode, true),
            SchemaRoute::Constrained => (StructuredOutputMode::Constrained, false),
            other => panic!("no built-in row has the route {other:?}"),
        };
        assert_eq!((plan.mode, plan.wrapped), (mode, wrapped), "{}", a.name);
        assert_eq!(
            plan.transforms
                .iter()
                .any(|t| t.action.starts_with("wrapped the root")),
            wrapped,
            "{}",
            a.name
        );
    }
}

#[test]
fn a_probed_route_plans_what_its_verdict_says() {
    let ints =
        ResponseSchema::from_value(json!({"type": "array", "items": {"type": "integer"}})).unwrap();
    let plan = |probed| {
        SchemaRoute::Probed.plan(
            Some(&ints),
            PlanCx {
                probed,
                ..PlanCx::default()
            },
        )
    };
    assert_eq!(plan(None).mode, StructuredOutputMode::Strict);
    let hint = plan(Some(StructuredOutputMode::Hint));
    assert_eq!(
        (hint.mode, hint.wrapped),
        (StructuredOutputMode::Hint, false)
    );
    // Refused: JSON mode, which answers an object, so the array root is wrapped.
    let json = plan(Some(StructuredOutputMode::JsonMode));
    assert_eq!(
        (json.mode, json.wrapped),
        (StructuredOutputMode::JsonMode, true)
    );
}

#[test]
fn only_openai_bound_routes_refuse_a_schema_past_openai_limits() {
    let mut v = json!({"type": "string"});
    for _ in 0..11 {
        v = json!({"type":"object","properties":{"a": v},"required":["a"],"additionalProperties":false});
    }
    let deep = ResponseSchema::from_value(v).unwrap();
    let preflight = crate::schema::preflight::Preflight::new(&deep);
    for a in ADAPTERS {
        let refused = !a.schema_route.limit_violations(&preflight).is_empty();
        let openai_bound = matches!(
            a.schema_route,
            SchemaRoute::OpenAiStrict | SchemaRoute::CodexOutputSchema
        );
        assert_eq!(refused, openai_bound, "{}", a.name);
    }
}

#[test]
fn the_anthropic_ladder_falls_back_on_thinking_and_prefill() {
    let recursive =
        ResponseSchema::from_value(json!({"type": "array", "items": {"$ref": "#"}})).unwrap();
    let flat = ResponseSchema::from_value(json!({"type": "object"})).unwrap();
    let route = spec("anthropic-payg").unwrap().schema_route;
    let mode = |s: &ResponseSchema, thinking, prefill| {
        route
            .plan(
                Some(s),
                PlanCx {
                    thinking,
                    prefill,
                    probed: None,
                },
            )
            .mode
    };
    assert_eq!(mode(&flat, false, false), StructuredOutputMode::Strict);
    assert_eq!(mode(&flat, false, true), StructuredOutputMode::Tool);
    assert_eq!(mode(&recursive, false, false), StructuredOutputMode::Tool);
    assert_eq!(mode(&recursive, true, false), StructuredOutputMode::Prompt);
}

/// Routing's fallback is found by what the row is: exactly one built-in row is served by a local
/// engine, and `embedded` finds it.
#[test]
fn exactly_one_row_is_the_embedded_default() {
    let local: Vec<_> = ADAPTERS
        .iter()
        .filter(|a| a.wire_family == WireFamily::Local)
        .collect();
    assert_eq!(local.len(), 1);
    assert_eq!(embedded().map(|a| a.name), Some(local[0].name));
}
