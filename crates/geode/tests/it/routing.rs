//! Routing table: model names and available credentials to the expected adapter, and the
//! `require` policy refusing before any request.

use geode::llm::registry::family_of_model;
use geode::llm::routing::{RouteRequest, RoutingError, route};
use geode::schema::ResponseSchema;
use geode::vocab::{Require, StructuredOutputMode};
use serde_json::json;
use support::env::MapEnv;

use geode_testkit as support;

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
fn the_credentials_on_the_machine_pick_the_adapter() {
    // The model asked for, the variables set, the files present, the adapter routed to.
    let rows: &[(&str, &[&str], &[&str], &str)] = &[
        (
            "claude-sonnet-4-6",
            &["CLAUDE_CODE_OAUTH_TOKEN"],
            &[],
            "anthropic-oauth",
        ),
        (
            "claude-sonnet-4-6",
            &["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"],
            &[],
            "anthropic-payg",
        ),
        (
            "claude-sonnet-4-6",
            &[],
            &["/home/u/.claude/.credentials.json"],
            "anthropic-oauth",
        ),
        ("glm-5.2", &["ZAI_CODING_PLAN_KEY"], &[], "glm-coding-plan"),
        (
            "glm-5.2",
            &["ZAI_API_KEY", "ZAI_CODING_PLAN_KEY"],
            &[],
            "glm-payg",
        ),
        // Nothing named or configured means local.
        ("", &[], &[], "local"),
        ("some-unknown-model", &[], &[], "local"),
        // A configured provider is used before local.
        ("", &["ZAI_API_KEY"], &[], "glm-payg"),
    ];
    for &(model, vars, files, want) in rows {
        let mut m = MapEnv::described(vars);
        for f in files {
            m.add_file(f);
        }
        let got = pick(model, &m).unwrap();
        assert_eq!(got, want, "{model:?} with {vars:?} and {files:?}");
    }
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
fn a_configured_default_adapter_wins_over_local() {
    let m = MapEnv::described(&[]);
    let r = route(
        &RouteRequest {
            default_adapter: Some("glm-payg"),
            ..RouteRequest::default()
        },
        &m,
    )
    .unwrap();
    assert_eq!(r.spec.name, "glm-payg");
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
