//! The fail-closed policy end to end through the `geode` binary:
//! `--require` refuses an adapter whose mode is too weak before any request, the configured
//! fallback chain takes over on a provider failure, the OpenAI strict limits are checked before
//! the call, and a broken config file names its line.

use crate::support;

use geode_fakes::{FakeServer, Kind, Reply, Script};
use serde_json::{Value, json};
use support::http_cases::{GLM_PAYG, OPENAI_PAYG};
use support::{DECIDE, SECRET, Sandbox, decision_schema_path, fake_of, good_answer, model_calls};

/// A GLM fake answering the decision, and `geode run --require REQUIRE` on it.
async fn glm_run_requiring(require: &str) -> (FakeServer, Sandbox, support::Outcome) {
    let (server, sb) = GLM_PAYG
        .serve(Script::always(Reply::Json(good_answer())))
        .await;
    let out = sb
        .run_decision("glm-payg", &["--require", require], DECIDE)
        .await;
    (server, sb, out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_enforced_refuses_glm_json_mode_before_any_request() {
    let (server, sb, out) = glm_run_requiring("enforced").await;
    out.assert_exit(2)
        .assert_stderr_has(&["json-mode", "glm-payg"]);
    assert!(out.stdout.trim().is_empty(), "{}", out.dump());
    assert!(server.requests().is_empty(), "{:#?}", server.requests());

    // The same through `geode worker`: a failed result line, exit 2, still no request.
    let line = json!({
        "task_id": "t-enforced", "description": "Decide.", "adapter": "glm-payg",
        "require": "enforced",
        "response_schema": support::decision_schema(),
    })
    .to_string();
    let out = sb.worker(&line).await;
    out.assert_exit(2);
    let result = out.json();
    assert_eq!(result["success"], false);
    assert!(
        result["error"].as_str().unwrap().contains("json-mode"),
        "{result}"
    );
    assert!(server.requests().is_empty(), "{:#?}", server.requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_best_effort_runs_glm_and_reports_json_mode() {
    let (server, _sb, out) = glm_run_requiring("best-effort").await;
    out.assert_exit(0)
        .assert_stderr_has(&["wire_mode=json-mode"]);
    assert_eq!(out.json(), good_answer());
    assert_eq!(model_calls(&server).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configured_fallback_chain_takes_over_from_a_failing_openai() {
    let openai = fake_of(Kind::Responses, Script::always(Reply::status(500))).await;
    let anthropic = fake_of(Kind::Messages, Script::always(Reply::Json(good_answer()))).await;
    let mut sb = Sandbox::new();
    sb.var("GEODE_OPENAI_BASE_URL", openai.base_url())
        .var("OPENAI_API_KEY", SECRET)
        .var("GEODE_ANTHROPIC_BASE_URL", anthropic.base_url())
        .var("ANTHROPIC_API_KEY", SECRET);
    sb.config(
        "fallback = [\"openai-payg\", \"anthropic-payg\"]\n\n\
         [adapters.anthropic-payg]\nmodel = \"claude-e2e-model\"\n",
    );
    let schema = decision_schema_path();
    let out = sb
        .geode(
            &[
                "run", "--model", "gpt-5.5", "--schema", &schema, "--json", "Decide.",
            ],
            "",
        )
        .await;
    out.assert_exit(0).assert_hides(SECRET);
    let result = out.json();
    assert_eq!(result["success"], true, "{result}");
    assert_eq!(result["answer"], good_answer(), "{result}");
    let ledger = &result["ledger"];
    assert_eq!(ledger["adapter"], "anthropic-payg", "{ledger}");
    assert_eq!(
        ledger["model"], "claude-e2e-model",
        "the ledger names the model that answered"
    );
    let tried = ledger["adapters_tried"].as_array().unwrap();
    assert_eq!(tried.len(), 2, "{ledger}");
    assert_eq!(tried[0]["adapter"], "openai-payg", "{ledger}");
    let first = tried[0]["outcome"].as_str().unwrap();
    assert!(first.contains("500"), "the 500 is named: {first}");
    assert_eq!(tried[1]["adapter"], "anthropic-payg", "{ledger}");
    assert_eq!(tried[1]["outcome"], "ok", "{ledger}");

    assert!(!model_calls(&openai).is_empty(), "openai was tried first");
    let calls = model_calls(&anthropic);
    assert_eq!(calls.len(), 1, "{calls:#?}");
    assert_eq!(
        calls[0].body["model"], "claude-e2e-model",
        "a fallback in another family asks for its own model, not gpt-5.5"
    );
    assert!(
        model_calls(&openai)
            .iter()
            .all(|c| c.body["model"] == "gpt-5.5")
    );
    assert_eq!(
        calls[0].body["output_config"]["format"]["schema"],
        support::decision_schema()
    );
}

/// A schema whose object nesting is `levels` deep.
fn nested(levels: usize) -> Value {
    let mut schema = json!({"type": "string"});
    for _ in 0..levels {
        schema = json!({
            "type": "object",
            "properties": {"inner": schema},
            "required": ["inner"],
            "additionalProperties": false,
        });
    }
    schema
}

/// A schema with `n` enum values.
fn many_enum_values(n: usize) -> Value {
    let values: Vec<String> = (0..n).map(|i| format!("v{i}")).collect();
    json!({
        "type": "object",
        "properties": {"pick": {"type": "string", "enum": values}},
        "required": ["pick"],
        "additionalProperties": false,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preflight_refuses_schemas_past_the_openai_strict_limits_before_any_request() {
    for (file, schema, limit, within) in [
        (
            "deep.schema.json",
            nested(11),
            "levels of object nesting",
            nested(10),
        ),
        (
            "wide.schema.json",
            many_enum_values(1001),
            "enum values in total",
            many_enum_values(1000),
        ),
    ] {
        let (server, sb) = OPENAI_PAYG.serve(Script::always(Reply::Auto)).await;
        let path = sb.cwd.path().join(file);
        std::fs::write(&path, schema.to_string()).unwrap();
        let path = path.display().to_string();
        let out = sb
            .geode(
                &["run", "--adapter", "openai-payg", "--schema", &path, "Go."],
                "",
            )
            .await;
        out.assert_exit(2).assert_stderr_has(&[limit, "refused"]);
        assert!(
            server.requests().is_empty(),
            "{file}: {:#?}",
            server.requests()
        );

        // One step inside the limit is sent (the check does not refuse everything).
        let within_path = sb.cwd.path().join(format!("ok-{file}"));
        std::fs::write(&within_path, within.to_string()).unwrap();
        let within_path = within_path.display().to_string();
        let out = sb.run("openai-payg", &within_path, &["Go."]).await;
        out.assert_exit(0);
        assert_eq!(model_calls(&server).len(), 1, "ok-{file}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_file_with_a_syntax_error_exits_2_naming_the_line() {
    let sb = Sandbox::new();
    sb.config(
        "default_adapter = \"openai-payg\"\n\nfallback = [\"openai-payg\" \"anthropic-payg\"]\n",
    );
    let out = sb.run_decision("openai-payg", &[], "Go.").await;
    out.assert_exit(2)
        .assert_stderr_has(&["line 3", "geode.toml"]);

    let out = sb
        .worker(&support::worker_line("t-cfg", "openai-payg"))
        .await;
    out.assert_exit(2);
    let result = out.json();
    assert!(
        result["error"].as_str().unwrap().contains("line 3"),
        "{result}"
    );
}
