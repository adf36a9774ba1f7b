//! Per-provider schema projection and limit preflight (STUB).
