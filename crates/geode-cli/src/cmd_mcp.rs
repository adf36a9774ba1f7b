//! `geode mcp`: runs the `geode-mcp` binary (beside this one, or `GEODE_MCP_BIN`) in this
//! process's place, with the same arguments, so that the worker binary does not carry an MCP
//! server and its HTTP stack (docs/mcp.md). Standard streams are inherited as they are: on stdio
//! they are the protocol's channel.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;

/// The variable naming the MCP server binary, when it is not beside `geode`.
const MCP_BIN_ENV: &str = "GEODE_MCP_BIN";

#[derive(clap::Args)]
pub(crate) struct McpArgs {
    /// The server's own flags (`geode mcp --help` lists them).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

fn program() -> PathBuf {
    if let Some(bin) = std::env::var_os(MCP_BIN_ENV) {
        return PathBuf::from(bin);
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("geode-mcp")))
        .unwrap_or_else(|| PathBuf::from("geode-mcp"))
}

pub(crate) fn run(args: McpArgs) -> anyhow::Result<u8> {
    let program = program();
    // `exec` returns only when the program could not be started.
    let e = std::process::Command::new(&program).args(&args.args).exec();
    eprintln!(
        "geode mcp: cannot run {}: {e} (build it with `cargo build -p geode-mcp`, or set {MCP_BIN_ENV})",
        program.display()
    );
    Ok(crate::EXIT_USAGE)
}
