//! Fake providers.
