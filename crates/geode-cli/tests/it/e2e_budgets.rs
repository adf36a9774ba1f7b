//! Budgets end to end through the `geode` binary: a stream that never ends is exit 3 naming the
//! response budget (default, `geode.toml`, environment), a hostile schema is refused at once
//! with a small output line, and validation errors past 100 are counted, not listed, in the
//! worker's output and in `geode validate`.

use crate::support;

use geode_fakes::{FakeServer, Kind, Reply, Script};
use serde_json::{Map, Value, json};
use support::http_cases::{GLM_PAYG, OPENAI_PAYG};
use support::{DECIDE, SECRET, Sandbox, fake_of, model_calls};

/// A sandbox for `openai-payg` pointed at `server`.
fn payg(server: &FakeServer) -> Sandbox {
    OPENAI_PAYG.sandbox(server)
}

/// `geode run --adapter openai-payg --schema decision "Decide."`.
async fn run(sb: &Sandbox) -> support::Outcome {
    sb.run_decision("openai-payg", &[], DECIDE).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_stream_exits_3_at_the_configured_budget() {
    let server = fake_of(Kind::Responses, Script::always(Reply::Endless)).await;

    // The default: 16 MiB.
    let sb = payg(&server);
    let out = run(&sb).await;
    out.assert_exit(3);
    let error = out.error_line();
    assert!(error.contains("response too large"), "{error}");
    assert!(error.contains("16777216"), "{error}");

    // From geode.toml.
    let sb = payg(&server);
    sb.config("[limits]\nmax_response_bytes = 2097152\n");
    let out = run(&sb).await;
    out.assert_exit(3);
    assert!(out.error_line().contains("2097152"), "{}", out.dump());

    // The environment wins over the file.
    let mut sb = payg(&server);
    sb.config("[limits]\nmax_response_bytes = 2097152\n");
    sb.var("GEODE_MAX_RESPONSE_BYTES", "1048576");
    let out = run(&sb).await;
    out.assert_exit(3);
    assert!(out.error_line().contains("1048576"), "{}", out.dump());

    // Through the worker: a typed error kind in the ledger, and no retry of the same stream.
    let before = model_calls(&server).len();
    let line = json!({"task_id": "endless", "description": "Decide.", "adapter": "openai-payg",
                      "response_schema": support::decision_schema()});
    let out = sb.worker(&line.to_string()).await;
    out.assert_exit(3);
    let result = out.json();
    let attempts = result["ledger"]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{result}");
    assert_eq!(attempts[0]["error_kind"], "response_too_large", "{result}");
    assert_eq!(model_calls(&server).len(), before + 1);
    out.assert_hides(SECRET);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_response_budget_is_a_usage_error() {
    let server = fake_of(Kind::Responses, Script::always(Reply::text("{}"))).await;
    let mut sb = payg(&server);
    sb.var("GEODE_MAX_RESPONSE_BYTES", "lots");
    let out = run(&sb).await;
    out.assert_exit(2);
    assert!(
        out.stderr.contains("GEODE_MAX_RESPONSE_BYTES"),
        "{}",
        out.dump()
    );

    let sb = payg(&server);
    sb.config("[limits]\nmax_response_bytes = 0\n");
    let out = run(&sb).await;
    out.assert_exit(2);
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
    let server = fake_of(Kind::Chat, Script::always(Reply::Json(json!({"x": 1})))).await;
    for keyword in ["anyOf", "allOf"] {
        let sb = GLM_PAYG.sandbox(&server);
        let line = json!({"task_id": "hostile", "description": "Return {\"x\":1}.",
                          "adapter": "glm-payg", "response_schema": hostile(keyword)});
        let out = sb.worker(&line.to_string()).await;
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
        out.assert_exit(2);
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
    let server = fake_of(Kind::Chat, Script::always(Reply::Json(integers(250)))).await;
    let sb = GLM_PAYG.sandbox(&server);
    let line = json!({"task_id": "many", "description": "Return numbers.",
                      "adapter": "glm-payg", "response_schema": strings_only()});
    let out = sb.worker(&line.to_string()).await;
    out.assert_exit(1);
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
    out.assert_exit(1);
    let report: Value = serde_json::from_str(out.stderr.trim()).unwrap();
    assert_eq!(report["errors"].as_array().unwrap().len(), 100, "{report}");
    assert_eq!(report["more_errors"], 150, "{report}");
}
