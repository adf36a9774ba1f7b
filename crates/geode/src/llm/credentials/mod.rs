//! Credentials: environment look-ups and the codex `auth.json` file ([`Secret`] lives in
//! [`crate::secret`] and is re-exported here).
//!
//! Contract:
//! - A [`Secret`] never shows its value through `Debug` or `Display` (both print `***`); the
//!   value is reachable only through [`Secret::expose`], which transports call when they build
//!   a header. Errors built here name the variable or file that is missing, never a value.
//! - [`env_secret`] reads a required key from the environment (an empty value counts as
//!   missing); [`env_string`] reads an optional setting such as a base URL.
//! - [`CodexAuthFile`] reads `$CODEX_HOME/auth.json` (default `~/.codex/auth.json`,
//!   the layout codex writes, docs/wire.md#chatgpt-codex-backend): `tokens.access_token`,
//!   `tokens.refresh_token`, `tokens.account_id` (or the
//!   `https://api.openai.com/auth`.`chatgpt_account_id` claim of the id or access token) and the
//!   expiry from the access token's JWT `exp` (decoded, not verified, as codex does).
//! - [`CodexAuthFile::tokens`] refreshes an expired (or rejected) access token with a caller-supplied
//!   refresher (the HTTP call, a `POST` to `/oauth/token`, lives in [`refresh_over_http`]) and
//!   rewrites the file **atomically** (a temporary file in the same directory, then `rename`),
//!   keeping its permission bits and every field it does not own. Two processes refreshing at
//!   once do not corrupt the file and do not both spend the single-use refresh token: the
//!   refresh runs under an advisory lock on the sidecar `auth.json.lock`, and the file is re-read
//!   after the lock is taken. Waiting for the lock is bounded by the call's deadline (or 30 s).

use crate::llm::call::{AdapterError, CallCx};
use crate::llm::http::{HttpClient, PostRequest};
use base64::Engine as _;
use serde_json::{Map, Value, json};
use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::secret::Secret;

/// Reads a required secret from env var `var`; missing or empty is a `Config` error naming `var`.
pub fn env_secret(adapter: &str, var: &str) -> Result<Secret, AdapterError> {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => Ok(Secret::new(v.trim())),
        _ => Err(AdapterError::Config {
            adapter: adapter.to_owned(),
            message: format!("environment variable {var} is not set"),
        }),
    }
}

/// Reads an optional, non-secret setting (a base URL, a path); empty counts as unset.
pub fn env_string(var: &str) -> Option<String> {
    std::env::var(var)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// A variable of `env`, trimmed; empty counts as unset.
pub fn var_in(env: &dyn crate::llm::registry::Environment, name: &str) -> Option<String> {
    env.var(name)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// Decodes the claims of a JWT without verifying it. `None` when the text is not a JWT.
pub fn jwt_claims(token: &str) -> Option<Map<String, Value>> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    match serde_json::from_slice(&bytes).ok()? {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// The ChatGPT account id claim (`https://api.openai.com/auth`.`chatgpt_account_id`) of a JWT.
fn account_claim(token: &str) -> Option<String> {
    jwt_claims(token)?
        .get("https://api.openai.com/auth")?
        .get("chatgpt_account_id")?
        .as_str()
        .map(str::to_owned)
}

/// The tokens of a ChatGPT login, as read from `auth.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct CodexTokens {
    /// The bearer token for the model POST (a JWT).
    pub access_token: Secret,
    /// The single-use refresh token, when present.
    pub refresh_token: Option<Secret>,
    /// The id token, when present.
    pub id_token: Option<Secret>,
    /// The ChatGPT account id for the `chatgpt-account-id` header.
    pub account_id: Option<String>,
    /// The access token's `exp` (seconds since the Unix epoch), when it is a JWT with one.
    pub expires_at: Option<u64>,
}

impl CodexTokens {
    /// True when the access token expires within `skew` of `now` (unknown expiry: false).
    pub fn is_expired(&self, now: SystemTime, skew: Duration) -> bool {
        let now = now.duration_since(UNIX_EPOCH).unwrap_or_default() + skew;
        self.expires_at.is_some_and(|exp| exp <= now.as_secs())
    }
}

/// The tokens a refresh returned (the refresh token rotates: each one is good for one refresh).
#[derive(Debug, Clone, PartialEq)]
pub struct RefreshedTokens {
    /// The new access token.
    pub access_token: Secret,
    /// The new refresh token, when the server rotated it.
    pub refresh_token: Option<Secret>,
    /// The new id token, when given.
    pub id_token: Option<Secret>,
}

/// The codex client id used by `codex login` (the one codex sends in its refresh request).
pub const CODEX_CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";

/// How long before `exp` a token counts as expired.
pub const EXPIRY_SKEW: Duration = Duration::from_secs(60);

/// How long to wait for another process's refresh when the call has no deadline.
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// The codex `auth.json` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexAuthFile {
    path: PathBuf,
}

impl CodexAuthFile {
    /// The file at `path`.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// `$CODEX_HOME/auth.json`, else `$HOME/.codex/auth.json`, from the process environment.
    pub fn from_env(adapter: &str) -> Result<Self, AdapterError> {
        Self::locate(adapter, &crate::llm::registry::ProcessEnv)
    }

    /// `$CODEX_HOME/auth.json`, else `$HOME/.codex/auth.json`, from `env`.
    pub fn locate(
        adapter: &str,
        env: &dyn crate::llm::registry::Environment,
    ) -> Result<Self, AdapterError> {
        if let Some(home) = var_in(env, "CODEX_HOME") {
            return Ok(Self::at(Path::new(&home).join("auth.json")));
        }
        match var_in(env, "HOME") {
            Some(home) => Ok(Self::at(Path::new(&home).join(".codex").join("auth.json"))),
            None => Err(AdapterError::Config {
                adapter: adapter.to_owned(),
                message: "neither CODEX_HOME nor HOME is set; cannot find codex auth.json"
                    .to_owned(),
            }),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock_path(&self) -> PathBuf {
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(".lock");
        self.path.with_file_name(name)
    }

    /// Reads the tokens (async; the file read runs off the runtime's worker threads).
    pub async fn load(&self, adapter: &str) -> Result<CodexTokens, AdapterError> {
        let path = self.path.clone();
        let adapter_owned = adapter.to_owned();
        let doc = blocking(adapter, move || read_doc(&adapter_owned, &path)).await?;
        tokens_from_doc(adapter, &self.path, &doc)
    }

    /// The tokens, refreshed first when `when` says so (see the module docs): an expired
    /// access token ([`RefreshWhen::Expired`], checked first without the lock), or one the
    /// provider rejected ([`RefreshWhen::Replaces`], e.g. after a 401) unless another process
    /// already replaced it while we waited for the lock.
    ///
    /// `refresh` gets the current refresh token and returns the new tokens; it runs at most
    /// once, under the file lock, and only if the refresh is still needed after re-reading.
    pub async fn tokens<F, Fut>(
        &self,
        adapter: &str,
        cx: &CallCx,
        when: RefreshWhen,
        refresh: F,
    ) -> Result<CodexTokens, AdapterError>
    where
        F: FnOnce(Secret) -> Fut,
        Fut: Future<Output = Result<RefreshedTokens, AdapterError>>,
    {
        if matches!(when, RefreshWhen::Expired) {
            let tokens = self.load(adapter).await?;
            if !tokens.is_expired(SystemTime::now(), EXPIRY_SKEW) {
                return Ok(tokens);
            }
        }
        let _lock = self.lock(adapter, cx).await?;
        // Re-read under the lock: another process may have refreshed already.
        let path = self.path.clone();
        let a = adapter.to_owned();
        let doc = blocking(adapter, move || read_doc(&a, &path)).await?;
        let tokens = tokens_from_doc(adapter, &self.path, &doc)?;
        let needed = match &when {
            RefreshWhen::Expired => tokens.is_expired(SystemTime::now(), EXPIRY_SKEW),
            RefreshWhen::Replaces(stale) => &tokens.access_token == stale,
        };
        if !needed {
            return Ok(tokens);
        }
        let Some(refresh_token) = tokens.refresh_token.clone() else {
            return Err(AdapterError::Auth {
                adapter: adapter.to_owned(),
                status: 401,
                message: format!(
                    "access token in {} expired and there is no refresh token; run `codex login`",
                    self.path.display()
                ),
            });
        };
        let new = cx.run(adapter, refresh(refresh_token)).await?;
        let updated = apply_refresh(doc, &new, SystemTime::now());
        let path = self.path.clone();
        let a = adapter.to_owned();
        let written = updated.clone();
        blocking(adapter, move || write_atomic(&a, &path, &written)).await?;
        tokens_from_doc(adapter, &self.path, &updated)
    }

    /// Takes the advisory lock on the sidecar lock file, polling until the deadline.
    async fn lock(&self, adapter: &str, cx: &CallCx) -> Result<std::fs::File, AdapterError> {
        use fs4::fs_std::FileExt;
        let lock_path = self.lock_path();
        let a = adapter.to_owned();
        let file = blocking(adapter, move || open_lock_file(&a, &lock_path)).await?;
        let limit = cx.with_timeout(LOCK_WAIT);
        limit
            .run(adapter, async {
                loop {
                    match FileExt::try_lock_exclusive(&file) {
                        Ok(true) => return Ok(()),
                        Ok(false) => tokio::time::sleep(Duration::from_millis(20)).await,
                        Err(e) => {
                            return Err(config(
                                adapter,
                                format!("cannot lock {}: {e}", self.lock_path().display()),
                            ));
                        }
                    }
                }
            })
            .await?;
        // The lock is released when `file` is dropped (closing the descriptor).
        Ok(file)
    }
}

/// When [`CodexAuthFile::tokens`] refreshes the access token.
#[derive(Debug, Clone)]
pub enum RefreshWhen {
    /// The re-read access token is expired.
    Expired,
    /// The re-read access token is still this (rejected) one.
    Replaces(Secret),
}

fn config(adapter: &str, message: String) -> AdapterError {
    AdapterError::Config {
        adapter: adapter.to_owned(),
        message,
    }
}

async fn blocking<T: Send + 'static>(
    adapter: &str,
    f: impl FnOnce() -> Result<T, AdapterError> + Send + 'static,
) -> Result<T, AdapterError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| config(adapter, format!("credential file task failed: {e}")))?
}

fn read_doc(adapter: &str, path: &Path) -> Result<Value, AdapterError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        config(
            adapter,
            format!("cannot read codex auth file {}: {e}", path.display()),
        )
    })?;
    // serde_json's error names line/column only, never the text.
    serde_json::from_str(&text).map_err(|e| {
        config(
            adapter,
            format!("codex auth file {} is not valid JSON: {e}", path.display()),
        )
    })
}

fn tokens_from_doc(adapter: &str, path: &Path, doc: &Value) -> Result<CodexTokens, AdapterError> {
    let tokens = doc.get("tokens").and_then(Value::as_object);
    let get = |k: &str| {
        tokens
            .and_then(|t| t.get(k))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let Some(access) = get("access_token") else {
        return Err(config(
            adapter,
            format!(
                "codex auth file {} has no tokens.access_token; run `codex login`",
                path.display()
            ),
        ));
    };
    let id_token = get("id_token");
    let account_id = get("account_id")
        .map(str::to_owned)
        .or_else(|| id_token.and_then(account_claim))
        .or_else(|| account_claim(access));
    let expires_at = jwt_claims(access).and_then(|c| c.get("exp").and_then(Value::as_u64));
    Ok(CodexTokens {
        access_token: Secret::new(access),
        refresh_token: get("refresh_token").map(Secret::new),
        id_token: id_token.map(Secret::new),
        account_id,
        expires_at,
    })
}

/// Puts refreshed tokens and a fresh `last_refresh` into the document, keeping other fields.
fn apply_refresh(mut doc: Value, new: &RefreshedTokens, now: SystemTime) -> Value {
    if !doc.is_object() {
        doc = json!({});
    }
    if let Value::Object(root) = &mut doc {
        let tokens = root
            .entry("tokens")
            .or_insert_with(|| Value::Object(Map::new()));
        if !tokens.is_object() {
            *tokens = Value::Object(Map::new());
        }
        if let Value::Object(t) = tokens {
            t.insert("access_token".into(), new.access_token.expose().into());
            if let Some(r) = &new.refresh_token {
                t.insert("refresh_token".into(), r.expose().into());
            }
            if let Some(i) = &new.id_token {
                t.insert("id_token".into(), i.expose().into());
            }
            let has_account = t.get("account_id").and_then(Value::as_str).is_some();
            if !has_account
                && let Some(acct) = new
                    .id_token
                    .as_ref()
                    .and_then(|i| account_claim(i.expose()))
            {
                t.insert("account_id".into(), acct.into());
            }
        }
        root.insert(
            "last_refresh".into(),
            humantime::format_rfc3339_nanos(now).to_string().into(),
        );
    }
    doc
}

fn open_lock_file(adapter: &str, path: &Path) -> Result<std::fs::File, AdapterError> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path)
        .map_err(|e| config(adapter, format!("cannot open {}: {e}", path.display())))
}

/// Writes `doc` to `path` atomically: temp file in the same directory, fsync, rename.
/// The temp file gets the old file's permission bits (0600 when there was no file).
fn write_atomic(adapter: &str, path: &Path, doc: &Value) -> Result<(), AdapterError> {
    use std::io::Write;
    let fail = |what: &str, e: &dyn fmt::Display| {
        config(
            adapter,
            format!("cannot rewrite {} ({what}): {e}", path.display()),
        )
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let text = serde_json::to_string_pretty(doc).map_err(|e| fail("serialise", &e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".auth.json.")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| fail("create temp file", &e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map(|m| m.permissions().mode() & 0o7777)
            .unwrap_or(0o600);
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(mode))
            .map_err(|e| fail("set permissions", &e))?;
    }
    tmp.write_all(text.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| fail("write", &e))?;
    // On error the temp file is removed by its Drop.
    tmp.persist(path).map_err(|e| fail("rename", &e.error))?;
    Ok(())
}

/// The refresh request body, as codex sends it (docs/wire.md#chatgpt-codex-backend).
pub fn refresh_body(refresh_token: &Secret) -> Value {
    json!({
        "client_id": CODEX_CLIENT_ID,
        "grant_type": "refresh_token",
        "refresh_reason": "proactive_expiry",
        "refresh_token": refresh_token.expose(),
    })
}

/// Reads the token endpoint's reply (`{"access_token", "refresh_token"?, "id_token"?}`).
pub fn parse_refresh_reply(adapter: &str, reply: &Value) -> Result<RefreshedTokens, AdapterError> {
    let get = |k: &str| {
        reply
            .get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(Secret::new)
    };
    let Some(access_token) = get("access_token") else {
        return Err(AdapterError::Protocol {
            adapter: adapter.to_owned(),
            message: "token refresh reply has no access_token".to_owned(),
        });
    };
    Ok(RefreshedTokens {
        access_token,
        refresh_token: get("refresh_token"),
        id_token: get("id_token"),
    })
}

/// Refreshes a ChatGPT login over HTTP: `POST token_url` with [`refresh_body`]. A 400/401
/// from the token endpoint is an `Auth` error (the refresh token is spent or revoked).
pub async fn refresh_over_http(
    http: &HttpClient,
    adapter: &str,
    token_url: &str,
    refresh_token: Secret,
    cx: &CallCx,
) -> Result<RefreshedTokens, AdapterError> {
    let body = refresh_body(&refresh_token);
    let req = PostRequest::json(adapter, token_url, &body)?.header("originator", "codex_cli_rs");
    match http.post_json(&req, cx).await {
        Ok(reply) => parse_refresh_reply(adapter, &reply),
        Err(AdapterError::BadRequest {
            adapter,
            status,
            message,
        }) => Err(AdapterError::Auth {
            adapter,
            status,
            message: format!("token refresh refused: {message}; run `codex login`"),
        }),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests;
