//! `geode-gateway` (run as `geode gateway`): the OpenAI-compatible server, with every adapter
//! geode knows (`local` through its `geode-engine` process) and geode's own configuration. A
//! binary of its own, so that the `geode` worker does not load a web server's code. It binds to
//! loopback unless told otherwise, and refuses any other address without inbound keys. SIGTERM
//! or Ctrl-C: no new connection is taken, requests in flight finish, then it exits 0.
//!
//! Exit codes: 0 after a clean stop, 2 for a usage or configuration error.

use clap::Parser;
use geode::ProcessEnv;
use geode_gateway::store::{ResponseStore, StoreSettings};
use geode_gateway::{Gateway, Limits};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use geode_gateway::serve::KEYS_ENV;

/// Exit code for a usage or configuration error.
const EXIT_USAGE: u8 = geode::protocol::exit::USAGE;

/// Serve the OpenAI API (chat completions, responses, models) in front of every geode route,
/// with the guarantee ledger.
#[derive(Parser)]
#[command(name = "geode gateway", version)]
struct GatewayArgs {
    /// The address to listen on (port 0: any free port, printed on stderr).
    #[arg(long, default_value = "127.0.0.1:8787")]
    listen: SocketAddr,
    /// A file of inbound keys, one per line (else `GEODE_GATEWAY_KEYS`, comma-separated).
    #[arg(long)]
    keys_file: Option<PathBuf>,
    /// The largest request body, in bytes (32 MiB: Anthropic's request limit, room for images
    /// and PDFs as data URLs; at most --max-in-flight bodies are held at once).
    #[arg(long, default_value_t = 32 << 20)]
    max_body_bytes: usize,
    /// Requests served at once; beyond it a request gets 429 with Retry-After.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=65536))]
    max_in_flight: u32,
    /// The longest one request may take, in seconds (the retry included).
    #[arg(long, default_value = "600", value_parser = seconds)]
    request_timeout: Duration,
    /// Connections open at once; more wait until one closes.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    max_connections: u32,
    /// The longest a client may stall, in seconds: to send a request head or the next piece of
    /// a body, or to take the next piece of an answer (an idle connection is closed after it
    /// too).
    #[arg(long, default_value = "10", value_parser = seconds)]
    client_timeout: Duration,
}

/// A number of seconds, at least a millisecond: a timeout of 1e-300 s is positive, and useless.
fn seconds(text: &str) -> Result<Duration, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && s >= 0.001 => Ok(Duration::from_secs_f64(s.min(1e9))),
        _ => Err("a number of seconds, at least 0.001".to_owned()),
    }
}

/// The inbound keys: `--keys-file`, else `GEODE_GATEWAY_KEYS` (unset or empty: none). A file
/// that others may write is refused: whoever can write it can let themselves in.
fn main() -> std::process::ExitCode {
    match run(GatewayArgs::parse()) {
        Ok(code) => std::process::ExitCode::from(code),
        Err(e) => {
            eprintln!("geode gateway: {}", geode::secret::scrub(&format!("{e:#}")));
            std::process::ExitCode::from(EXIT_USAGE)
        }
    }
}

fn run(args: GatewayArgs) -> anyhow::Result<u8> {
    let usage = |message: String| {
        eprintln!("geode gateway: {message}");
        Ok(EXIT_USAGE)
    };
    let keys = match geode_gateway::serve::inbound_keys(args.keys_file.as_deref()) {
        Ok(k) => k,
        Err(e) => return usage(e),
    };
    if !args.listen.ip().is_loopback() && keys.is_empty() {
        return usage(format!(
            "refusing to listen on {} without inbound keys: set {KEYS_ENV} or --keys-file",
            args.listen
        ));
    }
    // The configuration is read once, here, and resolved with the environment.
    let settings = match std::env::current_dir()
        .map_err(|e| format!("cannot read the working directory: {e}"))
        .and_then(|dir| {
            geode::config::Config::load(&dir, &ProcessEnv)
                .and_then(|c| c.settings(&ProcessEnv))
                .map_err(|e| e.to_string())
        }) {
        Ok(c) => c,
        Err(e) => return usage(e),
    };
    let client = match geode_gateway::serve::client(&settings) {
        Ok(c) => c,
        Err(e) => return usage(e.to_string()),
    };
    let limits = Limits {
        max_body_bytes: args.max_body_bytes,
        max_in_flight: args.max_in_flight as usize,
        request_timeout: args.request_timeout,
        max_connections: args.max_connections as usize,
        client_timeout: args.client_timeout,
    };
    let store = match StoreSettings::from_config(&settings.gateway.store, &ProcessEnv) {
        Ok(s) => s,
        Err(e) => return usage(format!("bad [gateway.store]: {e}")),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let store = match ResponseStore::open(&store) {
            Ok(s) => s,
            Err(e) => return usage(format!("cannot open the response store: {e}")),
        };
        let gateway = Gateway::new(client, settings, Arc::new(ProcessEnv), keys, limits, store);
        let listener = match tokio::net::TcpListener::bind(args.listen).await {
            Ok(l) => l,
            Err(e) => return usage(format!("cannot listen on {}: {e}", args.listen)),
        };
        let addr = listener.local_addr()?;
        eprintln!("geode gateway: listening on http://{addr}");
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let shutdown = async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            eprintln!("geode gateway: stopping: finishing the requests in flight");
        };
        gateway.serve(listener, shutdown).await?;
        Ok(0)
    })
}
