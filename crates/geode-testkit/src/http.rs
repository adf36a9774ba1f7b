//! HTTP adapters pointed at a `geode-fakes` server. Every integration test builds its HTTP
//! adapters here, and only through `geode::llm::build::build`, the entry point `geode` itself
//! uses: a described machine ([`MapEnv`]) names the base URL in its `GEODE_*_BASE_URL`
//! variable and the credential in the adapter's own variable (or, for `codex-oauth`, an
//! `auth.json` under `CODEX_HOME`). Tests therefore name adapters by their registry names and
//! never by their Rust types.
//!
//! The transport's retry policy is the default one (three retries, backoff from 0.5 s). A test
//! that wants a `retry-after` reported rather than waited for gives its call a short deadline
//! ([`short_deadline`]): a backoff sleep that would pass the deadline is not taken.

use super::env::MapEnv;
use geode::llm::adapter::Adapter;
use geode::llm::call::{AdapterError, CallCx};
use geode::llm::registry::{AdapterSpec, Auth, Endpoint, WireFamily};
use geode::llm::settings::AdapterSettings;
use geode::llm::wire::responses::Backend;
use geode_fakes::{FakeServer, Kind, RecordedRequest, Script};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The HTTP adapters, by registry name: every registry row with an HTTP wire family. Everything
/// below is read from the row, so a new HTTP row joins every table here with nothing to edit.
pub fn http_adapters() -> Vec<&'static str> {
    let http: Vec<&'static str> = geode::llm::registry::ADAPTERS
        .iter()
        .filter(|spec| kind_for(spec).is_some())
        .map(|spec| spec.name)
        .collect();
    assert!(http.len() >= 6, "the HTTP adapters: {http:?}");
    http
}

fn row(adapter: &str) -> &'static AdapterSpec {
    geode::llm::registry::spec(adapter)
        .unwrap_or_else(|| panic!("{adapter} is not in the registry"))
}

fn endpoint(adapter: &str) -> Endpoint {
    row(adapter)
        .endpoint
        .unwrap_or_else(|| panic!("{adapter} is not an HTTP adapter"))
}

fn kind_for(spec: &AdapterSpec) -> Option<Kind> {
    Some(match spec.wire_family {
        WireFamily::Responses(Backend::Platform) => Kind::Responses,
        WireFamily::Responses(Backend::Codex) => Kind::ChatGpt,
        WireFamily::Messages => Kind::Messages,
        WireFamily::Chat(_) => Kind::Chat,
        WireFamily::Cli(_) | WireFamily::Local => return None,
    })
}

/// The fake server kind `adapter` talks to: its row's wire family.
pub fn kind_of(adapter: &str) -> Kind {
    kind_for(row(adapter)).unwrap_or_else(|| panic!("{adapter} is not an HTTP adapter"))
}

/// The variable that points `adapter` at another base URL.
pub fn base_url_var(adapter: &str) -> &'static str {
    endpoint(adapter).base_env
}

/// The path of `adapter`'s default base URL (`/api/paas/v4` for GLM); a row with no default
/// server (`openai-compatible`) is served at `/v1`, as OpenAI-compatible servers are.
fn base_path(adapter: &str) -> String {
    let base = endpoint(adapter).default_base;
    if base.is_empty() {
        return "/v1".to_owned();
    }
    let after_scheme = base.split_once("://").map_or(base, |(_, rest)| rest);
    after_scheme.find('/').map_or(String::new(), |at| {
        after_scheme[at..].trim_end_matches('/').to_owned()
    })
}

/// The base URL of `adapter` on a fake at `origin`, with its base's path (GLM's and
/// OpenAI-compatible bases carry their API path).
pub fn base_url(adapter: &str, origin: &str) -> String {
    format!("{origin}{}", base_path(adapter))
}

/// The route `adapter` posts its model calls to.
pub fn model_route(adapter: &str) -> String {
    format!("{}{}", base_path(adapter), endpoint(adapter).path)
}

/// The variable holding `adapter`'s secret (`None` for `codex-oauth`, which reads `auth.json`).
pub fn secret_var(adapter: &str) -> Option<&'static str> {
    match row(adapter).auth {
        Auth::ApiKey { env, .. } | Auth::OptionalApiKey { env, .. } => Some(env),
        Auth::ClaudeLogin { token_env, .. } => Some(token_env),
        _ => None,
    }
}

/// A secret for `adapter` that no test message contains by accident. It does not contain the
/// adapter's name (the name reversed): the tests share one process, and so one scrubber, which
/// would otherwise hide the name in every other test's messages.
pub fn test_secret(adapter: &str) -> String {
    let tag: String = adapter.chars().rev().collect();
    format!("sk-test-{tag}-never-shown-7Qx2Lp9Vw4")
}

/// A described machine for `adapter` against the fake at `origin`: the base URL variable,
/// `secret` in the adapter's variable, `HOME` and `CODEX_HOME` at `home`, and the codex token
/// service on the fake.
pub fn machine(adapter: &str, origin: &str, secret: &str, home: &Path) -> MapEnv {
    let home = home.display().to_string();
    let env = MapEnv::new()
        .set(base_url_var(adapter), base_url(adapter, origin))
        .set("HOME", home.clone())
        .set("CODEX_HOME", home)
        .set("GEODE_CODEX_AUTH_URL", origin);
    match secret_var(adapter) {
        Some(var) => env.set(var, secret),
        None => env,
    }
}

/// Builds `adapter` on `env` with no settings, exactly as `geode` builds it.
pub fn build(adapter: &str, env: &MapEnv) -> Result<Arc<dyn Adapter>, AdapterError> {
    geode::llm::build::build(adapter, &AdapterSettings::default(), env)
}

/// Writes a codex `auth.json` (mode 0600) for `account` into `dir`, its access token expiring
/// in `ttl_secs` seconds (negative: already expired).
pub fn write_codex_auth(dir: &Path, account: &str, ttl_secs: i64) {
    let path = dir.join("auth.json");
    let mut tokens = geode_fakes::chatgpt::fake_tokens(account, ttl_secs);
    tokens["account_id"] = json!(account);
    let doc = json!({"auth_mode": "chatgpt", "OPENAI_API_KEY": null, "tokens": tokens,
                     "last_refresh": "2026-01-01T00:00:00Z"});
    std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// One HTTP adapter on a fresh fake: the server, the adapter, and the machine's home (which
/// holds codex's `auth.json`; dropping the rig removes it).
pub struct Rig {
    /// The fake server playing the script.
    pub server: FakeServer,
    /// The adapter, built by `geode::llm::build::build`.
    pub adapter: Arc<dyn Adapter>,
    /// The machine's home directory.
    pub home: tempfile::TempDir,
    /// The secret the adapter holds (for `codex-oauth`, unused: its tokens are in `auth.json`).
    pub secret: String,
}

impl Rig {
    /// A fake of `adapter`'s kind playing `script`, and `adapter` pointed at it with
    /// [`test_secret`] (codex: a valid `auth.json` for the fake's default account).
    pub async fn start(adapter: &str, script: Script) -> Rig {
        Self::start_with(adapter, script, 3600).await
    }

    /// As [`Rig::start`], codex's access token expiring in `ttl_secs` seconds.
    pub async fn start_with(adapter: &str, script: Script, ttl_secs: i64) -> Rig {
        let server = FakeServer::start(kind_of(adapter), script).await.unwrap();
        let home = tempfile::tempdir().unwrap();
        if adapter == "codex-oauth" {
            write_codex_auth(
                home.path(),
                geode_fakes::chatgpt::DEFAULT_ACCOUNT_ID,
                ttl_secs,
            );
        }
        let secret = test_secret(adapter);
        let env = machine(adapter, &server.base_url(), &secret, home.path());
        let adapter = build(adapter, &env).unwrap();
        Rig {
            server,
            adapter,
            home,
            secret,
        }
    }

    /// Calls the adapter with `req` under a fresh [`CallCx`], bounded by
    /// [`super::TEST_BOUND`].
    pub async fn call(
        &self,
        req: geode::llm::request::AdapterCallRequest,
    ) -> Result<geode::llm::request::AdapterResponse, AdapterError> {
        super::bounded(self.adapter.call(req, &CallCx::new())).await
    }

    /// The requests the fake saw on the adapter's model route (not `openai-compatible`'s
    /// probe).
    pub fn model_calls(&self) -> Vec<RecordedRequest> {
        model_calls(self.adapter.name(), self.server.requests())
    }

    /// The `openai-compatible` probes the fake saw.
    pub fn probes(&self) -> Vec<RecordedRequest> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| geode_fakes::chat::is_probe(&r.body))
            .collect()
    }
}

/// The requests of `seen` on `adapter`'s model route, without `openai-compatible`'s probes.
pub fn model_calls(adapter: &str, seen: Vec<RecordedRequest>) -> Vec<RecordedRequest> {
    let route = model_route(adapter);
    seen.into_iter()
        .filter(|r| r.route() == route && !geode_fakes::chat::is_probe(&r.body))
        .collect()
}

/// A call context with a 2 s deadline: a 429 whose `retry-after` is longer comes back after
/// one try, as the caller's `RateLimited` error, instead of being waited for.
pub fn short_deadline() -> CallCx {
    CallCx::new().with_timeout(Duration::from_secs(2))
}

/// Builds `adapter` from this process's real environment, as `geode` does (only in a child
/// test process whose environment [`run_child`] set: tests cannot change their own).
pub fn build_from_process_env(adapter: &str) -> Result<Arc<dyn Adapter>, AdapterError> {
    geode::llm::build::build(
        adapter,
        &AdapterSettings::default(),
        &geode::llm::registry::ProcessEnv,
    )
}

/// Runs this test binary's ignored test `test` (its full name, [`crate::cli::test_name`]) in a child process with exactly `vars` as its
/// environment; returns whether it passed (a child that ran no test fails the caller).
pub async fn run_child(test: &str, vars: &[(&str, String)]) -> bool {
    let mut cmd = tokio::process::Command::new(std::env::current_exe().unwrap());
    cmd.args(["--ignored", "--exact", test, "--test-threads=1"])
        .env_clear()
        .kill_on_drop(true)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("1 passed") || !out.status.success(),
        "child did not run: {text}"
    );
    if !out.status.success() {
        eprintln!("{text}\n{}", String::from_utf8_lossy(&out.stderr));
    }
    out.status.success()
}

/// What every model call of `adapter` must look like, whichever test made it: `POST` on its
/// route, its family's headers and body fields, its own kind of credential header (masked by
/// the fake), and no test secret anywhere in the recording. At least one model call must be
/// there, and no request elsewhere (but codex's token refresh).
#[track_caller]
pub fn assert_wire_invariants(adapter: &str, seen: &[RecordedRequest]) {
    let route = model_route(adapter);
    if adapter != "codex-oauth" {
        let routes: Vec<&str> = seen.iter().map(|r| r.route()).collect();
        assert!(
            routes.iter().all(|r| *r == route),
            "{adapter}: off route: {routes:?}"
        );
    }
    let calls: Vec<&RecordedRequest> = seen.iter().filter(|r| r.route() == route).collect();
    assert!(
        !calls.is_empty(),
        "{adapter}: no model call reached {route}"
    );
    for r in calls {
        assert_eq!(r.method, "POST", "{adapter}");
        let dump = serde_json::to_string(r).unwrap();
        for a in http_adapters() {
            assert!(
                !dump.contains(&test_secret(a)),
                "{adapter}: a secret reached the recording"
            );
        }
        match kind_of(adapter) {
            Kind::Chat => chat_invariants(r),
            Kind::Messages => messages_invariants(adapter, r),
            kind => responses_invariants(kind, r),
        }
    }
}

/// Chat Completions (GLM, openai-compatible): bearer auth, streamed with the usage chunk asked
/// for (only the `openai-compatible` probe wants one JSON reply), `tool_choice` only `auto` and
/// only with tools.
fn chat_invariants(r: &RecordedRequest) {
    assert_eq!(r.header("authorization"), Some("Bearer ***"));
    assert_eq!(r.header("x-api-key"), None);
    if let Some(choice) = r.body.get("tool_choice") {
        assert_eq!(choice, "auto", "GLM accepts only auto");
        assert!(r.body["tools"].as_array().is_some_and(|t| !t.is_empty()));
    }
    if geode_fakes::chat::is_probe(&r.body) {
        assert_eq!(r.body["stream"], false, "the probe is not streamed");
    } else {
        assert_eq!(r.body["stream"], true);
        assert_eq!(r.body["stream_options"], json!({"include_usage": true}));
    }
}

/// Messages: the version header, JSON, SSE, a positive `max_tokens`, `tool_choice` only with
/// tools; an API key for `anthropic-payg`, a bearer token and the OAuth beta for
/// `anthropic-oauth`.
fn messages_invariants(adapter: &str, r: &RecordedRequest) {
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.body["stream"], true);
    assert!(r.body["max_tokens"].as_u64().is_some_and(|n| n > 0));
    if r.body.get("tool_choice").is_some() {
        assert!(
            r.body["tools"].as_array().is_some_and(|t| !t.is_empty()),
            "tool_choice without tools"
        );
    }
    if adapter == "anthropic-oauth" {
        assert_eq!(r.header("authorization"), Some("Bearer ***"));
        assert_eq!(r.header("x-api-key"), None);
        let beta = r.header("anthropic-beta").unwrap_or_default();
        assert!(
            beta.split(',').any(|b| b.trim() == "oauth-2025-04-20"),
            "{beta}"
        );
    } else {
        assert_eq!(r.header("x-api-key"), Some("***"));
        assert_eq!(r.header("authorization"), None);
        assert_eq!(r.header("anthropic-beta"), None);
    }
}

/// Responses (both backends): `store: false`, SSE, input and instructions, bearer auth; the
/// ChatGPT backend's account and session headers and no `max_output_tokens`; a schema format
/// always complete.
fn responses_invariants(kind: Kind, r: &RecordedRequest) {
    let b = &r.body;
    assert_eq!(b["store"], json!(false), "store");
    assert_eq!(b["stream"], json!(true), "stream");
    assert!(
        b["input"].as_array().is_some_and(|i| !i.is_empty()),
        "input"
    );
    assert!(b["instructions"].is_string(), "instructions");
    assert_eq!(r.header("authorization"), Some("Bearer ***"));
    assert_eq!(r.header("accept"), Some("text/event-stream"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    if kind == Kind::ChatGpt {
        assert!(b.get("max_output_tokens").is_none());
        assert_eq!(
            r.header("chatgpt-account-id"),
            Some(geode_fakes::chatgpt::DEFAULT_ACCOUNT_ID)
        );
        assert!(r.header("originator").is_some() && r.header("session-id").is_some());
    } else {
        assert!(b["max_output_tokens"].is_u64());
    }
    if let Some(f) = b.pointer("/text/format") {
        assert_eq!(f["type"], json!("json_schema"));
        assert!(f["strict"].is_boolean() && f["name"].is_string() && f["schema"].is_object());
    }
}

/// Fails unless `resp` ended its turn normally with the fake's default usage (11 in, 7 out).
#[track_caller]
pub fn assert_ended_with_fake_usage(resp: &geode::llm::request::AdapterResponse) {
    assert_eq!(resp.stop_reason, geode::vocab::StopReason::EndTurn);
    assert_eq!((resp.usage.input_tokens, resp.usage.output_tokens), (11, 7));
}

/// The `name` of every tool in a request `body` (Messages and Responses shape).
pub fn tool_names(body: &serde_json::Value) -> Vec<&str> {
    body["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default()
}
