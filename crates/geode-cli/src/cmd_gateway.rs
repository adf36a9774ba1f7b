//! `geode gateway`: runs the `geode-gateway` binary (beside this one, or `GEODE_GATEWAY_BIN`)
//! in this process's place, with the same arguments, so that the worker binary does not carry a
//! web server (docs/gateway.md).

use crate::sibling::Sibling;

#[derive(clap::Args)]
pub(crate) struct GatewayArgs {
    /// The gateway's own flags (`geode gateway --help` lists them).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

pub(crate) fn run(args: GatewayArgs) -> anyhow::Result<u8> {
    Sibling {
        command: "geode gateway",
        binary: "geode-gateway",
        env: "GEODE_GATEWAY_BIN",
    }
    .exec(&args.args)
}
