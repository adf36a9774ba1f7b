//! Budgets end to end through the `geode` binary: a stream that never ends is exit 3 naming the
//! response budget (default, `geode.toml`, environment), a hostile schema is refused at once
//! with a small output line, and validation errors past 100 are counted, not listed, in the
//! worker's output and in `geode validate`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use geode_fakes::{FakeServer, Kind, Reply, Script};
use serde_json::{Map, Value, json};
use support::{SECRET, Sandbox, decision_schema_path, model_calls};

/// A sandbox for `openai-payg` pointed at `server`.
fn payg(server: &FakeServer) -> Sandbox {
    let mut sb = Sandbox::new();
    sb.var("GEODE_OPENAI_BASE_URL", server.base_url())
        .var("OPENAI_API_KEY", SECRET);
    sb
}

/// `geode run --adapter openai-payg --schema decision "Decide."`.
async fn run(sb: &Sandbox) -> support::Outcome {
    let schema = decision_schema_path();
    sb.geode(
        &[
            "run",
            "--adapter",
            "openai-payg",
            "--schema",
            &schema,
            "Decide.",
        ],
        "",
    )
    .await
}

fn error_line(out: &support::Outcome) -> String {
    out.stderr
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_else(|| panic!("no error line: {}", out.dump()))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_stream_exits_3_at_the_configured_budget() {
    let server = FakeServer::start(Kind::Responses, Script::always(Reply::EndlessStream))
        .await
        .unwrap();

    // The default: 16 MiB.
    let sb = payg(&server);
    let out = run(&sb).await;
    assert_eq!(out.code, Some(3), "{}", out.dump());
    let error = error_line(&out);
    assert!(error.contains("response too large"), "{error}");
    assert!(error.contains("16777216"), "{error}");

    // From geode.toml.
    let sb = payg(&server);
    sb.config("[limits]\nmax_response_bytes = 2097152\n");
    let out = run(&sb).await;
    assert_eq!(out.code, Some(3), "{}", out.dump());
    assert!(error_line(&out).contains("2097152"), "{}", out.dump());

    // The environment wins over the file.
    let mut sb = payg(&server);
    sb.config("[limits]\nmax_response_bytes = 2097152\n");
    sb.var("GEODE_MAX_RESPONSE_BYTES", "1048576");
    let out = run(&sb).await;
    assert_eq!(out.code, Some(3), "{}", out.dump());
    assert!(error_line(&out).contains("1048576"), "{}", out.dump());

    // Through the worker: a typed error kind in the ledger, and no retry of the same stream.
    let before = model_calls(&server).len();
    let line = json!({"task_id": "endless", "description": "Decide.", "adapter": "openai-payg",
                      "response_schema": support::decision_schema()});
    let out = sb.geode(&["worker"], &format!("{line}\n")).await;
    assert_eq!(out.code, Some(3), "{}", out.dump());
    let result = out.json();
    let attempts = result["ledger"]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{result}");
    assert_eq!(attempts[0]["error_kind"], "response_too_large", "{result}");
    assert_eq!(model_calls(&server).len(), before + 1);
    assert!(!out.stdout.contains(SECRET) && !out.stderr.contains(SECRET));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_response_budget_is_a_usage_error() {
    let server = FakeServer::start(Kind::Responses, Script::always(Reply::text("{}")))
        .await
        .unwrap();
    let mut sb = payg(&server);
    sb.var("GEODE_MAX_RESPONSE_BYTES", "lots");
    let out = run(&sb).await;
    assert_eq!(out.code, Some(2), "{}", out.dump());
    assert!(
        out.stderr.contains("GEODE_MAX_RESPONSE_BYTES"),
        "{}",
        out.dump()
    );

    let sb = payg(&server);
    sb.config("[limits]\nmax_response_bytes = 0\n");
    let out = run(&sb).await;
    assert_eq!(out.code, Some(2), "{}", out.dump());
    assert!(out.stderr.contains("line 2"), "{}", out.dump());
    assert!(model_calls(&server).is_empty());
}

/// The schema from the issue: `$defs` chaining `keyword: [{$ref: next}, {$ref: next}]` 20 deep.
fn hostile(keyword: &str) -> Value {
    let mut defs = Map::new();
    for i in 0..20 {
        let next = json!({"$ref": format!("#/$defs/d{}", i + 1)});
        defs.insert(format!("d{i}"), json!({ keyword: [next.clone(), next] }));
    }
    defs.insert("d20".into(), json!({"type": "string"}));
    json!({"type": "object", "$ref": "#/$defs/d0", "$defs": defs})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_schema_is_refused_at_once_with_a_short_line() {
    let server = FakeServer::start(Kind::Chat, Script::always(Reply::Json(json!({"x": 1}))))
        .await
        .unwrap();
    for keyword in ["anyOf", "allOf"] {
        let mut sb = Sandbox::new();
        sb.var("GEODE_GLM_BASE_URL", server.base_url())
            .var("ZAI_API_KEY", SECRET);
        let line = json!({"task_id": "hostile", "description": "Return {\"x\":1}.",
                          "adapter": "glm-payg", "response_schema": hostile(keyword)});
        let out = sb.geode(&["worker"], &format!("{line}\n")).await;
        assert_eq!(out.code, Some(2), "{keyword}: {}", out.dump());
        assert_eq!(out.stdout.lines().count(), 1, "{}", out.dump());
        assert!(
            out.stdout.len() < 2000,
            "{keyword}: {} bytes",
            out.stdout.len()
        );
        let result = out.json();
        let error = result["error"].as_str().unwrap();
        assert!(error.contains("too expensive"), "{keyword}: {error}");

        let path = sb.cwd.path().join("hostile.schema.json");
        std::fs::write(&path, hostile(keyword).to_string()).unwrap();
        let out = sb
            .geode(
                &["validate", "--schema", &path.display().to_string()],
                "{\"x\":1}",
            )
            .await;
        assert_eq!(out.code, Some(2), "{}", out.dump());
        assert!(out.stderr.contains("too expensive"), "{}", out.dump());
    }
    assert!(
        model_calls(&server).is_empty(),
        "nothing is sent for a refused schema"
    );
}

/// A schema every integer member breaks, and an answer with 250 of them.
fn strings_only() -> Value {
    json!({"type": "object", "additionalProperties": {"type": "string"}})
}

fn integers(n: usize) -> Value {
    Value::Object((0..n).map(|i| (format!("p{i}"), json!(i))).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_past_one_hundred_are_counted_in_the_worker_and_in_validate() {
    let server = FakeServer::start(Kind::Chat, Script::always(Reply::Json(integers(250))))
        .await
        .unwrap();
    let mut sb = Sandbox::new();
    sb.var("GEODE_GLM_BASE_URL", server.base_url())
        .var("ZAI_API_KEY", SECRET);
    let line = json!({"task_id": "many", "description": "Return numbers.",
                      "adapter": "glm-payg", "response_schema": strings_only()});
    let out = sb.geode(&["worker"], &format!("{line}\n")).await;
    assert_eq!(out.code, Some(1), "{}", out.dump());
    let result = out.json();
    let full = &result["ledger"]["full_validation"];
    assert_eq!(full["valid"], false, "{full}");
    assert_eq!(full["errors"].as_array().unwrap().len(), 100, "{full}");
    assert_eq!(full["more_errors"], 150, "{full}");

    let path = sb.cwd.path().join("strings.schema.json");
    std::fs::write(&path, strings_only().to_string()).unwrap();
    let out = sb
        .geode(
            &["validate", "--schema", &path.display().to_string()],
            &integers(250).to_string(),
        )
        .await;
    assert_eq!(out.code, Some(1), "{}", out.dump());
    let report: Value = serde_json::from_str(out.stderr.trim()).unwrap();
    assert_eq!(report["errors"].as_array().unwrap().len(), 100, "{report}");
    assert_eq!(report["more_errors"], 150, "{report}");
}
