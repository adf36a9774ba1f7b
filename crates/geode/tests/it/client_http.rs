//! `geode::Client` over the six HTTP adapters against the `geode-fakes` servers on 127.0.0.1:
//! the client is built from a described machine (base URL and key variables, as `geode` reads
//! them), `extract::<T>()` gets the type back with its ledger, the retry goes over the wire,
//! and `stream::<T>()` ends in the validated value.
use geode_testkit as support;

use futures::StreamExt;
use geode::config::Config;
use geode::ledger::RetryDecision;
use geode::vocab::{Require, StructuredOutputMode};
use geode::{Client, Error, PartialGuarantee, StreamEvent};
use geode_fakes::{FakeServer, Kind, Reply, Script};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::Path;
use support::env::MapEnv;
use support::http;

/// A review decision.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
struct Review {
    /// accept or reject.
    decision: Decision,
    /// Why.
    reason: String,
    /// Lines to look at again.
    lines: Vec<u32>,
    /// A follow-up, if any.
    follow_up: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Decision {
    Accept,
    Reject,
}

const GOOD: &str =
    r#"{"decision": "reject", "reason": "breaks the build", "lines": [3, 14], "follow_up": null}"#;

/// The machine: `adapter`'s base URL and credential pointing at `origin`.
fn machine(adapter: &str, origin: &str, home: &Path) -> MapEnv {
    if adapter == "codex-oauth" {
        http::write_codex_auth(home, geode_fakes::chatgpt::DEFAULT_ACCOUNT_ID, 3600);
    }
    http::machine(adapter, origin, "sk-client-test-5Rk8Jm3Zq1", home)
}

fn client(adapter: &str, server: &FakeServer, home: &Path) -> Client {
    Client::builder()
        .config(Config::default())
        .environment(machine(adapter, &server.base_url(), home))
        .adapter(adapter)
        .timeout(std::time::Duration::from_secs(15))
        .build()
        .unwrap()
}

/// A fake of `adapter`'s kind playing `script`, a client of `adapter` on it, and the machine's
/// home (kept alive by the caller).
async fn serve(adapter: &str, script: Script) -> (FakeServer, Client, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let server = FakeServer::start(http::kind_of(adapter), script)
        .await
        .unwrap();
    let c = client(adapter, &server, home.path());
    (server, c, home)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extract_gets_the_type_back_over_every_http_adapter() {
    for adapter in http::http_adapters() {
        let (server, c, _home) = serve(adapter, Script::always(Reply::text(GOOD))).await;
        let got = support::bounded(c.extract::<Review>("review this"))
            .await
            .unwrap_or_else(|e| panic!("{adapter}: {e}"));
        assert_eq!(got.value.decision, Decision::Reject, "{adapter}");
        assert_eq!(got.value.lines, [3, 14], "{adapter}");
        assert_eq!(got.ledger.adapter, adapter);
        assert_eq!(got.ledger.retry, RetryDecision::FirstPassed, "{adapter}");
        assert_ne!(
            got.ledger.wire_mode,
            StructuredOutputMode::None,
            "{adapter}"
        );
        assert!(
            got.ledger
                .transforms
                .iter()
                .any(|t| t.pointer == "/properties/follow_up"),
            "{adapter}: {:?}",
            got.ledger.transforms
        );
        // The schema that went on the wire is the type's, made strict-friendly.
        let calls = http::model_calls(adapter, server.requests());
        assert_eq!(calls.len(), 1, "{adapter}");
        let body = calls[0].body.to_string();
        assert!(
            body.contains("follow_up") && body.contains("additionalProperties"),
            "{adapter}"
        );
        server.shutdown().await;
    }
}

/// A book whose page count may be left out (`#[serde(default)]`: optional, never `null`).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
struct Book {
    /// The title.
    title: String,
    /// Pages, when known.
    #[serde(default)]
    pages: u32,
}

/// Extracts a `T` on `adapter` whose strict model answers `answer` (a `null` for a property
/// made required and nullable on the wire): asserts it is read as `want` at the first pass on a
/// strict wire, the ledger naming the rewrite at `pointer`; returns the schema on the wire.
async fn strict_with_a_null<T>(adapter: &str, answer: &str, want: &T, pointer: &str) -> Value
where
    T: JsonSchema + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug + 'static,
{
    let (server, c, _home) = serve(adapter, Script::always(Reply::text(answer))).await;
    let got = support::bounded(c.extract::<T>("go"))
        .await
        .unwrap_or_else(|e| panic!("{adapter}: {e}"));
    assert_eq!(&got.value, want, "{adapter}");
    let ledger = &got.ledger;
    assert_eq!(
        ledger.wire_mode,
        StructuredOutputMode::Strict,
        "{adapter}: {ledger:?}"
    );
    assert_eq!(ledger.retry, RetryDecision::FirstPassed, "{adapter}");
    assert!(
        ledger
            .transforms
            .iter()
            .any(|t| t.pointer == pointer && t.action.contains("required and nullable")),
        "{adapter}: {:?}",
        ledger.transforms
    );
    let calls = http::model_calls(adapter, server.requests());
    let format = &calls[0].body["text"]["format"];
    assert_eq!(format["strict"], true, "{adapter}");
    server.shutdown().await;
    format["schema"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_optional_property_goes_strict_on_openai_and_its_null_is_read_as_left_out() {
    for adapter in ["openai-payg", "codex-oauth"] {
        // What a strict model answers for a property made required and nullable on the wire.
        let answer = r#"{"title": "T", "pages": null}"#;
        let book = Book {
            title: "T".into(),
            pages: 0,
        };
        let schema = strict_with_a_null(adapter, answer, &book, "/properties/pages").await;
        assert_eq!(schema["required"], json!(["title", "pages"]));
    }
}

/// A shelf holding one [`Book`]: schemars puts `Book` in `$defs` and references it.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
struct Shelf {
    /// The label on the shelf.
    label: String,
    /// The book on it.
    book: Book,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_optional_property_in_a_referenced_def_goes_strict_and_its_null_is_read_as_left_out() {
    for adapter in ["openai-payg", "codex-oauth"] {
        let answer = r#"{"label": "L", "book": {"title": "T", "pages": null}}"#;
        let book = Book {
            title: "T".into(),
            pages: 0,
        };
        let shelf = Shelf {
            label: "L".into(),
            book,
        };
        let pointer = "/$defs/Book/properties/pages";
        let schema = strict_with_a_null(adapter, answer, &shelf, pointer).await;
        assert_eq!(
            schema["properties"]["book"]["$ref"], "#/$defs/Book",
            "{schema}"
        );
        assert_eq!(
            schema["$defs"]["Book"]["required"],
            json!(["title", "pages"])
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_retry_runs_over_the_wire_and_a_second_failure_is_invalid_with_its_ledger() {
    for adapter in ["openai-payg", "anthropic-payg", "glm-payg"] {
        let home = tempfile::tempdir().unwrap();
        let bad = r#"{"decision": "maybe", "reason": "x", "lines": [], "follow_up": null}"#;
        let script = Script::new([Reply::text(bad), Reply::text(GOOD)]);
        let server = FakeServer::start(http::kind_of(adapter), script)
            .await
            .unwrap();
        let got = support::bounded(client(adapter, &server, home.path()).extract::<Review>("go"))
            .await
            .unwrap();
        assert!(
            matches!(got.ledger.retry, RetryDecision::Ran { .. }),
            "{adapter}"
        );
        assert_eq!(got.ledger.attempts.len(), 2);
        server.shutdown().await;

        let server = FakeServer::start(http::kind_of(adapter), Script::always(Reply::text(bad)))
            .await
            .unwrap();
        let err = support::bounded(client(adapter, &server, home.path()).extract::<Review>("go"))
            .await
            .unwrap_err();
        let Error::Invalid { errors, ledger } = &err else {
            panic!("{adapter}: {err:?}");
        };
        assert!(
            errors.iter().any(|e| e.instance_path == "/decision"),
            "{errors:?}"
        );
        assert_eq!(ledger.attempts.len(), 2);
        assert_eq!(ledger.adapter, adapter);
        server.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_enforced_refuses_a_wire_that_cannot_enforce_before_any_request() {
    let home = tempfile::tempdir().unwrap();
    let server = FakeServer::start(Kind::Chat, Script::always(Reply::text(GOOD)))
        .await
        .unwrap();
    let c = Client::builder()
        .config(Config::default())
        .environment(machine("glm-payg", &server.base_url(), home.path()))
        .adapter("glm-payg")
        .require(Require::Enforced)
        .build()
        .unwrap();
    let err = support::bounded(c.extract::<Review>("go"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotEnforceable { .. }), "{err:?}");
    assert!(server.requests().is_empty());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_ends_in_the_validated_value_over_every_http_adapter() {
    for adapter in http::http_adapters() {
        let (server, c, _home) = serve(adapter, Script::always(Reply::text(GOOD))).await;
        let events: Vec<_> = support::bounded(c.stream::<Review>("go").collect::<Vec<_>>()).await;
        let Some(Ok(StreamEvent::Final(done))) = events.last() else {
            panic!("{adapter}: {:?}", events.last());
        };
        assert_eq!(done.value.reason, "breaks the build");
        let strict = done.ledger.wire_mode == StructuredOutputMode::Strict;
        let last = serde_json::from_str::<serde_json::Value>(GOOD).unwrap();
        let mut partials = Vec::new();
        for e in &events {
            if let Ok(StreamEvent::Partial {
                guarantee,
                value,
                complete,
            }) = e
            {
                let expected = if strict {
                    PartialGuarantee::Enforced
                } else {
                    PartialGuarantee::Unchecked
                };
                assert_eq!(*guarantee, expected, "{adapter}");
                for p in complete {
                    assert_eq!(value.pointer(p), last.pointer(p), "{adapter} {p}");
                }
                partials.push(value.clone());
            }
        }
        // Every HTTP wire streams its text deltas (the fakes send two halves). Deltas read in
        // one go are shown as one partial, so at least one.
        assert!(!partials.is_empty(), "{adapter}");
        assert_eq!(partials.last(), Some(&last), "{adapter}");
        server.shutdown().await;
    }
}

/// `extract::<T>` with an image: every HTTP adapter that takes images gets it in its own
/// shape, and a client that can route only to a text model is refused before any request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extract_with_an_image_sends_it_and_a_text_route_refuses_it_before_any_call() {
    use geode::media::Media;
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    for adapter in ["openai-payg", "anthropic-payg", "codex-oauth"] {
        let (server, c, _home) = serve(adapter, Script::always(Reply::text(GOOD))).await;
        let prompt = geode::Prompt::from("Review this screenshot.")
            .with_parts([Media::from_bytes(png, None).unwrap()]);
        let got = support::bounded(c.extract::<Review>(prompt))
            .await
            .unwrap_or_else(|e| panic!("{adapter}: {e}"));
        assert_eq!(got.ledger.inputs.len(), 1, "{adapter}");
        assert_eq!(
            got.ledger.inputs[0].media_type.as_deref(),
            Some("image/png")
        );
        let body = http::model_calls(adapter, server.requests())[0]
            .body
            .to_string();
        let shape = if adapter == "anthropic-payg" {
            "\"type\":\"image\""
        } else {
            "\"input_image\""
        };
        assert!(body.contains(shape), "{adapter}: {body}");
        server.shutdown().await;
    }
    // Nothing configured: the embedded local model, which takes text only.
    let c = Client::builder()
        .config(Config::default())
        .environment(MapEnv::default())
        .build()
        .unwrap();
    let prompt =
        geode::Prompt::from("Review this.").with_parts([Media::from_bytes(png, None).unwrap()]);
    let err = c.extract::<Review>(prompt).await.unwrap_err();
    assert!(matches!(err, Error::InputsNotTaken { .. }), "{err:?}");
    assert!(err.to_string().contains("local: it cannot take"), "{err}");
    assert_eq!(err.exit_code(), 2);
}

/// A contract of the configuration runs from Rust as from the CLI, MCP and the gateway: its
/// template rendered with the arguments, its schema and route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contract_runs_by_name_with_its_inputs_schema_and_route() {
    let home = tempfile::tempdir().unwrap();
    let server = FakeServer::start(Kind::Responses, Script::always(Reply::text(GOOD)))
        .await
        .unwrap();
    let toml = r#"
[contracts.review]
prompt = "Review this change (risk {risk}): {diff}"
adapter = "openai-payg"
[contracts.review.inputs]
risk = "integer"
[contracts.review.schema]
type = "object"
properties = { decision = { enum = ["accept", "reject"] }, reason = { type = "string" }, lines = { type = "array", items = { type = "integer" } }, follow_up = { type = ["string", "null"] } }
required = ["decision", "reason", "lines", "follow_up"]
additionalProperties = false
"#;
    let path = home.path().join("geode.toml").display().to_string();
    let c = Client::builder()
        .config(Config::parse(toml, &path).unwrap())
        .environment(machine("openai-payg", &server.base_url(), home.path()))
        .build()
        .unwrap();
    let args = json!({"diff": "+ let x = 1;", "risk": 3});
    let got = support::bounded(c.contract("review", args.as_object().unwrap()))
        .await
        .unwrap();
    assert_eq!(got.value["decision"], "reject");
    assert_eq!(got.ledger.adapter, "openai-payg");
    let body = http::model_calls("openai-payg", server.requests())[0]
        .body
        .to_string();
    assert!(
        body.contains("Review this change (risk 3): + let x = 1;"),
        "{body}"
    );
    let bad = json!({"diff": "x", "risk": "high"});
    let err = c
        .contract("review", bad.as_object().unwrap())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Config { .. }), "{err:?}");
    let err = c
        .contract("nope", &serde_json::Map::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("no contract named \"nope\""),
        "{err}"
    );
    assert_eq!(http::model_calls("openai-payg", server.requests()).len(), 1);
}
