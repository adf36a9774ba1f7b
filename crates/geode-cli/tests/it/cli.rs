//! The `geode` binary: exit codes and outputs of `schema check`, `validate`, `worker`, `adapters`.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use geode_testkit::stdin;

fn geode(args: &[&str], stdin: &str) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_geode"));
    cmd.args(args)
        .current_dir(examples().parent().unwrap())
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = stdin::spawn_with_stdin(&mut cmd, stdin.as_bytes());
    child.wait_with_output().unwrap()
}

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn ex(name: &str) -> String {
    examples().join(name).display().to_string()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn schema_check_exit_codes_are_0_1_2() {
    let ok = geode(&["schema", "check", &ex("decision.schema.json")], "");
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    assert!(text(&ok.stdout).contains("strict-compatible"));

    let loose = geode(&["schema", "check", &ex("loose.schema.json")], "");
    assert_eq!(loose.status.code(), Some(1));
    let out = text(&loose.stdout);
    assert!(
        out.contains("NOT strict-compatible") && out.contains("additionalProperties"),
        "{out}"
    );
    assert!(out.contains("Review_Verdict"), "{out}");

    let dir = tempfile::tempdir().unwrap();
    for (name, body) in [
        ("array.json", "[1,2]"),
        ("broken.json", "{\"a\": "),
        ("string.json", "\"x\""),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        let r = geode(&["schema", "check", p.to_str().unwrap()], "");
        assert_eq!(r.status.code(), Some(2), "{name}");
        assert!(
            text(&r.stderr).contains("unusable schema"),
            "{name}: {}",
            text(&r.stderr)
        );
    }
    // A boolean schema is usable (`true` is `{}`), and not strict-compatible: OpenAI gets a hint.
    let p = dir.path().join("true.json");
    std::fs::write(&p, "true").unwrap();
    let r = geode(&["schema", "check", p.to_str().unwrap()], "");
    assert_eq!(r.status.code(), Some(1), "{}", text(&r.stderr));
    assert!(
        text(&r.stdout).contains("constrains no type"),
        "{}",
        text(&r.stdout)
    );
    let missing = geode(&["schema", "check", "/nonexistent.json"], "");
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn schema_check_json_lists_reasons_with_pointers() {
    let r = geode(&["schema", "check", "--json", &ex("loose.schema.json")], "");
    let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(v["strict"]["compatible"], false);
    assert!(!v["strict"]["reasons"].as_array().unwrap().is_empty());
}

#[test]
fn validate_prints_the_object_and_exits_by_validity() {
    let good = std::fs::read_to_string(examples().join("answer-good.txt")).unwrap();
    let r = geode(
        &["validate", "--schema", &ex("decision.schema.json")],
        &good,
    );
    assert_eq!(r.status.code(), Some(0), "{}", text(&r.stderr));
    let printed: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(printed["decision"], "reject");

    let bad = std::fs::read_to_string(examples().join("answer-bad.txt")).unwrap();
    let r = geode(&["validate", "--schema", &ex("decision.schema.json")], &bad);
    assert_eq!(r.status.code(), Some(1));
    let errors: serde_json::Value = serde_json::from_slice(r.stderr.trim_ascii()).unwrap();
    assert_eq!(errors["errors"][0]["instance_path"], "/decision");

    let r = geode(
        &[
            "validate",
            "--required-keys-only",
            "--schema",
            &ex("decision.schema.json"),
        ],
        &bad,
    );
    assert_eq!(
        r.status.code(),
        Some(0),
        "the shallow check accepts a wrong enum value"
    );

    let r = geode(
        &["validate", "--schema", &ex("decision.schema.json")],
        "no json here",
    );
    assert_eq!(r.status.code(), Some(1));
    assert!(text(&r.stderr).contains("no balanced JSON object"));
}

/// `--required-keys-only` is GEODE's shallow check on the text: the last object that
/// parses is printed, a missing required key is the one error, a number too large for an `f64`
/// passes (as Python's `json.loads` reads it), and no object is the extract error.
#[test]
fn validate_required_keys_only_is_the_shallow_check_on_the_text() {
    let shallow = |input: &str| {
        geode(
            &[
                "validate",
                "--required-keys-only",
                "--schema",
                &ex("decision.schema.json"),
            ],
            input,
        )
    };
    let r = shallow(r#"First {"decision": "x"}, then {"decision": "accept"} and {broken"#);
    assert_eq!(r.status.code(), Some(1), "{}", text(&r.stderr));
    assert_eq!(text(&r.stdout).trim(), r#"{"decision": "accept"}"#);
    let errors: serde_json::Value = serde_json::from_slice(r.stderr.trim_ascii()).unwrap();
    assert_eq!(errors["errors"].as_array().unwrap().len(), 1, "{errors}");
    assert_eq!(errors["errors"][0]["keyword"], "required", "{errors}");
    assert!(
        errors["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("reason"),
        "{errors}"
    );

    let big = r#"{"decision": "accept", "reason": "r", "score": 1e400}"#;
    let r = shallow(big);
    assert_eq!(r.status.code(), Some(0), "{}", text(&r.stderr));
    assert_eq!(text(&r.stdout).trim(), big);

    let r = shallow(r#"{"decision": "accept", "reason": }"#);
    assert_eq!(r.status.code(), Some(1));
    assert!(
        text(&r.stderr).contains("no JSON object parses in the input"),
        "{}",
        text(&r.stderr)
    );
}

#[test]
fn worker_answers_bad_lines_with_a_failed_result_line() {
    for (line, needle) in [
        ("", "empty request"),
        ("{nope", "not valid JSON"),
        ("{\"description\":\"x\"}", "task_id"),
    ] {
        let r = geode(&["worker"], line);
        assert_eq!(r.status.code(), Some(2));
        let out: serde_json::Value = serde_json::from_slice(r.stdout.trim_ascii()).unwrap();
        assert_eq!(out["success"], false);
        assert!(out["error"].as_str().unwrap().contains(needle), "{out}");
    }
}

#[test]
fn adapters_lists_every_registry_row_with_modes_and_never_a_secret() {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_geode"));
    cmd.args(["adapters", "--json"])
        .env("OPENAI_API_KEY", "sk-secret-value-123");
    let out = cmd.output().unwrap();
    let s = text(&out.stdout);
    assert!(!s.contains("sk-secret-value-123"));
    let rows: Vec<serde_json::Value> = serde_json::from_str(&s).unwrap();
    assert_eq!(rows.len(), geode::llm::registry::ADAPTERS.len());
    assert_eq!(rows.len(), 10);
    let openai = rows.iter().find(|r| r["name"] == "openai-payg").unwrap();
    assert_eq!(openai["configured"], true);
    assert_eq!(openai["modes"], "strict / hint");
    let glm = rows.iter().find(|r| r["name"] == "glm-payg").unwrap();
    assert_eq!(glm["modes"], "json-mode");
}

#[test]
fn a_reader_that_closes_stdout_ends_the_command_quietly() {
    let (read_end, write_end) = nix::unistd::pipe().unwrap();
    drop(read_end);
    let out = Command::new(env!("CARGO_BIN_EXE_geode"))
        .arg("adapters")
        .stdout(std::process::Stdio::from(write_end))
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(141), "{stderr}");
}

/// `schema check` without `--adapter` never calls a schema strict-compatible when the plan
/// `run` sends to OpenAI is not `strict`, and every root shape gets a verdict with a reason.
#[test]
fn schema_check_verdicts_agree_with_the_openai_plan_for_every_root_shape() {
    let dir = tempfile::tempdir().unwrap();
    for body in [
        "true",
        "{}",
        r#"{"uniqueItems": true}"#,
        r#"{"format": "email"}"#,
        r#"{"type": "array", "items": {"type": "integer"}}"#,
        r#"{"type": "string", "enum": ["a", "b"]}"#,
        r#"{"anyOf": [{"type": "string"}, {"type": "integer"}]}"#,
        r#"{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": false}"#,
        r#"{"type": "object", "properties": {"a": {"type": "string"}}}"#,
    ] {
        let p = dir.path().join("s.json");
        std::fs::write(&p, body).unwrap();
        let path = p.to_str().unwrap();
        let plan = geode(
            &[
                "schema",
                "check",
                "--json",
                "--adapter",
                "openai-payg",
                path,
            ],
            "",
        );
        let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
        let check = geode(&["schema", "check", "--json", path], "");
        let verdict: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
        let compatible = verdict["strict"]["compatible"].as_bool().unwrap();
        assert_eq!(
            verdict["strict"]["openai_plan"]["mode"], plan["mode"],
            "{body}: the check reads the same plan"
        );
        if plan["mode"] != "strict" {
            assert!(!compatible, "{body}: plan {plan}, verdict {verdict}");
        }
        if !compatible {
            let reasons = verdict["strict"]["reasons"].as_array().unwrap().len()
                + verdict["strict"]["plan_reasons"].as_array().unwrap().len();
            assert!(reasons > 0, "{body}: a verdict without a reason: {verdict}");
            assert_eq!(check.status.code(), Some(1), "{body}");
        }
        let text = geode(&["schema", "check", path], "");
        let out = String::from_utf8_lossy(&text.stdout).into_owned();
        assert_eq!(
            out.contains(": strict-compatible"),
            compatible,
            "{body}: {out}"
        );
    }
}
