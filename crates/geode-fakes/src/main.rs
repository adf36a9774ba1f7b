//! `geode-fakes`: serve one fake provider from the command line.
//!
//! `geode-fakes serve --kind responses|chatgpt|messages|chat [--port N] [--script FILE]` prints
//! the base URL on the first stdout line, then one JSON line per request (secrets masked), and
//! serves until interrupted (Ctrl-C or SIGTERM). Without `--script` it answers every model call
//! with `auto` (a schema instance or a fixed text, like the Python fakes).
//!
//! HTTPS: `--tls-cert FILE --tls-key FILE`, or `--tls-ca-out FILE` for a throwaway CA whose
//! certificate is written to FILE (what codex in ChatGPT mode needs, with
//! `CODEX_CA_CERTIFICATE=FILE`).
//!
//! `geode-fakes auth-json [--stale]` prints a fake codex `auth.json` (ChatGPT mode).
//!
//! Exit codes: 0 after a clean stop, 1 on an error (bad script, port in use).

use anyhow::Context;
use clap::{Parser, Subcommand};
use geode_fakes::{FakeServer, Kind, Script, TlsIdentity};
use std::io::Write;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "geode-fakes",
    version,
    about = "Fake LLM provider servers on 127.0.0.1"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve one fake until interrupted.
    Serve {
        /// The protocol: responses, chatgpt, messages or chat.
        #[arg(long)]
        kind: Kind,
        /// The port on 127.0.0.1 (0 picks a free one).
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// A JSON script: an array of replies or {"steps": [...], "default": ..., "usage": ...}.
        #[arg(long)]
        script: Option<PathBuf>,
        /// Serve HTTPS with this PEM certificate chain (needs --tls-key).
        #[arg(long, requires = "tls_key", conflicts_with = "tls_ca_out")]
        tls_cert: Option<PathBuf>,
        /// The PEM private key for --tls-cert.
        #[arg(long, requires = "tls_cert")]
        tls_key: Option<PathBuf>,
        /// Serve HTTPS with a throwaway CA and leaf; write the CA certificate (PEM) here,
        /// e.g. for CODEX_CA_CERTIFICATE.
        #[arg(long)]
        tls_ca_out: Option<PathBuf>,
    },
    /// Print a fake codex auth.json for ChatGPT mode.
    AuthJson {
        /// Tokens that expired ten minutes ago, last refresh 30 days ago.
        #[arg(long)]
        stale: bool,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Serve {
            kind,
            port,
            script,
            tls_cert,
            tls_key,
            tls_ca_out,
        } => {
            let tls = match (tls_cert, tls_key, tls_ca_out) {
                (Some(cert), Some(key), _) => Some(TlsIdentity::from_files(&cert, &key)?),
                (_, _, Some(ca_out)) => {
                    let identity = TlsIdentity::generate()?;
                    let ca = identity.ca_pem().unwrap_or_default();
                    std::fs::write(&ca_out, ca)
                        .with_context(|| format!("cannot write {}", ca_out.display()))?;
                    Some(identity)
                }
                _ => None,
            };
            serve(kind, port, script, tls).await
        }
        Command::AuthJson { stale } => {
            println!(
                "{}",
                serde_json::to_string_pretty(&geode_fakes::chatgpt::codex_auth_json(stale))?
            );
            Ok(())
        }
    }
}

async fn serve(
    kind: Kind,
    port: u16,
    script: Option<PathBuf>,
    tls: Option<TlsIdentity>,
) -> anyhow::Result<()> {
    let script = match script {
        Some(path) => Script::from_file(&path)?,
        None => Script::default(),
    };
    let (tap, mut taps) = tokio::sync::mpsc::unbounded_channel();
    let mut builder = FakeServer::builder(kind).script(script).port(port).tap(tap);
    if let Some(identity) = tls {
        builder = builder.tls(identity);
    }
    let server = builder
        .start()
        .await
        .with_context(|| format!("cannot listen on 127.0.0.1:{port}"))?;
    let mut out = std::io::stdout();
    writeln!(out, "{}", server.base_url())?;
    out.flush()?;
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    loop {
        tokio::select! {
            Some(request) = taps.recv() => {
                match writeln!(out, "{}", serde_json::to_string(&request)?) {
                    Ok(()) => out.flush()?,
                    // A closed stdout (broken pipe) is not an error: just stop logging.
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => break,
                    Err(e) => return Err(e.into()),
                }
            }
            _ = tokio::signal::ctrl_c() => break,
            _ = terminate.recv() => break,
        }
    }
    server.shutdown().await;
    Ok(())
}
