use super::*;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

fn jwt(claims: Value) -> String {
    let head = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
    let body = URL_SAFE_NO_PAD.encode(claims.to_string());
    format!("{head}.{body}.sig")
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn write_auth(dir: &Path, access_exp: u64, mode: u32) -> PathBuf {
    let path = dir.join("auth.json");
    let doc = json!({
        "auth_mode": "chatgpt",
        "OPENAI_API_KEY": null,
        "tokens": {
            "id_token": jwt(json!({"https://api.openai.com/auth": {"chatgpt_account_id": "acct_claim"}})),
            "access_token": jwt(json!({"exp": access_exp})),
            "refresh_token": "rt_original_secret",
        },
        "last_refresh": "2026-01-01T00:00:00Z",
        "extra_field": {"kept": true}
    });
    std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    #[cfg(not(unix))]
    let _ = mode;
    path
}

#[test]
fn secret_debug_and_display_are_redacted() {
    let s = Secret::new("sk-very-secret-value");
    assert_eq!(format!("{s:?}"), "Secret(***)");
    assert_eq!(format!("{s}"), "***");
    assert_eq!(s.expose(), "sk-very-secret-value");
    let tokens = CodexTokens {
        access_token: Secret::new("at-secret-1"),
        refresh_token: Some(Secret::new("rt-secret-2")),
        id_token: Some(Secret::new("id-secret-3")),
        account_id: Some("acct".into()),
        expires_at: Some(1),
    };
    let dbg = format!("{tokens:?}");
    for leaked in ["at-secret-1", "rt-secret-2", "id-secret-3"] {
        assert!(!dbg.contains(leaked), "{dbg}");
    }
}

#[test]
fn env_secret_names_the_variable_not_the_value() {
    let err = env_secret("a", "GEODE_TEST_SURELY_UNSET_VAR_4471").unwrap_err();
    assert!(matches!(err, AdapterError::Config { .. }));
    assert!(err.to_string().contains("GEODE_TEST_SURELY_UNSET_VAR_4471"));
    assert_eq!(env_string("GEODE_TEST_SURELY_UNSET_VAR_4471"), None);
}

#[test]
fn jwt_claims_decode_without_verification_and_reject_non_jwts() {
    let t = jwt(json!({"exp": 5, "https://api.openai.com/auth": {"chatgpt_account_id": "a1"}}));
    assert_eq!(jwt_claims(&t).unwrap()["exp"], json!(5));
    assert_eq!(account_claim(&t).as_deref(), Some("a1"));
    assert!(jwt_claims("opaque-token").is_none());
    assert!(jwt_claims("a.!!!.c").is_none());
}

#[tokio::test]
async fn load_reads_tokens_account_claim_and_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let exp = now_secs() + 3600;
    let path = write_auth(dir.path(), exp, 0o600);
    let t = CodexAuthFile::at(&path).load("codex-oauth").await.unwrap();
    assert_eq!(t.account_id.as_deref(), Some("acct_claim"));
    assert_eq!(t.expires_at, Some(exp));
    assert_eq!(t.refresh_token, Some(Secret::new("rt_original_secret")));
    assert!(!t.is_expired(SystemTime::now(), EXPIRY_SKEW));
}

#[tokio::test]
async fn missing_or_tokenless_file_is_a_config_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auth.json");
    let err = CodexAuthFile::at(&path).load("c").await.unwrap_err();
    assert!(matches!(err, AdapterError::Config { .. }));
    assert!(err.to_string().contains("auth.json"), "{err}");
    std::fs::write(&path, r#"{"OPENAI_API_KEY": null}"#).unwrap();
    let err = CodexAuthFile::at(&path).load("c").await.unwrap_err();
    assert!(err.to_string().contains("access_token"), "{err}");
}

#[tokio::test]
async fn a_valid_token_is_used_without_refresh() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_auth(dir.path(), now_secs() + 3600, 0o600);
    let t = CodexAuthFile::at(&path)
        .tokens("c", &CallCx::new(), RefreshWhen::Expired, |_| async {
            Err::<RefreshedTokens, _>(config("c", "must not refresh".into()))
        })
        .await
        .unwrap();
    assert!(t.access_token.expose().contains('.'));
}

fn refreshed(n: usize) -> RefreshedTokens {
    RefreshedTokens {
        access_token: Secret::new(jwt(json!({"exp": now_secs() + 3600, "n": n}))),
        refresh_token: Some(Secret::new(format!("rt_rotated_{n}"))),
        id_token: None,
    }
}

#[cfg(unix)]
fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn an_expired_token_is_refreshed_and_the_file_rewritten_keeping_fields_and_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_auth(dir.path(), now_secs() - 10, 0o600);
    let seen = Arc::new(std::sync::Mutex::new(None));
    let seen2 = seen.clone();
    let t = CodexAuthFile::at(&path)
        .tokens(
            "c",
            &CallCx::new(),
            RefreshWhen::Expired,
            move |rt| async move {
                *seen2.lock().unwrap() = Some(rt);
                Ok(refreshed(1))
            },
        )
        .await
        .unwrap();
    assert_eq!(
        seen.lock().unwrap().clone(),
        Some(Secret::new("rt_original_secret"))
    );
    assert_eq!(t.refresh_token, Some(Secret::new("rt_rotated_1")));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(doc["tokens"]["refresh_token"], json!("rt_rotated_1"));
    assert_eq!(doc["extra_field"], json!({"kept": true}));
    assert_eq!(doc["auth_mode"], json!("chatgpt"));
    assert_ne!(doc["last_refresh"], json!("2026-01-01T00:00:00Z"));
    // The id token was not rotated, so the account claim still resolves.
    assert_eq!(t.account_id.as_deref(), Some("acct_claim"));
    #[cfg(unix)]
    assert_eq!(mode_of(&path), 0o600);
    // No temp files left behind.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| n == "auth.json" || n == "auth.json.lock"),
        "{names:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_refreshes_refresh_once_and_leave_valid_json_with_0600() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_auth(dir.path(), now_secs() - 10, 0o600);
    let calls = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..4 {
        // Separate handles, as separate processes would have.
        let file = CodexAuthFile::at(&path);
        let calls = calls.clone();
        tasks.push(tokio::spawn(async move {
            file.tokens("c", &CallCx::new(), RefreshWhen::Expired, |rt| async move {
                let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
                assert_eq!(
                    rt.expose(),
                    "rt_original_secret",
                    "a spent token was reused"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
                Ok(refreshed(n))
            })
            .await
        }));
    }
    let mut access = Vec::new();
    for t in tasks {
        access.push(t.await.unwrap().unwrap().access_token);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(access.windows(2).all(|w| w[0] == w[1]));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(doc["tokens"]["refresh_token"], json!("rt_rotated_1"));
    #[cfg(unix)]
    assert_eq!(mode_of(&path), 0o600);
}

#[tokio::test]
async fn refreshing_a_rejected_token_skips_when_another_process_already_replaced_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_auth(dir.path(), now_secs() + 3600, 0o640);
    let file = CodexAuthFile::at(&path);
    let current = file.load("c").await.unwrap().access_token;
    let t = file
        .tokens(
            "c",
            &CallCx::new(),
            RefreshWhen::Replaces(current),
            |_| async { Ok(refreshed(9)) },
        )
        .await
        .unwrap();
    assert_eq!(t.refresh_token, Some(Secret::new("rt_rotated_9")));
    #[cfg(unix)]
    assert_eq!(mode_of(&path), 0o640, "permissions are kept, not reset");
    let stale = Secret::new("some-older-token");
    let t2 = file
        .tokens(
            "c",
            &CallCx::new(),
            RefreshWhen::Replaces(stale),
            |_| async { Err::<RefreshedTokens, _>(config("c", "must not refresh".into())) },
        )
        .await
        .unwrap();
    assert_eq!(t2.access_token, t.access_token);
}

#[tokio::test]
async fn expired_without_refresh_token_is_auth_error_without_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auth.json");
    let access = jwt(json!({"exp": 1}));
    std::fs::write(
        &path,
        json!({"tokens": {"access_token": access}}).to_string(),
    )
    .unwrap();
    let err = CodexAuthFile::at(&path)
        .tokens("c", &CallCx::new(), RefreshWhen::Expired, |_| async {
            Ok(refreshed(1))
        })
        .await
        .unwrap_err();
    assert!(matches!(err, AdapterError::Auth { .. }), "{err:?}");
    assert!(!format!("{err} {err:?}").contains(&access));
}

#[tokio::test(start_paused = true)]
async fn waiting_for_a_held_lock_is_bounded_by_the_deadline() {
    use fs4::fs_std::FileExt;
    let dir = tempfile::tempdir().unwrap();
    let path = write_auth(dir.path(), now_secs() - 10, 0o600);
    let holder = open_lock_file("c", &dir.path().join("auth.json.lock")).unwrap();
    assert!(FileExt::try_lock_exclusive(&holder).unwrap());
    let cx = CallCx::new().with_timeout(Duration::from_secs(2));
    let err = CodexAuthFile::at(&path)
        .tokens("c", &cx, RefreshWhen::Expired, |_| async {
            Ok(refreshed(1))
        })
        .await
        .unwrap_err();
    assert!(matches!(err, AdapterError::Timeout { .. }), "{err:?}");
}

#[test]
fn refresh_body_and_reply_follow_the_capture() {
    let body = refresh_body(&Secret::new("rt_fake_original"));
    let capture = json!({
        "client_id": "app_EMoamEEZ73f0CkXaXp7hrann",
        "grant_type": "refresh_token",
        "refresh_reason": "proactive_expiry",
        "refresh_token": "rt_fake_original"
    });
    assert_eq!(body, capture);
    let r = parse_refresh_reply("c", &json!({"access_token": "a", "refresh_token": "r"})).unwrap();
    assert_eq!(r.refresh_token, Some(Secret::new("r")));
    assert!(parse_refresh_reply("c", &json!({"id_token": "x"})).is_err());
}
