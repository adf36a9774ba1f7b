//! No secret is ever shown, through the real `geode` binary, on every path that
//! leaked one: an in-band provider error inside a 200 (Responses `response.failed` and `error`
//! events, the Messages `error` event, a GLM error object), a 401 whose message holds the key
//! after long padding (cut before it was scrubbed), a provider answer quoting the key (echoed
//! by `--json`), and a `claude`/`codex` binary printing the key on stderr.
//!
//! "Shown" means any piece of 12 or more characters of a secret, in stdout or stderr.

use crate::support;

use geode_fakes::{Kind, Reply, Script};
use serde_json::{Value, json};
use support::http_cases::{ALL, Case, Credential, fake};
use support::{DECIDE, Outcome, SECRET, Sandbox};

/// The secrets a case's sandbox holds: its key, or the codex `auth.json` tokens.
fn secrets_of(case: &Case, sb: &Sandbox) -> Vec<String> {
    match case.credential {
        Credential::CodexHome => {
            let auth = std::fs::read_to_string(sb.home().join("codex-home/auth.json")).unwrap();
            let auth: Value = serde_json::from_str(&auth).unwrap();
            ["access_token", "refresh_token", "id_token"]
                .iter()
                .filter_map(|k| auth["tokens"][k].as_str().map(str::to_owned))
                .collect()
        }
        _ => vec![SECRET.to_owned()],
    }
}

/// Fails when any 12-character piece of any secret shows in either stream.
fn assert_no_secret(out: &Outcome, secrets: &[String]) {
    for secret in secrets {
        for piece in secret.as_bytes().windows(12) {
            let piece = std::str::from_utf8(piece).unwrap();
            assert!(
                !out.stdout.contains(piece) && !out.stderr.contains(piece),
                "a piece of a secret ({piece}) was shown:\n{}",
                out.dump()
            );
        }
    }
}

/// The secrets `case` will run with (its key, or the tokens of the `auth.json` that every run
/// of this case reuses, so a reply can quote them before the run's sandbox exists).
async fn secrets_for(case: &Case) -> (Option<String>, Vec<String>) {
    let probe = fake(case, Script::default()).await;
    let sb = case.sandbox(&probe);
    let auth = std::fs::read_to_string(sb.home().join("codex-home/auth.json")).ok();
    (auth, secrets_of(case, &sb))
}

/// Runs `geode run` on `case` against a fake playing `reply`, plain and with `--json`.
async fn run_both(
    case: &Case,
    auth: &Option<String>,
    reply: Reply,
) -> (Vec<String>, Outcome, Outcome) {
    let server = fake(case, Script::always(reply)).await;
    let sb = case.sandbox(&server);
    // A 401 makes codex-oauth refresh and rewrite auth.json: each run starts from the tokens
    // the reply quotes, so they are the ones the process holds.
    let reset = || {
        if let Some(auth) = auth {
            std::fs::write(sb.home().join("codex-home/auth.json"), auth).unwrap();
        }
    };
    reset();
    let plain = sb.run_decision(case.adapter, &[], DECIDE).await;
    reset();
    let json = sb.run_decision(case.adapter, &["--json"], DECIDE).await;
    reset();
    (secrets_of(case, &sb), plain, json)
}

/// The message a misbehaving provider puts its error in: it quotes every secret.
fn quoting(secrets: &[String]) -> String {
    format!("upstream failure; credentials seen: {}", secrets.join(" "))
}

#[tokio::test]
async fn an_in_band_error_quoting_the_key_is_scrubbed_on_every_http_adapter() {
    for case in ALL {
        let (auth, secrets) = secrets_for(&case).await;
        let mut replies = vec![Reply::InBandError(quoting(&secrets))];
        if matches!(case.kind, Kind::Responses | Kind::ChatGpt) {
            replies.push(Reply::ResponseFailed(quoting(&secrets)));
        }
        for reply in replies {
            let (secrets, plain, json) = run_both(&case, &auth, reply.clone()).await;
            for out in [&plain, &json] {
                assert_eq!(
                    out.code,
                    Some(3),
                    "{} {reply:?}: {}",
                    case.adapter,
                    out.dump()
                );
                assert_no_secret(out, &secrets);
            }
            assert!(
                plain.stderr.contains("upstream failure"),
                "{}",
                plain.dump()
            );
            let result = json.json();
            assert!(
                result["error"].as_str().unwrap().contains("***"),
                "{}",
                json.dump()
            );
        }
    }
}

#[tokio::test]
async fn a_401_with_the_key_after_long_padding_shows_no_piece_of_it() {
    for case in ALL {
        let (auth, secrets) = secrets_for(&case).await;
        let message = format!("{} {}", "p".repeat(250), secrets.join(" "));
        let body = match case.kind {
            Kind::Messages => json!({"type": "error",
                "error": {"type": "authentication_error", "message": message}}),
            Kind::ChatGpt => json!({ "detail": message }),
            _ => json!({"error": {"message": message, "code": "invalid_api_key"}}),
        };
        let reply = Reply::Status {
            status: 401,
            body,
            retry_after: None,
        };
        let (secrets, plain, json) = run_both(&case, &auth, reply).await;
        for out in [&plain, &json] {
            assert_eq!(out.code, Some(3), "{}: {}", case.adapter, out.dump());
            assert_no_secret(out, &secrets);
        }
    }
}

#[tokio::test]
async fn an_answer_quoting_the_key_is_not_echoed_by_json_output() {
    for case in ALL {
        let (auth, secrets) = secrets_for(&case).await;
        let answer = json!({"decision": "accept", "reason": quoting(&secrets)});
        let (secrets, plain, json) = run_both(&case, &auth, Reply::Json(answer)).await;
        for out in [&plain, &json] {
            assert_eq!(out.code, Some(0), "{}: {}", case.adapter, out.dump());
            assert_no_secret(out, &secrets);
        }
        let result = json.json();
        assert_eq!(result["answer"]["decision"], "accept", "{}", json.dump());
        assert!(result["output"].as_str().unwrap().contains("***"));
    }
}

/// A stand-in CLI binary that prints the key it was given on stderr and fails, as a
/// misconfigured or hostile `claude`/`codex` might.
fn leaky_cli(dir: &std::path::Path, var: &str) -> String {
    let path = dir.join(format!("leaky-{}", var.to_lowercase()));
    let script = format!(
        "#!/bin/sh\necho \"starting with key ${var}\" >&2\necho \"fatal: 401 for ${var}\" >&2\nexit 1\n"
    );
    std::fs::write(&path, script).unwrap();
    let mut perms = std::fs::metadata(&path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&path, perms).unwrap();
    path.display().to_string()
}

#[tokio::test]
async fn a_cli_printing_the_key_on_stderr_does_not_leak_it() {
    for (adapter, bin_var, key_var) in [
        ("claude-cli", "GEODE_CLAUDE_BIN", "ANTHROPIC_API_KEY"),
        ("codex-cli", "GEODE_CODEX_BIN", "OPENAI_API_KEY"),
    ] {
        let mut sb = Sandbox::new();
        let bin = leaky_cli(sb.home(), key_var);
        sb.var(bin_var, bin).var(key_var, SECRET);
        for extra in [&[][..], &["--json"]] {
            let out = sb.run_decision(adapter, extra, DECIDE).await;
            assert_eq!(out.code, Some(3), "{adapter}: {}", out.dump());
            assert_no_secret(&out, &[SECRET.to_owned()]);
            assert!(
                out.stderr.contains("***") || out.stdout.contains("***"),
                "{}",
                out.dump()
            );
        }
    }
}
