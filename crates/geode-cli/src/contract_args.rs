//! `geode run --contract NAME --input k=v`: the task of a named contract of geode.toml
//! ([`geode::config::contracts`]), the same one `geode mcp` runs for a tool call, with the
//! command line's flags laid over it.

use crate::task_args::TaskArgs;
use geode::Task;
use geode::config::Settings;

/// The task of contract `name` for `inputs` (`NAME=VALUE` each), under the flags in `args`.
pub(crate) fn task(
    args: &TaskArgs,
    settings: &Settings,
    name: &str,
    inputs: &[String],
) -> anyhow::Result<Task> {
    let contract = settings.contracts.get(name).ok_or_else(|| {
        let known: Vec<&str> = settings.contracts.keys().map(String::as_str).collect();
        anyhow::anyhow!(
            "{}; the contracts here: {}",
            geode::config::contracts::InputError::UnknownContract(name.to_owned()),
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        )
    })?;
    let task_args = contract.args_from_pairs(inputs)?;
    let task = contract.task(&task_args, settings)?;
    args.over_contract(task)
}
