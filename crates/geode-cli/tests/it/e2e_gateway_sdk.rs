//! `geode gateway` driven by the official OpenAI SDKs, unmodified, against a gateway on
//! 127.0.0.1 in front of `geode-fakes` providers: the Python package (`openai`, pinned, in a
//! venv under the cache) through `tests/python/test_openai_sdk.py`, and the npm package with
//! its zod helpers through `tests/node/openai_sdk.test.mjs` (Node's test runner). Both are
//! installed by `make test`'s setup; a missing one fails its test loudly.

use crate::e2e_gateway::{Gateway, fakes, sandbox};
use crate::support::{SECRET, bad_enum_answer, good_answer};
use geode_fakes::{FakeServer, Kind, Reply, Script};
use std::path::PathBuf;

const INBOUND: &str = "gw-sdk-inbound-key-5d1e8b";

pub(crate) fn cache() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"))
        .join("geode")
}

/// The venv `scripts/install-venv.sh openai-sdk` builds (`make setup`).
pub(crate) fn python() -> PathBuf {
    let python = cache().join("venv/openai-sdk/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run `make setup` (scripts/install-venv.sh openai-sdk ...)",
        python.display()
    );
    python
}

/// The gateway both SDK suites drive: `openai-payg` answers a valid Decision, `glm-payg` (JSON
/// mode only) one with a wrong enum value, the configured provider `tooled` (a Chat upstream)
/// calls the first tool it is offered until it gets the result, then answers, and `flaky` (a
/// Chat upstream) answers a wrong enum value first and a valid Decision from then on.
async fn sdk_gateway() -> ([FakeServer; 4], Gateway) {
    let (openai, glm) = fakes(
        Script::always(Reply::Json(good_answer())),
        Script::always(Reply::Json(bad_enum_answer())),
    )
    .await;
    let tooled = FakeServer::start(Kind::Chat, Script::always(Reply::CallOfferedTool))
        .await
        .unwrap();
    let flaky = FakeServer::start(
        Kind::Chat,
        Script::new([Reply::Json(bad_enum_answer())]).then_default(Reply::Json(good_answer())),
    )
    .await
    .unwrap();
    let mut sb = sandbox(&openai, &glm);
    sb.var("GEODE_GATEWAY_KEYS", INBOUND)
        .var("TOOLED_KEY", SECRET);
    let provider = |name: &str, server: &FakeServer| {
        format!(
            "[providers.{name}]\nwire = \"chat\"\nbase_url = \"{}/v1\"\nkey_env = \"TOOLED_KEY\"\nmodel = \"m\"\nschema = \"json_schema\"\n",
            server.base_url()
        )
    };
    sb.config(&(provider("tooled", &tooled) + &provider("flaky", &flaky)));
    let gw = Gateway::start(&sb, &[]);
    ([openai, glm, tooled, flaky], gw)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_python_sdk_parses_refuses_calls_tools_and_reads_the_ledger() {
    let (_fakes, gw) = sdk_gateway().await;
    let tests = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python");
    let out = tokio::process::Command::new(python())
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(&tests)
        .env("GEODE_GATEWAY_URL", &gw.base)
        .env("GEODE_GATEWAY_KEY", INBOUND)
        .env("NO_PROXY", "127.0.0.1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "pytest failed:\n{stdout}\n{}\ngateway:\n{}",
        String::from_utf8_lossy(&out.stderr),
        gw.log()
    );
    assert!(stdout.contains("18 passed"), "{stdout}");
    assert!(!gw.log().contains(INBOUND));
}

/// The packages `scripts/install-node-sdk.sh` installs.
fn node_modules() -> PathBuf {
    let modules = cache().join("npm-sdk/node_modules");
    assert!(
        modules.join("openai/package.json").is_file() && modules.join("zod/package.json").is_file(),
        "{} lacks openai or zod: run `make setup` (scripts/install-node-sdk.sh)",
        modules.display()
    );
    modules
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_typescript_sdk_parses_with_zod_refuses_streams_and_calls_tools() {
    let (_fakes, gw) = sdk_gateway().await;
    let test = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/node/openai_sdk.test.mjs");
    let out = tokio::process::Command::new("node")
        .arg("--test")
        .arg("--test-reporter=spec")
        .arg(&test)
        .env("GEODE_GATEWAY_URL", &gw.base)
        .env("GEODE_GATEWAY_KEY", INBOUND)
        .env("GEODE_NODE_MODULES", node_modules())
        .env("NO_PROXY", "127.0.0.1")
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "node --test failed:\n{stdout}\n{}\ngateway:\n{}",
        String::from_utf8_lossy(&out.stderr),
        gw.log()
    );
    assert!(
        stdout.contains("pass 12") && stdout.contains("fail 0"),
        "{stdout}"
    );
    assert!(!gw.log().contains(INBOUND));
}
