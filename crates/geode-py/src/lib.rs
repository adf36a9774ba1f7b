//! The native module behind the `geode` Python package (`geode._native`): the Rust [`geode::Client`]
//! with Python's calling conventions. The Python layer (python/geode) turns types into schemas and
//! answers into instances; everything geode guarantees (adapters, `require`, the retry with
//! feedback, validation, the ledger) happens here, in Rust.
//!
//! | file | job |
//! |---|---|
//! | [`client`] | `Client`: built from keyword arguments, configuration and environment; sync and async calls |
//! | [`schema`] | `Schema`: a caller's schema prepared once (a type's rewritten, a dict's as given) |
//! | [`stream`] | `Stream`: partial values, items and the final value, sync and async |
//! | [`wait`] | a sync call with the GIL released that Ctrl-C cancels |
//! | [`outcome`] | what crosses back when a call ends: the value tuple, or the `geode` exception of its kind with the ledger |
//! | [`prompt`] | a prompt: a string, or a conversation's turns, with their images and documents |
//! | [`media`] | `Media`: an image or document read and typed from its bytes (`geode.Image`, `geode.Document`) |
//! | [`trust`] | `trust_config`: a project's `geode.toml` trusted to send credentials where it says |
//! | [`env`] | variables given to the client, over the process environment |
//! | `engine` | the local model's engine, served by `geode._engine.main` in a child interpreter (feature `local`) |
//!
//! Values cross as JSON text: pydantic reads JSON text faster than it reads Python objects.

mod client;
#[cfg(feature = "local")]
mod engine;
mod env;
mod media;
mod outcome;
mod prompt;
mod schema;
mod stream;
mod trust;
mod wait;

use pyo3::prelude::*;

/// The extension module, imported as `geode._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<client::NativeClient>()?;
    m.add_class::<media::NativeMedia>()?;
    m.add_class::<schema::NativeSchema>()?;
    m.add_class::<stream::NativeStream>()?;
    #[cfg(feature = "local")]
    m.add_function(wrap_pyfunction!(engine::serve_engine, m)?)?;
    m.add_function(wrap_pyfunction!(trust::trust_config, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
