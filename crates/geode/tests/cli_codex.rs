//! The `codex-cli` adapter driving the REAL `codex` CLI (pinned 0.171.0, installed by
//! `scripts/install-clis.sh`) against the `geode-fakes` Responses server through a custom model
//! provider, inside a loopback-only network namespace (see `cli_support`). CODEX_HOME and HOME
//! are temp dirs; the start-up lookups are off (`wire.md` §7.5). Every case also checks that the
//! private schema directory is gone afterwards.

// Test helpers outside `#[test]` fns may unwrap too (tests are allowed to panic).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;
mod support;

use geode::ledger::StructuredOutputMode;
use geode::llm::adapter::{Adapter, AdapterError, CallCx};
use geode::llm::adapters::cli_common::CliOptions;
use geode::llm::adapters::codex_cli::{CodexCliAdapter, CodexCliConfig};
use geode::llm::request::{AdapterCallRequest, AdapterResponse, Message};
use geode::schema::ResponseSchema;
use geode_fakes::{FakeServer, Kind, Reply, Script};
use serde_json::{Value, json};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn schema() -> ResponseSchema {
    ResponseSchema::from_value(json!({
        "type": "object",
        "properties": {"answer": {"type": "string"}, "confidence": {"type": "number"}},
        "required": ["answer", "confidence"],
        "additionalProperties": false
    }))
    .unwrap()
}

/// A fake Responses server, temp HOME/CODEX_HOME, a temp root for schema files, and an adapter.
struct Rig {
    server: FakeServer,
    adapter: CodexCliAdapter,
    home: tempfile::TempDir,
    temp_root: tempfile::TempDir,
}

/// How codex learns about the fake model provider.
enum Provider {
    /// `-c model_providers.fake.*` overrides; the key is set for the CLI explicitly.
    Overrides,
    /// `$CODEX_HOME/config.toml` as a user writes it, naming variables of the parent
    /// environment ([`PROVIDER_KEY_VAR`], [`PROVIDER_TENANT_VAR`]); no overrides, no explicit key.
    UserConfig,
}

/// The variable the user's codex config names as its provider key (`env_key`).
const PROVIDER_KEY_VAR: &str = "GEODE_TEST_PROVIDER_KEY";
/// The variable the user's codex config names for a header (`env_http_headers`).
const PROVIDER_TENANT_VAR: &str = "GEODE_TEST_PROVIDER_TENANT";

impl Rig {
    async fn new(script: Script, timeout: Duration) -> Rig {
        Rig::with_provider(script, timeout, Provider::Overrides).await
    }

    async fn with_provider(script: Script, timeout: Duration, provider: Provider) -> Rig {
        let server = FakeServer::start(Kind::Responses, script).await.unwrap();
        let home = tempfile::tempdir().unwrap();
        let codex_home = home.path().join("codex-home");
        let work = home.path().join("work");
        std::fs::create_dir(&codex_home).unwrap();
        std::fs::create_dir(&work).unwrap();
        let temp_root = tempfile::tempdir().unwrap();
        let mut cli = CliOptions::with_timeout(timeout)
            .env("HOME", home.path())
            .env("CODEX_HOME", &codex_home)
            .env("OPENAI_API_KEY", "");
        cli.bin = Some(cli_support::codex_bin());
        cli.cwd = Some(work);
        let entry = |k: &str, v: &str| (format!("model_providers.fake.{k}"), v.to_owned());
        let config_overrides = match provider {
            Provider::Overrides => {
                cli = cli.env("GEODE_FAKE_KEY", "fake-key-for-tests");
                vec![
                    ("model_provider".into(), "\"fake\"".into()),
                    entry("name", "\"Fake\""),
                    entry("base_url", &format!("\"{}/v1\"", server.base_url())),
                    entry("wire_api", "\"responses\""),
                    entry("env_key", "\"GEODE_FAKE_KEY\""),
                    entry("request_max_retries", "0"),
                    entry("stream_max_retries", "0"),
                ]
            }
            Provider::UserConfig => {
                let config = format!(
                    "model_provider = \"mine\"\n\n[model_providers.mine]\nname = \"Mine\"\n\
                     base_url = \"{}/v1\"\nwire_api = \"responses\"\nenv_key = \"{PROVIDER_KEY_VAR}\"\n\
                     env_http_headers = {{ \"x-tenant\" = \"{PROVIDER_TENANT_VAR}\" }}\n\
                     request_max_retries = 0\nstream_max_retries = 0\n",
                    server.base_url()
                );
                std::fs::write(codex_home.join("config.toml"), config).unwrap();
                Vec::new()
            }
        };
        let adapter = CodexCliAdapter::new(CodexCliConfig {
            cli,
            config_overrides,
            temp_root: Some(temp_root.path().to_owned()),
            ..CodexCliConfig::default()
        });
        Rig {
            server,
            adapter,
            home,
            temp_root,
        }
    }

    fn request() -> AdapterCallRequest {
        let mut req = AdapterCallRequest::new(
            "fake-model",
            vec![Message::user("Reply with the answer JSON")],
        );
        req.response_schema = Some(schema());
        req
    }

    async fn call(&self) -> Result<AdapterResponse, AdapterError> {
        self.adapter.call(Self::request(), &CallCx::new()).await
    }

    fn model_calls(&self) -> Vec<Value> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path.ends_with("/responses"))
            .map(|r| r.body)
            .collect()
    }

    fn temp_files_left(&self) -> Vec<String> {
        std::fs::read_dir(self.temp_root.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    }

    async fn assert_clean(&self) {
        assert_eq!(
            self.temp_files_left(),
            Vec::<String>::new(),
            "schema files left"
        );
        let marker = format!("HOME={}", self.home.path().display());
        let left = support::leaks::settle(|| support::leaks::processes_with_env(&marker)).await;
        assert_eq!(left, Vec::<u32>::new(), "CLI processes left behind");
    }
}

#[test]
fn codex_cli_is_the_pinned_version() {
    let out = std::process::Command::new(cli_support::codex_bin())
        .arg("--version")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("0.171.0"), "unexpected codex version: {text}");
}

netns_test!(codex_valid_answer_is_the_last_agent_message, async {
    let rig = Rig::new(
        Script::always(Reply::Json(json!({"answer": "fake", "confidence": 0.5}))),
        Duration::from_secs(60),
    )
    .await;
    let resp = rig.call().await.unwrap();
    assert_eq!(resp.text, r#"{"answer":"fake","confidence":0.5}"#);
    assert_eq!(resp.wire.mode, StructuredOutputMode::CliFlag);
    assert_eq!(resp.structured, None);
    assert_eq!((resp.usage.input_tokens, resp.usage.output_tokens), (11, 7));

    // The schema file reached the wire verbatim as text.format, with our prompt on stdin.
    let calls = rig.model_calls();
    assert_eq!(calls.len(), 1);
    let format = &calls[0]["text"]["format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["name"], "codex_output_schema");
    assert_eq!(&format["schema"], schema().as_value());
    assert_eq!(calls[0]["model"], "fake-model");
    assert!(
        calls[0]["input"]
            .to_string()
            .contains("[USER]\\nReply with the answer JSON")
    );
    rig.assert_clean().await;
});

netns_test!(
    codex_provider_variables_named_by_its_own_config_reach_it,
    env = [
        (PROVIDER_KEY_VAR, "sk-provider-test-4d1c"),
        (PROVIDER_TENANT_VAR, "tenant-42")
    ],
    async {
        // A codex configured as its users configure it: `env_key` and `env_http_headers` in
        // $CODEX_HOME/config.toml, the variables exported in geode's environment. Without them
        // codex fails with "Missing environment variable: `GEODE_TEST_PROVIDER_KEY`".
        assert!(
            std::env::var_os(PROVIDER_KEY_VAR).is_some(),
            "exported by the harness"
        );
        let rig = Rig::with_provider(
            Script::always(Reply::Json(json!({"answer": "mine", "confidence": 1.0}))),
            Duration::from_secs(60),
            Provider::UserConfig,
        )
        .await;
        let resp = rig.call().await.unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&resp.text).unwrap(),
            json!({"answer": "mine", "confidence": 1.0})
        );
        let calls: Vec<_> = rig
            .server
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.path.ends_with("/responses"))
            .collect();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].header("authorization"), Some("Bearer ***"));
        assert_eq!(calls[0].header("x-tenant"), Some("tenant-42"));
        rig.assert_clean().await;
    }
);

netns_test!(codex_schema_breaking_text_is_passed_through, async {
    let rig = Rig::new(
        Script::always(Reply::text("Sure! The answer is fake.")),
        Duration::from_secs(60),
    )
    .await;
    let resp = rig.call().await.unwrap();
    // codex does not validate: the adapter hands the text on; the worker's validation catches it.
    assert_eq!(resp.text, "Sure! The answer is fake.");
    assert_eq!(resp.wire.mode, StructuredOutputMode::CliFlag);
    assert_eq!(resp.structured, None);
    rig.assert_clean().await;
});

netns_test!(
    codex_cancellation_kills_the_cli_and_removes_the_schema,
    async {
        let rig = Rig::new(Script::always(Reply::Hang), Duration::from_secs(60)).await;
        let cx = CallCx {
            cancel: CancellationToken::new(),
            ..CallCx::new()
        };
        let token = cx.cancel.clone();
        let server_seen = async {
            // Cancel once the request is in flight (bounded by the test body's timeout).
            while rig.model_calls().is_empty() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            assert!(
                !rig.temp_files_left().is_empty(),
                "the schema file exists mid-call"
            );
            token.cancel();
        };
        let (result, ()) = tokio::join!(rig.adapter.call(Rig::request(), &cx), server_seen);
        assert!(
            matches!(result, Err(AdapterError::Cancelled { .. })),
            "{result:?}"
        );
        rig.assert_clean().await;
    }
);

netns_test!(codex_dropped_call_leaves_nothing_behind, async {
    let rig = Rig::new(Script::always(Reply::Hang), Duration::from_secs(60)).await;
    let cx = CallCx::new();
    let call = rig.adapter.call(Rig::request(), &cx);
    let request_seen = async {
        while rig.model_calls().is_empty() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    // Once the request hangs in the fake, the call future is dropped mid-flight.
    tokio::select! {
        r = call => panic!("the call should still be hanging: {r:?}"),
        () = request_seen => {}
    }
    assert!(
        rig.temp_files_left().is_empty(),
        "dropping removed the schema directory"
    );
    assert_eq!(rig.model_calls().len(), 1);
    rig.assert_clean().await;
});
