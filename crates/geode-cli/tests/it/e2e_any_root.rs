//! Real-world schemas end to end through the `geode` binary: non-object roots through
//! `validate`, `run` (the local model and every HTTP adapter's fake) and `worker`; asserted and
//! annotation-only formats; ECMA-262 patterns.

use crate::support;

use geode_fakes::{FakeServer, Reply, Script};
use serde_json::{Value, json};
use support::http_cases::{ALL, Case, GLM_PAYG, OPENAI_PAYG, Placement, fake};
use support::{Outcome, Sandbox};

/// Writes `schema` into the sandbox's HOME and returns the path.
fn schema_file(sb: &Sandbox, name: &str, schema: &Value) -> String {
    let path = sb.home().join(name);
    std::fs::write(&path, schema.to_string()).unwrap();
    path.display().to_string()
}

/// `geode validate --schema <path> [extra ...]` with `input` on stdin.
async fn validate(sb: &Sandbox, path: &str, extra: &[&str], input: &str) -> Outcome {
    let args: Vec<&str> = ["validate", "--schema", path]
        .iter()
        .chain(extra)
        .copied()
        .collect();
    sb.geode(&args, input).await
}

/// A fresh sandbox holding `schema` as `name`, and the file's path.
fn sandbox_with(name: &str, schema: &Value) -> (Sandbox, String) {
    let sb = Sandbox::new();
    let path = schema_file(&sb, name, schema);
    (sb, path)
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
        let out = validate(&sb, &path, &[], input).await;
        assert_eq!(out.code, Some(0), "{schema}: {}", out.dump());
        assert_eq!(out.stdout.trim(), *printed, "{schema}: {}", out.dump());
    }
    // Invalid: a value of the right type that breaks the schema (printed all the same), a
    // whole value of another type, prose holding no value of the type, a value outside the enum. Schema, input, printed (when checked), why.
    let ints: Value = serde_json::from_str(INTS).unwrap();
    let colours = json!({"enum": ["red", "green"]});
    let invalid = [
        (
            &ints,
            "[1, \"x\"]",
            Some("[1, \"x\"]"),
            "\"instance_path\":\"/1\"",
        ),
        // A whole input of one value is the answer: the validator names its type.
        (
            &ints,
            "{\"a\": 1}",
            Some("{\"a\": 1}"),
            "\"keyword\":\"type\"",
        ),
        (&ints, "Here: {\"a\": 1}", None, "no JSON array parses"),
        (&colours, "\"blue\"", None, "\"keyword\":\"enum\""),
    ];
    for (i, (schema, input, printed, why)) in invalid.into_iter().enumerate() {
        let path = schema_file(&sb, &format!("invalid{i}.json"), schema);
        let out = validate(&sb, &path, &[], input).await;
        out.assert_exit(1).assert_stderr_has(&[why]);
        if let Some(printed) = printed {
            assert_eq!(out.stdout.trim(), printed, "{}", out.dump());
        }
    }
}

/// Schemas that leave the root's type open, with an answer each: the exit code `geode validate`
/// gives, what it prints, and what its errors name. Any JSON value is an answer where the schema
/// does not constrain the type; a whole input of one value is taken as it is.
const OPEN_ROOTS: [(&str, &str, i32, &str); 9] = [
    (r#"{"uniqueItems": true}"#, "[1, 1]", 1, "uniqueItems"),
    (r#"{"uniqueItems": true}"#, "[1, 2]", 0, "[1, 2]"),
    (r#"{"required": ["a"]}"#, "12", 0, "12"),
    (
        r#"{"required": ["a"]}"#,
        "so {\"b\": 1} then",
        1,
        "required",
    ),
    (r#"{"format": "email"}"#, "\"a@b.c\"", 0, "\"a@b.c\""),
    (r#"{"format": "email"}"#, "\"nope\"", 1, "format"),
    (r#"{}"#, "Sure:\n```json\n[1]\n```", 0, "[1]"),
    (r#"true"#, "null", 0, "null"),
    // A whole array against an object root is an array (a type error), not the object inside.
    (
        r#"{"type": "object"}"#,
        "[{\"a\": 1}]",
        1,
        "\"keyword\":\"type\"",
    ),
];

#[tokio::test]
async fn validate_takes_any_value_where_the_schema_leaves_the_type_open() {
    let sb = Sandbox::new();
    for (i, (schema, input, code, shown)) in OPEN_ROOTS.into_iter().enumerate() {
        let path = sb.home().join(format!("open{i}.json"));
        std::fs::write(&path, schema).unwrap();
        let out = validate(&sb, &path.display().to_string(), &[], input).await;
        assert_eq!(out.code, Some(code), "{schema} / {input}: {}", out.dump());
        let stream = if code == 0 { &out.stdout } else { &out.stderr };
        assert!(stream.contains(shown), "{schema} / {input}: {}", out.dump());
    }
}

/// The worker (through `geode run`) gives `geode validate`'s verdict on every open root: the
/// fake answers the same text twice (the answer and the retry), and the exit code and the
/// printed answer match.
#[tokio::test]
async fn run_gives_the_verdict_of_validate_on_open_roots() {
    for (i, (schema, input, code, shown)) in OPEN_ROOTS.into_iter().enumerate() {
        let server = fake(&OPENAI_PAYG, Script::always(Reply::text(input))).await;
        let sb = OPENAI_PAYG.sandbox(&server);
        let path = sb.home().join(format!("open{i}.json"));
        std::fs::write(&path, schema).unwrap();
        let path = path.display().to_string();
        let out = sb.run("openai-payg", &path, &["--json", "Answer."]).await;
        assert_eq!(out.code, Some(code), "{schema} / {input}: {}", out.dump());
        let result = out.json();
        let attempts = result["ledger"]["attempts"].as_array().unwrap().len();
        assert_eq!(attempts, if code == 0 { 1 } else { 2 }, "{result}");
        if code == 0 {
            let printed: Value = serde_json::from_str(shown).unwrap();
            assert_eq!(result["answer"], printed, "{schema} / {input}: {result}");
        }
    }
}

/// `geode batch` gives the same verdicts: one line per open root, each with its schema, run
/// one at a time against a fake that answers each case's text (twice when the retry follows).
#[tokio::test]
async fn batch_gives_the_verdict_of_validate_on_open_roots() {
    let replies = OPEN_ROOTS.iter().flat_map(|(_, input, code, _)| {
        std::iter::repeat_n(Reply::text(*input), if *code == 0 { 1 } else { 2 })
    });
    let server = fake(&OPENAI_PAYG, Script::new(replies)).await;
    let sb = OPENAI_PAYG.sandbox(&server);
    let lines: String = OPEN_ROOTS
        .iter()
        .enumerate()
        .map(|(i, (schema, ..))| {
            let schema: Value = serde_json::from_str(schema).unwrap();
            json!({"task_id": format!("o{i}"), "prompt": "Answer.", "response_schema": schema})
                .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(sb.cwd.path().join("in.jsonl"), lines).unwrap();
    let out = sb
        .geode(
            &[
                "batch",
                "--adapter",
                "openai-payg",
                "--input",
                "in.jsonl",
                "--output",
                "out.jsonl",
                "--concurrency",
                "1",
            ],
            "",
        )
        .await;
    assert!(matches!(out.code, Some(0 | 1)), "{}", out.dump());
    let text = std::fs::read_to_string(sb.cwd.path().join("out.jsonl")).unwrap();
    let results: std::collections::HashMap<String, Value> = text
        .lines()
        .map(|l| {
            let r: Value = serde_json::from_str(l).unwrap();
            (r["task_id"].as_str().unwrap().to_owned(), r)
        })
        .collect();
    for (i, (schema, input, code, shown)) in OPEN_ROOTS.into_iter().enumerate() {
        let r = &results[&format!("o{i}")];
        assert_eq!(r["success"], code == 0, "{schema} / {input}: {r}");
        if code == 0 {
            let printed: Value = serde_json::from_str(shown).unwrap();
            assert_eq!(r["answer"], printed, "{schema} / {input}: {r}");
        }
    }
}

/// `--resources DIR` hands `geode validate` the schemas a `$ref` names, under
/// `--resources-base` or, without it, the folder's own `file://` URI; nothing is fetched, and a
/// `$ref` that names no document is an unusable schema (exit 2).
#[tokio::test]
async fn validate_resolves_refs_from_a_resources_folder() {
    let sb = Sandbox::new();
    let dir = sb.home().join("schemas");
    std::fs::create_dir_all(dir.join("defs")).unwrap();
    std::fs::write(
        dir.join("defs/name.json"),
        r#"{"type": "string", "minLength": 2}"#,
    )
    .unwrap();
    let dir_arg = dir.display().to_string();
    let by_uri = schema_file(
        &sb,
        "by-uri.json",
        &json!({"properties": {"n": {"$ref": "https://example.com/s/defs/name.json"}}}),
    );
    let base = [
        "--resources",
        &dir_arg,
        "--resources-base",
        "https://example.com/s",
    ];
    validate(&sb, &by_uri, &base, r#"{"n": "x"}"#)
        .await
        .assert_exit(1)
        .assert_stderr_has(&["\"/n\"", "minLength"]);
    validate(&sb, &by_uri, &base, r#"{"n": "xy"}"#)
        .await
        .assert_exit(0);
    let out = validate(&sb, &by_uri, &[], r#"{"n": "xy"}"#).await;
    out.assert_exit(2);
    assert!(out.stderr.contains("unusable schema"), "{}", out.dump());
    let file_uri = format!(
        "file://{}/defs/name.json",
        dir.canonicalize().unwrap().display()
    );
    let by_file = schema_file(
        &sb,
        "by-file.json",
        &json!({"properties": {"n": {"$ref": file_uri}}}),
    );
    validate(&sb, &by_file, &["--resources", &dir_arg], r#"{"n": "x"}"#)
        .await
        .assert_exit(1)
        .assert_stderr_has(&["minLength"]);
    // One document of a meta-schema geode does not know is left out, said, and fails nothing.
    std::fs::write(
        dir.join("odd.json"),
        r#"{"$schema": "https://example.com/my-meta", "type": "string"}"#,
    )
    .unwrap();
    validate(&sb, &by_uri, &base, r#"{"n": "xy"}"#)
        .await
        .assert_exit(0)
        .assert_stderr_has(&["left out", "odd.json", "my-meta"]);
}

#[tokio::test]
async fn validate_asserts_formats_unless_told_to_annotate() {
    let (sb, path) = sandbox_with(
        "id.json",
        &json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"id": {"format": "uuid"}, "site": {"format": "iri"}}}),
    );
    let bad = r#"{"id": "not-a-uuid", "site": "not an iri"}"#;
    let out = validate(&sb, &path, &[], bad).await;
    out.assert_exit(1)
        .assert_stderr_has(&["\"/id\"", "\"/site\""]);
    validate(&sb, &path, &["--formats", "annotate"], bad)
        .await
        .assert_exit(0);
    validate(&sb, &path, &["--formats", "bogus"], bad)
        .await
        .assert_exit(2);
}

#[tokio::test]
async fn validate_takes_ecma_262_patterns() {
    let (sb, path) = sandbox_with(
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
    let out = validate(&sb, &path, &[], good).await;
    out.assert_exit(0);
    let bad = r#"{"slug": "ab1", "oid": "507f", "tpl": "name", "x-1": "s"}"#;
    let out = validate(&sb, &path, &[], bad).await;
    out.assert_exit(1)
        .assert_stderr_has(&["\"/slug\"", "\"/oid\"", "\"/tpl\"", "\"/x-1\""]);
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
    out.assert_exit(0);
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

/// The wrap transform's text in a ledger's `transforms`.
fn names_the_wrap(ledger: &Value) -> bool {
    ledger["transforms"].as_array().is_some_and(|ts| {
        ts.iter().any(|t| {
            t["pointer"] == ""
                && t["action"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("wrapped the root")
        })
    })
}

/// Whether `case`'s wire takes an array root as it is (Anthropic native), not wrapped.
fn is_native(case: &Case) -> bool {
    matches!(case.placement, Placement::MessagesFormat)
}

/// The fake's answer `array` (JSON text) as `case`'s wire asks for it: bare where the root goes
/// native, else wrapped under `value`.
fn as_the_wire_asks(case: &Case, array: &str) -> String {
    if is_native(case) {
        array.to_owned()
    } else {
        format!(r#"{{"value":{array}}}"#)
    }
}

/// `geode run` with the [`INTS`] schema on `case`'s fake answering `script`: exit 0 and `expect`
/// printed. Returns the fake, the sandbox and the schema's path.
async fn run_ints(case: &Case, script: Script, expect: Value) -> (FakeServer, Sandbox, String) {
    let server = fake(case, script).await;
    let sb = case.sandbox(&server);
    let path = schema_file(&sb, "ints.json", &serde_json::from_str(INTS).unwrap());
    let out = sb.run(case.adapter, &path, &["Integers."]).await;
    assert_eq!(out.code, Some(0), "{}: {}", case.adapter, out.dump());
    assert_eq!(out.json(), expect, "{}: {}", case.adapter, out.dump());
    (server, sb, path)
}

/// The retry on a wrapped wire asks for what the wire asks for: the wrapper object, with each
/// validation error's path under `/value` (where the model wrote it), not a bare array the
/// wire's schema and system prompt would contradict. On the native wire the paths stay bare.
#[tokio::test]
async fn the_retry_on_a_wrapped_wire_asks_for_the_wrapper() {
    for case in ALL {
        let native = is_native(&case);
        let script = Script::new([
            Reply::text(as_the_wire_asks(&case, r#"[1,"x"]"#)),
            Reply::text(as_the_wire_asks(&case, "[1,2]")),
        ]);
        let (server, ..) = run_ints(&case, script, json!([1, 2])).await;
        let calls = support::model_calls(&server);
        assert_eq!(calls.len(), 2, "{}: one retry", case.adapter);
        let retry = calls[1].body.to_string();
        let (path_shown, asked) = if native {
            (r#"/1: \"x\" is not of type"#, "emit ONLY the JSON array")
        } else {
            (
                r#"/value/1: \"x\" is not of type"#,
                r#"emit ONLY a JSON object whose key \"value\" holds the JSON array"#,
            )
        };
        assert!(retry.contains(path_shown), "{}: {retry}", case.adapter);
        assert!(retry.contains(asked), "{}: {retry}", case.adapter);
    }
}

/// Every HTTP adapter with an array schema: the wire gets the root wrapped under `value` where it
/// needs an object root (OpenAI strict: now `strict`, no longer a hint; GLM's json_object) and
/// unwrapped where it does not (Anthropic native). The fake answers as the wire asks; `run`
/// prints the caller's array, exit 0, and the ledger names the wrap.
#[tokio::test]
async fn run_with_an_array_schema_succeeds_on_every_hosted_fake() {
    for case in ALL {
        let native = is_native(&case);
        let reply = Reply::text(as_the_wire_asks(&case, "[1,2,3]"));
        let (server, sb, path) = run_ints(&case, Script::always(reply), json!([1, 2, 3])).await;
        let out = sb
            .run(case.adapter, &path, &["--json", "Three integers."])
            .await;
        assert_eq!(out.code, Some(0), "{}: {}", case.adapter, out.dump());
        let result = out.json();
        assert_eq!(
            result["answer"],
            json!([1, 2, 3]),
            "{}: {result}",
            case.adapter
        );
        let ledger = &result["ledger"];
        assert_eq!(ledger["wire_mode"], case.mode, "{}: {ledger}", case.adapter);
        assert_eq!(ledger["worker_check"]["verdict"], "pass", "{ledger}");
        assert_eq!(ledger["full_validation"]["valid"], true, "{ledger}");
        assert_eq!(
            names_the_wrap(ledger),
            !native,
            "{}: {ledger}",
            case.adapter
        );
        let body = &support::model_calls(&server)[0].body;
        let wire_schema = match case.placement {
            Placement::ResponsesFormat => {
                assert_eq!(body["text"]["format"]["strict"], true, "{body}");
                body["text"]["format"]["schema"].clone()
            }
            Placement::MessagesFormat => body["output_config"]["format"]["schema"].clone(),
            Placement::ChatJsonObject => {
                let system = body["messages"][0]["content"].as_str().unwrap();
                let start = system.find("JSON Schema:\n").unwrap() + "JSON Schema:\n".len();
                serde_json::from_str(&system[start..]).unwrap()
            }
            Placement::ChatJsonSchema => body["response_format"]["json_schema"]["schema"].clone(),
        };
        // `geode schema check --adapter` shows what `run` did: the same mode, rewrites and copy.
        let check = sb
            .geode(
                &[
                    "schema",
                    "check",
                    "--json",
                    "--adapter",
                    case.adapter,
                    &path,
                ],
                "",
            )
            .await;
        assert_eq!(check.code, Some(0), "{}: {}", case.adapter, check.dump());
        let check = check.json();
        assert_eq!(check["mode"], ledger["wire_mode"], "{check}");
        assert_eq!(check["transforms"], ledger["transforms"], "{check}");
        assert_eq!(check["wrapped"], !native, "{check}");
        if !matches!(case.placement, Placement::ChatJsonObject) {
            assert_eq!(check["wire_schema"], wire_schema, "{check}");
        }
        let ints: Value = serde_json::from_str(INTS).unwrap();
        if native {
            assert_eq!(wire_schema, ints, "{body}");
        } else {
            assert_eq!(wire_schema["properties"]["value"], ints, "{body}");
            assert_eq!(wire_schema["required"], json!(["value"]), "{body}");
            assert_eq!(wire_schema["additionalProperties"], false, "{body}");
        }
    }
}

/// `geode schema check --adapter`: a schema outside OpenAI strict's rules names the weaker mode
/// and why (exit 1); removed keywords are listed as checked locally; an unknown adapter is a
/// usage error.
#[tokio::test]
async fn schema_check_per_adapter_names_mode_rewrites_and_reasons() {
    let sb = Sandbox::new();
    // A map: strict mode cannot take an `additionalProperties` schema.
    let loose = schema_file(
        &sb,
        "loose.json",
        &json!({"type": "object", "properties": {"a": {"type": "string"}},
                "additionalProperties": {"type": "integer"}}),
    );
    let out = sb
        .geode(&["schema", "check", "--adapter", "openai-payg", &loose], "")
        .await;
    out.assert_exit(1);
    assert!(out.stdout.contains("mode hint"), "{}", out.dump());
    assert!(
        out.stdout
            .contains("weaker mode because OpenAI strict: /: additionalProperties must be false"),
        "{}",
        out.dump()
    );
    let stripped = schema_file(
        &sb,
        "stripped.json",
        &json!({"type": "array", "items": {"type": "string", "format": "uri", "default": "x"}}),
    );
    let check_lists = |adapter: &'static str, file: String, needles: &'static [&'static str]| {
        let sb = &sb;
        async move {
            let out = sb
                .geode(&["schema", "check", "--adapter", adapter, &file], "")
                .await;
            out.assert_exit(0);
            for needle in needles {
                assert!(out.stdout.contains(needle), "{needle}: {}", out.dump());
            }
        }
    };
    let stripped_needles = &[
        "mode strict (root wrapped under \"value\")",
        "rewrite /: wrapped the root",
        "rewrite /items: removed keyword format",
        "rewrite /items: removed keyword default",
        "checked locally /items: format \"uri\"",
    ];
    check_lists("codex-oauth", stripped.clone(), stripped_needles).await;
    // An optional property in an open object: strict, required and nullable, the object closed.
    let optional = schema_file(
        &sb,
        "optional.json",
        &json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
                "required": ["a"]}),
    );
    let optional_needles = &[
        "mode strict",
        "rewrite /: additionalProperties: false for OpenAI strict",
        "rewrite /properties/b: required and nullable for OpenAI strict",
    ];
    check_lists("openai-payg", optional, optional_needles).await;
    let out = sb
        .geode(&["schema", "check", "--adapter", "nope", &stripped], "")
        .await;
    out.assert_exit(2);
    assert!(out.stderr.contains("unknown adapter"), "{}", out.dump());
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
    out.assert_exit(0);
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
    // GLM's json_object wraps the string root (the system prompt shows the wrapper): the retry
    // turn asks for the same wrapper around the root's type. A bare string still counts.
    let calls = support::model_calls(&server);
    let retry = calls[1].body.to_string();
    assert!(
        retry.contains(
            r#"did not parse as the required JSON object whose key \"value\" holds the JSON string"#
        ),
        "{retry}"
    );
}
