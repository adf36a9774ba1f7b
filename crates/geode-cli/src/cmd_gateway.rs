//! `geode gateway`: runs the `geode-gateway` binary (beside this one, or `GEODE_GATEWAY_BIN`)
//! in this process's place, with the same arguments, so that the worker binary does not carry a
//! web server (docs/gateway.md).

use std::os::unix::process::CommandExt;
use std::path::PathBuf;

/// The variable naming the gateway binary, when it is not beside `geode`.
const GATEWAY_BIN_ENV: &str = "GEODE_GATEWAY_BIN";

#[derive(clap::Args)]
pub(crate) struct GatewayArgs {
    /// The gateway's own flags (`geode gateway --help` lists them).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

fn program() -> PathBuf {
    if let Some(bin) = std::env::var_os(GATEWAY_BIN_ENV) {
        return PathBuf::from(bin);
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("geode-gateway")))
        .unwrap_or_else(|| PathBuf::from("geode-gateway"))
}

pub(crate) fn run(args: GatewayArgs) -> anyhow::Result<u8> {
    let program = program();
    // `exec` returns only when the program could not be started.
    let e = std::process::Command::new(&program).args(&args.args).exec();
    eprintln!(
        "geode gateway: cannot run {}: {e} (build it with `cargo build -p geode-gateway`, or set {GATEWAY_BIN_ENV})",
        program.display()
    );
    Ok(crate::EXIT_USAGE)
}
