//! `geode-engine`: the local model's engine (llama.cpp + llguidance) as its own process,
//! installed beside `geode` (`cargo build -p geode-local`; `make demo` builds both).
//!
//! The `geode` binary does not link the engine, so a worker serving a hosted adapter starts
//! small; its `local` adapter starts this binary on the first call and speaks the engine
//! protocol with it (JSON lines on stdin/stdout, see `geode::llm::engine`). The model is loaded
//! on the first call and stays loaded until stdin closes.

use geode_local::LocalAdapter;
use std::process::ExitCode;

fn main() -> ExitCode {
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
