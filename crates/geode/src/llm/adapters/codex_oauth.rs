//! `codex-oauth`: the ChatGPT/Codex backend with a ChatGPT login (`wire.md` §3; no published
//! contract, see §3.6), `POST {base}/backend-api/codex/responses`, SSE only.
//!
//! Settings: `GEODE_CODEX_BASE_URL` (default `https://chatgpt.com`), `GEODE_CODEX_AUTH_URL`
//! (token service base, default `https://auth.openai.com`; the refresh goes to
//! `{auth}/oauth/token`), and the codex login in `$CODEX_HOME/auth.json` (default
//! `~/.codex/auth.json`). An expired access token is refreshed before the call, and a 401 is
//! answered by one forced refresh and one retry; both rewrite `auth.json` atomically under a
//! lock ([`CodexAuthFile`]). Headers: bearer token, `chatgpt-account-id`, `originator`,
//! `session-id`, `accept: text/event-stream`. Body: [`crate::llm::wire::responses`] with
//! [`Backend::Codex`]: `stream:true`, `store:false`, no `max_output_tokens`.

use crate::llm::adapter::{Adapter, AdapterError, CallCx};
use crate::llm::adapters::{build_streamed, join_url, stream_responses, uuid_v4};
use crate::llm::credentials::{CodexAuthFile, CodexTokens, env_string, refresh_over_http};
use crate::llm::http::{HttpClient, PostRequest};
use crate::llm::request::{AdapterCallRequest, AdapterResponse};
use crate::llm::wire::responses::Backend;
use bytes::Bytes;

/// The adapter's registry name.
pub const NAME: &str = "codex-oauth";
/// The default backend base URL.
pub const DEFAULT_BASE_URL: &str = "https://chatgpt.com";
/// The default token service base URL.
pub const DEFAULT_AUTH_URL: &str = "https://auth.openai.com";
/// The env var overriding the backend base URL.
pub const BASE_URL_ENV: &str = "GEODE_CODEX_BASE_URL";
/// The env var overriding the token service base URL.
pub const AUTH_URL_ENV: &str = "GEODE_CODEX_AUTH_URL";
/// The model used when the request names none.
pub const DEFAULT_MODEL: &str = "gpt-5.5";
/// The `originator` header value (the reference's).
pub const ORIGINATOR: &str = "codex_cli_rs";

/// Explicit settings (for tests and embedding).
#[derive(Debug, Clone)]
pub struct CodexOauthSettings {
    /// The backend base URL (without `/backend-api`).
    pub base_url: String,
    /// The token service base URL (without `/oauth/token`).
    pub auth_url: String,
    /// The codex `auth.json`.
    pub auth_file: CodexAuthFile,
}

/// The `codex-oauth` adapter.
#[derive(Debug, Clone)]
pub struct CodexOauth {
    settings: CodexOauthSettings,
    http: HttpClient,
}

impl CodexOauth {
    /// Reads the settings from the environment; a missing `auth.json` is a `Config` error
    /// naming the file.
    pub fn from_env() -> Result<Self, AdapterError> {
        let auth_file = CodexAuthFile::from_env(NAME)?;
        if !auth_file.path().is_file() {
            return Err(AdapterError::Config {
                adapter: NAME.to_owned(),
                message: format!(
                    "codex auth file {} not found (set CODEX_HOME or run `codex login`)",
                    auth_file.path().display()
                ),
            });
        }
        Self::new(CodexOauthSettings {
            base_url: env_string(BASE_URL_ENV).unwrap_or_else(|| DEFAULT_BASE_URL.to_owned()),
            auth_url: env_string(AUTH_URL_ENV).unwrap_or_else(|| DEFAULT_AUTH_URL.to_owned()),
            auth_file,
        })
    }

    /// An adapter with explicit settings on the shared HTTP client.
    pub fn new(settings: CodexOauthSettings) -> Result<Self, AdapterError> {
        Ok(Self::with_http(settings, HttpClient::shared()?))
    }

    /// An adapter with explicit settings and HTTP client.
    pub fn with_http(settings: CodexOauthSettings, http: HttpClient) -> Self {
        Self { settings, http }
    }

    /// The model-call URL.
    pub fn url(&self) -> String {
        join_url(&self.settings.base_url, "/backend-api/codex/responses")
    }

    /// The token refresh URL.
    pub fn token_url(&self) -> String {
        join_url(&self.settings.auth_url, "/oauth/token")
    }

    async fn post(
        &self,
        body: Bytes,
        tokens: &CodexTokens,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        let Some(account) = tokens.account_id.as_deref() else {
            return Err(AdapterError::Config {
                adapter: NAME.to_owned(),
                message: format!(
                    "{} has no account id (tokens.account_id or the id token's chatgpt_account_id claim)",
                    self.settings.auth_file.path().display()
                ),
            });
        };
        let post = PostRequest::new(NAME, self.url(), body)
            .bearer(&tokens.access_token)
            .header("chatgpt-account-id", account)
            .header("originator", ORIGINATOR)
            .header("session-id", uuid_v4());
        stream_responses(&self.http, &post, cx).await
    }
}

#[async_trait::async_trait]
impl Adapter for CodexOauth {
    fn name(&self) -> &str {
        NAME
    }

    async fn call(
        &self,
        mut req: AdapterCallRequest,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        let built = build_streamed(NAME, Backend::Codex, DEFAULT_MODEL, &mut req)?;
        let file = &self.settings.auth_file;
        let token_url = self.token_url();
        let refresh = |rt| refresh_over_http(&self.http, NAME, &token_url, rt, cx);
        let tokens = file.fresh_tokens(NAME, cx, refresh).await?;
        let first = self.post(built.body.clone(), &tokens, cx).await;
        let mut resp = match first {
            Err(AdapterError::Auth { status: 401, .. }) if tokens.refresh_token.is_some() => {
                let refresh = |rt| refresh_over_http(&self.http, NAME, &token_url, rt, cx);
                let stale = &tokens.access_token;
                let tokens = file.force_refresh(NAME, cx, stale, refresh).await?;
                self.post(built.body, &tokens, cx).await?
            }
            other => other?,
        };
        resp.wire = built.wire;
        Ok(resp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_follow_the_settings() {
        let a = CodexOauth::new(CodexOauthSettings {
            base_url: "http://127.0.0.1:9/".into(),
            auth_url: "http://127.0.0.1:9".into(),
            auth_file: CodexAuthFile::at("/nonexistent/auth.json"),
        })
        .unwrap();
        assert_eq!(a.url(), "http://127.0.0.1:9/backend-api/codex/responses");
        assert_eq!(a.token_url(), "http://127.0.0.1:9/oauth/token");
        assert_eq!(a.name(), "codex-oauth");
    }
}
