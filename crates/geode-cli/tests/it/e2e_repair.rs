//! The declared repair tier end to end through the `geode` binary, over a real transport to
//! the fake providers: a repaired answer and its ledger, off unless asked, never on a cut-off
//! answer, refused under `--require enforced`, and `geode validate --repair`, `worker`,
//! `batch` and `repair = true` in `geode.toml`.

use crate::support;

use geode_fakes::{Reply, Script};
use serde_json::{Value, json};
use support::batch::{batch_args, sandbox};
use support::http_cases::{GLM_PAYG, OPENAI_PAYG};
use support::{DECIDE, decision_schema_path, good_answer, model_calls};

/// A Decision answer that needs four repairs: single quotes (two), a trailing comma, the
/// enum's case.
const SLOPPY: &str = "{'decision': 'Accept', 'reason': 'the tests pass',}";

fn repair_kinds(ledger: &Value) -> Vec<(String, String)> {
    ledger["repairs"]
        .as_array()
        .map(|rs| {
            rs.iter()
                .map(|r| {
                    (
                        r["kind"].as_str().unwrap().to_owned(),
                        r["instance_path"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn sloppy_repairs() -> Vec<(String, String)> {
    [
        ("single_quotes", "/decision"),
        ("single_quotes", "/reason"),
        ("trailing_commas", ""),
        ("enum_case", "/decision"),
    ]
    .iter()
    .map(|(k, p)| ((*k).to_owned(), (*p).to_owned()))
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_repair_reads_a_sloppy_answer_and_declares_every_repair() {
    let (server, sb) = GLM_PAYG.serve(Script::always(Reply::text(SLOPPY))).await;
    let out = sb.run_decision("glm-payg", &["--repair"], DECIDE).await;
    out.assert_exit(0)
        .assert_answer(&good_answer())
        .assert_stderr_has(&[
            "wire_mode=json-mode",
            "worker_check=pass repaired=4",
            "retry=not-needed(first passed)",
            "repairs: single_quotes at /decision, single_quotes at /reason, trailing_commas at the root, enum_case at /decision",
        ]);
    assert_eq!(model_calls(&server).len(), 1, "repaired, not retried");

    let out = sb
        .run_decision("glm-payg", &["--repair", "--json"], DECIDE)
        .await;
    out.assert_exit(0);
    let result = out.json();
    assert_eq!(result["answer"], good_answer());
    assert_eq!(result["ledger"]["answer_mode"], "repaired");
    assert_eq!(repair_kinds(&result["ledger"]), sloppy_repairs());
    assert_eq!(result["ledger"]["full_validation"]["valid"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_repair_the_same_answer_is_retried_and_invalid_with_no_repairs_field() {
    let (server, sb) = GLM_PAYG.serve(Script::always(Reply::text(SLOPPY))).await;
    let out = sb.run_decision("glm-payg", &["--json"], DECIDE).await;
    out.assert_exit(1);
    let result = out.json();
    assert_eq!(result["success"], false);
    assert!(result["ledger"].get("repairs").is_none(), "{result}");
    assert!(result["ledger"].get("answer_mode").is_none(), "{result}");
    assert_eq!(model_calls(&server).len(), 2, "the one retry");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_answer_is_not_repaired() {
    // One closing brace short, as a missing-bracket repair would take it, but cut by max_tokens.
    let cut = r#"{"decision": "accept", "reason": "the tests pass""#;
    let (server, sb) = GLM_PAYG
        .serve(Script::always(Reply::MaxTokens(cut.to_owned())))
        .await;
    let out = sb
        .run_decision("glm-payg", &["--repair", "--json"], DECIDE)
        .await;
    assert_ne!(out.code, Some(0), "{}", out.dump());
    let result = out.json();
    assert_eq!(result["success"], false);
    assert_eq!(result["termination_reason"], "truncated");
    assert!(result.get("answer").is_none(), "{result}");
    assert!(result["ledger"].get("repairs").is_none(), "{result}");
    assert_eq!(
        model_calls(&server).len(),
        1,
        "a truncated answer is not retried"
    );

    // The same text, ended by the model itself, is one bracket short and repaired.
    let (_server, sb) = GLM_PAYG.serve(Script::always(Reply::text(cut))).await;
    let out = sb.run_decision("glm-payg", &["--repair"], DECIDE).await;
    out.assert_exit(0)
        .assert_answer(&good_answer())
        .assert_stderr_has(&["repaired=1", "missing_closing_bracket at the root"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_enforced_refuses_a_repaired_answer() {
    let (server, sb) = OPENAI_PAYG.serve(Script::always(Reply::text(SLOPPY))).await;
    let out = sb
        .run_decision(
            "openai-payg",
            &["--repair", "--require", "enforced", "--json"],
            DECIDE,
        )
        .await;
    out.assert_exit(1);
    let result = out.json();
    assert_eq!(result["success"], false);
    assert_eq!(result["ledger"]["wire_mode"], "strict");
    let error = result["error"].as_str().unwrap();
    assert!(
        error.contains("require=enforced accepts no repaired answer"),
        "{error}"
    );
    assert!(result["ledger"].get("repairs").is_none(), "{result}");
    assert_eq!(
        result["ledger"]["retry"]["decision"], "ran",
        "refused like an invalid answer: retried once"
    );
    assert_eq!(model_calls(&server).len(), 2);

    // A good answer on the retry is taken, as written.
    let script = Script::new([Reply::text(SLOPPY), Reply::Json(good_answer())]);
    let (_server, sb) = OPENAI_PAYG.serve(script).await;
    let out = sb
        .run_decision(
            "openai-payg",
            &["--repair", "--require", "enforced"],
            DECIDE,
        )
        .await;
    out.assert_exit(0).assert_answer(&good_answer());
    assert!(!out.stderr.contains("repaired="), "{}", out.dump());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_repair_prints_the_repaired_value_or_why_not() {
    let sb = support::Sandbox::new();
    let schema = decision_schema_path();
    let out = sb
        .geode(&["validate", "--schema", &schema, "--repair"], SLOPPY)
        .await;
    out.assert_exit(0).assert_answer(&good_answer());
    let report: Value = serde_json::from_str(out.stderr.trim()).unwrap();
    assert_eq!(report["answer_mode"], "repaired");
    assert_eq!(repair_kinds(&report), sloppy_repairs());

    // Without --repair, the same input is refused as before.
    let out = sb.geode(&["validate", "--schema", &schema], SLOPPY).await;
    out.assert_exit(1);
    assert!(!out.stderr.contains("not_repairable"), "{}", out.dump());

    // Nothing invented: a missing required key stays an error, with the reason.
    let out = sb
        .geode(
            &["validate", "--schema", &schema, "--repair"],
            "{'decision': 'accept'}",
        )
        .await;
    out.assert_exit(1);
    let report: Value = serde_json::from_str(out.stderr.trim()).unwrap();
    assert!(
        report["not_repairable"]
            .as_str()
            .unwrap()
            .contains("invent"),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_batch_and_the_config_ask_for_repair_too() {
    let (_server, sb) = GLM_PAYG.serve(Script::always(Reply::text(SLOPPY))).await;
    let line = json!({
        "task_id": "w", "description": "Decide.", "adapter": "glm-payg",
        "response_schema": support::decision_schema(), "repair": true,
    })
    .to_string();
    let out = sb.worker(&line).await;
    out.assert_exit(0);
    assert_eq!(repair_kinds(&out.json()["ledger"]), sloppy_repairs());
    let plain = json!({
        "task_id": "w", "description": "Decide.", "adapter": "glm-payg",
        "response_schema": support::decision_schema(),
    })
    .to_string();
    let out = sb
        .geode(&["worker", "--repair"], &format!("{plain}\n"))
        .await;
    out.assert_exit(0);
    assert_eq!(out.json()["ledger"]["answer_mode"], "repaired");

    sb.config("repair = true\n");
    let out = sb.run_decision("glm-payg", &[], DECIDE).await;
    out.assert_exit(0).assert_stderr_has(&["repaired=4"]);

    let server = support::glm_answering(Reply::text(SLOPPY)).await;
    // A shorthand line takes the batch's schema; a full request brings its own.
    let full = json!({
        "task_id": "b", "description": "Decide.",
        "response_schema": support::decision_schema(),
    });
    let input = format!("{}\n{full}\n", json!({"task_id": "a", "prompt": "Decide."}));
    let sb = sandbox(&server, &input);
    let args = batch_args(&["--repair"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = sb.geode(&args, "").await;
    out.assert_exit(0);
    let results = std::fs::read_to_string(sb.cwd.path().join("out.jsonl")).unwrap();
    for line in results.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        assert_eq!(r["success"], true, "{r}");
        assert_eq!(repair_kinds(&r["ledger"]), sloppy_repairs(), "{r}");
    }
    assert_eq!(results.lines().count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_repairs_per_request_and_says_so() {
    use crate::e2e_gateway::{Gateway, decision_request, fakes, header};
    let (openai, glm) = fakes(
        Script::always(Reply::Json(good_answer())),
        Script::always(Reply::text(SLOPPY)),
    )
    .await;
    let sb = crate::e2e_gateway::sandbox(&openai, &glm);
    let gw = Gateway::start(&sb, &[]);
    let (status, headers, body) = gw
        .chat(&decision_request("glm-payg"), &[("x-geode-repair", "true")])
        .await;
    assert_eq!(status, 200, "{body}");
    let content: Value =
        serde_json::from_str(body["choices"][0]["message"]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, good_answer());
    assert_eq!(header(&headers, "x-geode-repairs"), "4");
    assert_eq!(body["geode"]["ledger"]["answer_mode"], "repaired");
    assert_eq!(repair_kinds(&body["geode"]["ledger"]), sloppy_repairs());

    // Off unless asked: the same answer is a 422 after the retry, no repair header.
    let (status, headers, body) = gw.chat(&decision_request("glm-payg"), &[]).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(header(&headers, "x-geode-repairs"), "");

    // The body extension asks too; a header that is not a boolean is refused, named.
    let mut asked = decision_request("glm-payg");
    asked["geode"] = json!({"repair": true});
    let (status, _, body) = gw.chat(&asked, &[]).await;
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = gw
        .chat(&decision_request("glm-payg"), &[("x-geode-repair", "yes")])
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["param"], "x-geode-repair");
}
