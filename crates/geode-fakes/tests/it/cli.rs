//! The `geode-fakes` binary: serves a scripted fake, prints its base URL, logs masked JSON lines.
use crate::common;

use common::*;
use geode_fakes::Kind;
use serde_json::{Value, json};
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

#[tokio::test]
async fn serve_prints_the_base_url_and_logs_masked_requests() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        r#"[{"text":"from the script"}, {"status":{"status":429,"retry_after":2}}]"#,
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_geode-fakes"))
        .args(["serve", "--kind", "chat", "--script"])
        .arg(&script)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let base = bounded(lines.next_line())
        .await
        .unwrap()
        .expect("the base URL line");
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");

    let url = format!("{base}/api/paas/v4/chat/completions");
    let request = json!({"model": "glm-test", "messages": [{"role": "user", "content": "hi"}]});
    let post = || bounded(authorized(Kind::Chat, client().post(&url).json(&request)).send());
    let first = post().await.unwrap();
    let v: Value = bounded(first.json()).await.unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "from the script");
    let second = post().await.unwrap();
    assert_eq!(second.status(), 429);
    assert_eq!(second.headers().get("retry-after").unwrap(), "2");

    for _ in 0..2 {
        let line = bounded(lines.next_line())
            .await
            .unwrap()
            .expect("a log line");
        assert!(!line.contains(SECRET), "{line}");
        let logged: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(logged["path"], "/api/paas/v4/chat/completions");
        assert_eq!(logged["body"]["model"], "glm-test");
    }
    child.start_kill().unwrap();
    bounded(child.wait()).await.unwrap();
}

#[tokio::test]
async fn a_bad_script_fails_with_exit_code_1() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("bad.json");
    std::fs::write(&script, "[{\"unknown\": 1}]").unwrap();
    let output = bounded(
        Command::new(env!("CARGO_BIN_EXE_geode-fakes"))
            .args(["serve", "--kind", "messages", "--script"])
            .arg(&script)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("invalid script"));
    assert!(output.stdout.is_empty());
}

#[tokio::test]
async fn auth_json_prints_a_codex_chatgpt_auth_file() {
    let output = bounded(
        Command::new(env!("CARGO_BIN_EXE_geode-fakes"))
            .args(["auth-json", "--stale"])
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap();
    assert!(output.status.success());
    let auth: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(auth["auth_mode"], "chatgpt");
    assert_eq!(auth["OPENAI_API_KEY"], Value::Null);
    assert_eq!(auth["tokens"]["account_id"], "acct_fake_123");
    assert!(
        auth["tokens"]["access_token"]
            .as_str()
            .unwrap()
            .contains('.')
    );
    assert!(auth["last_refresh"].as_str().unwrap().ends_with('Z'));
}
