//! Running one HTTP or CLI cell: the misbehaving fake server or CLI, the adapter pointed at it,
//! one worker run ([`crate::run`]), then the leak probes.
//!
//! HTTP adapters are built by `geode::llm::build::build` from a config and a described machine
//! ([`MapEnv`]), exactly as `geode` builds them; the CLI adapters run the real `claude` / `codex`
//! against a fake server for provider faults, and fake CLIs for process faults (`local` runs in
//! geode-local's `fault_matrix_local`). Every run goes through `run_worker`, so the outcome is
//! what `geode run` would
//! report: the adapter's typed error (recorded as it leaves the adapter), the ledger and the
//! exit code.

use crate::run::{Verdict, judge, request, run};
use crate::support::env::MapEnv;
use crate::support::fake_cli::{self, Behaviour, Cli};
use crate::support::{cli_rig, decision_answer, decision_schema, http, leaks};
use crate::table::{ADAPTERS, Expect, Fault, Outcome};
use geode::llm::adapter::Adapter;
use geode::llm::adapters::claude_cli::{ClaudeCliAdapter, ClaudeCliConfig};
use geode::llm::adapters::cli_common::CliOptions;
use geode::llm::adapters::codex_cli::{CodexCliAdapter, CodexCliConfig};
use geode::llm::settings::{AdapterSetting, AdapterSettings};
use geode::secret::Secret;
use geode::vocab::ErrorKind;
use geode_fakes::{FakeServer, Kind, Reply, Script};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The API key each adapter is given: distinct, and sharing no 12-character window with any
/// name or message the suite uses, so a leak is never a false alarm.
fn key(adapter: &str) -> String {
    let tail = match adapter {
        "openai-payg" => "Q7xZ2pL9vW4kT8mR3nB6yC1d",
        "anthropic-payg" => "H5jK8wE2rT9yU4iO7pA3sD6f",
        "anthropic-oauth" => "M3nB7vC2xZ9lK5jH8gF4dS1a",
        "glm-payg" => "R8tY3uI6oP1aS4dF7gH2jK9l",
        "glm-coding-plan" => "W2eR5tY8uI3oP6aS9dF1gH4j",
        "claude-cli" => "B4nM7qW1eR5tY9uI2oP6aS3d",
        "openai-compatible" => "J3kL6zX9cV2bN5mQ8wE1rT4y",
        _ => "V6bN9mQ2wE5rT8yU1iO4pA7s",
    };
    // As long as real keys (an OpenAI project key is over 100 characters), so a message cut
    // at 300 characters can cut one in half.
    format!("sk-proj-{tail}-{}", tail.chars().rev().collect::<String>())
}

/// What every cell shares: the fake CLI scripts (written before anything is spawned).
pub struct Shared {
    _dir: tempfile::TempDir,
    fakes: BTreeMap<(&'static str, &'static str), PathBuf>,
}

fn behaviour(fault: Fault, cli: Cli) -> Option<(&'static str, Behaviour)> {
    let adapter = match cli {
        Cli::Claude => "claude-cli",
        Cli::Codex => "codex-cli",
    };
    Some(match fault {
        Fault::CliCrash => ("crash", Behaviour::Crash),
        Fault::CliHangWithChild => ("hang-with-child", Behaviour::HangWithChild),
        Fault::CliGiantOutput => ("giant-output", Behaviour::GiantOutput),
        Fault::CliNonJson => ("non-json", Behaviour::NonJson),
        Fault::CliAnswerThenHang => ("answer-then-hang", Behaviour::AnswerThenHang),
        Fault::CliExit137 => ("exit-137", Behaviour::Exit137),
        Fault::SecretOnStderr => ("secret-on-stderr", Behaviour::SecretOnStderr(key(adapter))),
        _ => return None,
    })
}

impl Shared {
    /// Writes every fake CLI.
    pub fn new() -> Shared {
        let dir = tempfile::tempdir().unwrap();
        let mut fakes = BTreeMap::new();
        for row in crate::table::ROWS {
            for (cli, adapter) in [(Cli::Claude, "claude-cli"), (Cli::Codex, "codex-cli")] {
                if let Some((name, b)) = behaviour(row.fault, cli) {
                    let file = format!("{adapter}-{name}");
                    let path = fake_cli::write(dir.path(), &file, cli, &b);
                    fakes.insert((adapter, name), path);
                }
            }
        }
        Shared { _dir: dir, fakes }
    }
}

/// An error body in `kind`'s shape carrying `message`.
fn error_body(kind: Kind, message: &str) -> Value {
    match kind {
        Kind::Messages => json!({"type": "error",
            "error": {"type": "authentication_error", "message": message}}),
        Kind::Chat => json!({"error": {"code": "1000", "message": message}}),
        _ => json!({"error": {"message": message, "type": "invalid_request_error",
            "param": null, "code": "invalid_api_key"}}),
    }
}

/// What the fake answers for `fault`; `secret` is the credential the adapter holds.
fn reply(fault: Fault, kind: Kind, secret: &str) -> Reply {
    let status = |status: u16, body: Value, retry_after| Reply::Status {
        status,
        body,
        retry_after,
    };
    match fault {
        Fault::Status(s) => Reply::status(s),
        Fault::RateLimited(retry_after) => status(429, Value::Null, retry_after),
        Fault::ResetMidStream => Reply::ResetMidBody,
        Fault::TruncatedStream => Reply::StreamCut,
        Fault::HangBeforeHeaders => Reply::Hang,
        Fault::HangMidBody => Reply::HangMidBody,
        Fault::EndlessStream => Reply::Endless,
        Fault::OversizedBody => Reply::Text("x".repeat(17 << 20)),
        Fault::GarbageBody => Reply::Garbage,
        Fault::NonJsonBody => Reply::Html,
        Fault::JsonToStreamRequest => {
            Reply::IgnoreStream(Box::new(Reply::Json(decision_answer("answered whole"))))
        }
        Fault::InBandError => Reply::InBandError("The service is overloaded.".into()),
        Fault::SecretInErrorBody => status(
            401,
            error_body(kind, &format!("Incorrect API key provided: {secret}.")),
            None,
        ),
        Fault::SecretAfterPadding => status(
            401,
            error_body(kind, &format!("{} key {secret}", "padding ".repeat(32))),
            None,
        ),
        Fault::SecretInBandError => Reply::InBandError(format!("The key {secret} was refused.")),
        Fault::SecretInAnswer => Reply::Json(decision_answer(&format!("the key is {secret}"))),
        _ => Reply::Auto,
    }
}

/// Runs one cell of adapter `column` for `fault`.
pub async fn run_cell(shared: &Shared, fault: Fault, column: usize, expect: Expect) -> Verdict {
    let adapter = ADAPTERS[column];
    match adapter {
        "claude-cli" | "codex-cli" => cli_cell(shared, fault, adapter, expect).await,
        "local" => {
            Verdict::setup_failed("local cells run in geode-local's fault_matrix_local test".into())
        }
        _ if fault == Fault::RefreshRace => refresh_race(expect).await,
        _ => http_cell(fault, adapter, expect).await,
    }
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Writes a codex `auth.json` into `dir`; returns its secrets (access and refresh token).
fn write_codex_auth(dir: &Path, stale: bool, refresh_token: Option<&str>) -> Vec<String> {
    let mut auth = geode_fakes::chatgpt::codex_auth_json(stale);
    if let Some(rt) = refresh_token {
        auth["tokens"]["refresh_token"] = json!(rt);
    }
    std::fs::write(dir.join("auth.json"), auth.to_string()).unwrap();
    ["access_token", "refresh_token"]
        .iter()
        .filter_map(|k| auth["tokens"][k].as_str().map(str::to_owned))
        .collect()
}

/// The described machine and settings for HTTP adapter `adapter` against `origin`: the base
/// URL comes from the settings here (the other suites set the variable), the key from the
/// adapter's variable.
fn http_setup(adapter: &str, origin: &str, home: &Path) -> (AdapterSettings, MapEnv) {
    let cfg = AdapterSettings::default().with(
        adapter,
        AdapterSetting {
            base_url: Some(http::base_url(adapter, origin)),
            ..AdapterSetting::default()
        },
    );
    let home = home.display().to_string();
    let env = MapEnv::new()
        .set("HOME", home.clone())
        .set("CODEX_HOME", home)
        .set("GEODE_CODEX_AUTH_URL", origin);
    let env = match http::secret_var(adapter) {
        Some(var) => env.set(var, key(adapter)),
        None => env,
    };
    (cfg, env)
}

/// An HTTP cell's deadline. Transient failures get room for the transport's three retries
/// (about 3.5 s of backoff) and the worker's one retry to finish well before it, so the
/// outcome is the provider's error rather than a race with the deadline; the big bodies get
/// room to be read; the rest need only a short one.
fn http_deadline(fault: Fault) -> Duration {
    match fault {
        // A cut or reset stream is the worker's to retry once.
        Fault::Status(500..=599)
        | Fault::RateLimited(_)
        | Fault::ConnectionRefused
        | Fault::TruncatedStream
        | Fault::ResetMidStream => Duration::from_secs(12),
        // Tens of megabytes through unoptimised test builds on a busy machine: the budget ends
        // these as soon as 16 MiB have arrived; the deadline only has to stay out of its way.
        Fault::EndlessStream | Fault::OversizedBody => Duration::from_secs(10),
        _ => Duration::from_secs(3),
    }
}

async fn http_cell(fault: Fault, adapter: &str, expect: Expect) -> Verdict {
    let deadline = http_deadline(fault);
    let home = tempfile::tempdir().unwrap();
    let kind = http::kind_of(adapter);
    let secrets = if adapter == "codex-oauth" {
        let revoked = format!(
            "{}-Zq81Lm4Xv0Pw",
            geode_fakes::chatgpt::REVOKED_REFRESH_PREFIX
        );
        let refused = fault == Fault::RefreshFails;
        write_codex_auth(home.path(), refused, refused.then_some(revoked.as_str()))
    } else {
        vec![key(adapter)]
    };
    let (server, origin, port) = if fault == Fault::ConnectionRefused {
        let port = closed_port();
        (None, format!("http://127.0.0.1:{port}"), port)
    } else {
        let script = Script::always(reply(fault, kind, &secrets[0]));
        let server = FakeServer::start(kind, script).await.unwrap();
        let (origin, port) = (server.base_url(), server.addr().port());
        (Some(server), origin, port)
    };
    let (cfg, env) = http_setup(adapter, &origin, home.path());
    let built = match geode::llm::build::build(adapter, &cfg, &env) {
        Ok(a) => a,
        Err(e) => return Verdict::setup_failed(format!("build failed: {e}")),
    };
    let outcome = run_decision(built, deadline).await;
    let mut verdict = judge(expect, &outcome, deadline, &secrets);
    if fault == Fault::RateLimited(Some(1)) {
        let calls = server.as_ref().map_or(0, model_calls);
        if calls < 2 {
            verdict
                .problems
                .push(format!("retry-after 1 s not retried ({calls} call)"));
        }
    }
    if matches!(
        expect.outcome,
        Outcome::Failed(ErrorKind::Auth | ErrorKind::BadRequest)
    ) {
        // Fatal: neither the transport nor the worker may try again (codex-oauth answers a 401
        // with one forced refresh and one retry).
        let most = if adapter == "codex-oauth" { 2 } else { 1 };
        let calls = server.as_ref().map_or(0, model_calls);
        if calls > most {
            verdict
                .problems
                .push(format!("a fatal error was retried ({calls} calls)"));
        }
    }
    if let Some(server) = server {
        server.shutdown().await;
    }
    no_socket_left(verdict, port).await
}

/// `verdict`, with a problem added when sockets to `port` are still open (after settling).
async fn no_socket_left(mut verdict: Verdict, port: u16) -> Verdict {
    let open = leaks::settle(|| leaks::sockets_on_port(port)).await;
    if open > 0 {
        verdict
            .problems
            .push(format!("{open} sockets to the fake left open"));
    }
    verdict
}

/// One worker run of `adapter` on the `Decision` request, within `deadline`.
async fn run_decision(adapter: Arc<dyn Adapter>, deadline: Duration) -> crate::run::Run {
    run(
        adapter,
        request(Some(decision_schema()), deadline),
        deadline,
        None,
    )
    .await
}

/// Model calls the fake received (side endpoints such as the token refresh excluded).
fn model_calls(server: &FakeServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| {
            let path = r.route();
            (path.ends_with("/responses")
                || path.ends_with("/messages")
                || path.ends_with("/completions"))
                && !geode_fakes::chat::is_probe(&r.body)
        })
        .count()
}

/// Eight concurrent calls on one expired login: all succeed, the token is refreshed once.
async fn refresh_race(expect: Expect) -> Verdict {
    let deadline = Duration::from_secs(5);
    let home = tempfile::tempdir().unwrap();
    let secrets = write_codex_auth(home.path(), true, None);
    let server = FakeServer::start(Kind::ChatGpt, Script::default())
        .await
        .unwrap();
    let (cfg, env) = http_setup("codex-oauth", &server.base_url(), home.path());
    let adapter = match geode::llm::build::build("codex-oauth", &cfg, &env) {
        Ok(a) => a,
        Err(e) => return Verdict::setup_failed(format!("build failed: {e}")),
    };
    let runs = futures::future::join_all((0..8).map(|_| {
        run(
            adapter.clone(),
            request(Some(decision_schema()), deadline),
            deadline,
            None,
        )
    }))
    .await;
    let mut verdict = runs
        .iter()
        .map(|r| judge(expect, r, deadline, &secrets))
        .find(|v| !v.problems.is_empty())
        .unwrap_or_else(|| judge(expect, &runs[0], deadline, &secrets));
    let refreshes = server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/oauth/token"))
        .count();
    if refreshes != 1 {
        verdict
            .problems
            .push(format!("{refreshes} refreshes for one expired token"));
    }
    let port = server.addr().port();
    drop(adapter);
    server.shutdown().await;
    no_socket_left(verdict, port).await
}

/// True for the faults a real CLI meets through its provider (the fake server).
fn through_real_cli(fault: Fault) -> bool {
    matches!(
        fault,
        Fault::Status(_)
            | Fault::RateLimited(_)
            | Fault::HangBeforeHeaders
            | Fault::SecretInErrorBody
    )
}

async fn cli_cell(shared: &Shared, fault: Fault, adapter: &'static str, expect: Expect) -> Verdict {
    let claude = adapter == "claude-cli";
    let real = through_real_cli(fault);
    let deadline = match (real, fault) {
        (true, Fault::HangBeforeHeaders) => Duration::from_secs(15),
        (true, _) => Duration::from_secs(45),
        (false, Fault::CliGiantOutput) => Duration::from_secs(10),
        (false, _) => Duration::from_secs(3),
    };
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("work");
    let temp_root = home.path().join("schemas");
    std::fs::create_dir(&work).unwrap();
    std::fs::create_dir(&temp_root).unwrap();
    let secret = key(adapter);
    // The process holds this key, as it would when reading it from its environment.
    let _held = Secret::new(secret.clone());
    let (server, bin) = if real {
        let kind = if claude {
            Kind::Messages
        } else {
            Kind::Responses
        };
        let server = FakeServer::start(kind, Script::always(reply(fault, kind, &secret)))
            .await
            .unwrap();
        let bin = if claude {
            crate::cli_support::claude_bin()
        } else {
            crate::cli_support::codex_bin()
        };
        (Some(server), bin)
    } else {
        let Some((name, _)) = behaviour(fault, if claude { Cli::Claude } else { Cli::Codex })
        else {
            return Verdict::setup_failed(format!("no fake CLI for {fault:?}"));
        };
        (None, shared.fakes[&(adapter, name)].clone())
    };
    let base = server.as_ref().map(FakeServer::base_url);
    let mut cli = CliOptions::with_timeout(deadline).env("HOME", home.path());
    cli.bin = Some(bin);
    cli.cwd = Some(work);
    let built: Arc<dyn Adapter> = if claude {
        cli = cli
            .env("ANTHROPIC_API_KEY", &secret)
            .env("ANTHROPIC_AUTH_TOKEN", "")
            .env("CLAUDE_CODE_OAUTH_TOKEN", "")
            .env("CLAUDE_CODE_MAX_RETRIES", "0");
        if let Some(base) = &base {
            cli = cli.env("ANTHROPIC_BASE_URL", base);
        }
        Arc::new(ClaudeCliAdapter::new(ClaudeCliConfig {
            cli,
            ..ClaudeCliConfig::default()
        }))
    } else {
        cli = cli
            .env("CODEX_HOME", home.path())
            .env("OPENAI_API_KEY", "")
            .env("GEODE_FAKE_KEY", &secret);
        let base = base.unwrap_or_else(|| "http://127.0.0.1:9".to_owned());
        Arc::new(CodexCliAdapter::new(CodexCliConfig {
            cli,
            config_overrides: cli_rig::codex_fake_provider(&base, "GEODE_FAKE_KEY"),
            temp_root: Some(temp_root.clone()),
            ..CodexCliConfig::default()
        }))
    };
    let outcome = run_decision(built, deadline).await;
    let mut verdict = judge(expect, &outcome, deadline, &[secret]);
    let marker = format!("HOME={}", home.path().display());
    let left = leaks::settle(|| leaks::processes_with_env(&marker)).await;
    if !left.is_empty() {
        verdict.problems.push(format!("processes left: {left:?}"));
    }
    let files: Vec<String> = std::fs::read_dir(&temp_root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if !files.is_empty() {
        verdict.problems.push(format!("temp files left: {files:?}"));
    }
    if let Some(server) = server {
        server.shutdown().await;
    }
    verdict
}
