//! The `[contracts.NAME]` table: what loads, each refusal naming its key, the inputs as a
//! schema and as a check, and the task a contract makes.

use super::*;
use crate::config::Config;
use serde_json::json;

const DECISION: &str = r#"{"type":"object","properties":{"decision":{"enum":["accept","reject"]},"reason":{"type":"string"}},"required":["decision","reason"],"additionalProperties":false}"#;

/// A directory holding `schemas/decision.schema.json`, and its `geode.toml` path.
fn project() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("schemas")).unwrap();
    std::fs::write(dir.path().join("schemas/decision.schema.json"), DECISION).unwrap();
    let path = dir.path().join("geode.toml").display().to_string();
    (dir, path)
}

fn load(toml: &str) -> Result<Config, ConfigError> {
    let (_dir, path) = project();
    Config::parse(toml, &path)
}

fn refusal(toml: &str) -> String {
    load(toml).unwrap_err().to_string()
}

const REVIEW: &str = "[contracts.review]\ndescription = \"Decide\"\nschema = \"schemas/decision.schema.json\"\nprompt = \"Decide on {diff} (risk {risk}, {{literal}})\"\nadapter = \"openai-payg\"\nrequire = \"enforced\"\nfallback = [\"anthropic-payg\"]\nmax_tokens = 500\n[contracts.review.inputs]\nrisk = { type = \"integer\", description = \"1 to 5\" }\n";

#[test]
fn a_contract_loads_with_its_schema_template_inputs_and_route() {
    let cfg = load(REVIEW).unwrap();
    let c = &cfg.checked_contracts["review"];
    assert_eq!(c.description, "Decide");
    assert_eq!(
        c.schema.as_value()["required"],
        json!(["decision", "reason"])
    );
    assert_eq!(
        c.inputs
            .iter()
            .map(|i| (i.name.as_str(), i.kind))
            .collect::<Vec<_>>(),
        [("diff", InputType::String), ("risk", InputType::Integer)]
    );
    assert_eq!(
        c.route,
        Route::Adapter {
            name: "openai-payg".into(),
            model: None
        }
    );
    assert_eq!(c.require, Some(Require::Enforced));
    assert_eq!(
        c.input_schema(),
        json!({
            "type": "object",
            "properties": {"diff": {"type": "string"}, "risk": {"type": "integer", "description": "1 to 5"}},
            "required": ["diff", "risk"],
            "additionalProperties": false
        })
    );
    assert_eq!(c.output_schema()["$schema"], DEFAULT_DIALECT);
    assert_eq!(c.output_schema()["required"], json!(["decision", "reason"]));
}

#[test]
fn an_inline_schema_keeps_its_own_dialect_and_any_root() {
    let cfg = load(
        "[contracts.tags]\nprompt = \"Tags for {text}\"\n[contracts.tags.schema]\n\"$schema\" = \"http://json-schema.org/draft-07/schema#\"\ntype = \"array\"\nitems = { type = \"string\" }\n",
    )
    .unwrap();
    let c = &cfg.checked_contracts["tags"];
    assert_eq!(
        c.output_schema()["$schema"],
        "http://json-schema.org/draft-07/schema#"
    );
    assert_eq!(c.output_schema()["type"], "array");
    assert_eq!(c.route, Route::Default);
}

#[test]
fn the_task_carries_the_prompt_schema_route_and_policy_over_the_files_defaults() {
    let cfg = load(REVIEW).unwrap();
    let mut settings = cfg.settings(&crate::llm::registry::ProcessEnv).unwrap();
    settings.request_timeout = Some(std::time::Duration::from_secs(7));
    let args = json!({"diff": "+x", "risk": 3})
        .as_object()
        .unwrap()
        .clone();
    let task = settings.contract_task("review", &args).unwrap();
    assert_eq!(task.prompt, "Decide on +x (risk 3, {literal})");
    assert!(
        matches!(&task.output, Output::Schema(s) if s.as_value()["required"] == json!(["decision", "reason"]))
    );
    assert_eq!(task.route.adapter(), Some("openai-payg"));
    assert_eq!(task.fallback, Some(vec!["anthropic-payg".to_owned()]));
    assert_eq!(task.require, Require::Enforced);
    assert_eq!(task.budgets.max_tokens, 500);
    assert_eq!(task.budgets.timeout, std::time::Duration::from_secs(7));
    assert!(task.cache && !task.repair);
    assert!(matches!(
        settings.contract_task("nope", &args),
        Err(InputError::UnknownContract(_))
    ));
}

#[test]
fn arguments_that_break_the_inputs_are_refused_by_name_without_their_values() {
    let cfg = load(REVIEW).unwrap();
    let c = &cfg.checked_contracts["review"];
    let args = |v: serde_json::Value| v.as_object().unwrap().clone();
    for (given, expected) in [
        (json!({"diff": "x"}), InputError::Missing("risk".into())),
        (
            json!({"diff": "x", "risk": "sk-secret-3"}),
            InputError::WrongType {
                name: "risk".into(),
                expected: "an integer",
            },
        ),
        (
            json!({"diff": 1, "risk": 3}),
            InputError::WrongType {
                name: "diff".into(),
                expected: "a string",
            },
        ),
        (
            json!({"diff": "x", "risk": 3.5}),
            InputError::WrongType {
                name: "risk".into(),
                expected: "an integer",
            },
        ),
        (
            json!({"diff": "x", "risk": 3, "extra": true}),
            InputError::Unknown {
                name: "extra".into(),
                known: vec!["diff".into(), "risk".into()],
            },
        ),
    ] {
        let err = c.prompt(&args(given.clone())).unwrap_err();
        assert_eq!(err, expected, "{given}");
        assert!(!err.to_string().contains("sk-secret"), "{err}");
    }
    assert_eq!(
        c.prompt(&args(json!({"diff": "x", "risk": 4.0}))).unwrap(),
        "Decide on x (risk 4.0, {literal})",
        "4.0 is an integer to JSON Schema"
    );
    let huge = "x".repeat(MAX_INPUT_BYTES + 1);
    assert_eq!(
        c.prompt(&args(json!({"diff": huge, "risk": 1}))),
        Err(InputError::TooLarge)
    );
}

#[test]
fn input_pairs_are_read_by_their_type() {
    let cfg = load(REVIEW).unwrap();
    let c = &cfg.checked_contracts["review"];
    let pairs = |p: &[&str]| p.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let args = c.args_from_pairs(&pairs(&["diff=a=b", "risk= 2"])).unwrap();
    assert_eq!(
        serde_json::Value::Object(args),
        json!({"diff": "a=b", "risk": 2})
    );
    assert_eq!(
        c.args_from_pairs(&pairs(&["risk=high"])),
        Err(InputError::WrongType {
            name: "risk".into(),
            expected: "a whole number"
        })
    );
    assert_eq!(
        c.args_from_pairs(&pairs(&["diff"])),
        Err(InputError::NotAPair(1))
    );
    assert_eq!(
        c.args_from_pairs(&pairs(&["diff=a", "diff=b"])),
        Err(InputError::Twice("diff".into()))
    );
}

#[test]
fn every_bad_contract_is_refused_naming_its_key() {
    let table = |rest: &str| {
        format!(
            "[contracts.c]\nschema = \"schemas/decision.schema.json\"\nprompt = \"Do {{x}}\"\n{rest}"
        )
    };
    for (toml, key) in [
        (table("adapter = \"nope\"\n"), "[contracts.c] adapter"),
        (table("fallback = [\"local\", \"nope\"]\n"), "[contracts.c] fallback"),
        (table("model = \" \"\n"), "[contracts.c] model"),
        (table("[contracts.c.inputs]\ny = \"string\"\n"), "[contracts.c] inputs.y"),
        (
            "[contracts.c]\nschema = \"schemas/decision.schema.json\"\nprompt = \"JSON like {\\\"a\\\": 1}\"\n".to_owned(),
            "[contracts.c] prompt",
        ),
        (
            "[contracts.c]\nschema = \"schemas/decision.schema.json\"\nprompt = \"a } b\"\n".to_owned(),
            "[contracts.c] prompt",
        ),
        (
            "[contracts.c]\nschema = \"schemas/decision.schema.json\"\nprompt = \" \"\n".to_owned(),
            "[contracts.c] prompt",
        ),
        (
            "[contracts.c]\nschema = \"schemas/missing.json\"\nprompt = \"p\"\n".to_owned(),
            "[contracts.c] schema",
        ),
        (
            "[contracts.c]\nschema = \"/etc/passwd\"\nprompt = \"p\"\n".to_owned(),
            "[contracts.c] schema",
        ),
        (
            "[contracts.c]\nschema = \"../outside.json\"\nprompt = \"p\"\n".to_owned(),
            "[contracts.c] schema",
        ),
        (
            "[contracts.c]\nprompt = \"p\"\n[contracts.c.schema]\ntype = \"object\"\nminProperties = \"x\"\n".to_owned(),
            "[contracts.c] schema",
        ),
        (
            "[contracts.\"bad name\"]\nschema = \"schemas/decision.schema.json\"\nprompt = \"p\"\n".to_owned(),
            "[contracts.bad name]",
        ),
    ] {
        let err = refusal(&toml);
        assert!(err.contains(key), "{toml}\n→ {err}");
    }
    for unknown in [
        table("temperature = 1\n"),
        table("[contracts.c.inputs]\nx = \"image\"\n"),
        table("require = \"always\"\n"),
    ] {
        assert!(refusal(&unknown).contains("line"), "{unknown}");
    }
}

#[test]
fn a_schema_path_may_not_leave_the_directory_through_a_symlink() {
    let (dir, path) = project();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("s.json"), DECISION).unwrap();
    std::os::unix::fs::symlink(outside.path().join("s.json"), dir.path().join("link.json"))
        .unwrap();
    let err = Config::parse(
        "[contracts.c]\nschema = \"link.json\"\nprompt = \"p\"\n",
        &path,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("outside the directory"), "{err}");
    std::os::unix::fs::symlink(
        dir.path().join("schemas/decision.schema.json"),
        dir.path().join("inside.json"),
    )
    .unwrap();
    assert!(
        Config::parse(
            "[contracts.c]\nschema = \"inside.json\"\nprompt = \"p\"\n",
            &path
        )
        .is_ok()
    );
}

#[test]
fn a_contract_needs_no_trust_of_its_own() {
    let cfg = load(REVIEW).unwrap();
    assert_eq!(
        crate::config::trust::untrusted_choices(&cfg),
        Vec::<String>::new()
    );
}
