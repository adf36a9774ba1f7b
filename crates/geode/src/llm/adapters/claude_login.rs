//! The Claude subscription's token source (`anthropic-oauth`): `CLAUDE_CODE_OAUTH_TOKEN`, else
//! Claude Code's credentials file `$CLAUDE_CONFIG_DIR/.credentials.json` (default
//! `~/.claude/.credentials.json`), field `claudeAiOauth.accessToken`, re-read on every call.
//! Requests carry the token as a bearer, `anthropic-beta: oauth-2025-04-20`, and a system list
//! whose first block is exactly [`IDENTITY`] (without it non-Haiku models answer a bare 400;
//! docs/wire.md#anthropic-messages-api).
//!
//! The token is never refreshed here: an expired file token (`claudeAiOauth.expiresAt`, epoch
//! milliseconds, in the past) is a `Config` error asking to run `claude` once. Policy caution
//! (docs/wire.md#anthropic-messages-api): Anthropic states that subscription OAuth is meant for
//! Claude Code and its own apps; use this adapter only with your own login, and prefer
//! `claude-cli` when in doubt.

use crate::llm::call::{AdapterError, CallCx};
use crate::llm::http::PostRequest;
use crate::secret::Secret;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The `anthropic-beta` value OAuth tokens require.
pub const OAUTH_BETA: &str = "oauth-2025-04-20";
/// The system block OAuth requests must start with.
pub const IDENTITY: &str = "You are Claude Code, Anthropic's official CLI for Claude.";

/// The largest credentials file read.
const MAX_FILE: u64 = 1 << 20;

/// Where the token comes from. `Debug` never shows it.
#[derive(Debug, Clone)]
pub enum ClaudeLogin {
    /// A fixed token (from `CLAUDE_CODE_OAUTH_TOKEN`).
    Fixed(Secret),
    /// Claude Code's credentials file, re-read per call; errors name the token variable.
    File {
        /// The file.
        path: PathBuf,
        /// The variable that would have held a token.
        token_env: &'static str,
    },
}

impl ClaudeLogin {
    /// Reads the credentials file at `path` once to check it holds a usable token now.
    pub fn from_file(
        adapter: &str,
        token_env: &'static str,
        path: PathBuf,
    ) -> Result<Self, AdapterError> {
        read_file_token(adapter, token_env, &path)?;
        Ok(Self::File { path, token_env })
    }

    /// `post` signed with the current token and the OAuth beta header.
    pub async fn sign(&self, post: PostRequest, cx: &CallCx) -> Result<PostRequest, AdapterError> {
        let adapter = post.adapter().to_owned();
        let token = match self {
            Self::Fixed(t) => t.clone(),
            Self::File { path, token_env } => {
                let (path, name, token_env) = (path.clone(), adapter.clone(), *token_env);
                let read =
                    tokio::task::spawn_blocking(move || read_file_token(&name, token_env, &path));
                cx.run(&adapter, async {
                    read.await.map_err(|_| AdapterError::Config {
                        adapter: adapter.clone(),
                        message: "the credentials file reader failed".to_owned(),
                    })?
                })
                .await?
            }
        };
        Ok(post.bearer(&token).header("anthropic-beta", OAUTH_BETA))
    }
}

/// Reads `claudeAiOauth.accessToken` from the file at `path`; errors name the path, never a value.
fn read_file_token(adapter: &str, token_env: &str, path: &Path) -> Result<Secret, AdapterError> {
    use std::io::Read;
    let config = |message: String| AdapterError::Config {
        adapter: adapter.to_owned(),
        message,
    };
    let shown = path.display();
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE).read_to_string(&mut text))
        .map_err(|e| {
            config(format!(
                "{token_env} is not set and {shown} cannot be read ({})",
                e.kind()
            ))
        })?;
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    parse_credentials(&text, now_ms).map_err(|why| config(format!("{shown}: {why}")))
}

/// The access token in a Claude Code credentials file, or why there is none usable at `now_ms`.
fn parse_credentials(text: &str, now_ms: u64) -> Result<Secret, &'static str> {
    let v: Value = serde_json::from_str(text).map_err(|_| "not valid JSON")?;
    let oauth = v.get("claudeAiOauth").ok_or("no claudeAiOauth entry")?;
    let token = oauth
        .get("accessToken")
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
        .ok_or("no claudeAiOauth.accessToken")?;
    if oauth
        .get("expiresAt")
        .and_then(Value::as_u64)
        .is_some_and(|exp| exp <= now_ms)
    {
        return Err("the access token has expired; run `claude` once to refresh it");
    }
    Ok(Secret::new(token.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::ErrorKind;

    #[test]
    fn credentials_file_token_is_read_and_expiry_checked() {
        let text = r#"{"claudeAiOauth": {"accessToken": "sk-ant-oat01-abc", "refreshToken": "r",
                       "expiresAt": 2000, "scopes": ["user:inference"]}}"#;
        assert_eq!(
            parse_credentials(text, 1000).map(|s| s.expose().to_owned()),
            Ok("sk-ant-oat01-abc".into())
        );
        assert!(
            parse_credentials(text, 3000)
                .unwrap_err()
                .contains("expired")
        );
        assert!(parse_credentials(r#"{"claudeAiOauth": {"accessToken": ""}}"#, 0).is_err());
        assert!(parse_credentials(r#"{"other": 1}"#, 0).is_err());
        assert!(parse_credentials("nope", 0).is_err());
        let no_expiry = r#"{"claudeAiOauth": {"accessToken": "t"}}"#;
        assert!(parse_credentials(no_expiry, u64::MAX).is_ok());
    }

    #[test]
    fn missing_or_bad_file_is_a_config_error_naming_the_path_not_the_token() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join(".credentials.json");
        let from = |p: &Path| ClaudeLogin::from_file("anthropic-oauth", "T", p.to_path_buf());
        let err = from(&missing).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config);
        assert!(err.to_string().contains(".credentials.json"), "{err}");
        std::fs::write(
            &missing,
            r#"{"claudeAiOauth": {"accessToken": "sk-ant-oat01-zzz", "expiresAt": 1}}"#,
        )
        .unwrap();
        let err = from(&missing).unwrap_err();
        assert!(
            err.to_string().contains("expired") && !err.to_string().contains("zzz"),
            "{err}"
        );
    }

    #[test]
    fn debug_never_shows_the_token() {
        let a = ClaudeLogin::Fixed(Secret::new("sk-ant-oat01-secret"));
        assert!(!format!("{a:?}").contains("sk-ant-oat01-secret"));
    }
}
