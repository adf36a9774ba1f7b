use super::*;
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
    let s = spec("openai-payg").unwrap();
    assert_eq!(
        s.mode_for(Some(&strict), false),
        StructuredOutputMode::Strict
    );
    assert_eq!(s.mode_for(Some(&loose), false), StructuredOutputMode::Hint);
    assert_eq!(s.mode_for(None, false), StructuredOutputMode::None);
    assert_eq!(
        spec("glm-payg").unwrap().mode_for(Some(&strict), false),
        StructuredOutputMode::JsonMode
    );
}

#[test]
fn cli_adapters_do_not_forward_framework_tools() {
    for n in ["claude-cli", "codex-cli", "local"] {
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
        let plan = a.plan_for(Some(&ints), false);
        assert_eq!(plan.mode, a.mode_for(Some(&ints), false), "{}", a.name);
        let (mode, wrapped) = match a.dialect {
            // openai-compatible: strict until its probe says otherwise, any root as-is.
            _ if matches!(a.mode_rule, ModeRule::Probed) => (StructuredOutputMode::Strict, false),
            Dialect::OpenAiStrict => (StructuredOutputMode::Strict, true),
            Dialect::Anthropic => (StructuredOutputMode::Strict, false),
            Dialect::ClaudeCli => (StructuredOutputMode::CliValidated, true),
            Dialect::CodexCli => (StructuredOutputMode::CliFlag, true),
            Dialect::Glm => (StructuredOutputMode::JsonMode, true),
            Dialect::Chat => unreachable!("only openai-compatible, which is probed"),
            Dialect::Local => (StructuredOutputMode::Constrained, false),
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
fn the_anthropic_ladder_is_the_placement_rule() {
    let array_root =
        ResponseSchema::from_value(json!({"type": "array", "items": {"$ref": "#"}})).unwrap();
    let s = spec("anthropic-payg").unwrap();
    assert_eq!(
        s.mode_for(Some(&array_root), false),
        crate::llm::wire::messages::mode_for(Some(&array_root))
    );
}
