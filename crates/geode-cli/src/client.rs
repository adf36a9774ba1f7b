//! The one [`Client`] of `geode run`: the process's settings, its response cache, and `local`
//! served by the `geode-engine` process, as the gateway builds its own.

use crate::resolve::local_engine;
use geode::Client;
use geode::cache::Cache;
use geode::config::Settings;
use geode::llm::registry::WireFamily;

/// The client that runs this process's tasks.
pub(crate) fn client(settings: Settings, cache: Option<Cache>) -> Result<Client, geode::Error> {
    let local: Vec<&'static str> = settings
        .routing
        .adapters
        .all()
        .filter(|spec| spec.wire_family == WireFamily::Local)
        .map(|spec| spec.name)
        .collect();
    let mut builder = Client::builder().settings(settings).cache(cache);
    for name in local {
        builder = builder.adapter_factory(name, move || local_engine(name));
    }
    builder.build()
}
