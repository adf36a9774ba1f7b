//! `geode mcp`: runs the `geode-mcp` binary (beside this one, or `GEODE_MCP_BIN`) in this
//! process's place, with the same arguments, so that the worker binary does not carry an MCP
//! server and its HTTP stack (docs/mcp.md). Standard streams are inherited as they are: on stdio
//! they are the protocol's channel.

use crate::sibling::Sibling;

#[derive(clap::Args)]
pub(crate) struct McpArgs {
    /// The server's own flags (`geode mcp --help` lists them).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

pub(crate) fn run(args: McpArgs) -> anyhow::Result<u8> {
    Sibling {
        command: "geode mcp",
        binary: "geode-mcp",
        env: "GEODE_MCP_BIN",
    }
    .exec(&args.args)
}
