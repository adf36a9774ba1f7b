//! Real-world schemas end to end through the `geode` binary (issue 14): non-object roots through
//! `validate`, `run` (the local model and every HTTP adapter's fake) and `worker`; asserted and
//! annotation-only formats; ECMA-262 patterns.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use geode_fakes::{Reply, Script};
use serde_json::{Value, json};
use support::Sandbox;
use support::http_cases::{ALL, GLM_PAYG, fake};

/// Writes `schema` into the sandbox's HOME and returns the path.
fn schema_file(sb: &Sandbox, name: &str, schema: &Value) -> String {
    let path = sb.home().join(name);
    std::fs::write(&path, schema.to_string()).unwrap();
    path.display().to_string()
}

const INTS: &str = r#"{"type":"array","items":{"type":"integer"}}"#;

#[tokio::test]
async fn validate_prints_the_answer_of_every_root_type() {
    let sb = Sandbox::new();
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            json!({"type": "array", "items": {"type": "integer"}}),
            "Here:\n```json\n[1, 2]\n```",
            "[1, 2]",
        ),
        (json!({"type": "string"}), "\"hi\"", "\"hi\""),
        (json!({"type": "number"}), " 2.5\n", "2.5"),
        (json!({"type": "integer"}), "7", "7"),
        (json!({"type": "boolean"}), "false", "false"),
        (json!({"type": "null"}), "null", "null"),
        (json!({"enum": ["red", "green"]}), "\"green\"", "\"green\""),
        (json!({"const": 3}), "3", "3"),
        (json!({"type": ["string", "null"]}), "null", "null"),
        (
            json!({"anyOf": [{"type": "array"}, {"type": "integer"}]}),
            "So: [3] done",
            "[3]",
        ),
        (
            json!({"oneOf": [{"type": "string"}, {"type": "boolean"}]}),
            "true",
            "true",
        ),
        (
            json!({"type": "object", "required": ["a"]}),
            "x [{\"b\":1},{\"a\":2}]",
            "{\"a\":2}",
        ),
    ];
    for (i, (schema, input, printed)) in cases.iter().enumerate() {
        let path = schema_file(&sb, &format!("s{i}.json"), schema);
        let out = sb.geode(&["validate", "--schema", &path], input).await;
        assert_eq!(out.code, Some(0), "{schema}: {}", out.dump());
        assert_eq!(out.stdout.trim(), *printed, "{schema}: {}", out.dump());
    }
    // Invalid: a value of the right type that breaks the schema (printed all the same), no
    // value of the type, a value outside the enum. Schema, input, printed (when checked), why.
    let ints: Value = serde_json::from_str(INTS).unwrap();
    let colours = json!({"enum": ["red", "green"]});
    let invalid = [
        (
            &ints,
            "[1, \"x\"]",
            Some("[1, \"x\"]"),
            "\"instance_path\":\"/1\"",
        ),
        (&ints, "{\"a\": 1}", None, "no JSON array parses"),
        (&colours, "\"blue\"", None, "\"keyword\":\"enum\""),
    ];
    for (i, (schema, input, printed, why)) in invalid.into_iter().enumerate() {
        let path = schema_file(&sb, &format!("invalid{i}.json"), schema);
        let out = sb.geode(&["validate", "--schema", &path], input).await;
        out.assert_exit(1).assert_stderr_has(&[why]);
        if let Some(printed) = printed {
            assert_eq!(out.stdout.trim(), printed, "{}", out.dump());
        }
    }
}

#[tokio::test]
async fn validate_asserts_formats_unless_told_to_annotate() {
    let sb = Sandbox::new();
    let path = schema_file(
        &sb,
        "id.json",
        &json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"id": {"format": "uuid"}, "site": {"format": "iri"}}}),
    );
    let bad = r#"{"id": "not-a-uuid", "site": "not an iri"}"#;
    let out = sb.geode(&["validate", "--schema", &path], bad).await;
    assert_eq!(out.code, Some(1), "{}", out.dump());
    assert!(
        out.stderr.contains("\"/id\"") && out.stderr.contains("\"/site\""),
        "{}",
        out.dump()
    );
    let out = sb
        .geode(
            &["validate", "--formats", "annotate", "--schema", &path],
            bad,
        )
        .await;
    assert_eq!(out.code, Some(0), "{}", out.dump());
    let out = sb
        .geode(&["validate", "--formats", "bogus", "--schema", &path], bad)
        .await;
    assert_eq!(out.code, Some(2), "{}", out.dump());
}

#[tokio::test]
async fn validate_takes_ecma_262_patterns() {
    let sb = Sandbox::new();
    let path = schema_file(
        &sb,
        "patterns.json",
        &json!({
            "type": "object",
            "properties": {
                "slug": {"type": "string", "pattern": "^[[a-z]*[-]?[a-z]*]*$"},
                "oid": {"type": "string", "pattern": "^[A-Fa-f\\d]{24}$"},
                "tpl": {"type": "string", "pattern": "^\\{[a-z]+\\}$"}
            },
            "patternProperties": {"^x-[\\d]+$": {"type": "integer"}}
        }),
    );
    let good =
        r#"{"slug": "abc-def", "oid": "507f1f77bcf86cd799439011", "tpl": "{name}", "x-1": 2}"#;
    let out = sb.geode(&["validate", "--schema", &path], good).await;
    assert_eq!(out.code, Some(0), "{}", out.dump());
    let bad = r#"{"slug": "ab1", "oid": "507f", "tpl": "name", "x-1": "s"}"#;
    let out = sb.geode(&["validate", "--schema", &path], bad).await;
    assert_eq!(out.code, Some(1), "{}", out.dump());
    for at in ["/slug", "/oid", "/tpl", "/x-1"] {
        assert!(
            out.stderr.contains(&format!("\"{at}\"")),
            "{at}: {}",
            out.dump()
        );
    }
}

/// The local model under constrained decoding answers an array schema: valid, exit 0 (it used
/// to be thrown away as "no JSON object", retried and exit 1).
#[tokio::test]
async fn run_with_an_array_schema_succeeds_on_the_local_model() {
    let sb = Sandbox::with_local_model();
    let path = schema_file(&sb, "ints.json", &serde_json::from_str(INTS).unwrap());
    let out = sb
        .run("local", &path, &["--json", "List three small integers."])
        .await;
    assert_eq!(out.code, Some(0), "{}", out.dump());
    let result = out.json();
    assert_eq!(result["success"], true, "{result}");
    let answer = result["answer"].as_array().expect("an array answer");
    assert!(answer.iter().all(Value::is_i64), "{result}");
    let ledger = &result["ledger"];
    assert_eq!(ledger["wire_mode"], "constrained", "{ledger}");
    assert_eq!(ledger["worker_check"]["verdict"], "pass", "{ledger}");
    assert_eq!(ledger["full_validation"]["valid"], true, "{ledger}");
    assert_eq!(ledger["attempts"].as_array().unwrap().len(), 1, "{ledger}");
    assert_eq!(ledger["formats"], "assert", "{ledger}");
}

/// Every HTTP adapter's fake answering `[1,2,3]` to an array schema: exit 0, the array printed.
#[tokio::test]
async fn run_with_an_array_schema_succeeds_on_every_hosted_fake() {
    for case in ALL {
        let server = fake(&case, Script::always(Reply::text("[1,2,3]"))).await;
        let sb = case.sandbox(&server);
        let path = schema_file(&sb, "ints.json", &serde_json::from_str(INTS).unwrap());
        let out = sb.run(case.adapter, &path, &["Three integers."]).await;
        assert_eq!(out.code, Some(0), "{}: {}", case.adapter, out.dump());
        assert_eq!(
            out.json(),
            json!([1, 2, 3]),
            "{}: {}",
            case.adapter,
            out.dump()
        );
        assert!(
            out.stderr.contains("worker_check=pass"),
            "{}: {}",
            case.adapter,
            out.dump()
        );
        // OpenAI's strict mode refuses a non-object root: the Responses adapters send it
        // non-strict and the ledger says `hint`, never `strict`.
        if case.adapter == "openai-payg" || case.adapter == "codex-oauth" {
            assert!(out.stderr.contains("wire_mode=hint"), "{}", out.dump());
            let calls = support::model_calls(&server);
            let body = &calls[0].body;
            assert_eq!(body["text"]["format"]["strict"], false, "{body}");
        }
    }
}

/// `geode worker` with a string-enum root and annotation-only formats: the ledger says both.
#[tokio::test]
async fn worker_checks_a_scalar_root_and_reports_the_format_mode() {
    let server = fake(
        &GLM_PAYG,
        Script::new([Reply::text("I pick blue."), Reply::text("\"green\"")]),
    )
    .await;
    let sb = GLM_PAYG.sandbox(&server);
    let line = json!({
        "task_id": "t-enum",
        "description": "Pick a colour.",
        "adapter": "glm-payg",
        "formats": "annotate",
        "response_schema": {"enum": ["red", "green"], "format": "color-name"},
    });
    let out = sb.geode(&["worker"], &format!("{line}\n")).await;
    assert_eq!(out.code, Some(0), "{}", out.dump());
    let result = out.json();
    assert_eq!(result["success"], true, "{result}");
    assert_eq!(result["answer"], "green", "{result}");
    let ledger = &result["ledger"];
    assert_eq!(
        ledger["retry"]["trigger"], "no parseable JSON string",
        "{ledger}"
    );
    assert_eq!(ledger["formats"], "annotate", "{ledger}");
    assert_eq!(
        ledger["unchecked_formats"],
        json!(["color-name"]),
        "{ledger}"
    );
    // The retry turn asked for the root's type, not an object.
    let calls = support::model_calls(&server);
    let retry = calls[1].body.to_string();
    assert!(
        retry.contains("did not parse as the required JSON string"),
        "{retry}"
    );
}
