//! The CLI adapters end to end through the `geode` binary and the REAL pinned vendor CLIs
//! (`claude` 2.1.197, `codex` 0.171.0, installed by `scripts/install-clis.sh`), against
//! `geode-fakes`, inside a loopback-only network namespace.
//!
//! Chain: this test binary re-runs itself through `scripts/netns-run.sh` (the harness of
//! `crates/geode/tests/cli_support`, reused as is); inside, the test starts the fake in-process
//! and spawns `geode` with a cleared environment, `GEODE_CLAUDE_BIN` / `GEODE_CODEX_BIN`, and
//! only what the real CLI needs: HOME (a temp dir), the base URL and a dummy key for claude;
//! CODEX_HOME with a `config.toml` naming a custom model provider on the fake for codex. What
//! reaches the CLI is then decided by the adapters' allow-lists, as in production.
//! A missing CLI fails the test with the install instruction; it is never skipped.

use crate::support;
use geode_testkit::cli as cli_support;
use geode_testkit::{leaks, netns_test};

use geode_fakes::{FakeServer, Kind, Reply, Script};
use serde_json::json;
use support::{Sandbox, bad_enum_answer, decision_schema, fake_of, good_answer, model_calls};

/// A sandbox for `claude` against the Messages fake.
fn claude_sandbox(server: &FakeServer) -> Sandbox {
    let mut sb = Sandbox::new();
    sb.var(
        "GEODE_CLAUDE_BIN",
        cli_support::claude_bin().display().to_string(),
    )
    .var("ANTHROPIC_BASE_URL", server.base_url())
    .var("ANTHROPIC_API_KEY", "sk-ant-e2e-dummy");
    sb
}

/// The Messages fake answering every call with a `StructuredOutput` call of `input`, and a
/// sandbox for `claude` on it.
async fn claude_answering(input: serde_json::Value) -> (FakeServer, Sandbox) {
    let call = Reply::tool_call("StructuredOutput", input);
    let server = fake_of(Kind::Messages, Script::always(call)).await;
    let sb = claude_sandbox(&server);
    (server, sb)
}

/// The Responses fake playing `script`, and a sandbox for `codex` on it.
async fn codex_playing(script: Script) -> (FakeServer, Sandbox) {
    let server = fake_of(Kind::Responses, script).await;
    let sb = codex_sandbox(&server);
    (server, sb)
}

/// A sandbox for `codex` against the Responses fake: CODEX_HOME holds a `config.toml` whose
/// model provider is the fake (its key read from `OPENAI_API_KEY`, which the adapter passes).
fn codex_sandbox(server: &FakeServer) -> Sandbox {
    let mut sb = codex_sandbox_with(server, "env_key = \"OPENAI_API_KEY\"\n");
    sb.var("OPENAI_API_KEY", "sk-e2e-dummy");
    sb
}

/// A sandbox for `codex` whose `config.toml` provider is the fake, with `auth` (TOML lines of
/// the provider table: `env_key`, `env_http_headers`, an `auth` command, ...).
fn codex_sandbox_with(server: &FakeServer, auth: &str) -> Sandbox {
    let mut sb = Sandbox::new();
    let codex_home = sb.home().join("codex-home");
    std::fs::create_dir(&codex_home).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "model_provider = \"fake\"\n\n[model_providers.fake]\nname = \"Fake\"\n\
             base_url = \"{}/v1\"\nwire_api = \"responses\"\n\
             request_max_retries = 0\nstream_max_retries = 0\n{auth}",
            server.base_url()
        ),
    )
    .unwrap();
    sb.var(
        "GEODE_CODEX_BIN",
        cli_support::codex_bin().display().to_string(),
    )
    .var("CODEX_HOME", codex_home.display().to_string());
    sb
}

/// `geode run --adapter ADAPTER --timeout 120 --schema <Decision> [EXTRA...] <prompt>`.
async fn run_decision(sb: &Sandbox, adapter: &str, extra: &[&str]) -> support::Outcome {
    let mut args = vec!["--timeout", "120"];
    args.extend_from_slice(extra);
    sb.run_decision(adapter, &args, "Decide whether to accept the change.")
        .await
}

/// `geode run --stream` with `adapter`, which must succeed, and the events it printed.
async fn stream_events(sb: &Sandbox, adapter: &str) -> (support::Outcome, Vec<serde_json::Value>) {
    let out = run_decision(sb, adapter, &["--stream"]).await;
    out.assert_exit(0);
    let events = out.json_lines();
    (out, events)
}

/// No CLI process of this sandbox is left (its HOME marks them).
async fn assert_no_cli_left(sb: &Sandbox) {
    let marker = format!("HOME={}", sb.home().display());
    let left = leaks::settle(|| leaks::processes_with_env(&marker)).await;
    assert_eq!(left, Vec::<u32>::new(), "CLI processes left behind");
}

netns_test!(
    geode_run_with_claude_cli_prints_the_validated_answer,
    async {
        let (server, sb) = claude_answering(good_answer()).await;
        let out = run_decision(&sb, "claude-cli", &[]).await;
        out.assert_answer(&good_answer());
        assert!(
            out.stderr.contains("wire_mode=cli-validated"),
            "{}",
            out.dump()
        );

        // What the real CLI put on the wire: our schema as the StructuredOutput tool, our prompt.
        let calls = model_calls(&server);
        assert_eq!(calls.len(), 1, "{calls:#?}");
        let body = &calls[0].body;
        let tools = body["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 1, "{body}");
        assert_eq!(tools[0]["name"], "StructuredOutput");
        assert_eq!(tools[0]["input_schema"], decision_schema());
        assert!(
            body["messages"]
                .to_string()
                .contains("Decide whether to accept the change."),
            "{body}"
        );
        assert_eq!(calls[0].header("x-api-key"), Some("***"));

        // The same through `--json`: the ledger says cli-validated.
        let out = run_decision(&sb, "claude-cli", &["--json"]).await;
        out.assert_exit(0);
        let result = out.json();
        assert_eq!(result["success"], true, "{result}");
        assert_eq!(result["answer"], good_answer());
        assert_eq!(result["ledger"]["adapter"], "claude-cli");
        assert_eq!(result["ledger"]["wire_mode"], "cli-validated");
        assert_eq!(result["ledger"]["retry"]["decision"], "first_passed");
        assert_no_cli_left(&sb).await;
    }
);

netns_test!(
    geode_run_with_claude_cli_judges_an_invalid_structured_output_then_retries_then_exits_1,
    async {
        // Each claude run: the model calls StructuredOutput with an input the schema rejects,
        // then answers the CLI's rejection and its one nudge in text, so the CLI ends with
        // success and no structured_output. That input is the model's answer: validated,
        // retried once with feedback, then exit 1 with its errors (exit 3 is for providers).
        let run = [
            Reply::tool_call("StructuredOutput", bad_enum_answer()),
            Reply::text("I answered above."),
            Reply::text("I answered above."),
        ];
        let script = Script::new(run.iter().chain(run.iter()).cloned());
        let server = fake_of(Kind::Messages, script).await;
        let sb = claude_sandbox(&server);
        let out = run_decision(&sb, "claude-cli", &["--json"]).await;
        out.assert_exit(1);
        let ledger = &out.json()["ledger"];
        assert_eq!(ledger["retry"]["decision"], "ran", "{ledger}");
        assert_eq!(ledger["attempts"].as_array().unwrap().len(), 2, "{ledger}");
        assert_eq!(
            ledger["full_validation"]["errors"][0]["instance_path"], "/decision",
            "{ledger}"
        );
        assert!(
            !out.stdout
                .contains("never called the StructuredOutput tool"),
            "{}",
            out.dump()
        );
        assert_eq!(
            model_calls(&server).len(),
            6,
            "two claude runs of three calls"
        );
        assert_no_cli_left(&sb).await;
    }
);

netns_test!(
    geode_run_with_codex_cli_prints_the_answer_in_cli_flag_mode,
    async {
        let (server, sb) = codex_playing(Script::always(Reply::Json(good_answer()))).await;
        let out = run_decision(&sb, "codex-cli", &[]).await;
        out.assert_answer(&good_answer());
        assert!(out.stderr.contains("wire_mode=cli-flag"), "{}", out.dump());

        let calls = model_calls(&server);
        assert_eq!(calls.len(), 1, "{calls:#?}");
        let format = &calls[0].body["text"]["format"];
        assert_eq!(format["type"], "json_schema");
        assert_eq!(format["schema"], decision_schema());
        assert_eq!(calls[0].header("authorization"), Some("Bearer ***"));
        assert_no_cli_left(&sb).await;
    }
);

netns_test!(
    geode_worker_with_codex_cli_retries_a_schema_breaking_answer,
    async {
        let (server, sb) = codex_playing(Script::new([
            Reply::Json(bad_enum_answer()),
            Reply::Json(good_answer()),
        ]))
        .await;
        let line = json!({
            "task_id": "t-codex",
            "description": "Decide whether to accept the change. Answer with the Decision object.",
            "adapter": "codex-cli",
            "timeout_s": 150,
            "response_schema": decision_schema(),
        })
        .to_string();
        let out = sb.worker(&line).await;
        out.assert_exit(0);
        let result = out.json();
        assert_eq!(result["task_id"], "t-codex");
        assert_eq!(result["success"], true, "{result}");
        assert_eq!(result["answer"], good_answer(), "{result}");
        let ledger = &result["ledger"];
        assert_eq!(ledger["adapter"], "codex-cli", "{ledger}");
        assert_eq!(ledger["wire_mode"], "cli-flag", "{ledger}");
        assert_eq!(ledger["retry"]["decision"], "ran", "{ledger}");
        assert_eq!(ledger["attempts"].as_array().unwrap().len(), 2, "{ledger}");

        // Two codex runs, one model call each, both with the schema as text.format.
        let calls = model_calls(&server);
        assert_eq!(calls.len(), 2, "{calls:#?}");
        for call in &calls {
            assert_eq!(call.body["text"]["format"]["schema"], decision_schema());
        }
        // The retry turn tells the model what was wrong with the first answer.
        assert!(
            calls[1].body["input"].to_string().contains("Accept"),
            "the retry carries the first answer: {}",
            calls[1].body
        );
        assert_no_cli_left(&sb).await;
    }
);

netns_test!(
    geode_run_with_codex_cli_passes_the_variables_its_config_names,
    async {
        // A regression: a provider configured the way codex users do it, its key and a header
        // read from variables exported to geode. Before, codex failed with
        // "Missing environment variable: `MY_KEY`" (exit 3).
        let server = fake_of(Kind::Responses, Script::always(Reply::Json(good_answer()))).await;
        let mut sb = codex_sandbox_with(
            &server,
            "env_key = \"MY_KEY\"\nenv_http_headers = { \"x-tenant\" = \"MY_TENANT\" }\n",
        );
        sb.var("MY_KEY", "sk-my-key-e2e-91b2")
            .var("MY_TENANT", "tenant-e2e");
        let out = run_decision(&sb, "codex-cli", &[]).await;
        out.assert_answer(&good_answer());
        assert!(
            !out.stderr.contains("Missing environment variable"),
            "{}",
            out.dump()
        );
        let calls = model_calls(&server);
        assert_eq!(calls.len(), 1, "{calls:#?}");
        assert_eq!(calls[0].header("authorization"), Some("Bearer ***"));
        assert_eq!(calls[0].header("x-tenant"), Some("tenant-e2e"));
        assert_no_cli_left(&sb).await;
    }
);

netns_test!(
    geode_run_with_codex_cli_passes_the_variables_geode_toml_adds,
    async {
        // A provider whose token comes from a command reading a variable codex's config does not
        // name: only `pass_env` in geode.toml lets it through. The command fails without it, and
        // codex then sends no authorization header at all.
        let server = fake_of(Kind::Responses, Script::always(Reply::Json(good_answer()))).await;
        let auth = "[model_providers.fake.auth]\ncommand = \"sh\"\n\
                    args = [\"-c\", \"test -n \\\"$MY_TOKEN\\\" && printf %s \\\"$MY_TOKEN\\\"\"]\n";
        let mut sb = codex_sandbox_with(&server, auth);
        sb.var("MY_TOKEN", "tok-e2e-pass-env-5e0f");

        let out = run_decision(&sb, "codex-cli", &[]).await;
        out.assert_exit(0);
        let calls = model_calls(&server);
        assert_eq!(calls.len(), 1, "{calls:#?}");
        assert_eq!(
            calls[0].header("authorization"),
            None,
            "no pass_env: no token"
        );

        sb.config("[adapters.codex-cli]\npass_env = [\"MY_TOKEN\"]\n");
        let out = run_decision(&sb, "codex-cli", &[]).await;
        out.assert_answer(&good_answer());
        let calls = model_calls(&server);
        assert_eq!(calls.len(), 2, "{calls:#?}");
        assert_eq!(calls[1].header("authorization"), Some("Bearer ***"));
        assert!(
            !out.stderr.contains("tok-e2e-pass-env-5e0f"),
            "{}",
            out.dump()
        );
        assert_no_cli_left(&sb).await;
    }
);

netns_test!(
    geode_run_stream_with_claude_cli_streams_the_structured_output_as_it_is_written,
    async {
        let (_server, sb) = claude_answering(good_answer()).await;
        let (out, events) = stream_events(&sb, "claude-cli").await;
        let (last, partials) = events.split_last().unwrap();
        assert_eq!(last["event"], "final", "{}", out.dump());
        assert_eq!(last["value"], good_answer());
        assert_eq!(last["ledger"]["wire_mode"], "cli-validated");
        // The CLI's input_json_delta events arrived before its result: the answer streamed.
        assert!(!partials.is_empty(), "no partial event: {}", out.dump());
        for p in partials {
            assert_eq!(p["event"], "partial", "{p}");
            assert_eq!(p["guarantee"], "unchecked", "{p}");
            for pointer in p["complete"].as_array().unwrap() {
                let pointer = pointer.as_str().unwrap();
                assert_eq!(
                    p["value"].pointer(pointer),
                    last["value"].pointer(pointer),
                    "{p}"
                );
            }
        }
        assert_no_cli_left(&sb).await;
    }
);

netns_test!(
    geode_run_stream_with_codex_cli_gives_the_final_event_only,
    async {
        let (_server, sb) = codex_playing(Script::always(Reply::Json(good_answer()))).await;
        let (out, events) = stream_events(&sb, "codex-cli").await;
        assert_eq!(events.len(), 1, "{}", out.dump());
        assert_eq!(events[0]["event"], "final");
        assert_eq!(events[0]["value"], good_answer());
        assert_no_cli_left(&sb).await;
    }
);

netns_test!(
    geode_run_with_claude_cli_that_gives_up_on_the_schema_is_an_invalid_answer,
    async {
        // A regression: the model keeps answering a StructuredOutput input that breaks the
        // schema until the CLI gives up (error_max_structured_output_retries). The provider
        // worked; the answer failed the contract: exit 1, not 3, and the ledger holds the
        // validation errors of the CLI's last answer.
        let (server, sb) = claude_answering(bad_enum_answer()).await;
        let out = run_decision(&sb, "claude-cli", &["--json"]).await;
        out.assert_exit(1);
        let result = out.json();
        assert_eq!(result["success"], false, "{result}");
        let last: serde_json::Value =
            serde_json::from_str(result["output"].as_str().unwrap()).unwrap();
        assert_eq!(last, bad_enum_answer(), "the CLI's last answer: {result}");
        let ledger = &result["ledger"];
        assert_eq!(ledger["adapter"], "claude-cli", "{ledger}");
        assert_eq!(ledger["wire_mode"], "cli-validated", "{ledger}");
        assert_eq!(ledger["full_validation"]["valid"], false, "{ledger}");
        let errors = ledger["full_validation"]["errors"].to_string();
        assert!(errors.contains("decision"), "{errors}");
        assert!(errors.contains("Accept"), "{errors}");
        for attempt in ledger["attempts"].as_array().unwrap() {
            assert!(
                attempt["error_kind"].is_null(),
                "not a provider failure: {ledger}"
            );
        }
        // Each claude run tried 5 times before giving up.
        assert!(model_calls(&server).len() >= 5);
        assert_no_cli_left(&sb).await;
    }
);

/// An array schema through `geode run --json` on a CLI adapter: returns the result and
/// checks exit 0, the caller's array as the answer and the wrap named in the ledger.
async fn run_array(sb: &Sandbox, adapter: &str) -> serde_json::Value {
    let path = sb.home().join("ints.json");
    std::fs::write(&path, INTS.to_string()).unwrap();
    let path = path.display().to_string();
    let args = ["run", "--adapter", adapter, "--timeout", "120", "--json"];
    let out = sb
        .geode(
            &[&args[..], &["--schema", &path, "Three integers."]].concat(),
            "",
        )
        .await;
    out.assert_exit(0);
    let result = out.json();
    assert_eq!(result["success"], true, "{result}");
    assert_eq!(result["answer"], json!([1, 2, 3]), "{result}");
    let transforms = result["ledger"]["transforms"].to_string();
    assert!(transforms.contains("wrapped the root"), "{result}");
    result
}

static INTS: std::sync::LazyLock<serde_json::Value> =
    std::sync::LazyLock::new(|| json!({"type": "array", "items": {"type": "integer"}}));

netns_test!(
    geode_run_with_an_array_schema_on_claude_cli_wraps_the_tool_input,
    async {
        // A tool's input_schema must be an object: the real CLI gets the wrapped schema, the model
        // calls StructuredOutput with {"value": [...]}, and geode unwraps it.
        let (server, sb) = claude_answering(json!({"value": [1, 2, 3]})).await;
        let result = run_array(&sb, "claude-cli").await;
        assert_eq!(result["ledger"]["wire_mode"], "cli-validated", "{result}");
        let calls = model_calls(&server);
        let tool = &calls[0].body["tools"][0];
        assert_eq!(tool["name"], "StructuredOutput");
        assert_eq!(tool["input_schema"]["type"], "object", "{tool}");
        assert_eq!(tool["input_schema"]["properties"]["value"], *INTS, "{tool}");
        assert_no_cli_left(&sb).await;
    }
);

netns_test!(
    geode_run_with_an_array_schema_on_codex_cli_sends_the_wrapped_schema,
    async {
        // codex forwards --output-schema as OpenAI strict text.format: the root must be an object.
        let (server, sb) =
            codex_playing(Script::always(Reply::Json(json!({"value": [1, 2, 3]})))).await;
        let result = run_array(&sb, "codex-cli").await;
        assert_eq!(result["ledger"]["wire_mode"], "cli-flag", "{result}");
        let calls = model_calls(&server);
        let schema = &calls[0].body["text"]["format"]["schema"];
        assert_eq!(schema["properties"]["value"], *INTS, "{schema}");
        assert_eq!(schema["required"], json!(["value"]), "{schema}");
        assert_no_cli_left(&sb).await;
    }
);

/// Writes the invoice image and PDF of `e2e_inputs` into the sandbox's working directory.
fn attachments(sb: &Sandbox) {
    use crate::e2e_inputs::{PDF, PNG};
    std::fs::write(sb.cwd.path().join("invoice.png"), PNG).unwrap();
    std::fs::write(sb.cwd.path().join("invoice.pdf"), PDF).unwrap();
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

netns_test!(
    the_claude_cli_passes_an_image_and_a_pdf_on_as_messages_blocks,
    async {
        use crate::e2e_inputs::{PDF, PNG};
        let (server, sb) = claude_answering(good_answer()).await;
        attachments(&sb);
        let parts = ["--image", "invoice.png", "--file", "invoice.pdf", "--json"];
        let out = run_decision(&sb, "claude-cli", &parts).await;
        out.assert_exit(0);
        let ledger = &out.json()["ledger"];
        assert_eq!(ledger["inputs"].as_array().unwrap().len(), 2, "{ledger}");
        // What the real CLI sent: our blocks, as the Messages API takes them.
        let body = &model_calls(&server)[0].body;
        let blocks: Vec<&serde_json::Value> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["content"].as_array().into_iter().flatten())
            .collect();
        let image = blocks
            .iter()
            .find(|b| b["type"] == "image")
            .expect("an image block");
        assert_eq!(image["source"]["media_type"], "image/png", "{body}");
        assert_eq!(image["source"]["data"], base64_of(PNG), "{body}");
        let doc = blocks
            .iter()
            .find(|b| b["type"] == "document")
            .expect("a document block");
        assert_eq!(doc["source"]["data"], base64_of(PDF), "{body}");
        assert!(
            body.to_string()
                .contains("Decide whether to accept the change."),
            "{body}"
        );
        assert_no_cli_left(&sb).await;
    }
);

netns_test!(
    the_codex_cli_sends_an_image_through_its_image_flag_and_leaves_no_file,
    async {
        use crate::e2e_inputs::PNG;
        let (server, mut sb) = codex_playing(Script::always(Reply::Json(good_answer()))).await;
        attachments(&sb);
        let temp = sb.home().join("tmp");
        std::fs::create_dir_all(&temp).unwrap();
        sb.var("TMPDIR", temp.display().to_string());
        let out = run_decision(&sb, "codex-cli", &["--image", "invoice.png"]).await;
        out.assert_answer(&good_answer());
        let body = &model_calls(&server)[0].body;
        let sent = body.to_string();
        assert!(sent.contains("input_image"), "{body}");
        assert!(sent.contains(&base64_of(PNG)), "{body}");
        // A PDF has no place on codex's command line: refused before it runs.
        let out = run_decision(&sb, "codex-cli", &["--file", "invoice.pdf"]).await;
        out.assert_exit(2);
        assert!(
            out.dump().contains("it takes no documents"),
            "{}",
            out.dump()
        );
        assert_eq!(model_calls(&server).len(), 1);
        // The image's private directory went with the call.
        let ours: Vec<_> = std::fs::read_dir(&temp)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("geode-codex-"))
            .collect();
        assert!(ours.is_empty(), "{ours:?}");
        assert_no_cli_left(&sb).await;
    }
);
