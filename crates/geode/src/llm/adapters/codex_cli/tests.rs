use super::*;
use crate::llm::request::Message;
use crate::schema::ResponseSchema;
use crate::vocab::ErrorKind;
use crate::vocab::StructuredOutputMode;
use serde_json::json;

// Real codex 0.171.0 `exec --json` events, trimmed from a run against a fake provider.
const OK: &str = r#"{"type":"thread.started","thread_id":"01a2"}
{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for `fake-model` not found."}}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"{\"answer\":\"fake\",\"confidence\":1.5,\"tags\":[\"fake\"]}"}}
{"type":"turn.completed","usage":{"input_tokens":11,"cached_input_tokens":2,"cache_write_input_tokens":0,"output_tokens":7,"reasoning_output_tokens":0}}
"#;

fn schema() -> ResponseSchema {
    ResponseSchema::from_value(json!({
        "type":"object","properties":{"answer":{"type":"string"}},
        "required":["answer"],"additionalProperties":false
    }))
    .unwrap()
}

fn failed_kind(o: Outcome) -> String {
    match o {
        Outcome::Failed(AdapterError::RunFailed { kind, .. }) => kind,
        other => panic!("expected a RunFailed outcome, got {other:?}"),
    }
}

#[test]
fn the_last_agent_message_is_the_answer_with_turn_usage() {
    let Outcome::Answer(r) = interpret(OK) else {
        panic!("no answer")
    };
    assert_eq!(
        r.text,
        r#"{"answer":"fake","confidence":1.5,"tags":["fake"]}"#
    );
    assert_eq!(r.usage.token_counts(), (11, 7, 2));
    assert_eq!(
        r.structured, None,
        "codex does not validate; the worker does"
    );
}

#[test]
fn turn_failed_is_a_failure_even_after_a_message() {
    let s = format!("{OK}{{\"type\":\"turn.failed\",\"error\":{{\"message\":\"boom\"}}}}\n");
    assert_eq!(failed_kind(interpret(&s)), "turn_failed");
}

#[test]
fn provider_statuses_in_failures_are_typed() {
    // What codex 0.171.0 prints for a provider's 401, 429, 500 and 503 (no retries).
    let cases = [
        (
            "unexpected status 401 Unauthorized: Incorrect API key provided., url: http://127.0.0.1:1/v1/responses",
            ErrorKind::Auth,
        ),
        (
            "exceeded retry limit, last status: 429 Too Many Requests",
            ErrorKind::RateLimited,
        ),
        (
            "We’re currently experiencing high demand, which may cause temporary errors.",
            ErrorKind::Server,
        ),
        (
            "unexpected status 503 Service Unavailable: The engine is currently overloaded.",
            ErrorKind::Server,
        ),
        (
            "unexpected status 400 Bad Request: Bad request.",
            ErrorKind::RunFailed,
        ),
        ("status 4000 is not a status", ErrorKind::RunFailed),
    ];
    for (message, kind) in cases {
        let events = format!(
            "{{\"type\":\"turn.failed\",\"error\":{{\"message\":{}}}}}\n",
            serde_json::to_string(message).unwrap()
        );
        match interpret(&events) {
            Outcome::Failed(e) => assert_eq!(e.kind(), kind, "{message}"),
            other => panic!("{message}: {other:?}"),
        }
    }
}

#[test]
fn an_unrecovered_error_event_is_a_failure_and_a_recovered_one_is_not() {
    let err = r#"{"type":"error","message":"Reconnecting... 2/5"}"#;
    let recovered = OK.replace(
        "{\"type\":\"turn.started\"}",
        &format!("{{\"type\":\"turn.started\"}}\n{err}"),
    );
    assert!(matches!(interpret(&recovered), Outcome::Answer(_)));
    let unrecovered = format!("{{\"type\":\"turn.started\"}}\n{err}\n");
    assert_eq!(failed_kind(interpret(&unrecovered)), "stream_error");
}

#[test]
fn no_terminal_event_and_no_message_are_told_apart() {
    assert!(matches!(
        interpret("{\"type\":\"turn.started\"}\n"),
        Outcome::NoTerminal
    ));
    let no_msg = "{\"type\":\"turn.completed\",\"usage\":{}}\n";
    assert_eq!(failed_kind(interpret(no_msg)), "no_agent_message");
}

#[test]
fn argv_reads_the_prompt_from_stdin_and_keeps_codex_on_loopback() {
    let mut req = AdapterCallRequest::new("fake-model", vec![Message::user("Give the answer")]);
    req.response_schema = Some(schema());
    let a = CodexCliAdapter::new(CodexCliConfig {
        config_overrides: vec![("model_provider".into(), "\"fake\"".into())],
        ..CodexCliConfig::default()
    });
    let spec = a.process_spec("/bin/codex".into(), &req, Some(Path::new("/t/schema.json")));
    let args: Vec<String> = spec
        .arguments()
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let joined = args.join(" ");
    assert!(
        joined.starts_with("exec --json --skip-git-repo-check --ephemeral --sandbox read-only")
    );
    assert!(joined.contains("-c check_for_update_on_startup=false --disable plugins --disable remote_plugin --disable apps"));
    assert!(joined.contains("-m fake-model"));
    assert!(joined.contains("-c model_provider=\"fake\""));
    assert!(joined.ends_with("--output-schema /t/schema.json -"));
    assert_eq!(a.wire_mode(Some(&schema())), StructuredOutputMode::CliFlag);
    assert!(!a.supports_tools());
}

#[test]
fn the_schema_file_is_private_compact_and_removed_on_drop() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().unwrap();
    let f = SchemaFile::create(root.path(), &schema()).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(f.path()), 0o600);
    assert_eq!(mode(f.dir()), 0o700);
    assert_eq!(
        std::fs::read_to_string(f.path()).unwrap(),
        schema().to_compact_json()
    );
    drop(f);
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn a_missing_binary_is_a_config_error_and_leaves_no_schema_file() {
    let root = tempfile::tempdir().unwrap();
    let mut config = CodexCliConfig {
        temp_root: Some(root.path().to_owned()),
        ..CodexCliConfig::default()
    };
    config.cli.bin = Some("/nonexistent/codex".into());
    let mut req = AdapterCallRequest::new("m", vec![Message::user("q")]);
    req.response_schema = Some(schema());
    let adapter = CodexCliAdapter::new(config);
    super::super::cli_common::tests::assert_missing_binary_is_named(&adapter, req, ROW.bin_env)
        .await;
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
}

#[test]
fn the_cli_may_see_its_own_list_its_config_names_and_pass_env() {
    let mut config = CodexCliConfig::default();
    config.cli.allow_env = vec!["FROM_PASS_ENV".into()];
    let a = CodexCliAdapter::new(config);
    let req = AdapterCallRequest::new("m", vec![Message::user("q")]);
    let spec = a.process_spec_with("/bin/codex".into(), &req, None, &["MY_KEY".into()], &[]);
    let d = format!("{spec:?}");
    for name in ["CODEX_HOME", "OPENAI_API_KEY", "MY_KEY", "FROM_PASS_ENV"] {
        assert!(d.contains(&format!("\"{name}\"")), "{name}: {d}");
    }
    let plain = format!("{:?}", a.process_spec("/bin/codex".into(), &req, None));
    assert!(!plain.contains("MY_KEY"), "{plain}");
}

#[test]
fn images_become_private_files_given_as_image_equals_before_the_stdin_marker() {
    let root = tempfile::tempdir().unwrap();
    let png = crate::media::Media::from_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\r", None).unwrap();
    let mut req = AdapterCallRequest::new("m", vec![Message::user("q")]);
    req.messages[0].content.insert(0, png.into());
    let files = ImageFiles::create(root.path(), &req).unwrap();
    let [path] = files.paths() else {
        panic!("one file: {:?}", files.paths())
    };
    assert!(path.ends_with("image-1.png"), "{path:?}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let spec = CodexCliAdapter::default().process_spec_with(
        "/bin/codex".into(),
        &req,
        None,
        &[],
        files.paths(),
    );
    let args: Vec<String> = spec
        .arguments()
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let flag = format!("--image={}", path.display());
    let at = args
        .iter()
        .position(|a| *a == flag)
        .expect("the image flag");
    assert_eq!(args.last().map(String::as_str), Some("-"));
    assert!(at < args.len() - 1);
    drop(files);
    assert_eq!(
        std::fs::read_dir(root.path()).unwrap().count(),
        0,
        "removed on drop"
    );
}
