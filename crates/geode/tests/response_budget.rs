//! The response budget ([`CallCx::max_response_bytes`]) through every kind of transport: a 200
//! whose SSE stream never ends (Responses, ChatGPT backend, Messages), a JSON body that never
//! ends or is announced too large (Chat), and a CLI whose stdout never ends. Each call ends
//! with `ResponseTooLarge` naming the limit, promptly (reading stops at the limit, so memory
//! stays bounded), and is not retried. Servers are `geode-fakes` on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use geode::llm::adapter::{Adapter, AdapterError, CallCx, RetryClass};
use geode::llm::adapters::anthropic_payg::AnthropicPayg;
use geode::llm::adapters::claude_cli::{ClaudeCliAdapter, ClaudeCliConfig};
use geode::llm::adapters::cli_common::CliOptions;
use geode::llm::adapters::codex_cli::{CodexCliAdapter, CodexCliConfig};
use geode::llm::adapters::codex_oauth::{CodexOauth, CodexOauthSettings};
use geode::llm::adapters::glm_payg::GlmPayg;
use geode::llm::adapters::openai_payg::{OpenAiPayg, OpenAiPaygSettings};
use geode::llm::credentials::{CodexAuthFile, Secret};
use geode::llm::http::{HttpClient, HttpConfig, RetryPolicy};
use geode::llm::request::{AdapterCallRequest, AdapterResponse, Message};
use geode_fakes::{FakeServer, Kind, Reply, Script};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const MIB: u64 = 1 << 20;

/// Generous bound for one call: an endless stream would otherwise run until the read timeout.
async fn bounded<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("the call did not end within its bound")
}

fn http() -> HttpClient {
    HttpClient::new(HttpConfig {
        retry: RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(100),
        },
        ..HttpConfig::default()
    })
    .unwrap()
}

fn request() -> AdapterCallRequest {
    AdapterCallRequest::new("m", vec![Message::user("write forever")])
}

fn budget(bytes: u64) -> CallCx {
    CallCx::new().with_max_response_bytes(bytes)
}

/// The adapter for `kind` pointed at `server` (the codex auth file lives in `home`).
fn adapter(kind: Kind, server: &FakeServer, home: &Path) -> Arc<dyn Adapter> {
    let base = server.base_url();
    match kind {
        Kind::Responses => Arc::new(OpenAiPayg::with_http(
            OpenAiPaygSettings {
                base_url: base,
                api_key: Secret::new("sk-budget-test"),
            },
            http(),
        )),
        Kind::ChatGpt => {
            let auth = home.join("auth.json");
            let doc = geode_fakes::chatgpt::codex_auth_json(false);
            std::fs::write(&auth, doc.to_string()).unwrap();
            Arc::new(CodexOauth::with_http(
                CodexOauthSettings {
                    base_url: base.clone(),
                    auth_url: base,
                    auth_file: CodexAuthFile::at(&auth),
                },
                http(),
            ))
        }
        Kind::Messages => Arc::new(
            AnthropicPayg::new(base, Secret::new("sk-ant-budget"))
                .unwrap()
                .with_http(http()),
        ),
        Kind::Chat => Arc::new(
            GlmPayg::new(format!("{base}/api/paas/v4"), Secret::new("zai-budget"))
                .unwrap()
                .with_http(http()),
        ),
    }
}

async fn call(
    kind: Kind,
    reply: Reply,
    cx: CallCx,
) -> (Result<AdapterResponse, AdapterError>, FakeServer) {
    let server = FakeServer::start(kind, Script::always(reply))
        .await
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let result = bounded(adapter(kind, &server, home.path()).call(request(), &cx)).await;
    (result, server)
}

fn assert_too_large(result: Result<AdapterResponse, AdapterError>, limit: u64, what: &str) {
    match result {
        Err(e @ AdapterError::ResponseTooLarge { limit: l, .. }) if l == limit => {
            assert_eq!(e.kind(), geode::vocab::ErrorKind::ResponseTooLarge);
            assert_eq!(e.retry_class(), RetryClass::Fatal);
            assert!(e.to_string().contains("max_response_bytes"), "{e}");
        }
        other => panic!("{what}: expected ResponseTooLarge({limit}), got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_stream_ends_at_the_budget_through_every_http_adapter() {
    for kind in [Kind::Responses, Kind::ChatGpt, Kind::Messages, Kind::Chat] {
        let (result, server) = call(kind, Reply::Endless, budget(MIB)).await;
        assert_too_large(result, MIB, &format!("{kind}"));
        let calls = server
            .requests()
            .into_iter()
            .filter(|r| {
                r.path.contains("responses")
                    || r.path.contains("messages")
                    || r.path.contains("completions")
            })
            .count();
        assert_eq!(calls, 1, "{kind}: a response over budget is not retried");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_budget_is_sixteen_mib() {
    let (result, _server) = call(Kind::Responses, Reply::Endless, CallCx::new()).await;
    assert_too_large(result, 16 * MIB, "default budget");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_body_announced_over_the_budget_is_refused_and_a_fitting_one_read() {
    let big = "x".repeat(2 * MIB as usize);
    let (result, _server) = call(Kind::Chat, Reply::text(big.clone()), budget(MIB)).await;
    assert_too_large(result, MIB, "announced body");
    // The same answer under a budget that fits it, and a normal answer under a small budget.
    let (result, _server) = call(Kind::Chat, Reply::text(big.clone()), budget(3 * MIB)).await;
    assert_eq!(result.unwrap().text, big);
    for kind in [Kind::Responses, Kind::Messages] {
        let (result, _server) = call(kind, Reply::text("{\"ok\":true}"), budget(64 << 10)).await;
        assert_eq!(result.unwrap().text, "{\"ok\":true}", "{kind}");
    }
}

/// A stand-in CLI that ignores its arguments and writes to stdout forever.
fn endless_cli(dir: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("endless-cli");
    std::fs::write(
        &path,
        "#!/bin/sh\nexec yes '{\"type\":\"item.completed\"}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_whose_stdout_never_ends_is_stopped_at_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let mut cli = CliOptions::with_timeout(Duration::from_secs(300));
    cli.bin = Some(endless_cli(dir.path()));
    let claude = ClaudeCliAdapter::new(ClaudeCliConfig {
        cli: cli.clone(),
        ..ClaudeCliConfig::default()
    });
    let codex = CodexCliAdapter::new(CodexCliConfig {
        cli,
        temp_root: Some(dir.path().to_owned()),
        ..CodexCliConfig::default()
    });
    let adapters: [&dyn Adapter; 2] = [&claude, &codex];
    for a in adapters {
        let result = bounded(a.call(request(), &budget(MIB))).await;
        assert_too_large(result, MIB, a.name());
    }
}
