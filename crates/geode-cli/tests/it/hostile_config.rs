//! Hostile `geode.toml` files and `GEODE_*` variables, through the real `geode` binary.
//!
//! What it proves: wrong types, non-finite, negative, zero and out-of-range numbers, unknown
//! keys, empty strings, base URLs that are not URLs or hold a password, a 10 MB file, invalid
//! UTF-8, a config that is a directory, a FIFO, a device or a symlink loop, variables with garbage
//! values and keys with a newline each end with exit 2 and a message naming the key or the
//! variable, before any request (a loopback fake records every request), with no panic, and
//! without ever echoing the secret that was pasted into the value. Legitimate extremes (a
//! timeout of 1e308 seconds, a key with a trailing newline, a provider on a remote https host)
//! still work. Where a run could try a non-loopback address, it runs in a network namespace
//! with no network at all (`unshare -rn`), so nothing ever leaves 127.0.0.1.

use crate::support;

use geode_fakes::{FakeServer, Reply, Script};
use std::process::Stdio;
use support::http_cases::OPENAI_PAYG;
use support::{DECIDE, Outcome, RUN_BOUND, SECRET, Sandbox, good_answer, model_calls};

/// An OpenAI Responses fake answering the good Decision, and a sandbox pointed at it whose
/// `OPENAI_API_KEY` is [`SECRET`] (so the scrubber knows it, as it knows a real key).
async fn openai() -> (FakeServer, Sandbox) {
    OPENAI_PAYG
        .serve(Script::always(Reply::Json(good_answer())))
        .await
}

/// `geode run --adapter openai-payg --schema <Decision> Decide.`
async fn run(sb: &Sandbox) -> Outcome {
    sb.run_decision("openai-payg", &[], DECIDE).await
}

/// Exit 2, no panic, every needle in stderr, the secret nowhere, nothing sent.
#[track_caller]
fn assert_usage_error(name: &str, out: &Outcome, server: &FakeServer, needles: &[&str]) {
    assert_eq!(out.code, Some(2), "{name}: {}", out.dump());
    assert!(!out.stderr.contains("panicked"), "{name}: {}", out.dump());
    for needle in needles {
        assert!(
            out.stderr.contains(needle),
            "{name}: wanted {needle:?}: {}",
            out.dump()
        );
    }
    assert!(
        !out.stdout.contains(SECRET) && !out.stderr.contains(SECRET),
        "{name}: the secret was echoed: {}",
        out.dump()
    );
    assert!(
        server.requests().is_empty(),
        "{name}: {:#?}",
        server.requests()
    );
}

/// Runs every `(name, geode.toml, needles)` case in a fresh sandbox.
async fn refuse_each(cases: Vec<(&str, String, Vec<&str>)>) {
    for (name, toml, needles) in cases {
        let (server, sb) = openai().await;
        sb.config(&toml);
        let out = run(&sb).await;
        assert_usage_error(name, &out, &server, &needles);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_types_are_named_by_position_and_never_echo_the_value() {
    let provider =
        "[providers.p]\nwire = \"chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n";
    refuse_each(vec![
        (
            "default_adapter a number",
            "default_adapter = 3\n".into(),
            vec!["geode.toml", "line 1"],
        ),
        (
            "fallback a string",
            "fallback = \"openai-payg\"\n".into(),
            vec!["line 1"],
        ),
        (
            "request_s a pasted key",
            format!("[timeouts]\nrequest_s = \"{SECRET}\"\n"),
            vec!["line 2", "invalid type"],
        ),
        (
            "max_response_bytes a pasted key",
            format!("[limits]\nmax_response_bytes = \"{SECRET}\"\n"),
            vec!["line 2"],
        ),
        (
            "model a number",
            "[adapters.openai-payg]\nmodel = 5\n".into(),
            vec!["line 2"],
        ),
        (
            "headers a string holding a key",
            format!("{provider}headers = \"Bearer {SECRET}\"\n"),
            vec!["line 5", "invalid type"],
        ),
        (
            "a table given as a string",
            format!("timeouts = \"{SECRET}\"\n"),
            vec!["line 1"],
        ),
        (
            "an enum value that is a pasted key",
            format!("[gateway]\nrequire = \"{SECRET}\"\n"),
            vec!["line 2"],
        ),
        (
            "a wire that is a pasted key",
            provider.replace("\"chat\"", &format!("\"{SECRET}\"")),
            vec!["line 2"],
        ),
    ])
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numbers_out_of_range_are_refused_naming_the_key() {
    let mut cases: Vec<(&str, String, Vec<&str>)> = Vec::new();
    for value in ["nan", "inf", "-inf", "-1", "0", "-0.0"] {
        cases.push((
            "request_s",
            format!("[timeouts]\nrequest_s = {value}\n"),
            vec!["[timeouts] request_s", "positive"],
        ));
    }
    for value in ["0", "-1", "1.5", "1e30", "99999999999999999999", "nan"] {
        cases.push((
            "max_response_bytes",
            format!("[limits]\nmax_response_bytes = {value}\n"),
            vec!["geode.toml", "line 2"],
        ));
    }
    cases.push((
        "a float literal TOML cannot hold",
        "[timeouts]\nrequest_s = 1e400\n".into(),
        vec!["line 2", "overflowed"],
    ));
    refuse_each(cases).await;

    // The largest values that are still numbers of seconds and bytes run normally.
    let (server, sb) = openai().await;
    sb.config(
        "[timeouts]\nrequest_s = 1e308\n[limits]\nmax_response_bytes = 9223372036854775807\n",
    );
    run(&sb).await.assert_answer(&good_answer());
    assert_eq!(model_calls(&server).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flags_out_of_range_are_usage_errors_before_any_request() {
    let (server, sb) = openai().await;
    for (flag, value) in [
        ("--max-tokens", "0"),
        ("--max-tokens", "-1"),
        ("--max-tokens", "99999999999"),
        ("--timeout", "nan"),
    ] {
        let arg = format!("{flag}={value}");
        let out = sb.run_decision("openai-payg", &[&arg], DECIDE).await;
        assert_usage_error(&arg, &out, &server, &[flag]);
    }
    let input = sb.cwd.path().join("in.jsonl");
    std::fs::write(&input, "{\"task_id\": \"a\", \"prompt\": \"x\"}\n").unwrap();
    let schema = support::decision_schema_path();
    for value in ["0", "-1", "99999999999"] {
        let arg = format!("--concurrency={value}");
        let out = sb
            .geode(
                &[
                    "batch",
                    "--adapter",
                    "openai-payg",
                    "--schema",
                    &schema,
                    "--input",
                    "in.jsonl",
                    "--output",
                    "out.jsonl",
                    &arg,
                ],
                "",
            )
            .await;
        assert_usage_error(&arg, &out, &server, &["--concurrency"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_keys_and_empty_strings_are_refused_naming_them() {
    let provider = |extra: &str| {
        format!(
            "[providers.p]\nwire = \"chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n{extra}"
        )
    };
    refuse_each(vec![
        (
            "unknown top-level key",
            "colour = \"blue\"\n".into(),
            vec!["colour"],
        ),
        (
            "unknown timeout",
            "[timeouts]\nconnect_s = 5\n".into(),
            vec!["connect_s"],
        ),
        (
            "a key in the file",
            format!("[adapters.openai-payg]\napi_key = \"{SECRET}\"\n"),
            vec!["api_key"],
        ),
        (
            "unknown adapter table",
            "[adapters.nope]\nmodel = \"x\"\n".into(),
            vec!["nope"],
        ),
        (
            "empty default_adapter",
            "default_adapter = \"\"\n".into(),
            vec!["default_adapter"],
        ),
        (
            "empty fallback entry",
            "fallback = [\"\"]\n".into(),
            vec!["fallback"],
        ),
        (
            "empty model",
            "[adapters.openai-payg]\nmodel = \"\"\n".into(),
            vec!["[adapters.openai-payg] model", "empty"],
        ),
        (
            "blank model",
            "[adapters.openai-payg]\nmodel = \"   \"\n".into(),
            vec!["[adapters.openai-payg] model"],
        ),
        (
            "empty base_url",
            "[adapters.openai-payg]\nbase_url = \"\"\n".into(),
            vec!["[adapters.openai-payg] base_url"],
        ),
        (
            "provider with an empty base_url",
            provider("").replace("http://127.0.0.1:9/v1", ""),
            vec!["[providers.p] base_url"],
        ),
        (
            "provider with an empty model",
            provider("").replace("model = \"m\"", "model = \"\""),
            vec!["[providers.p] model"],
        ),
        (
            "provider with an empty key_env",
            provider("key_env = \"\"\n"),
            vec!["[providers.p] key_env"],
        ),
    ])
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn base_urls_that_are_not_urls_or_hold_a_password_are_refused_naming_their_source() {
    let provider = |base: &str| {
        format!(
            "[providers.p]\nwire = \"chat\"\nbase_url = \"{base}\"\nkey_env = \"OPENAI_API_KEY\"\nmodel = \"m\"\n"
        )
    };
    refuse_each(vec![
        (
            "file base_url not a URL",
            "[adapters.openai-payg]\nbase_url = \"not a url\"\n".into(),
            vec!["[adapters.openai-payg] base_url", "not a URL"],
        ),
        (
            "file base_url ftp",
            "[adapters.openai-payg]\nbase_url = \"ftp://127.0.0.1/x\"\n".into(),
            vec!["[adapters.openai-payg] base_url", "http"],
        ),
        (
            "file base_url with a password",
            format!("[adapters.openai-payg]\nbase_url = \"http://u:{SECRET}@127.0.0.1:9\"\n"),
            vec!["[adapters.openai-payg] base_url", "credentials"],
        ),
        (
            "provider base_url not a URL",
            provider("127.0.0.1:9/v1"),
            vec!["[providers.p] base_url"],
        ),
    ])
    .await;

    // The same through variables, which override the file: the variable is named.
    for (var, value, needle) in [
        ("GEODE_OPENAI_BASE_URL", "garbage".to_owned(), "not a URL"),
        (
            "GEODE_OPENAI_BASE_URL",
            "ftp://127.0.0.1/x".to_owned(),
            "http",
        ),
        (
            "GEODE_OPENAI_BASE_URL",
            format!("http://u:{SECRET}@127.0.0.1:9"),
            "credentials",
        ),
        ("OPENAI_BASE_URL", "garbage".to_owned(), "not a URL"),
    ] {
        let (server, mut sb) = openai().await;
        if var == "OPENAI_BASE_URL" {
            // The SDK variable only counts when the geode one is unset.
            sb.env.retain(|(k, _)| k != "GEODE_OPENAI_BASE_URL");
        }
        sb.var(var, &value);
        let out = run(&sb).await;
        assert_usage_error(var, &out, &server, &[var, needle]);
    }
}

/// `unshare -rn geode ARGS`: the binary in a network namespace of its own, with no interface up,
/// so a non-loopback address cannot be reached whatever geode does.
async fn offline(sb: &Sandbox, args: &[&str]) -> Outcome {
    let mut cmd = tokio::process::Command::from(sb.wrapped(&["unshare", "-rn"], args));
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let out = tokio::time::timeout(RUN_BOUND, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("geode {args:?} exceeded {RUN_BOUND:?}"))
        .expect("unshare (util-linux) must be installed");
    let out = Outcome {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(
        !out.stderr.contains("unshare:"),
        "unshare -rn must work here (user namespaces): {}",
        out.dump()
    );
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_on_a_remote_host_is_accepted_once_trusted_and_never_reached_from_the_tests() {
    // 192.0.2.1 is TEST-NET-1 (never routed); the runs are offline besides.
    let mut sb = Sandbox::new();
    sb.var("REMOTE_KEY", SECRET);
    sb.config(
        "[providers.remote]\nwire = \"chat\"\nbase_url = \"https://192.0.2.1/v1\"\nkey_env = \"REMOTE_KEY\"\nmodel = \"m\"\nschema = \"json_object\"\n",
    );
    // The project file names both the key's variable and the host: not until it is trusted.
    let out = offline(&sb, &["adapters", "--json"]).await;
    out.assert_exit(2)
        .assert_hides(SECRET)
        .assert_stderr_has(&["[providers.remote] key_env", "geode config trust"]);
    let out = offline(&sb, &["config", "trust"]).await;
    out.assert_exit(0).assert_hides(SECRET);
    let out = offline(&sb, &["adapters", "--json"]).await;
    out.assert_exit(0).assert_hides(SECRET);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out.stdout).unwrap();
    let remote = rows.iter().find(|r| r["name"] == "remote").unwrap();
    assert_eq!(remote["configured"], true, "{remote}");
    // `--require enforced` refuses it before any connection is tried.
    let schema = support::decision_schema_path();
    let args = [
        "run",
        "--adapter",
        "remote",
        "--schema",
        &schema,
        "--require",
        "enforced",
        DECIDE,
    ];
    let out = offline(&sb, &args).await;
    out.assert_exit(2)
        .assert_hides(SECRET)
        .assert_stderr_has(&["json-mode"]);
    // A real call fails typed (no network in the namespace), without the key.
    let out = offline(
        &sb,
        &args[..5]
            .iter()
            .chain(&[DECIDE])
            .copied()
            .collect::<Vec<_>>(),
    )
    .await;
    out.assert_exit(3).assert_hides(SECRET);
}

/// Puts a hostile `geode.toml` (or home config) in a sandbox.
type Make = dyn Fn(&Sandbox);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_file_that_is_not_a_small_regular_text_file_is_an_error_not_the_defaults() {
    let write = |sb: &Sandbox, bytes: &[u8]| {
        std::fs::write(sb.cwd.path().join("geode.toml"), bytes).unwrap();
    };
    let cases: Vec<(&str, Box<Make>, Vec<&str>)> = vec![
        (
            "10 MB of comments",
            Box::new(move |sb: &Sandbox| {
                let mut text = b"# ".to_vec();
                text.resize(10 * 1024 * 1024, b'x');
                text.push(b'\n');
                write(sb, &text);
            }),
            vec!["geode.toml", "1048576"],
        ),
        (
            "invalid UTF-8",
            Box::new(move |sb: &Sandbox| write(sb, b"default_adapter = \"caf\xe9\"\n")),
            vec!["geode.toml", "UTF-8"],
        ),
        (
            "a directory",
            Box::new(|sb: &Sandbox| std::fs::create_dir(sb.cwd.path().join("geode.toml")).unwrap()),
            vec!["geode.toml", "not a regular file"],
        ),
        (
            "a symlink loop",
            Box::new(|sb: &Sandbox| {
                let path = sb.cwd.path().join("geode.toml");
                std::os::unix::fs::symlink(&path, &path).unwrap();
            }),
            vec!["geode.toml", "symbolic links"],
        ),
        (
            "a dangling symlink",
            Box::new(|sb: &Sandbox| {
                std::os::unix::fs::symlink(
                    "/nonexistent/geode.toml",
                    sb.cwd.path().join("geode.toml"),
                )
                .unwrap();
            }),
            vec!["geode.toml", "No such file"],
        ),
        (
            "a symlink to /dev/zero",
            Box::new(|sb: &Sandbox| {
                std::os::unix::fs::symlink("/dev/zero", sb.cwd.path().join("geode.toml")).unwrap();
            }),
            vec!["geode.toml", "not a regular file"],
        ),
        (
            "a FIFO nobody writes to",
            Box::new(|sb: &Sandbox| {
                let status = std::process::Command::new("mkfifo")
                    .arg(sb.cwd.path().join("geode.toml"))
                    .status()
                    .expect("mkfifo must be installed");
                assert!(status.success());
            }),
            vec!["geode.toml", "not a regular file"],
        ),
        (
            "the home config a directory",
            Box::new(|sb: &Sandbox| {
                std::fs::create_dir_all(sb.home().join(".config/geode/config.toml")).unwrap();
            }),
            vec!["config.toml", "not a regular file"],
        ),
    ];
    for (name, make, needles) in cases {
        let (server, sb) = openai().await;
        make(&sb);
        let out = run(&sb).await;
        assert_usage_error(name, &out, &server, &needles);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_in_variables_is_an_error_naming_the_variable_never_its_value() {
    for value in [
        SECRET,
        "0",
        "-1",
        "1e3",
        "16MB",
        "99999999999999999999",
        " ",
    ] {
        let (server, mut sb) = openai().await;
        sb.var("GEODE_MAX_RESPONSE_BYTES", value);
        let out = run(&sb).await;
        assert_usage_error(value, &out, &server, &["GEODE_MAX_RESPONSE_BYTES"]);
    }
    for (var, value) in [
        ("GEODE_CLAUDE_BIN", "/nonexistent/claude"),
        ("GEODE_CODEX_BIN", "/nonexistent/codex"),
    ] {
        let mut sb = Sandbox::new();
        sb.var(var, value);
        let adapter = if var.contains("CLAUDE") {
            "claude-cli"
        } else {
            "codex-cli"
        };
        let out = offline(&sb, &["run", "--adapter", adapter, DECIDE]).await;
        out.assert_exit(2).assert_stderr_has(&[value]);
        assert!(!out.stderr.contains("panicked"), "{}", out.dump());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_engine_variables_out_of_range_are_errors_naming_them() {
    let schema = support::decision_schema_path();
    for (var, value) in [
        ("GEODE_LOCAL_THREADS", "abc"),
        ("GEODE_LOCAL_THREADS", "0"),
        ("GEODE_LOCAL_THREADS", "100000"),
        ("GEODE_LOCAL_SLOTS", "-1"),
        ("GEODE_LOCAL_SLOTS", "1000000"),
    ] {
        let mut sb = Sandbox::with_local_model();
        sb.var(var, value);
        let args = [
            "run",
            "--adapter",
            "local",
            "--schema",
            &schema,
            "--max-tokens",
            "16",
            DECIDE,
        ];
        let out = offline(&sb, &args).await;
        out.assert_exit(2)
            .assert_stderr_has(&[var, "integer from 1 to"]);
        assert!(
            !out.stderr.contains("panicked"),
            "{var}={value}: {}",
            out.dump()
        );
        assert!(!out.stderr.contains("Rust cannot catch"), "{}", out.dump());
    }
    for (var, value, needle) in [
        ("GEODE_LOCAL_MODEL", "/tmp", "local model not found at /tmp"),
        (
            "GEODE_LOCAL_MODEL",
            "/dev/zero",
            "local model not found at /dev/zero",
        ),
        (
            "GEODE_ENGINE_BIN",
            "/nonexistent/engine",
            "GEODE_ENGINE_BIN",
        ),
    ] {
        let mut sb = Sandbox::with_local_model();
        sb.env.retain(|(k, _)| k != var);
        sb.var(var, value);
        let args = ["run", "--adapter", "local", "--schema", &schema, DECIDE];
        let out = offline(&sb, &args).await;
        out.assert_exit(2).assert_stderr_has(&[needle]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_with_a_newline_is_an_error_naming_its_variable_never_its_value() {
    for (var, adapter, base) in [
        ("OPENAI_API_KEY", "openai-payg", "GEODE_OPENAI_BASE_URL"),
        (
            "ANTHROPIC_API_KEY",
            "anthropic-payg",
            "GEODE_ANTHROPIC_BASE_URL",
        ),
        (
            "CLAUDE_CODE_OAUTH_TOKEN",
            "anthropic-oauth",
            "GEODE_ANTHROPIC_BASE_URL",
        ),
        (
            "GEODE_OPENAI_COMPAT_API_KEY",
            "openai-compatible",
            "GEODE_OPENAI_COMPAT_BASE_URL",
        ),
    ] {
        for key in [
            format!("{SECRET}\nX-Injected: yes"),
            format!("{SECRET}\r\nX-Injected: yes"),
            format!("{SECRET}\u{1}"),
        ] {
            let server = FakeServer::start(geode_fakes::Kind::Chat, Script::default())
                .await
                .unwrap();
            let mut sb = Sandbox::new();
            sb.var(base, server.base_url());
            sb.var(var, &key);
            let out = sb.run_decision(adapter, &[], DECIDE).await;
            assert_usage_error(var, &out, &server, &[var, "header"]);
        }
    }
    // A trailing newline (a key pasted from `echo`) is trimmed, not refused.
    let (server, mut sb) = openai().await;
    sb.env.retain(|(k, _)| k != "OPENAI_API_KEY");
    sb.var("OPENAI_API_KEY", format!("{SECRET}\n"));
    run(&sb)
        .await
        .assert_answer(&good_answer())
        .assert_hides(SECRET);
    assert_eq!(model_calls(&server).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_file_cannot_send_a_key_to_its_own_host_until_trusted_as_it_is() {
    let mut sb = Sandbox::new();
    sb.var("OPENAI_API_KEY", SECRET);
    let redirect = "[adapters.openai-payg]\nbase_url = \"https://192.0.2.1/v1\"\n";
    sb.config(redirect);
    let schema = support::decision_schema_path();
    let run = [
        "run",
        "--adapter",
        "openai-payg",
        "--schema",
        &schema,
        DECIDE,
    ];
    let out = offline(&sb, &run).await;
    out.assert_exit(2)
        .assert_hides(SECRET)
        .assert_stderr_has(&["[adapters.openai-payg] base_url", "geode config trust"]);
    // The same setting from the user's own config, or from the environment, is the user's.
    std::fs::remove_file(sb.cwd.path().join("geode.toml")).unwrap();
    let user = sb.home().join(".config/geode");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("config.toml"), redirect).unwrap();
    let out = offline(&sb, &run).await;
    out.assert_exit(3).assert_hides(SECRET);
    std::fs::remove_file(user.join("config.toml")).unwrap();
    // Trusted, the file is used (the call fails offline: exit 3, not 2) ...
    sb.config(redirect);
    offline(&sb, &["config", "trust"]).await.assert_exit(0);
    offline(&sb, &run).await.assert_exit(3).assert_hides(SECRET);
    // ... until it changes.
    sb.config(&format!("{redirect}model = \"gpt-5-mini\"\n"));
    offline(&sb, &run)
        .await
        .assert_exit(2)
        .assert_stderr_has(&["geode config trust"]);
    // A file that is not a usable config is never trusted.
    sb.config("[adapters.openai-payg]\nbase_url = 42\n");
    offline(&sb, &["config", "trust"]).await.assert_exit(2);
    let list = user.join("trusted-configs");
    let trusted = std::fs::read_to_string(&list).unwrap();
    assert_eq!(trusted.lines().count(), 1, "{trusted}");
}
