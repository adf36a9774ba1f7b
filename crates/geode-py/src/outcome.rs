//! What crosses back to Python when a call ends: the value tuple, or the `geode` exception of
//! its kind. The classes live in Python
//! (python/geode/_errors.py, where users read them); this side names the kind and hands over the
//! message, the ledger and the details as JSON. Every string has passed geode's secret scrubber.

use geode::{Error, Extracted};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use serde_json::Value;

/// What a successful call hands to Python: the value and the ledger as JSON text, and the
/// ledger's summary.
pub type Done = (String, String, String);

/// The successful call's JSON, or its exception.
pub fn done(py: Python<'_>, result: Result<Extracted<Value>, Error>) -> PyResult<Done> {
    match result {
        Ok(x) => Ok((
            x.value.to_string(),
            serde_json::to_string(&x.ledger).unwrap_or_default(),
            x.ledger.summary(),
        )),
        Err(e) => Err(to_py_err(py, &e)),
    }
}

/// The Python class (`geode._errors`) for each kind of [`Error`].
fn kind(e: &Error) -> &'static str {
    match e {
        Error::InputsNotTaken { .. } => "inputs_not_taken",
        Error::NotEnforceable { .. } => "not_enforceable",
        Error::Provider { .. } => "provider",
        Error::Invalid { .. } | Error::Deserialize { .. } => "invalid",
        Error::Refused { .. } => "refused",
        Error::Truncated { .. } => "truncated",
        Error::Ended { .. } => "ended",
        _ => "config",
    }
}

/// The exception for `e`.
pub fn to_py_err(py: Python<'_>, e: &Error) -> PyErr {
    let errors = match e {
        Error::Invalid { errors, .. } => serde_json::to_string(errors).unwrap_or_default(),
        _ => "[]".to_owned(),
    };
    let provider_kind = match e {
        Error::Provider { kind, .. } => Some(kind.as_str()),
        _ => None,
    };
    let ledger = e.ledger();
    build(
        py,
        kind(e),
        &e.to_string(),
        &serde_json::to_string(ledger).unwrap_or_default(),
        &ledger.summary(),
        &errors,
        provider_kind,
    )
}

/// A configuration error raised before any call (a bad argument or schema).
pub fn config_error(py: Python<'_>, message: &str) -> PyErr {
    let message = geode::secret::scrub(message);
    build(py, "config", &message, "{}", "", "[]", None)
}

/// An image or document that cannot be used (unreadable, of no known type, not the kind it was
/// given as, a URL that is not `https`), raised before any call. The message names the file
/// or the size, never the content.
pub fn input_error(py: Python<'_>, message: &str) -> PyErr {
    let message = geode::secret::scrub(message);
    build(py, "input", &message, "{}", "", "[]", None)
}

fn build(
    py: Python<'_>,
    kind: &str,
    message: &str,
    ledger_json: &str,
    summary: &str,
    errors_json: &str,
    provider_kind: Option<&str>,
) -> PyErr {
    let made = py.import("geode._errors").and_then(|m| {
        m.getattr("_from_native")?.call1((
            kind,
            message,
            ledger_json,
            summary,
            errors_json,
            provider_kind,
        ))
    });
    match made {
        Ok(exc) => PyErr::from_value(exc),
        // The package is broken (the module is missing): still a clear error, never a panic.
        Err(e) => PyRuntimeError::new_err(format!("{kind}: {message} (geode._errors: {e})")),
    }
}
