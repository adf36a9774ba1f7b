//! The fakes' own tests, in one binary.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

mod chat;
mod chatgpt;
mod cli;
mod common;
mod faults;
mod messages;
mod recording;
mod responses;
mod tls;
