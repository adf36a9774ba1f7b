//! `geode config trust [PATH]`: trusts a project's `geode.toml` (default: the working
//! directory's) as it is now, so that it may send credentials to the hosts it names and choose the cache
//! (`geode::config::trust`). Exit 0, or 2 when the file cannot be read, is not a usable config,
//! or the trust list cannot be written.

use clap::Subcommand;
use std::path::PathBuf;

#[derive(Subcommand)]
pub(crate) enum ConfigCommand {
    /// Trust a project's geode.toml as it is now (a change asks again).
    Trust {
        /// The file (default: ./geode.toml).
        path: Option<PathBuf>,
    },
}

pub(crate) fn run(command: ConfigCommand) -> u8 {
    let ConfigCommand::Trust { path } = command;
    let path = path.unwrap_or_else(|| PathBuf::from("geode.toml"));
    match geode::config::Config::trust_file(&path, &geode::llm::registry::ProcessEnv) {
        Ok(list) => {
            println!(
                "trusted {} as it is now (in {})",
                path.display(),
                list.display()
            );
            0
        }
        Err(e) => {
            eprintln!("geode: {e}");
            crate::EXIT_USAGE
        }
    }
}
