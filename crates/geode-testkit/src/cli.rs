//! Shared harness of the real-CLI tests (geode's `cli_claude` and `cli_codex`, the fault matrix).
//!
//! Design: a fake provider on the host's 127.0.0.1 is not reachable from a new network
//! namespace, and the CLIs must run in one (loopback only, so they cannot reach anything else).
//! So each test re-runs **its own test binary** (`--exact <name>`) through
//! `scripts/netns-run.sh`; inside, the in-process `geode-fakes` server and the CLI it spawns
//! share the loopback-only namespace. The outer run waits (bounded), and fails with the inner
//! run's output unless the inner run passed exactly one test. The inner run first checks that
//! its namespace really has no interface but `lo`.
//!
//! `netns_test!(name, env = [("K", "V")], body)` exports variables into the inner run, so the
//! test process itself holds them as a user's shell would (the library sees them as its parent
//! environment; nothing in a test can set variables of its own process).
//!
//! The CLIs must be installed (`scripts/install-clis.sh`, run by `make test`); a missing CLI
//! fails the test with that instruction, it is never skipped.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The inner run's marker variable.
const INSIDE: &str = "GEODE_TEST_IN_NETNS";
/// Bound on one inner run (the CLIs start in about a second; the slowest case, the fault
/// matrix, runs a few dozen CLI calls two at a time).
const OUTER_BOUND: Duration = Duration::from_secs(420);
/// Bound on a test body inside the namespace.
pub const BODY_BOUND: Duration = Duration::from_secs(360);

/// Declares a test whose body runs inside a loopback-only network namespace.
#[macro_export]
macro_rules! netns_test {
    ($name:ident, env = [$(($k:expr, $v:expr)),* $(,)?], $body:expr) => {
        #[test]
        fn $name() {
            let name = $crate::cli::test_name(module_path!(), stringify!($name));
            if $crate::cli::enter_netns_with(&name, &[$(($k, $v)),*]) {
                $crate::cli::block_on($body);
            }
        }
    };
    ($name:ident, $body:expr) => {
        #[test]
        fn $name() {
            let name = $crate::cli::test_name(module_path!(), stringify!($name));
            if $crate::cli::enter_netns(&name) {
                $crate::cli::block_on($body);
            }
        }
    };
}

/// The name libtest knows a test by: its module path without the crate, then the function.
pub fn test_name(module_path: &str, function: &str) -> String {
    match module_path.split_once("::") {
        Some((_, modules)) => format!("{modules}::{function}"),
        None => function.to_owned(),
    }
}

/// Runs `body` on a fresh multi-threaded runtime, bounded by [`BODY_BOUND`].
pub fn block_on<F: std::future::Future<Output = ()>>(body: F) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        tokio::time::timeout(BODY_BOUND, body)
            .await
            .expect("test body exceeded its bound")
    });
}

/// True inside the namespace (run the body); outside, re-runs this test in a namespace, asserts
/// that it passed, and returns false.
pub fn enter_netns(test: &str) -> bool {
    enter_netns_with(test, &[])
}

/// [`enter_netns`], with `env` exported into the inner run.
pub fn enter_netns_with(test: &str, env: &[(&str, &str)]) -> bool {
    if std::env::var_os(INSIDE).is_some() {
        assert_only_loopback();
        return true;
    }
    // Fail loudly before entering when a CLI is missing.
    let _ = (claude_bin(), codex_bin());
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/netns-run.sh");
    let exe = std::env::current_exe().unwrap();
    let log_dir = tempfile::tempdir().unwrap();
    let log_path = log_dir.path().join("inner.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut child = Command::new(&script)
        .arg(&exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(INSIDE, "1")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > OUTER_BOUND {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = std::fs::read_to_string(&log_path).unwrap_or_default();
    println!("{output}");
    match status {
        Some(s) if s.success() && output.contains("test result: ok. 1 passed") => false,
        Some(s) => panic!("inner run of {test} in the network namespace failed ({s}):\n{output}"),
        None => panic!("inner run of {test} exceeded {OUTER_BOUND:?}:\n{output}"),
    }
}

/// Panics unless the current network namespace has only the loopback interface.
fn assert_only_loopback() {
    let dev = std::fs::read_to_string("/proc/net/dev").unwrap();
    let ifaces: Vec<&str> = dev
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next())
        .map(str::trim)
        .collect();
    assert_eq!(ifaces, ["lo"], "not in a loopback-only network namespace");
}

fn cache_bin(name: &str) -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"));
    cache.join("geode/npm/node_modules/.bin").join(name)
}

fn installed(var: &str, name: &str) -> PathBuf {
    let bin = std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| cache_bin(name));
    assert!(
        bin.is_file(),
        "the `{name}` CLI is not installed at {}: run `scripts/install-clis.sh` (or `make test`), \
         or set {var}",
        bin.display()
    );
    bin
}

/// The pinned `claude` binary.
pub fn claude_bin() -> PathBuf {
    installed("GEODE_CLAUDE_BIN", "claude")
}

/// The pinned `codex` binary.
pub fn codex_bin() -> PathBuf {
    installed("GEODE_CODEX_BIN", "codex")
}
