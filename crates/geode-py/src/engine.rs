//! The local model's engine inside the wheel: `geode._engine.main` calls [`serve_engine`],
//! which serves the engine protocol on stdin/stdout until stdin closes, as the `geode-engine`
//! binary does. A `Client("local")` starts one such process and talks to it over pipes, so a pip
//! user needs no Rust toolchain and no second binary, and llama.cpp stays out of the caller's
//! process (a crash in it ends the engine, not the program).

use pyo3::prelude::*;

/// Serves engine calls until stdin closes, holding no GIL; the process's exit status (0, or 3
/// when the runtime did not start or the parent went away).
#[pyfunction]
pub fn serve_engine(py: Python<'_>) -> i32 {
    match py.detach(geode_local::serve_stdio) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("geode engine: {e}");
            3
        }
    }
}
