//! The `codex-cli` adapter driving the REAL `codex` CLI (pinned 0.171.0, installed by
//! `scripts/install-clis.sh`) against the `geode-fakes` Responses server through a custom model
//! provider, inside a loopback-only network namespace (see `cli_support`). CODEX_HOME and HOME
//! are temp dirs; the start-up lookups are off (docs/wire.md#running-the-clis-offline). Every
//! case also checks that the private schema directory is gone afterwards.

// Test helpers outside `#[test]` fns may unwrap too (tests are allowed to panic).
use geode_testkit as support;
use geode_testkit::cli as cli_support;
use geode_testkit::netns_test;

use geode::llm::adapters::codex_cli::{CodexCliAdapter, CodexCliConfig};
use geode::llm::call::AdapterError;
use geode::llm::request::{AdapterCallRequest, AdapterResponse, Message};
use geode::vocab::StructuredOutputMode;
use geode_fakes::{Kind, Reply, Script};
use serde_json::{Value, json};
use std::time::Duration;
use support::cli_rig::{CliRig, answer_schema, assert_version, codex_fake_provider};

/// A fake Responses server, temp HOME (with CODEX_HOME and the root for schema files inside),
/// and an adapter.
type Rig = CliRig<CodexCliAdapter>;

/// Where the adapter writes its private schema directories, under HOME.
const SCHEMAS: &str = "schemas";

fn schema() -> geode::schema::ResponseSchema {
    answer_schema("confidence", "number")
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

async fn rig(script: Script, timeout: Duration) -> Rig {
    rig_with_provider(script, timeout, Provider::Overrides).await
}

async fn rig_with_provider(script: Script, timeout: Duration, provider: Provider) -> Rig {
    Rig::start(Kind::Responses, script, |at| {
        let codex_home = at.dir("codex-home");
        let mut options = at
            .options(cli_support::codex_bin(), timeout)
            .env("CODEX_HOME", &codex_home)
            .env("OPENAI_API_KEY", "");
        let base_url = at.server.base_url();
        let config_overrides = match provider {
            Provider::Overrides => {
                options = options.env("GEODE_FAKE_KEY", "fake-key-for-tests");
                codex_fake_provider(&base_url, "GEODE_FAKE_KEY")
            }
            Provider::UserConfig => {
                let config = format!(
                    "model_provider = \"mine\"\n\n[model_providers.mine]\nname = \"Mine\"\n\
                     base_url = \"{base_url}/v1\"\nwire_api = \"responses\"\nenv_key = \"{PROVIDER_KEY_VAR}\"\n\
                     env_http_headers = {{ \"x-tenant\" = \"{PROVIDER_TENANT_VAR}\" }}\n\
                     request_max_retries = 0\nstream_max_retries = 0\n"
                );
                std::fs::write(codex_home.join("config.toml"), config).unwrap();
                Vec::new()
            }
        };
        CodexCliAdapter::new(CodexCliConfig {
            cli: options,
            config_overrides,
            temp_root: Some(at.dir(SCHEMAS)),
            ..CodexCliConfig::default()
        })
    })
    .await
}

fn request() -> AdapterCallRequest {
    let mut req = AdapterCallRequest::new(
        "fake-model",
        vec![Message::user("Reply with the answer JSON")],
    );
    req.response_schema = Some(schema());
    req
}

/// The call every test makes and the checks after it, on the shared rig.
trait Calls {
    async fn call(&self) -> Result<AdapterResponse, AdapterError>;
    fn temp_files_left(&self) -> Vec<String>;
    async fn assert_clean(&self);
}

impl Calls for Rig {
    async fn call(&self) -> Result<AdapterResponse, AdapterError> {
        self.call_with(request()).await
    }

    fn temp_files_left(&self) -> Vec<String> {
        self.files_in(SCHEMAS)
    }

    async fn assert_clean(&self) {
        assert_eq!(
            self.temp_files_left(),
            Vec::<String>::new(),
            "schema files left"
        );
        self.assert_no_process_left().await;
    }
}

#[test]
fn codex_cli_is_the_pinned_version() {
    assert_version(&cli_support::codex_bin(), "0.171.0");
}

netns_test!(codex_valid_answer_is_the_last_agent_message, async {
    let rig = rig(
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
        let rig = rig_with_provider(
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
        let calls = rig.model_requests();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].header("authorization"), Some("Bearer ***"));
        assert_eq!(calls[0].header("x-tenant"), Some("tenant-42"));
        rig.assert_clean().await;
    }
);

netns_test!(
    codex_a_schema_strict_mode_cannot_take_goes_in_the_prompt_not_the_flag,
    async {
        // codex would send --output-schema as strict: true, and OpenAI answers a map (an
        // `additionalProperties` schema) with 400 invalid_json_schema: the schema goes in the
        // transcript instead.
        let rig = rig(
            Script::always(Reply::Json(json!({"answer": "fake"}))),
            Duration::from_secs(60),
        )
        .await;
        let map = geode::schema::ResponseSchema::from_value(json!({
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
            "additionalProperties": {"type": "string", "title": "extra_note"}
        }))
        .unwrap();
        let mut req = request();
        req.response_schema = Some(map);
        let resp = rig.call_with(req).await.unwrap();
        assert_eq!(resp.text, r#"{"answer":"fake"}"#);
        assert_eq!(resp.wire.mode, StructuredOutputMode::Prompt);
        let calls = rig.model_calls();
        assert_eq!(calls.len(), 1);
        assert_ne!(
            calls[0]["text"]["format"]["type"], "json_schema",
            "{}",
            calls[0]
        );
        let input = calls[0]["input"].to_string();
        let heading = geode::llm::wire::schema_prompt::INSTRUCTION_HEADING;
        assert!(input.contains(heading), "{input}");
        assert!(
            input.contains("extra_note"),
            "the caller's schema is in it: {input}"
        );
        assert!(
            input.contains("[USER]\\nReply with the answer JSON"),
            "{input}"
        );
        rig.assert_clean().await;
    }
);

netns_test!(
    codex_an_optional_property_goes_as_the_flag_required_and_nullable,
    async {
        let rig = rig(
            Script::always(Reply::Json(json!({"answer": "fake", "note": null}))),
            Duration::from_secs(60),
        )
        .await;
        let optional = geode::schema::ResponseSchema::from_value(json!({
            "type": "object",
            "properties": {"answer": {"type": "string"}, "note": {"type": "string"}},
            "required": ["answer"]
        }))
        .unwrap();
        let mut req = request();
        req.response_schema = Some(optional);
        let resp = rig.call_with(req).await.unwrap();
        assert_eq!(resp.wire.mode, StructuredOutputMode::CliFlag);
        let root = &resp.wire.absent_nulls.nodes[0];
        assert_eq!(root.drop_if_null, vec!["note".to_owned()]);
        let calls = rig.model_calls();
        let schema = &calls[0]["text"]["format"]["schema"];
        assert_eq!(schema["required"], json!(["answer", "note"]), "{schema}");
        assert_eq!(
            schema["properties"]["note"]["type"],
            json!(["string", "null"])
        );
        assert_eq!(schema["additionalProperties"], json!(false));
        rig.assert_clean().await;
    }
);

netns_test!(codex_schema_breaking_text_is_passed_through, async {
    let rig = rig(
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
        let rig = rig(Script::always(Reply::Hang), Duration::from_secs(60)).await;
        let mid_call = || {
            assert!(
                !rig.temp_files_left().is_empty(),
                "the schema file exists mid-call"
            );
        };
        rig.cancel_mid_call(request(), mid_call).await;
        rig.assert_clean().await;
    }
);

netns_test!(codex_dropped_call_leaves_nothing_behind, async {
    let rig = rig(Script::always(Reply::Hang), Duration::from_secs(60)).await;
    rig.drop_mid_call(request()).await;
    assert!(
        rig.temp_files_left().is_empty(),
        "dropping removed the schema directory"
    );
    rig.assert_clean().await;
});
