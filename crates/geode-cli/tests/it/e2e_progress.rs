//! `geode run`'s live progress line: on a terminal (stderr is a pty here) a call that runs
//! longer than a second shows adapter, model, tokens so far and elapsed time, then clears it;
//! with stderr piped nothing but the ledger is written.

use crate::support;

use geode_fakes::{Reply, Script};
use std::io::Read;
use std::process::Stdio;
use support::http_cases::*;
use support::{SECRET, decision_schema_path, good_answer};

/// A first event 1.8 s late: long enough for the line to show.
fn slow_answer() -> Script {
    Script::always(Reply::SlowBody {
        delay_ms: 1_800,
        then: Box::new(Reply::Json(good_answer())),
    })
}

fn run_args(schema: &str) -> Vec<&str> {
    vec![
        "run",
        "--adapter",
        OPENAI_PAYG.adapter,
        "--schema",
        schema,
        "Decide.",
    ]
}

/// Everything written to the pty's master until the child has exited and closed its side.
fn read_all(mut master: std::fs::File) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match master.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            // EIO: the slave side is closed.
            Err(_) => break,
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn a_slow_call_shows_a_live_line_on_a_terminal() {
    let (_server, sb) = OPENAI_PAYG.serve(slow_answer()).await;
    let schema = decision_schema_path();
    let size = nix::pty::Winsize {
        ws_row: 24,
        ws_col: 120,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = nix::pty::openpty(Some(&size), None).unwrap();
    let mut cmd = sb.command(&run_args(&schema));
    cmd.env("TERM", "xterm")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(pty.slave));
    let child = cmd.spawn().unwrap();
    // The child holds the only slave fd now (the Command dropped ours).
    drop(cmd);
    let reader = std::thread::spawn(move || read_all(std::fs::File::from(pty.master)));
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let terminal = reader.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "{terminal}");
    assert!(!terminal.contains(SECRET) && !String::from_utf8_lossy(&out.stdout).contains(SECRET));
    let stdout: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stdout, good_answer());
    let default_model = geode::llm::registry::spec("openai-payg")
        .unwrap()
        .default_model;
    assert!(
        terminal.contains(&format!("openai-payg · {default_model} · ")),
        "no progress line naming adapter and model: {terminal:?}"
    );
    assert!(terminal.contains(" tokens · 1."), "{terminal:?}");
    // The line is cleared (an erase-line sequence follows it) and the ledger follows.
    assert!(terminal.contains("\x1b[2K"), "{terminal:?}");
    let cleared = terminal.rfind("\x1b[2K").unwrap();
    assert!(
        terminal[cleared..].contains("worker_check=pass"),
        "{terminal:?}"
    );
}

#[tokio::test]
async fn piped_stderr_gets_no_progress_line() {
    let (_server, sb) = OPENAI_PAYG.serve(slow_answer()).await;
    let schema = decision_schema_path();
    let out = sb.geode(&run_args(&schema), "").await;
    out.assert_exit(0);
    assert!(!out.stderr.contains(" tokens · "), "{}", out.dump());
    assert!(!out.stderr.contains(SECRET) && !out.stdout.contains(SECRET));
    assert!(!out.stderr.contains('\x1b'), "{}", out.dump());
}
