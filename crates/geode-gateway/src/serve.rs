//! What every geode server binary (`geode-gateway`, `geode-mcp`) sets up the same way: its
//! inbound keys and the client whose `local` route runs in the `geode-engine` process.

use crate::auth::{InboundKeys, KeysSource};
use geode::ProcessEnv;
use geode::llm::engine::EngineProcess;
use std::path::Path;
use std::sync::Arc;

/// The variable holding the inbound keys (comma-separated).
pub const KEYS_ENV: &str = "GEODE_GATEWAY_KEYS";

/// The inbound keys: `keys_file`, else [`KEYS_ENV`] (unset or empty: none). A file others may
/// write is refused: whoever can write it can let themselves in.
pub fn inbound_keys(keys_file: Option<&Path>) -> Result<InboundKeys, String> {
    let parsed = match keys_file {
        Some(path) => {
            let cannot = |e: &dyn std::fmt::Display| {
                format!("cannot read --keys-file {}: {e}", path.display())
            };
            let meta = std::fs::metadata(path).map_err(|e| cannot(&e))?;
            if world_writable(&meta) {
                return Err(cannot(&"it is writable by every user (chmod o-w it)"));
            }
            let text = std::fs::read_to_string(path).map_err(|e| cannot(&e))?;
            InboundKeys::parse(&text, KeysSource::File)
        }
        None => match std::env::var(KEYS_ENV) {
            Ok(list) if !list.is_empty() => InboundKeys::parse(&list, KeysSource::Variable),
            _ => Ok(InboundKeys::default()),
        },
    };
    parsed.map_err(|e| e.to_string())
}

fn world_writable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o002 != 0
}

/// The server's client on `settings`, with `local` in its own process (`geode-engine`),
/// started on the first local call.
pub fn client(settings: &geode::Settings) -> Result<geode::Client, geode::Error> {
    let mut builder = geode::Client::builder().settings(settings.clone());
    if let Some(row) = geode::llm::registry::embedded() {
        let local = Arc::new(EngineProcess::new(
            row.name,
            EngineProcess::default_program(&ProcessEnv),
        )) as Arc<dyn geode::Adapter>;
        builder = builder.adapter_factory(row.name, move || local.clone());
    }
    builder.build()
}
