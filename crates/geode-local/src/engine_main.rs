//! `geode-engine`: the local model's engine (llama.cpp + llguidance) as its own process,
//! installed beside `geode` (`cargo build -p geode-local`; `make demo` builds both).
//!
//! The `geode` binary does not link the engine, so a worker serving a hosted adapter starts
//! small; its `local` adapter starts this binary on the first call and speaks the engine
//! protocol with it (JSON lines on stdin/stdout, see `geode::llm::engine`). The model is loaded
//! on the first call and stays loaded until stdin closes.
//!
//! `geode-engine --narrow` loads no model: it reads one JSON Schema on stdin and prints the
//! schema the engine decodes with and its narrowings (`{"schema": ..., "transforms": [...]}`,
//! [`geode_local::tighten`]); `geode schema check --adapter local` shows them.

use geode_local::LocalAdapter;
use std::io::Read;
use std::process::ExitCode;

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("--narrow") {
        return narrow();
    }
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("geode-engine: cannot start the runtime: {e}");
            return ExitCode::from(3);
        }
    };
    let adapter = LocalAdapter::shared();
    match rt.block_on(geode::llm::engine::serve(
        &adapter,
        tokio::io::stdin(),
        tokio::io::stdout(),
    )) {
        Ok(()) => ExitCode::SUCCESS,
        // The parent is gone: nothing left to answer.
        Err(_) => ExitCode::from(3),
    }
}

/// `--narrow`: the decoding schema and its narrowings for the schema on stdin.
fn narrow() -> ExitCode {
    let mut text = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut text) {
        eprintln!("geode-engine: cannot read the schema: {e}");
        return ExitCode::from(2);
    }
    match geode::schema::ResponseSchema::from_json_str(&text) {
        Ok(schema) => {
            let t = geode_local::tighten::tighten(&schema);
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
