//! The ChatGPT login's token source (`codex-oauth`; the backend has no published contract
//! and changes with codex releases, docs/wire.md#chatgpt-codex-backend): the codex `auth.json`
//! ([`CodexAuthFile`]), its access token refreshed at `{token service}/oauth/token` before the
//! call when expired, and once more (then one retry)
//! when the backend answers 401; both rewrite `auth.json` atomically under a lock. Requests
//! carry the bearer token, `chatgpt-account-id`, `originator` and a per-call `session-id`.

use crate::llm::call::{AdapterError, CallCx};
use crate::llm::credentials::{CodexAuthFile, CodexTokens, RefreshWhen, refresh_over_http};
use crate::llm::http::{HttpClient, PostRequest};
use crate::llm::request::AdapterResponse;
use std::future::Future;

/// The `originator` header value (GEODE's).
pub const ORIGINATOR: &str = "codex_cli_rs";

/// A codex login: the file and the token service.
#[derive(Debug, Clone)]
pub struct CodexLogin {
    /// The codex `auth.json`.
    pub auth_file: CodexAuthFile,
    /// The token service base URL (without `/oauth/token`).
    pub token_url: String,
}

impl CodexLogin {
    /// The token refresh URL.
    pub fn refresh_url(&self) -> String {
        crate::llm::http::join_url(&self.token_url, "/oauth/token")
    }

    /// Runs `send` with `post` signed by fresh tokens; a 401 with a refresh token available is
    /// answered by one forced refresh and one more `send`.
    pub async fn call<F, Fut>(
        &self,
        http: &HttpClient,
        post: &PostRequest,
        cx: &CallCx,
        send: F,
    ) -> Result<AdapterResponse, AdapterError>
    where
        F: Fn(PostRequest) -> Fut,
        Fut: Future<Output = Result<AdapterResponse, AdapterError>>,
    {
        let name = post.adapter().to_owned();
        let url = self.refresh_url();
        let refresh = |rt| refresh_over_http(http, &name, &url, rt, cx);
        let expired = RefreshWhen::Expired;
        let tokens = self.auth_file.tokens(&name, cx, expired, refresh).await?;
        match send(self.sign(post.clone(), &tokens)?).await {
            Err(AdapterError::Auth { status: 401, .. }) if tokens.refresh_token.is_some() => {
                let refresh = |rt| refresh_over_http(http, &name, &url, rt, cx);
                let rejected = RefreshWhen::Replaces(tokens.access_token.clone());
                let tokens = self.auth_file.tokens(&name, cx, rejected, refresh).await?;
                send(self.sign(post.clone(), &tokens)?).await
            }
            other => other,
        }
    }

    fn sign(&self, post: PostRequest, tokens: &CodexTokens) -> Result<PostRequest, AdapterError> {
        let Some(account) = tokens.account_id.as_deref() else {
            return Err(AdapterError::Config {
                adapter: post.adapter().to_owned(),
                message: format!(
                    "{} has no account id (tokens.account_id or the id token's chatgpt_account_id claim)",
                    self.auth_file.path().display()
                ),
            });
        };
        Ok(post
            .bearer(&tokens.access_token)
            .header("chatgpt-account-id", account)
            .header("originator", ORIGINATOR)
            .header("session-id", super::uuid_v4()))
    }
}
