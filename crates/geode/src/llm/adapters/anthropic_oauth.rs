//! `anthropic-oauth`: the Messages API with a Claude subscription's OAuth access token.
//!
//! | | |
//! |---|---|
//! | endpoint | `POST {base}/v1/messages`, base from `GEODE_ANTHROPIC_BASE_URL`, default `https://api.anthropic.com` |
//! | auth | `Authorization: Bearer <token>` (no `x-api-key`), `anthropic-beta: oauth-2025-04-20`, `anthropic-version: 2023-06-01` |
//! | token | `CLAUDE_CODE_OAUTH_TOKEN`, else Claude Code's credentials file `$CLAUDE_CONFIG_DIR/.credentials.json` (default `~/.claude/.credentials.json`), field `claudeAiOauth.accessToken`, re-read on every call |
//! | system | a list whose first block is exactly [`IDENTITY`] (a later copy is removed), `wire.md` §4.3 |
//! | `response_schema` | as `anthropic-payg` |
//!
//! The token is never refreshed here: an expired file token (`claudeAiOauth.expiresAt`, epoch
//! milliseconds, in the past) is a `Config` error asking to run `claude` once. Policy caution
//! (`wire.md` §4.3): Anthropic states that subscription OAuth is meant for Claude Code and its
//! own apps; use this adapter only with your own login, and prefer `claude-cli` when in doubt.

use super::anthropic::MessagesClient;
use crate::ledger::StructuredOutputMode;
use crate::llm::adapter::{Adapter, AdapterError, CallCx};
use crate::llm::credentials::{Secret, env_string};
use crate::llm::http::HttpClient;
use crate::llm::request::{AdapterCallRequest, AdapterResponse};
use crate::llm::wire::messages;
use crate::schema::ResponseSchema;
use serde_json::Value;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

/// The adapter's registry name.
pub const NAME: &str = "anthropic-oauth";
/// The environment variable holding a token directly.
pub const TOKEN_ENV: &str = "CLAUDE_CODE_OAUTH_TOKEN";
/// The environment variable naming Claude Code's config directory (default `~/.claude`).
pub const CONFIG_DIR_ENV: &str = "CLAUDE_CONFIG_DIR";
/// The `anthropic-beta` value OAuth tokens require.
pub const OAUTH_BETA: &str = "oauth-2025-04-20";
/// The system block OAuth requests must start with.
pub const IDENTITY: &str = "You are Claude Code, Anthropic's official CLI for Claude.";

/// The largest credentials file read.
const MAX_FILE: u64 = 1 << 20;

/// Where the token comes from.
#[derive(Debug, Clone)]
enum TokenSource {
    /// A fixed token (env or explicit).
    Fixed(Secret),
    /// Claude Code's credentials file, re-read per call.
    File(PathBuf),
}

/// The Anthropic subscription adapter. `Debug` never shows the token.
#[derive(Debug, Clone)]
pub struct AnthropicOauth {
    client: MessagesClient,
    token: TokenSource,
}

impl AnthropicOauth {
    /// From the environment: `CLAUDE_CODE_OAUTH_TOKEN`, else the credentials file (which must
    /// hold a usable token now); `GEODE_ANTHROPIC_BASE_URL` for the base.
    pub fn from_env() -> Result<Self, AdapterError> {
        let base = MessagesClient::base_url_from_env();
        if let Some(token) = env_string(TOKEN_ENV) {
            return Self::new(base, Secret::new(token));
        }
        let path = env_string(CONFIG_DIR_ENV)
            .map(PathBuf::from)
            .or_else(|| env_string("HOME").map(|h| PathBuf::from(h).join(".claude")))
            .map(|dir| dir.join(".credentials.json"))
            .ok_or_else(|| config(format!("{TOKEN_ENV} is not set and HOME is unknown")))?;
        Self::with_credentials_file(base, path)
    }

    /// An adapter for `base_url` with a fixed `token`.
    pub fn new(base_url: impl Into<String>, token: Secret) -> Result<Self, AdapterError> {
        Ok(Self {
            client: MessagesClient::new(NAME, base_url)?,
            token: TokenSource::Fixed(token),
        })
    }

    /// An adapter reading its token from a Claude Code credentials file at `path` (checked now).
    pub fn with_credentials_file(
        base_url: impl Into<String>,
        path: impl Into<PathBuf>,
    ) -> Result<Self, AdapterError> {
        let path = path.into();
        read_file_token(&path)?;
        Ok(Self {
            client: MessagesClient::new(NAME, base_url)?,
            token: TokenSource::File(path),
        })
    }

    /// The same adapter on another HTTP client (retry policy, timeouts).
    pub fn with_http(mut self, http: HttpClient) -> Self {
        self.client = self.client.with_http(http);
        self
    }

    /// The same adapter with another default model.
    pub fn with_default_model(mut self, model: impl Into<String>) -> Self {
        self.client = self.client.with_default_model(model);
        self
    }

    async fn current_token(&self) -> Result<Secret, AdapterError> {
        match &self.token {
            TokenSource::Fixed(t) => Ok(t.clone()),
            TokenSource::File(path) => {
                let path = path.clone();
                tokio::task::spawn_blocking(move || read_file_token(&path))
                    .await
                    .map_err(|_| config("the credentials file reader failed".to_owned()))?
            }
        }
    }
}

fn config(message: String) -> AdapterError {
    AdapterError::Config {
        adapter: NAME.to_owned(),
        message,
    }
}

/// Reads `claudeAiOauth.accessToken` from the file at `path`; errors name the path, never a value.
fn read_file_token(path: &std::path::Path) -> Result<Secret, AdapterError> {
    use std::io::Read;
    let shown = path.display();
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE).read_to_string(&mut text))
        .map_err(|e| {
            config(format!(
                "{TOKEN_ENV} is not set and {shown} cannot be read ({})",
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

#[async_trait::async_trait]
impl Adapter for AnthropicOauth {
    fn name(&self) -> &str {
        NAME
    }

    fn wire_mode(&self, schema: Option<&ResponseSchema>) -> StructuredOutputMode {
        messages::mode_for(schema)
    }

    async fn call(
        &self,
        req: AdapterCallRequest,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        let token = cx.run(NAME, self.current_token()).await?;
        let mut built = self.client.build(&req);
        messages::prepend_identity(&mut built.body, IDENTITY);
        let post = self
            .client
            .post(&built)?
            .bearer(&token)
            .header("anthropic-beta", OAUTH_BETA);
        self.client.send(&post, built, cx).await
    }
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
        let err =
            AnthropicOauth::with_credentials_file("http://127.0.0.1:9", &missing).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config);
        assert!(err.to_string().contains(".credentials.json"), "{err}");
        std::fs::write(
            &missing,
            r#"{"claudeAiOauth": {"accessToken": "sk-ant-oat01-zzz", "expiresAt": 1}}"#,
        )
        .unwrap();
        let err =
            AnthropicOauth::with_credentials_file("http://127.0.0.1:9", &missing).unwrap_err();
        assert!(
            err.to_string().contains("expired") && !err.to_string().contains("zzz"),
            "{err}"
        );
    }

    #[test]
    fn debug_never_shows_the_token() {
        let a =
            AnthropicOauth::new("http://127.0.0.1:9", Secret::new("sk-ant-oat01-secret")).unwrap();
        assert!(!format!("{a:?}").contains("sk-ant-oat01-secret"));
        assert_eq!(a.name(), NAME);
    }
}
