//! The response budget ([`CallCx::max_response_bytes`]) where it is not the same for every
//! adapter: the 16 MiB default, a JSON body announced too large (Chat), and a CLI whose stdout
//! never ends. Each call ends with `ResponseTooLarge` naming the limit, promptly (reading stops
//! at the limit, so memory stays bounded). An endless body through every HTTP adapter, not
//! retried, is a row of `http_adapters.rs`. Servers are `geode-fakes` on 127.0.0.1.
use geode::llm::adapter::Adapter;
use geode::llm::adapters::claude_cli::{ClaudeCliAdapter, ClaudeCliConfig};
use geode::llm::adapters::cli_common::CliOptions;
use geode::llm::adapters::codex_cli::{CodexCliAdapter, CodexCliConfig};
use geode::llm::call::{AdapterError, CallCx};
use geode::llm::request::{AdapterCallRequest, AdapterResponse, Message};
use geode::vocab::{ErrorKind, RetryClass};
use geode_fakes::{Reply, Script};
use std::path::Path;
use std::time::Duration;
use support::assert_kind;
use support::http::Rig;

use geode_testkit as support;

const MIB: u64 = 1 << 20;

/// Generous bound for one call: an endless stream would otherwise run until the read timeout.
async fn bounded<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("the call did not end within its bound")
}

fn request() -> AdapterCallRequest {
    AdapterCallRequest::new("m", vec![Message::user("write forever")])
}

fn budget(bytes: u64) -> CallCx {
    CallCx::new().with_max_response_bytes(bytes)
}

async fn call(adapter: &str, reply: Reply, cx: CallCx) -> Result<AdapterResponse, AdapterError> {
    let rig = Rig::start(adapter, Script::always(reply)).await;
    bounded(rig.adapter.call(request(), &cx)).await
}

fn assert_too_large(result: Result<AdapterResponse, AdapterError>, limit: u64, what: &str) {
    match result {
        Err(e @ AdapterError::ResponseTooLarge { limit: l, .. }) if l == limit => {
            assert_kind(&e, ErrorKind::ResponseTooLarge);
            assert_eq!(e.retry_class(), RetryClass::Fatal);
            assert!(e.to_string().contains("max_response_bytes"), "{e}");
        }
        other => panic!("{what}: expected ResponseTooLarge({limit}), got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_budget_is_sixteen_mib() {
    let result = call("openai-payg", Reply::Endless, CallCx::new()).await;
    assert_too_large(result, 16 * MIB, "default budget");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_body_announced_over_the_budget_is_refused_and_a_fitting_one_read() {
    let big = "x".repeat(2 * MIB as usize);
    let result = call("glm-payg", Reply::text(big.clone()), budget(MIB)).await;
    assert_too_large(result, MIB, "announced body");
    // The same answer under a budget that fits it (a small answer under a small budget, and an
    // endless stream ending at a 1 MiB budget, are rows of `http_adapters.rs`).
    let result = call("glm-payg", Reply::text(big.clone()), budget(3 * MIB)).await;
    assert_eq!(result.unwrap().text, big);
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
