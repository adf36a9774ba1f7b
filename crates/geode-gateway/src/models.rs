//! `GET /v1/models`: every route a client may name, with the best guarantee each can give a
//! schema and whether it is configured here (its key or login present).

use geode::Environment;
use geode::Settings;
use serde_json::{Value, json};

/// The model list: the configuration's aliases, then every adapter it knows.
pub fn list(settings: &Settings, env: &dyn Environment) -> Value {
    let adapters = &settings.routing.adapters;
    let mut data: Vec<Value> = settings
        .gateway
        .models
        .iter()
        .filter_map(|(name, alias)| {
            let spec = adapters.spec(&alias.adapter)?;
            Some(entry(
                name,
                spec.name,
                spec.schema_route.best_mode().level().as_str(),
                spec.is_configured(env),
            ))
        })
        .collect();
    data.extend(adapters.all().map(|spec| {
        entry(
            spec.name,
            spec.name,
            spec.schema_route.best_mode().level().as_str(),
            spec.is_configured(env),
        )
    }));
    json!({ "object": "list", "data": data })
}

fn entry(id: &str, adapter: &str, guarantee: &str, configured: bool) -> Value {
    json!({
        "id": id,
        "object": "model",
        "created": 0,
        "owned_by": "geode",
        "geode": { "adapter": adapter, "best_guarantee": guarantee, "configured": configured },
    })
}
