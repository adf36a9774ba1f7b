//! Responses request build benchmark (in progress).
fn main() {}
