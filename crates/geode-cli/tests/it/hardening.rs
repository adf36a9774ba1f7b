//! Hostile and careless input through the real `geode` binary:
//! timeouts that are not a positive number of seconds, anything at all on `geode worker`'s
//! stdin, constraints that do not compile or that the adapter cannot enforce, and messages that
//! name the real cause. Every "nothing sent" is proven by a `geode-fakes` server on 127.0.0.1
//! that records each request.

use crate::support;

use geode_fakes::{FakeServer, Reply, Script};
use serde_json::{Value, json};
use support::http_cases::OPENAI_PAYG;
use support::{Outcome, Sandbox, decision_schema, decision_schema_path, model_calls};

/// An OpenAI Responses fake answering `reply` to every call, and a sandbox pointed at it with
/// `openai-payg` configured.
async fn openai(reply: Reply) -> (FakeServer, Sandbox) {
    OPENAI_PAYG.serve(Script::always(reply)).await
}

/// Runs `geode run --adapter openai-payg ARGS… Answer.`.
async fn run(sb: &Sandbox, args: &[&str]) -> Outcome {
    let mut all = vec!["run", "--adapter", "openai-payg"];
    all.extend_from_slice(args);
    all.push("Answer.");
    sb.geode(&all, "").await
}

/// Asserts a usage error (exit 2) that says `needle`, with no panic and no request sent.
fn assert_refused(out: &Outcome, server: &FakeServer, needle: &str) {
    out.assert_exit(2);
    assert!(!out.stderr.contains("panicked"), "{}", out.dump());
    assert!(
        out.stderr.contains(needle),
        "wanted {needle:?}: {}",
        out.dump()
    );
    assert!(server.requests().is_empty(), "{:#?}", server.requests());
}

/// Asserts the worker contract for a refused request: exactly one WorkerResult line on stdout,
/// `success` false, the task id, an error saying `needle`, exit 2, no request sent.
fn assert_one_failed_line(out: &Outcome, server: &FakeServer, task_id: &str, needle: &str) {
    out.assert_exit(2);
    assert_eq!(out.stdout.lines().count(), 1, "{}", out.dump());
    let result = out.json();
    assert_eq!(result["task_id"], task_id, "{result}");
    assert_eq!(result["success"], false, "{result}");
    let error = result["error"].as_str().unwrap_or_default();
    assert!(error.contains(needle), "wanted {needle:?} in {error:?}");
    assert!(!out.stderr.contains("panicked"), "{}", out.dump());
    assert!(server.requests().is_empty(), "{:#?}", server.requests());
}

/// Sends one WorkerRequest (`task_id` and the `extra` fields) and asserts the worker refuses it
/// with one failed line saying `needle`, before any request.
async fn assert_worker_refuses(
    sb: &Sandbox,
    server: &FakeServer,
    task_id: &str,
    extra: Value,
    needle: &str,
) -> Outcome {
    let out = sb.worker(&worker_line(task_id, extra)).await;
    assert_one_failed_line(&out, server, task_id, needle);
    out
}

/// A WorkerRequest line for `openai-payg` with extra fields.
fn worker_line(task_id: &str, extra: Value) -> String {
    let mut line = json!({"task_id": task_id, "description": "Answer.", "adapter": "openai-payg"});
    for (k, v) in extra.as_object().unwrap() {
        line[k] = v.clone();
    }
    line.to_string() + "\n"
}

// ---- 3 and 4: timeouts -------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_refuses_a_timeout_that_is_not_a_positive_number_of_seconds_before_any_request() {
    let (server, sb) = openai(Reply::text("ok")).await;
    for args in [
        &["--timeout", "NaN"][..],
        &["--timeout", "nan"],
        &["--timeout", "inf"],
        &["--timeout", "0"],
        &["--timeout=-1"],
        &["--timeout", "soon"],
    ] {
        let out = run(&sb, args).await;
        assert_refused(&out, &server, "--timeout");
        assert!(
            !out.stderr.contains("timed out"),
            "{args:?}: {}",
            out.dump()
        );
    }
    // A positive timeout still runs.
    let out = run(&sb, &["--timeout", "30"]).await;
    out.assert_exit(0);
    assert_eq!(model_calls(&server).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_timeout_of_zero_or_nan_is_a_usage_error_naming_timeout_s() {
    for value in ["0", "nan", "-3"] {
        let (server, sb) = openai(Reply::text("ok")).await;
        sb.config(&format!("[timeouts]\nrequest_s = {value}\n"));
        let out = run(&sb, &[]).await;
        assert_refused(&out, &server, "timeout_s must be a positive");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_refuses_a_non_positive_timeout_s_with_one_failed_line() {
    let (server, sb) = openai(Reply::text("ok")).await;
    for (task, timeout) in [
        ("t-neg", json!(-5)),
        ("t-zero", json!(0)),
        ("t-zf", json!(0.0)),
    ] {
        let extra = json!({"timeout_s": timeout});
        let needle = "timeout_s must be a positive";
        let out = assert_worker_refuses(&sb, &server, task, extra, needle).await;
        assert!(!out.stdout.contains("timed out"), "{}", out.dump());
    }
}

// ---- 5: the worker contract --------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_prints_exactly_one_result_line_whatever_stdin_holds() {
    let (server, sb) = openai(Reply::text("ok")).await;
    let two_lines = worker_line("first", json!({})) + &worker_line("second", json!({}));
    let mut invalid_utf8 = br#"{"task_id":"t-utf8","description":"caf"#.to_vec();
    invalid_utf8.extend_from_slice(b"\xe9\xff\",\"adapter\":\"openai-payg\"}\n");
    let binary: Vec<u8> = (0u8..=255).rev().cycle().take(4096).collect();
    let cases: [(&str, Vec<u8>, &str, &str); 7] = [
        ("empty", Vec::new(), "unknown", "empty request"),
        (
            "blank lines",
            b"\n \n\t\n".to_vec(),
            "unknown",
            "empty request",
        ),
        ("binary", binary, "unknown", "not valid UTF-8"),
        ("invalid UTF-8", invalid_utf8, "unknown", "not valid UTF-8"),
        (
            "an array",
            br#"[{"task_id":"in-array"}]"#.to_vec(),
            "unknown",
            "must be a JSON object",
        ),
        ("two lines", two_lines.into_bytes(), "first", "exactly one"),
        (
            "not JSON",
            b"task_id: t\n".to_vec(),
            "unknown",
            "not valid JSON",
        ),
    ];
    for (name, stdin, task_id, needle) in cases {
        let out = sb.geode_bytes(&["worker"], &stdin).await;
        assert_eq!(out.code, Some(2), "{name}: {}", out.dump());
        assert_eq!(out.stdout.lines().count(), 1, "{name}: {}", out.dump());
        let result = out.json();
        assert_eq!(result["task_id"], task_id, "{name}: {result}");
        assert_eq!(result["success"], false, "{name}: {result}");
        let error = result["error"].as_str().unwrap_or_default();
        assert!(
            error.contains(needle),
            "{name}: wanted {needle:?} in {error:?}"
        );
    }
    assert!(server.requests().is_empty(), "{:#?}", server.requests());

    // A pretty-printed request (one value over several lines) is one request, and runs.
    let pretty = serde_json::to_string_pretty(&json!({
        "task_id": "pretty", "description": "Answer.", "adapter": "openai-payg"
    }))
    .unwrap();
    let out = sb.geode(&["worker"], &pretty).await;
    out.assert_exit(0);
    assert_eq!(out.stdout.lines().count(), 1, "{}", out.dump());
    assert_eq!(out.json()["task_id"], "pretty");
}

// ---- 6: constraints are compiled before the first request --------------------------------------

/// A Lark grammar of the two answers `yes` and `no`.
const YES_NO: &str = "start: \"yes\" | \"no\"\n";

/// Writes `text` to `name` in the sandbox's working directory; its path.
fn cwd_file(sb: &Sandbox, name: &str, text: &str) -> String {
    let path = sb.cwd.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_regex_is_a_usage_error_and_nothing_is_sent() {
    let (server, sb) = openai(Reply::text("abc")).await;
    let out = run(&sb, &["--regex", "[a-"]).await;
    assert_refused(&out, &server, "regex constraint \"[a-\" does not compile");
    assert!(
        out.stderr.contains("unclosed character class"),
        "{}",
        out.dump()
    );
}

/// The worker refuses each bad constraint of a request line with a failed result line, and
/// sends nothing: task id, the line's constraint fields, what the error says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_refuses_bad_constraints_before_any_request() {
    let (server, sb) = openai(Reply::text("yes")).await;
    let rows = [
        (
            "t-regex",
            json!({"text_constraint": {"kind": "regex", "value": "(unclosed"}}),
            "does not compile",
        ),
        (
            "t-lark",
            json!({"text_constraint": {"kind": "grammar", "value": "start: undefined_rule\n"}}),
            "not valid Lark",
        ),
        (
            "t-choice",
            json!({"text_constraint": {"kind": "choice", "value": []}}),
            "no options",
        ),
        // A hosted adapter cannot enforce a regex: refused under require=wired.
        (
            "t-wired",
            json!({"require": "wired", "text_constraint": {"kind": "regex", "value": "yes|no"}}),
            "does not enforce a regex constraint",
        ),
    ];
    for (task, extra, needle) in rows {
        assert_worker_refuses(&sb, &server, task, extra, needle).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grammar_that_is_not_lark_is_a_usage_error_and_nothing_is_sent() {
    let (server, sb) = openai(Reply::text("yes")).await;
    let bad = cwd_file(&sb, "bad.lark", "start: ((\n");
    let out = run(&sb, &["--grammar", &bad]).await;
    assert_refused(&out, &server, "not valid Lark");
    assert!(!out.stderr.contains("worker_check=pass"), "{}", out.dump());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_grammar_file_is_named_in_the_error() {
    let (server, sb) = openai(Reply::text("yes")).await;
    let missing = sb.cwd.path().join("missing-file.lark");
    let out = run(&sb, &["--grammar", missing.to_str().unwrap()]).await;
    assert_refused(&out, &server, "cannot read grammar file");
    assert!(
        out.stderr.contains(missing.to_str().unwrap()),
        "{}",
        out.dump()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_constraint_a_hosted_adapter_cannot_enforce_is_refused_under_require_wired() {
    let (server, sb) = openai(Reply::text("yes")).await;
    let grammar = cwd_file(&sb, "yes-no.lark", YES_NO);
    for require in ["wired", "enforced"] {
        for constraint in [
            vec!["--grammar", grammar.as_str()],
            vec!["--regex", "yes|no"],
            vec!["--choice", "yes,no"],
        ] {
            let mut args = vec!["--require", require];
            args.extend(constraint.iter().copied());
            let out = run(&sb, &args).await;
            assert_refused(&out, &server, &format!("require={require}"));
            assert!(out.stderr.contains("openai-payg"), "{}", out.dump());
            assert!(out.stderr.contains(constraint[0].trim_start_matches("--")));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ledger_line_names_what_a_hosted_adapter_left_unenforced() {
    let (server, sb) = openai(Reply::text("yes")).await;
    let grammar = cwd_file(&sb, "yes-no.lark", YES_NO);
    let out = run(&sb, &["--grammar", &grammar]).await;
    out.assert_exit(0);
    assert!(
        out.stderr
            .contains("residuals: grammar: unchecked (not enforced by openai-payg"),
        "{}",
        out.dump()
    );

    let out = run(&sb, &["--regex", "yes|no"]).await;
    out.assert_exit(0);
    assert!(
        out.stderr.contains(
            "residuals: regex: not enforced by openai-payg; checked locally after the answer"
        ),
        "{}",
        out.dump()
    );
    assert_eq!(model_calls(&server).len(), 2);
}

// ---- 8: messages that name the real cause ------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ten_thousand_deep_schema_is_too_deep_not_invalid_json() {
    let (server, sb) = openai(Reply::text("{}")).await;
    let text = format!(
        "{}{}",
        "{\"items\":".repeat(10_000),
        "{}".to_owned() + &"}".repeat(10_000)
    );
    let deep = cwd_file(&sb, "deep.json", &text);
    let path = deep.as_str();
    let check = sb.geode(&["schema", "check", path], "").await;
    check
        .assert_exit(2)
        .assert_stderr_has(&["10001 levels deep; the limit is 128"]);
    assert!(!check.stderr.contains("not valid JSON"), "{}", check.dump());

    let out = run(&sb, &["--schema", path]).await;
    assert_refused(&out, &server, "levels deep");
    assert!(!out.stderr.contains("not valid JSON"), "{}", out.dump());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_with_1e400_says_the_number_is_out_of_range() {
    let answer = r#"{"decision": "accept", "reason": "ok", "weight": 1e400}"#;
    let (server, sb) = openai(Reply::text(answer)).await;
    let out = sb
        .geode(&["validate", "--schema", &decision_schema_path()], answer)
        .await;
    out.assert_exit(1);
    assert!(out.stderr.contains("number out of range"), "{}", out.dump());

    let out = run(&sb, &["--schema", &decision_schema_path()]).await;
    out.assert_exit(1);
    assert!(
        out.stderr
            .contains("worker_check=fail(no parseable JSON object (number out of range"),
        "{}",
        out.dump()
    );
    assert_eq!(model_calls(&server).len(), 2, "the one retry ran");
}

/// A strict-compatible schema with `n` string properties.
fn wide_schema(n: usize) -> Value {
    let names: Vec<String> = (0..n).map(|i| format!("p{i}")).collect();
    let properties: serde_json::Map<String, Value> = names
        .iter()
        .map(|k| (k.clone(), json!({"type": "string"})))
        .collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": names,
        "additionalProperties": false,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_check_reports_the_provider_limits_run_enforces() {
    let (server, sb) = openai(Reply::Json(json!({}))).await;
    let wide = cwd_file(&sb, "wide.json", &wide_schema(5001).to_string());
    let path = wide.as_str();
    let verdict = "OpenAI strict: object properties in total: 5001 found, at most 5000 allowed";

    let check = sb.geode(&["schema", "check", path], "").await;
    check.assert_exit(1);
    assert!(
        check.stdout.contains(": strict-compatible"),
        "{}",
        check.dump()
    );
    assert!(check.stdout.contains(verdict), "{}", check.dump());
    let refused_line = check
        .stdout
        .lines()
        .find(|l| l.starts_with("provider limits: refused before the call by"))
        .unwrap_or_else(|| panic!("{}", check.dump()));
    for adapter in ["openai-payg", "codex-oauth", "codex-cli"] {
        assert!(refused_line.contains(adapter), "{refused_line}");
    }
    assert!(!refused_line.contains("glm-payg"), "{refused_line}");

    let json_check = sb.geode(&["schema", "check", "--json", path], "").await;
    let v = json_check.json();
    assert_eq!(v["preflight"]["refused"], true, "{v}");
    assert_eq!(
        v["preflight"]["refusals"][0]["violations"][0]["found"], 5001,
        "{v}"
    );

    // `run` refuses with the same verdict, before any request.
    let out = run(&sb, &["--schema", path]).await;
    assert_refused(&out, &server, verdict);

    // Within the limits: exit 0 and said so.
    std::fs::write(&wide, wide_schema(10).to_string()).unwrap();
    let ok = sb.geode(&["schema", "check", path], "").await;
    ok.assert_exit(0);
    assert!(
        ok.stdout
            .contains("provider limits: within the limits of every adapter"),
        "{}",
        ok.dump()
    );
    let decision = sb
        .geode(&["schema", "check", &decision_schema_path()], "")
        .await;
    decision.assert_exit(0);
    assert_eq!(decision_schema()["type"], "object");
}
