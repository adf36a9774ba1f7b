#![allow(clippy::unwrap_used)]

use super::*;
use proptest::prelude::*;

const KEY: &str = "sk-unit-test-9f8e7d6c5b4a39281706";

fn key() -> Secret {
    Secret::new(KEY)
}

#[test]
fn a_whole_secret_is_replaced_wherever_it_appears() {
    let _k = key();
    assert_eq!(
        scrub(&format!("Incorrect API key provided: {KEY}. Bearer {KEY}")),
        "Incorrect API key provided: ***. Bearer ***"
    );
}

#[test]
fn a_secret_cut_short_at_its_end_is_still_replaced() {
    let _k = key();
    // The case: padding, then the key, cut by a 256-character limit before scrubbing.
    let cut = &KEY[..22];
    assert_eq!(scrub(&format!("bad key: {cut}…")), "bad key: ***…");
    // A piece from the middle, glued to other key characters at the run's end.
    let middle = &KEY[5..25];
    assert_eq!(scrub(&format!("x=abc{middle} end")), "x=abc*** end");
}

#[test]
fn short_pieces_and_short_values_are_left_alone() {
    let _k = key();
    // An 11-character piece is below MIN_FRAGMENT_LEN: not a recognisable key.
    assert_eq!(scrub("prefix sk-unit-tes"), "prefix sk-unit-tes");
    register("short");
    assert_eq!(scrub("a short word"), "a short word");
}

#[test]
fn clip_scrubs_then_makes_one_bounded_line() {
    assert_eq!(clip("a\n b   c", 10), "a b c");
    assert_eq!(clip("abcdefghij", 4), "abcd…");
    let _k = key();
    // The key starts after the cut point would fall inside it: scrubbing first leaves nothing.
    let padded = format!("{}{KEY}", "p".repeat(250));
    let clipped = clip(&padded, 260);
    assert!(!clipped.contains(&KEY[..4]), "{clipped}");
    assert!(clipped.ends_with("***"), "{clipped}");
}

#[test]
fn secret_debug_and_display_never_show_the_value() {
    let k = key();
    assert_eq!(format!("{k:?}"), "Secret(***)");
    assert_eq!(format!("{k}"), "***");
}

#[test]
fn adapter_error_display_and_debug_are_scrubbed_whatever_built_them() {
    let _k = key();
    let e = crate::llm::call::AdapterError::Server {
        adapter: "openai-payg".into(),
        status: 500,
        message: format!("upstream echoed {KEY}"),
    };
    for shown in [e.to_string(), format!("{e:?}")] {
        assert!(!shown.contains(&KEY[..MIN_FRAGMENT_LEN]), "{shown}");
        assert!(shown.contains("***"), "{shown}");
    }
}

#[test]
fn serialisable_values_are_scrubbed_in_every_string_and_key() {
    let _k = key();
    let v = serde_json::json!({"answer": format!("the key is {KEY}"), KEY: [1, KEY], "n": 12});
    let clean = scrub_serde(v);
    let text = clean.to_string();
    assert!(!text.contains(&KEY[..MIN_FRAGMENT_LEN]), "{text}");
    assert_eq!(clean["n"], 12);
    assert_eq!(clean["answer"], "the key is ***");
}

#[test]
fn credential_variable_names_are_recognised() {
    for name in [
        "OPENAI_API_KEY",
        "MY_KEY",
        "CLAUDE_CODE_OAUTH_TOKEN",
        "ANTHROPIC_AUTH_TOKEN",
        "ZAI_CODING_PLAN_KEY",
        "SOME_SECRET",
        "DB_PASSWORD",
    ] {
        assert!(is_credential_var(name), "{name}");
    }
    for name in ["HOME", "PATH", "GEODE_CLAUDE_BIN", "CODEX_HOME", "KEYBOARD"] {
        assert!(!is_credential_var(name), "{name}");
    }
}

#[test]
fn credential_files_teach_the_scrubber_their_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".credentials.json");
    let doc = serde_json::json!({
        "claudeAiOauth": {"accessToken": "sk-ant-oat01-file-token-AAAA1111", "expiresAt": 1},
        "tokens": {"refresh_token": "rt_file_refresh_BBBB2222", "account_id": "acct"}
    });
    std::fs::write(&path, doc.to_string()).unwrap();
    learn_file(&path);
    assert_eq!(
        scrub("a sk-ant-oat01-file-token-AAAA1111 b rt_file_refresh_BBBB2222"),
        "a *** b ***"
    );
    // A missing file teaches nothing and does not fail.
    learn_file(&dir.path().join("absent.json"));
}

proptest! {
    #[test]
    fn scrub_is_idempotent_and_removes_every_known_secret(
        before in "[ -~]{0,40}",
        after in "[ -~]{0,40}",
        cut in 0usize..KEY.len(),
    ) {
        let _k = key();
        let text = format!("{before}{KEY}{after}{}", &KEY[..cut]);
        let once = scrub(&text);
        prop_assert_eq!(scrub(&once), once.clone());
        prop_assert!(!once.contains(KEY));
        // No piece of MIN_FRAGMENT_LEN or more survives.
        for w in KEY.as_bytes().windows(MIN_FRAGMENT_LEN) {
            let w = std::str::from_utf8(w).unwrap();
            prop_assert!(!once.contains(w), "{} in {}", w, once);
        }
    }
}

/// A secret cut across two deltas of a stream is still replaced: the pieces, joined, hold it
/// nowhere, and every piece that was sent is text the whole answer would show.
#[test]
fn a_secret_split_across_stream_pieces_is_still_replaced() {
    let secret = "sk-stream-split-Zq81mWpX4";
    register(secret);
    let text = format!("{{\"reason\": \"the key is {secret} here\"}}");
    for cut in 1..text.len() - 1 {
        let (a, b) = text.split_at(cut);
        let mut s = StreamScrub::default();
        let sent = format!("{}{}{}", s.push(a), s.push(b), s.finish());
        assert!(!sent.contains(secret), "cut at {cut}: {sent}");
        assert_eq!(sent, scrub(&text), "cut at {cut}");
    }
    let mut s = StreamScrub::default();
    let long = "x".repeat(10_000);
    assert!(
        !s.push(&long).is_empty(),
        "a run past the bound is not held without end"
    );
}
