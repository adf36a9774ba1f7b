//! Routing table: model names and available credentials to the expected adapter, and the
//! `require` policy refusing before any request.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use geode::ledger::{Require, StructuredOutputMode};
use geode::llm::routing::{RouteRequest, RoutingError, family_of_model, route};
use geode::schema::ResponseSchema;
use serde_json::json;
use support::env::MapEnv;

mod support;

fn strict_schema() -> ResponseSchema {
    ResponseSchema::from_value(json!({"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false})).unwrap()
}

fn pick(model: &str, m: &MapEnv) -> Result<&'static str, RoutingError> {
    route(
        &RouteRequest {
            model,
            ..RouteRequest::default()
        },
        m,
    )
    .map(|r| r.spec.name)
}

#[test]
fn model_names_route_to_their_family() {
    for (model, fam) in [
        ("gpt-5.5", "OpenAi"),
        ("o3", "OpenAi"),
        ("o4-mini", "OpenAi"),
        ("o1", "OpenAi"),
        ("gpt-5.1-codex", "OpenAi"),
        ("claude-opus-4-8", "Anthropic"),
        ("glm-5.2", "Glm"),
    ] {
        assert_eq!(
            format!("{:?}", family_of_model(model).unwrap()),
            fam,
            "{model}"
        );
    }
    assert!(family_of_model("mistral-large").is_none());
    assert!(family_of_model("").is_none());
}

#[test]
fn within_a_family_payg_comes_before_subscription_before_cli() {
    let mut m = MapEnv::described(&["OPENAI_API_KEY"]);
    m.add_file("/home/u/.codex/auth.json");
    m.add_bin("codex");
    assert_eq!(pick("gpt-5.5", &m).unwrap(), "openai-payg");
    m.unset("OPENAI_API_KEY");
    assert_eq!(pick("gpt-5.5", &m).unwrap(), "codex-oauth");
    m.clear_files();
    assert_eq!(pick("gpt-5.5", &m).unwrap(), "codex-cli");
    m.set_var("CODEX_HOME", "/ch");
    m.add_file("/ch/auth.json");
    assert_eq!(
        pick("gpt-5.5", &m).unwrap(),
        "codex-oauth",
        "CODEX_HOME is honoured"
    );
}

#[test]
fn anthropic_and_glm_credentials() {
    let m = MapEnv::described(&["CLAUDE_CODE_OAUTH_TOKEN"]);
    assert_eq!(pick("claude-sonnet-4-6", &m).unwrap(), "anthropic-oauth");
    let m = MapEnv::described(&["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"]);
    assert_eq!(pick("claude-sonnet-4-6", &m).unwrap(), "anthropic-payg");
    let mut m = MapEnv::described(&[]);
    m.add_file("/home/u/.claude/.credentials.json");
    assert_eq!(pick("claude-sonnet-4-6", &m).unwrap(), "anthropic-oauth");
    let m = MapEnv::described(&["ZAI_CODING_PLAN_KEY"]);
    assert_eq!(pick("glm-5.2", &m).unwrap(), "glm-coding-plan");
    let m = MapEnv::described(&["ZAI_API_KEY", "ZAI_CODING_PLAN_KEY"]);
    assert_eq!(pick("glm-5.2", &m).unwrap(), "glm-payg");
}

#[test]
fn a_family_without_credentials_fails_naming_each_adapter() {
    let err = pick("claude-opus-4-8", &MapEnv::described(&[])).unwrap_err();
    let text = err.to_string();
    for a in ["anthropic-payg", "anthropic-oauth", "claude-cli"] {
        assert!(text.contains(a), "{text}");
    }
    assert!(text.contains("ANTHROPIC_API_KEY"), "{text}");
}

#[test]
fn nothing_named_or_configured_means_local_and_defaults_win_over_that() {
    let m = MapEnv::described(&[]);
    assert_eq!(pick("", &m).unwrap(), "local");
    assert_eq!(pick("some-unknown-model", &m).unwrap(), "local");
    let r = route(
        &RouteRequest {
            default_adapter: Some("glm-payg"),
            ..RouteRequest::default()
        },
        &m,
    )
    .unwrap();
    assert_eq!(r.spec.name, "glm-payg");
    let m = MapEnv::described(&["ZAI_API_KEY"]);
    assert_eq!(
        pick("", &m).unwrap(),
        "glm-payg",
        "a configured provider is used before local"
    );
}

#[test]
fn explicit_adapter_wins_and_unknown_names_are_errors() {
    let m = MapEnv::described(&["OPENAI_API_KEY"]);
    let r = route(
        &RouteRequest {
            adapter: Some("glm-payg"),
            model: "gpt-5.5",
            ..RouteRequest::default()
        },
        &m,
    )
    .unwrap();
    assert_eq!(r.spec.name, "glm-payg");
    assert!(matches!(
        route(
            &RouteRequest {
                adapter: Some("nope"),
                ..RouteRequest::default()
            },
            &m
        ),
        Err(RoutingError::UnknownAdapter(_))
    ));
}

#[test]
fn require_enforced_refuses_glm_naming_json_mode() {
    let s = strict_schema();
    let m = MapEnv::described(&["ZAI_API_KEY"]);
    let req = RouteRequest {
        adapter: Some("glm-payg"),
        require: Require::Enforced,
        schema: Some(&s),
        ..RouteRequest::default()
    };
    let err = route(&req, &m).unwrap_err();
    assert!(err.to_string().contains("json-mode"), "{err}");
    let ok = route(
        &RouteRequest {
            require: Require::BestEffort,
            ..req
        },
        &m,
    )
    .unwrap();
    assert_eq!(ok.mode, StructuredOutputMode::JsonMode);
}

#[test]
fn require_is_judged_per_schema() {
    let strict = strict_schema();
    let loose = ResponseSchema::from_value(json!({"type":"object"})).unwrap();
    let m = MapEnv::described(&["OPENAI_API_KEY"]);
    let req = |s| RouteRequest {
        model: "gpt-5.5",
        require: Require::Enforced,
        schema: Some(s),
        ..RouteRequest::default()
    };
    assert_eq!(
        route(&req(&strict), &m).unwrap().mode,
        StructuredOutputMode::Strict
    );
    let err = route(&req(&loose), &m).unwrap_err();
    assert!(err.to_string().contains("hint"), "{err}");
    let wired = RouteRequest {
        require: Require::Wired,
        ..req(&loose)
    };
    assert_eq!(route(&wired, &m).unwrap().mode, StructuredOutputMode::Hint);
    let cli = RouteRequest {
        adapter: Some("claude-cli"),
        ..wired
    };
    assert_eq!(
        route(&cli, &m).unwrap().mode,
        StructuredOutputMode::CliValidated
    );
}

#[test]
fn require_skips_weak_candidates_within_a_family() {
    let loose = ResponseSchema::from_value(json!({"type":"object"})).unwrap();
    let mut m = MapEnv::described(&["OPENAI_API_KEY"]);
    m.add_bin("codex");
    let r = route(
        &RouteRequest {
            model: "gpt-5.5",
            require: Require::Wired,
            schema: Some(&loose),
            ..RouteRequest::default()
        },
        &m,
    )
    .unwrap();
    assert_eq!(r.spec.name, "openai-payg");
    assert!(r.rejected.is_empty());
}
