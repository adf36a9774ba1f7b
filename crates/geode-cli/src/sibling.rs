//! The commands served by a binary of their own (`geode gateway`, `geode mcp`): that binary,
//! found beside `geode` or named by a variable, run in this process's place with the same
//! arguments, so that the worker binary, spawned per task, carries no web or MCP server.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;

/// A command served by another binary.
pub(crate) struct Sibling {
    /// The command as users type it (`geode gateway`).
    pub(crate) command: &'static str,
    /// The binary's file name (`geode-gateway`).
    pub(crate) binary: &'static str,
    /// The variable naming the binary when it is not beside `geode`.
    pub(crate) env: &'static str,
}

impl Sibling {
    fn program(&self) -> PathBuf {
        if let Some(bin) = std::env::var_os(self.env) {
            return PathBuf::from(bin);
        }
        std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(|dir| dir.join(self.binary)))
            .unwrap_or_else(|| PathBuf::from(self.binary))
    }

    /// Runs the binary with `args` in this process's place; returns only when it could not be
    /// started (then with the usage exit code and how to build it).
    pub(crate) fn exec(&self, args: &[String]) -> anyhow::Result<u8> {
        let program = self.program();
        let e = std::process::Command::new(&program).args(args).exec();
        eprintln!(
            "{}: cannot run {}: {e} (build it with `cargo build -p {}`, or set {})",
            self.command,
            program.display(),
            self.binary,
            self.env
        );
        Ok(crate::EXIT_USAGE)
    }
}
