//! `geode-mcp` (run as `geode mcp`): every named contract of `geode.toml` as an MCP tool, over
//! stdio (the default, for desktop clients, which start it themselves) or streamable HTTP
//! (`--listen`). A binary of its own, so that the `geode` worker does not load an MCP server's
//! code. On stdio, stdout carries the protocol only: everything else goes to stderr.
//!
//! Exit codes: 0 after a clean stop, 2 for a usage or configuration error.

use clap::Parser;
use geode::ProcessEnv;
use geode_mcp::http::{self, HttpLimits};
use geode_mcp::{ContractServer, Limits};
use rmcp::ServiceExt;
use std::net::SocketAddr;
use std::path::PathBuf;

use geode_gateway::serve::KEYS_ENV;

/// Exit code for a usage or configuration error.
const EXIT_USAGE: u8 = geode::protocol::exit::USAGE;

/// Serve every `[contracts.NAME]` of geode.toml as an MCP tool whose answers are validated
/// against its outputSchema, with the guarantee ledger.
#[derive(Parser)]
#[command(name = "geode mcp", version)]
struct McpArgs {
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio (port 0: any free port,
    /// printed on stderr). An address off loopback needs inbound keys.
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
    /// HTTP: a file of inbound keys, one per line (else `GEODE_GATEWAY_KEYS`, comma-separated).
    #[arg(long, requires = "listen")]
    keys_file: Option<PathBuf>,
    /// Tool calls run at once; a call beyond it gets an `isError` result at once.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=4096))]
    max_in_flight: u32,
    /// The project directory: its geode.toml is read (else the user's config), and relative
    /// paths in it start there. Default: the working directory. Desktop clients start servers
    /// in a directory of their own, so give it there.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// HTTP: the largest request body, in bytes.
    #[arg(long, default_value_t = 16 << 20)]
    max_body_bytes: usize,
}

fn main() -> std::process::ExitCode {
    match run(McpArgs::parse()) {
        Ok(code) => std::process::ExitCode::from(code),
        Err(e) => {
            eprintln!("geode mcp: {}", geode::secret::scrub(&format!("{e:#}")));
            std::process::ExitCode::from(EXIT_USAGE)
        }
    }
}

fn run(args: McpArgs) -> anyhow::Result<u8> {
    let usage = |message: String| {
        eprintln!("geode mcp: {}", geode::secret::scrub(&message));
        Ok(EXIT_USAGE)
    };
    // Over stdio there is no one to let in: the variable counts only for HTTP.
    let keys = match (&args.keys_file, args.listen) {
        (None, None) => Ok(Default::default()),
        (file, _) => geode_gateway::serve::inbound_keys(file.as_deref()),
    };
    let keys = match keys {
        Ok(k) => k,
        Err(e) => return usage(e),
    };
    if let Some(addr) = args.listen
        && !addr.ip().is_loopback()
        && keys.is_empty()
    {
        return usage(format!(
            "refusing to listen on {addr} without inbound keys: set {KEYS_ENV} or --keys-file"
        ));
    }
    if let Some(dir) = &args.dir
        && let Err(e) = std::env::set_current_dir(dir)
    {
        return usage(format!("cannot use --dir {}: {e}", dir.display()));
    }
    let settings = match std::env::current_dir()
        .map_err(|e| format!("cannot read the working directory: {e}"))
        .and_then(|dir| {
            geode::Config::load(&dir, &ProcessEnv)
                .and_then(|c| c.settings(&ProcessEnv))
                .map_err(|e| e.to_string())
        }) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let client = match geode_gateway::serve::client(&settings) {
        Ok(c) => c,
        Err(e) => return usage(e.to_string()),
    };
    let server = ContractServer::new(
        client,
        settings,
        Limits {
            max_in_flight: args.max_in_flight as usize,
        },
    );
    if server.tool_count() == 0 {
        eprintln!("geode mcp: geode.toml defines no [contracts.NAME]: there are no tools to serve");
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let Some(addr) = args.listen else {
            let running = match server.serve(rmcp::transport::stdio()).await {
                Ok(r) => r,
                Err(e) => return usage(format!("the client's first message was not taken: {e}")),
            };
            running.waiting().await?;
            return Ok(0);
        };
        let listener = match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => l,
            Err(e) => return usage(format!("cannot listen on {addr}: {e}")),
        };
        let local = listener.local_addr()?;
        eprintln!("geode mcp: listening on http://{local}{}", http::PATH);
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let shutdown = async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            eprintln!("geode mcp: stopping");
        };
        let limits = HttpLimits {
            max_body_bytes: args.max_body_bytes,
        };
        http::serve(server, listener, keys, limits, shutdown).await?;
        Ok(0)
    })
}
