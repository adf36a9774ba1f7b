//! `geode cache stats|clear [--cache DIR|URL]`: what the response cache holds (every entry
//! read back), the hits, misses and writes counted by every run, and emptying it.
//!
//! The cache is `--cache`, else `[cache]` in geode.toml. Exit 0, or 2 when there is no cache
//! to look at or it cannot be read.

use crate::cache_args::CacheArgs;
use clap::{Args, Subcommand};

#[derive(Subcommand)]
pub(crate) enum CacheCommand {
    /// Entries, bytes, unreadable entries, and the hits, misses and writes every run counted.
    Stats(StatsArgs),
    /// Remove every entry and the counters (and nothing else in the directory).
    Clear(ClearArgs),
}

#[derive(Args)]
pub(crate) struct StatsArgs {
    #[command(flatten)]
    cache: CacheArgs,
    /// Print the figures as one JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(crate) struct ClearArgs {
    #[command(flatten)]
    cache: CacheArgs,
}

pub(crate) fn run(command: CacheCommand) -> anyhow::Result<u8> {
    let args = match &command {
        CacheCommand::Stats(a) => &a.cache,
        CacheCommand::Clear(a) => &a.cache,
    };
    let usage = |e: &dyn std::fmt::Display| {
        eprintln!("geode: {e}");
        Ok(crate::EXIT_USAGE)
    };
    let cfg = match crate::config() {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let cache = match args.open(&cfg) {
        Ok(Some(c)) => c,
        Ok(None) => return usage(&"no cache: give --cache DIR|URL or [cache] in geode.toml"),
        Err(e) => return usage(&e),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    match command {
        CacheCommand::Stats(a) => {
            let stats = match rt.block_on(cache.stats()) {
                Ok(s) => s,
                Err(e) => return usage(&e),
            };
            if a.json {
                println!("{}", serde_json::to_string(&stats)?);
                return Ok(0);
            }
            let c = stats.counters;
            println!("cache {}", stats.location);
            println!(
                "entries {} · bytes {} · unreadable {}",
                stats.entries, stats.bytes, stats.unreadable
            );
            println!(
                "hits {} · misses {} · writes {} · damaged {}",
                c.hits, c.misses, c.stores, c.corrupt
            );
        }
        CacheCommand::Clear(_) => match rt.block_on(cache.clear()) {
            Ok(n) => println!("cleared {n} entries from {}", cache.location()),
            Err(e) => return usage(&e),
        },
    }
    Ok(0)
}
