//! `geode-engine`: the local model's engine (llama.cpp + llguidance) as its own process,
//! installed beside `geode` (`cargo build -p geode-local`; `make demo` builds both).
//!
//! The `geode` binary does not link the engine, so a worker serving a hosted adapter starts
//! small; its `local` adapter starts this binary on the first call and speaks the engine
//! protocol with it (JSON lines on stdin/stdout, see `geode::llm::engine`). The model is loaded
//! on the first call and stays loaded until stdin closes.
//!
//! `geode-engine --narrow [--max-tokens N]` loads no model: it reads one JSON Schema on stdin
//! and prints the schema the engine decodes with and its narrowings (`{"schema": ...,
//! "transforms": [...]}`, [`geode_local::tighten`]), fitted to a budget of N tokens when given
//! ([`geode_local::tighten::tighten_within`]); `geode schema check --adapter local` shows them.

use std::io::Read;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--narrow") {
        return match args.get(1..) {
            Some([]) | None => narrow(None),
            Some([flag, n]) if flag == "--max-tokens" => match n.parse::<u32>() {
                Ok(n) if n > 0 => narrow(Some(n)),
                _ => usage(),
            },
            Some(_) => usage(),
        };
    }
    match geode_local::serve_stdio() {
        Ok(()) => ExitCode::SUCCESS,
        // The runtime did not start, or the parent is gone: nothing left to answer.
        Err(e) => {
            eprintln!("geode-engine: {e}");
            ExitCode::from(3)
        }
    }
}

fn usage() -> ExitCode {
    eprintln!(
        "geode-engine: usage: geode-engine [--narrow [--max-tokens N]] (N a positive integer)"
    );
    ExitCode::from(2)
}

/// `--narrow`: the decoding schema and its narrowings for the schema on stdin, fitted to
/// `max_tokens` when given.
fn narrow(max_tokens: Option<u32>) -> ExitCode {
    let mut text = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut text) {
        eprintln!("geode-engine: cannot read the schema: {e}");
        return ExitCode::from(2);
    }
    match geode::schema::ResponseSchema::from_json_str(&text) {
        Ok(schema) => {
            let t = match max_tokens {
                Some(n) => geode_local::tighten::tighten_within(&schema, n),
                None => geode_local::tighten::tighten(&schema),
            };
            let out = serde_json::json!({"schema": t.schema, "transforms": t.transforms});
            println!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("geode-engine: unusable schema: {e}");
            ExitCode::from(2)
        }
    }
}
