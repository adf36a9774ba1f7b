//! `geode mcp`: every named contract of `geode.toml` (`[contracts.NAME]`,
//! [`geode::config::contracts`]) served as a Model Context Protocol tool, over stdio or
//! streamable HTTP, on `rmcp`, the official Rust SDK.
//!
//! A tool's `inputSchema` is its prompt's inputs (each required and typed, nothing else); its
//! `outputSchema` is the contract's schema with its dialect stated. A call runs the contract's
//! task through the worker, so its answer is validated against that schema, retried once with
//! the validator's feedback, and carries the guarantee ledger:
//!
//! | outcome | what the client gets |
//! |---|---|
//! | a valid answer | `structuredContent` (the validated value), its JSON text in `content`, the ledger under `_meta["dev.geode/ledger"]` |
//! | invalid after the retry, truncated, refused by the model, a provider failure | `isError: true`, a message saying which, the ledger when a call was made; never `structuredContent` |
//! | a route that cannot meet the contract's `require`, inputs a route cannot take | `isError: true`, before any upstream request |
//! | arguments that break the `inputSchema` | `isError: true` naming the argument (protocol 2025-11-25 on); a JSON-RPC invalid-params error before it, as those versions say |
//! | an unknown tool | a JSON-RPC invalid-params error |
//!
//! Peers on a protocol version before 2026-07-28 take only objects as `structuredContent`: a
//! contract whose root is not `type: object` is given to them wrapped under `value`, in its
//! `outputSchema` and its answers, and the ledger's `transforms` say so.
//!
//! | module | job |
//! |---|---|
//! | [`tools`] | a contract as a tool, for the peer's protocol version |
//! | [`outcome`] | a run's outcome as a tool result |
//! | [`server`] | the MCP server: listing, calling, bounded concurrency, progress, cancellation |
//! | [`http`] | the streamable HTTP transport behind the inbound keys |

pub mod http;
pub mod outcome;
pub mod server;
pub mod tools;

pub use server::{ContractServer, Limits};
