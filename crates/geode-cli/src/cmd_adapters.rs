//! `geode adapters`: the capability table, and which adapters are configured here (the
//! built-in ones and the `[providers.NAME]` of `geode.toml`).

use clap::Args;
use geode::llm::registry::{AdapterSpec, ProcessEnv, markdown_table};

#[derive(Args)]
pub(crate) struct AdaptersArgs {
    /// Print JSON for machines.
    #[arg(long, conflicts_with = "markdown")]
    json: bool,
    /// Print the README's Markdown wiring table.
    #[arg(long)]
    markdown: bool,
}

pub(crate) fn run(args: AdaptersArgs) -> anyhow::Result<u8> {
    if args.markdown {
        print!("{}", markdown_table());
        return Ok(0);
    }
    let cfg = match crate::config() {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let adapters: Vec<&AdapterSpec> = cfg.routing.adapters.all().collect();
    let env = ProcessEnv;
    if args.json {
        let rows: Vec<_> = adapters
            .iter()
            .map(|a| {
                serde_json::json!({
                    "name": a.name,
                    "guarantee": a.schema_route.best_mode().level().as_str(),
                    "wire": a.wire,
                    "schema_on_wire": a.schema_on_wire,
                    "modes": a.schema_route.modes_text(),
                    "framework_tools": a.framework_tools,
                    "tools_with_schema": a.tools_with_schema,
                    "streaming": a.streaming,
                    "limits": a.limits,
                    "inputs": a.inputs.words(),
                    "credentials": a.credential_text(),
                    "configured": a.is_configured(&env),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(0);
    }
    // Columns as wide as their longest cell.
    let name_w = adapters
        .iter()
        .map(|a| a.name.len())
        .max()
        .unwrap_or(0)
        .max(7);
    let modes_w = adapters
        .iter()
        .map(|a| a.schema_route.modes_text().len())
        .max()
        .unwrap_or(0)
        .max(5);
    let inputs_w = adapters
        .iter()
        .map(|a| a.inputs.short().len())
        .max()
        .unwrap_or(0)
        .max(6);
    println!(
        "{:<name_w$} {:<modes_w$} {:<11} {:<6} {:<6} {:<inputs_w$} {:<10} credentials",
        "adapter", "modes", "guarantee", "tools", "tools+", "inputs", "configured"
    );
    for a in &adapters {
        println!(
            "{:<name_w$} {:<modes_w$} {:<11} {:<6} {:<6} {:<inputs_w$} {:<10} {}",
            a.name,
            a.schema_route.modes_text(),
            a.schema_route.best_mode().level().as_str(),
            if a.framework_tools { "yes" } else { "no" },
            if a.tools_with_schema { "yes" } else { "no" },
            a.inputs.short(),
            if a.is_configured(&env) { "yes" } else { "no" },
            a.credential_text()
        );
    }
    Ok(0)
}
