//! `geode mcp` driven by the official MCP Python SDK (`mcp` 2.3.0, pinned with every dependency
//! in `scripts/python/mcp-requirements.txt`, installed by `make setup` into
//! `~/.cache/geode/venv/mcp-sdk`) through `tests/mcp/test_mcp_sdk.py`: over stdio (the SDK starts
//! `geode mcp`) and over streamable HTTP (a server started here, behind an inbound key), at the
//! current protocol version and through the older `initialize` handshake, on `geode-fakes`
//! providers and the local model. Afterwards: the contract refused for its `require` made no
//! upstream request, the cancelled call's upstream connection is closed, and neither the
//! provider key nor the inbound key was written anywhere.

use crate::e2e_gateway_sdk::cache;
use crate::e2e_mcp::{Fakes, McpHttp, configure};
use crate::support::{SECRET, Sandbox, model_calls};
use std::path::PathBuf;
use std::time::Duration;

const INBOUND: &str = "mcp-sdk-inbound-key-91c3d7";

/// The venv `scripts/install-venv.sh mcp-sdk` builds (`make setup`).
fn python() -> PathBuf {
    let python = cache().join("venv/mcp-sdk/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run `make setup` (scripts/install-venv.sh mcp-sdk ...)",
        python.display()
    );
    python
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_python_sdk_lists_calls_refuses_and_cancels_over_both_transports() {
    let fakes = Fakes::start().await;
    let mut sb = Sandbox::with_local_model();
    configure(&mut sb, &fakes);
    sb.var("GEODE_GATEWAY_KEYS", INBOUND);
    let server = McpHttp::start(&sb, &[]);
    let test = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/test_mcp_sdk.py");
    let mut cmd = tokio::process::Command::new(python());
    cmd.args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(&test)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sb.home())
        .envs(sb.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env("GEODE_BIN", env!("CARGO_BIN_EXE_geode"))
        .env("GEODE_MCP_URL", &server.url)
        .env("GEODE_MCP_KEY", INBOUND)
        .env("GEODE_SECRET", SECRET)
        .env("NO_PROXY", "127.0.0.1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(sb.cwd.path())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(600), cmd.output())
        .await
        .expect("pytest took more than 600 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "pytest failed:\n{stdout}\n{stderr}\nserver:\n{}",
        server.log()
    );
    assert!(stdout.contains("21 passed"), "{stdout}");
    assert!(
        model_calls(&fakes.json_only).is_empty(),
        "the refused contract reached its provider"
    );
    // The cancelled call's upstream body was being sent when the client cancelled: the
    // connection is closed once the call is dropped.
    assert!(!model_calls(&fakes.slow).is_empty());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while fakes.slow.open_bodies() > 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        fakes.slow.open_bodies(),
        0,
        "the cancelled upstream call is still open"
    );
    for text in [stdout.as_ref(), stderr.as_ref(), server.log().as_str()] {
        assert!(!text.contains(SECRET) && !text.contains(INBOUND));
    }
}
