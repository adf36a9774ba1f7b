//! An HTTP adapter as `geode` builds it from its registry row on a described machine, its
//! transport without retries: tests that snapshot or count requests see each call once.
//! Included by path next to `env.rs` (`#[path = "support/built.rs"] mod built;`).

use super::env::MapEnv;
use geode::llm::adapter::Adapter;
use geode::llm::http::{HttpClient, HttpConfig, RetryPolicy};
use std::sync::Arc;
use std::time::Duration;

/// The HTTP adapter `name` built on `env`, without retries.
pub fn built_without_retries(name: &str, env: &MapEnv) -> Arc<dyn Adapter> {
    let http = HttpClient::new(HttpConfig {
        retry: RetryPolicy {
            max_retries: 0,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(10),
        },
        ..HttpConfig::default()
    })
    .unwrap();
    Arc::new(
        geode::llm::build::build_http(name, &geode::llm::settings::AdapterSettings::default(), env)
            .unwrap()
            .with_http(http),
    )
}
