//! `geode::Client` over the two CLI adapters, through the REAL pinned `claude` and `codex` CLIs
//! against `geode-fakes`, inside a loopback-only network namespace (see `cli_support`):
//! `extract::<T>()` gets the type back with its ledger, and `stream::<T>()` shows the
//! `claude` CLI's partial input before the validated final value (`codex exec` has no deltas:
//! a single final).
use geode_testkit as support;
use geode_testkit::cli as cli_support;
use geode_testkit::netns_test;

use futures::StreamExt;
use geode::config::Config;
use geode::ledger::RetryDecision;
use geode::vocab::StructuredOutputMode;
use geode::{Client, PartialGuarantee, StreamEvent};
use geode_fakes::{FakeServer, Kind, Reply, Script};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::Path;
use support::env::MapEnv;

/// A review decision.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
struct Review {
    /// accept or reject.
    decision: Decision,
    /// Why.
    reason: String,
    /// Lines to look at again.
    lines: Vec<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Decision {
    Accept,
    Reject,
}

fn good() -> Value {
    json!({"decision": "reject", "reason": "breaks the build", "lines": [3, 14]})
}

/// The machine for `adapter`: its binary, and the fake as its provider.
fn machine(adapter: &str, server: &FakeServer, home: &Path) -> MapEnv {
    let env = MapEnv::new().set("HOME", home.display().to_string());
    if adapter == "claude-cli" {
        return env
            .set(
                "GEODE_CLAUDE_BIN",
                cli_support::claude_bin().display().to_string(),
            )
            .set("ANTHROPIC_BASE_URL", server.base_url())
            .set("ANTHROPIC_API_KEY", "sk-ant-client-cli-dummy");
    }
    let codex_home = home.join("codex-home");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "model_provider = \"fake\"\n\n[model_providers.fake]\nname = \"Fake\"\n\
             base_url = \"{}/v1\"\nwire_api = \"responses\"\nenv_key = \"OPENAI_API_KEY\"\n\
             request_max_retries = 0\nstream_max_retries = 0\n",
            server.base_url()
        ),
    )
    .unwrap();
    env.set(
        "GEODE_CODEX_BIN",
        cli_support::codex_bin().display().to_string(),
    )
    .set("CODEX_HOME", codex_home.display().to_string())
    .set("OPENAI_API_KEY", "sk-client-cli-dummy")
}

async fn client(adapter: &str, home: &Path) -> (FakeServer, Client) {
    // The claude CLI gets the schema as its StructuredOutput tool; codex as its output schema.
    let (kind, answer) = if adapter == "claude-cli" {
        (Kind::Messages, Reply::tool_call("StructuredOutput", good()))
    } else {
        (Kind::Responses, Reply::Json(good()))
    };
    let server = FakeServer::start(kind, Script::always(answer))
        .await
        .unwrap();
    let client = Client::builder()
        .config(Config::default())
        .environment(machine(adapter, &server, home))
        .adapter(adapter)
        .timeout(std::time::Duration::from_secs(120))
        .build()
        .unwrap();
    (server, client)
}

async fn extracts_the_type(adapter: &str) {
    let home = tempfile::tempdir().unwrap();
    let (_server, c) = client(adapter, home.path()).await;
    let got = c.extract::<Review>("Review this change.").await.unwrap();
    assert_eq!(got.value.decision, Decision::Reject);
    assert_eq!(got.value.lines, [3, 14]);
    assert_eq!(got.ledger.adapter, adapter);
    assert_eq!(got.ledger.retry, RetryDecision::FirstPassed);
    assert_ne!(got.ledger.wire_mode, StructuredOutputMode::None);
    let shown = format!(
        "{:?} {}",
        got.ledger,
        serde_json::to_string(&got.ledger).unwrap()
    );
    assert!(!shown.contains("client-cli-dummy"), "{shown}");
}

netns_test!(extract_gets_the_type_back_over_claude_cli, async {
    extracts_the_type("claude-cli").await
});

netns_test!(extract_gets_the_type_back_over_codex_cli, async {
    extracts_the_type("codex-cli").await
});

/// The partial values of a stream, after checking it ends in the validated `good()` value and
/// that no partial shows a closed field the final value contradicts.
async fn partials(adapter: &str) -> Vec<Value> {
    let home = tempfile::tempdir().unwrap();
    let (_server, c) = client(adapter, home.path()).await;
    let events: Vec<_> = c.stream::<Review>("Review this change.").collect().await;
    let Some(Ok(StreamEvent::Final(done))) = events.last() else {
        panic!("{adapter}: {:?}", events.last());
    };
    assert_eq!(done.value.reason, "breaks the build");
    let last = good();
    let mut values = Vec::new();
    for e in &events[..events.len() - 1] {
        match e {
            Ok(StreamEvent::Partial {
                guarantee,
                value,
                complete,
            }) => {
                assert_eq!(*guarantee, PartialGuarantee::Unchecked, "{adapter}");
                for p in complete {
                    assert_eq!(value.pointer(p), last.pointer(p), "{adapter} {p}");
                }
                values.push(value.clone());
            }
            // The one array field's closed elements, each validated on its own.
            Ok(StreamEvent::Item { index, value }) => {
                assert_eq!(Some(value), last["lines"].get(index), "{adapter}");
            }
            other => panic!("{adapter}: {other:?}"),
        }
    }
    values
}

netns_test!(
    stream_shows_claude_cli_partials_then_the_final_value,
    async {
        let values = partials("claude-cli").await;
        assert!(!values.is_empty(), "the CLI's deltas reached the stream");
        assert_eq!(values.last(), Some(&good()));
    }
);

netns_test!(stream_over_codex_cli_is_a_single_final, async {
    assert!(partials("codex-cli").await.is_empty());
});
