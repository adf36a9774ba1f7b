//! One file per HTTP adapter: endpoint, auth and the few hooks that differ.
