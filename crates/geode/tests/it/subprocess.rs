//! The subprocess runner against real processes: deadline and cancellation kill the whole group,
//! capture is bounded, encoding and size limits are typed errors, and the environment is an
//! allow-list. Every test is bounded by a tokio timeout; no test touches the network.

// Test helpers outside `#[test]` fns may unwrap too (tests are allowed to panic).
use geode_testkit as support;

use geode::llm::subprocess::{
    self, BASE_ENV_ALLOW, Ending, MAX_ARG_BYTES, ProcessSpec, Stream, SubprocessError,
};
use std::time::Duration;
use support::leaks;
use tokio::time::{Instant, timeout};
use tokio_util::sync::CancellationToken;

const BOUND: Duration = Duration::from_secs(60);

fn sh(script: &str) -> ProcessSpec {
    ProcessSpec::new("sh").args(["-c", script])
}

/// Runs the body of a test, bounded by [`BOUND`]: a hang fails instead of blocking the suite.
async fn bounded(test: impl std::future::Future<Output = ()>) {
    timeout(BOUND, test)
        .await
        .expect("the test ended within its bound");
}

/// Runs `spec` to its end: never cancelled, no deadline.
async fn run_to_end(spec: &ProcessSpec) -> Result<subprocess::SubprocessOutput, SubprocessError> {
    subprocess::run(spec, &CancellationToken::new(), None).await
}

/// Waits (bounded) until no live process is left in group `pgid`; returns what is left.
/// Asserts no process of group `pgid` is left (after letting the kernel settle).
async fn assert_group_gone(pgid: u32) {
    let left = leaks::settle(|| leaks::group_members(pgid)).await;
    assert_eq!(left, Vec::<u32>::new(), "group {pgid} left alive");
}

/// Asserts the group of `out` is gone, and so is the background child whose pid the shell
/// printed on stdout (in the group, not its leader).
async fn assert_group_and_child_gone(out: &subprocess::SubprocessOutput) {
    let child: u32 = out.stdout.text.trim().parse().expect("the child's pid");
    assert!(child != out.pgid);
    assert_group_gone(out.pgid).await;
    assert!(!leaks::alive(child));
}

#[tokio::test]
async fn deadline_kills_the_whole_group_including_grandchildren() {
    bounded(async {
        // The grandchild prints its pid, then both it and the shell sleep "forever".
        let spec = sh("sleep 1000 & echo $!; sleep 1000");
        let deadline = Instant::now() + Duration::from_millis(500);
        let out = subprocess::run(&spec, &CancellationToken::new(), Some(deadline))
            .await
            .unwrap();
        assert_eq!(out.ending, Ending::TimedOut);
        assert!(out.timed_out());
        assert!(!out.success());
        assert_group_and_child_gone(&out).await;
    })
    .await;
}

#[tokio::test]
async fn cancellation_kills_the_group_and_keeps_partial_output() {
    bounded(async {
        let spec = sh("echo started; sleep 1000 & sleep 1000");
        let token = CancellationToken::new();
        let t2 = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            t2.cancel();
        });
        let out = subprocess::run(&spec, &token, None).await.unwrap();
        assert_eq!(out.ending, Ending::Cancelled);
        assert!(!out.timed_out());
        assert_eq!(out.stdout.text, "started\n");
        assert_group_gone(out.pgid).await;
    })
    .await;
}

#[tokio::test]
async fn dropping_the_future_kills_the_group() {
    bounded(async {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pgid");
        let spec = sh(&format!(
            "echo $$ > {}; sleep 1000 & sleep 1000",
            pidfile.display()
        ));
        let token = CancellationToken::new();
        // The outer timeout drops the run future mid-flight.
        let r = timeout(
            Duration::from_millis(500),
            subprocess::run(&spec, &token, None),
        )
        .await;
        assert!(r.is_err(), "the run should still have been going");
        let pgid: u32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_group_gone(pgid).await;
    })
    .await;
}

#[tokio::test]
async fn normal_exit_does_not_wait_for_or_leak_background_children() {
    bounded(async {
        // The background sleep keeps the stdout pipe open; the runner must not hang on it.
        let spec = sh("sleep 1000 & echo $!");
        let out = run_to_end(&spec).await.unwrap();
        assert!(out.success());
        assert_eq!(out.exit_code(), Some(0));
        assert_group_and_child_gone(&out).await;
    })
    .await;
}

#[tokio::test]
async fn a_gigabyte_of_output_keeps_only_the_capped_tail() {
    bounded(async {
        const CAP: usize = 1 << 20;
        const TOTAL: u64 = 1_000_000_000;
        // stdout: a gigabyte of `y\n` ending in a marker; stderr: 50 MB of NULs.
        let spec = sh(&format!(
            "yes | head -c {TOTAL}; printf END; head -c 50000000 /dev/zero >&2"
        ))
        .capture_limit(CAP);
        let out = run_to_end(&spec).await.unwrap();
        assert!(out.success());
        assert_eq!(out.stdout.text.len(), CAP);
        assert!(out.stdout.text.ends_with("y\ny\nEND"));
        assert_eq!(out.stdout.dropped_bytes, TOTAL + 3 - CAP as u64);
        assert!(out.stdout.truncated());
        assert_eq!(out.stderr.text.len(), CAP);
        assert_eq!(out.stderr.dropped_bytes, 50_000_000 - CAP as u64);
    })
    .await;
}

#[tokio::test]
async fn endless_stdout_past_its_budget_kills_the_group_at_once() {
    bounded(async {
        // `yes` writes forever; a background child writes forever too. No deadline at all:
        // only the budget can end this run.
        let spec = sh("yes background & yes").stdout_budget(1 << 20);
        let out = run_to_end(&spec).await.unwrap();
        assert_eq!(out.ending, Ending::OutputTooLarge { limit: 1 << 20 });
        assert!(!out.success() && !out.timed_out());
        assert_group_gone(out.pgid).await;
        // Reading stopped right after the budget (one read of at most 64 KiB past it).
        let read = out.stdout.text.len() as u64 + out.stdout.dropped_bytes;
        assert!((1 << 20) < read && read <= (1 << 20) + (64 << 10), "{read}");

        // Within the budget, the same spec runs normally.
        let spec = sh("head -c 1000 /dev/zero | tr '\\0' x").stdout_budget(1000);
        let out = run_to_end(&spec).await.unwrap();
        assert!(out.success(), "{out:?}");
        assert_eq!(out.stdout.text.len(), 1000);
    })
    .await;
}

#[tokio::test]
async fn non_utf8_stdout_is_a_typed_error() {
    bounded(async {
        let spec = sh(r"printf 'ok \377\376'");
        let err = run_to_end(&spec).await.unwrap_err();
        match err {
            SubprocessError::NonUtf8 { stream, offset, .. } => {
                assert_eq!(stream, Stream::Stdout);
                assert_eq!(offset, 3);
            }
            other => panic!("expected NonUtf8, got {other:?}"),
        }
        // stderr is diagnostic only: decoded lossily.
        let out = run_to_end(&sh(r"printf '\377' >&2")).await.unwrap();
        assert_eq!(out.stderr.text, "\u{FFFD}");
    })
    .await;
}

#[tokio::test]
async fn a_missing_binary_is_a_typed_error() {
    bounded(async {
        for program in [
            "/nonexistent/geode-no-such-cli",
            "geode-no-such-cli-on-path",
        ] {
            let err = run_to_end(&ProcessSpec::new(program)).await.unwrap_err();
            assert!(
                matches!(&err, SubprocessError::NotFound { program: p, .. } if p == program),
                "{err:?}"
            );
        }
        let err = subprocess::resolve_program(
            "GEODE_TEST_VARIABLE_THAT_IS_NEVER_SET",
            "geode-no-such-cli-on-path",
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("set GEODE_TEST_VARIABLE_THAT_IS_NEVER_SET"),
            "{err}"
        );
        // A bare name found on PATH resolves to an executable path.
        let sh =
            subprocess::resolve_program("GEODE_TEST_VARIABLE_THAT_IS_NEVER_SET", "sh").unwrap();
        assert!(sh.is_absolute());
    })
    .await;
}

#[tokio::test]
async fn an_argument_at_the_kernel_limit_is_refused_before_spawning() {
    bounded(async {
        // The kernel itself refuses a string of MAX_ARG_BYTES (NUL included it is one over).
        let kernel = std::process::Command::new("true")
            .arg("a".repeat(MAX_ARG_BYTES))
            .status();
        assert_eq!(kernel.unwrap_err().raw_os_error(), Some(7), "E2BIG");

        // We refuse it before spawning, with the argument's position.
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let spec = sh(&format!("touch {}", marker.display())).arg("a".repeat(MAX_ARG_BYTES));
        let err = run_to_end(&spec).await.unwrap_err();
        assert!(
            matches!(err, SubprocessError::ArgTooLong { ref what, len, limit }
                if what == "argument 3" && len == MAX_ARG_BYTES && limit == MAX_ARG_BYTES),
            "{err:?}"
        );
        assert!(!marker.exists(), "nothing may run");

        // One byte less passes through whole.
        let spec = sh("printf %s \"$1\" | wc -c")
            .arg("sh")
            .arg("b".repeat(MAX_ARG_BYTES - 1));
        let out = run_to_end(&spec).await.unwrap();
        assert_eq!(out.stdout.text.trim(), (MAX_ARG_BYTES - 1).to_string());
    })
    .await;
}

#[tokio::test]
async fn stdin_is_written_then_closed_without_deadlock() {
    bounded(async {
        // 4 MiB in, echoed out by cat while we are still writing: both pipes fill up.
        let input: Vec<u8> = (0..4u32 << 20).map(|i| b'a' + (i % 26) as u8).collect();
        let spec = ProcessSpec::new("cat").stdin(input.clone());
        let out = run_to_end(&spec).await.unwrap();
        assert!(out.success(), "cat ends only when stdin is closed");
        assert_eq!(out.stdout.text.as_bytes(), input.as_slice());
        // A child that never reads its stdin is not an error.
        let out = subprocess::run(
            &sh("exit 3").stdin(vec![b'x'; 1 << 20]),
            &CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
        assert_eq!(out.exit_code(), Some(3));
    })
    .await;
}

#[tokio::test]
async fn the_environment_is_an_allow_list() {
    bounded(async {
        // cargo sets CARGO_MANIFEST_DIR and CARGO_PKG_NAME for test binaries.
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        let spec = ProcessSpec::new("env")
            .allow_env("CARGO_PKG_NAME")
            .env("GEODE_EXPLICIT", "v1");
        let out = run_to_end(&spec).await.unwrap();
        let names: Vec<&str> = out
            .stdout
            .text
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, _)| k))
            .collect();
        assert!(names.contains(&"GEODE_EXPLICIT"));
        assert!(out.stdout.text.contains("CARGO_PKG_NAME=geode\n"));
        assert!(!names.contains(&"CARGO_MANIFEST_DIR"));
        for n in names {
            assert!(
                BASE_ENV_ALLOW.contains(&n) || n == "CARGO_PKG_NAME" || n == "GEODE_EXPLICIT",
                "unexpected variable {n}"
            );
        }
    })
    .await;
}

#[tokio::test]
async fn exit_codes_and_signals_are_reported() {
    bounded(async {
        let out = subprocess::run(
            &sh("echo out; echo err >&2; exit 7"),
            &CancellationToken::new(),
            None,
        )
        .await
        .unwrap();
        assert_eq!(out.exit_code(), Some(7));
        assert_eq!(
            (out.stdout.text.as_str(), out.stderr.text.as_str()),
            ("out\n", "err\n")
        );
        assert_eq!(out.stderr.last_line(80), "err");
        let out = run_to_end(&sh("kill -TERM $$")).await.unwrap();
        assert!(matches!(out.ending, Ending::Exited(_)));
        assert_eq!(out.exit_code(), None, "a signal death has no exit code");
    })
    .await;
}
