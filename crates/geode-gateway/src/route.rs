//! Which route a request's `model` names, and the guarantee it must get.
//!
//! | `model` | route |
//! |---|---|
//! | an alias from `[gateway.models.NAME]` | its adapter, model and fallbacks |
//! | `ADAPTER/MODEL` (`openai-payg/gpt-5-mini`, `router/openai/gpt-5`) | that adapter (built-in or `[providers.NAME]`), that model |
//! | `ADAPTER` (`local`, `anthropic-payg`) | that adapter with its default model |
//! | `contract/NAME` | the contract's own route ([`crate::contract`]; not routed here) |
//! | anything else (`gpt-5-mini`, `claude-sonnet-4-5`) | the model, its provider inferred as `geode run --model` does |
//!
//! The policy is the gateway's `[gateway] require`, raised (never lowered) by the request's
//! `x-geode-require` header or its `geode.require` body field; whether an answer may be
//! repaired is `repair` in `geode.toml`, set per request by `x-geode-repair` or `geode.repair`;
//! whether the response cache (`[cache]`) may answer is set per request by `x-geode-cache` or
//! `geode.cache` (default yes).

use crate::error::ApiError;
use geode::Require;
use geode::Route;
use geode::Settings;
use geode::{ResolveError, RoutingError, RunError};

/// A request's route and its fallbacks (`None`: the configuration's chain, as for `geode run`).
#[derive(Debug, Clone, PartialEq)]
pub struct Routed {
    /// Where the task runs.
    pub route: Route,
    /// The alias's fallbacks, when it names some.
    pub fallback: Option<Vec<String>>,
}

/// The longest `model` a request may name: far beyond any real model or alias, and a bound on
/// what a client can make the gateway echo, log and route by.
pub const MAX_MODEL_CHARS: usize = 256;

/// The route `model` names under `settings`.
pub fn route(model: &str, settings: &Settings) -> Result<Routed, ApiError> {
    let model = model.trim();
    if model.is_empty() {
        return Err(ApiError::invalid("model", "model is required"));
    }
    if model.chars().count() > MAX_MODEL_CHARS {
        return Err(ApiError::invalid(
            "model",
            format!("model is longer than {MAX_MODEL_CHARS} characters"),
        ));
    }
    if let Some(alias) = settings.gateway.models.get(model) {
        return Ok(Routed {
            route: Route::Adapter {
                name: alias.adapter.clone(),
                model: (!alias.model.is_empty()).then(|| alias.model.clone()),
            },
            fallback: (!alias.fallback.is_empty()).then(|| alias.fallback.clone()),
        });
    }
    let (head, rest) = match model.split_once('/') {
        Some((h, r)) => (h, Some(r)),
        None => (model, None),
    };
    let route = match rest {
        _ if settings.routing.adapters.spec(head).is_some() => Route::Adapter {
            name: head.to_owned(),
            model: rest.filter(|r| !r.is_empty()).map(str::to_owned),
        },
        // `ADAPTER/MODEL` naming an adapter geode does not know (a typo, another case) is not a
        // model to route by: it would be served by the default adapter on the operator's key.
        Some(_) => {
            let named: String = head.chars().take(64).collect();
            return Err(ApiError::from_run(RunError::Route(ResolveError::Routing(
                RoutingError::UnknownAdapter(named),
            ))));
        }
        None => Route::Model(model.to_owned()),
    };
    Ok(Routed {
        route,
        fallback: None,
    })
}

/// The policy for one request: the floor from the configuration, raised by what the request
/// asks (`header`, then `body`); an unknown level is refused, naming where it came from.
pub fn require(
    floor: Require,
    header: Option<&str>,
    body: Option<&str>,
) -> Result<Require, ApiError> {
    let mut level = floor;
    for (asked, param) in [(header, "x-geode-require"), (body, "geode.require")] {
        let Some(asked) = asked else { continue };
        let asked: Require = asked.trim().parse().map_err(|_| {
            ApiError::invalid(
                param,
                format!("{param} must be best-effort, wired or enforced, got {asked:?}"),
            )
        })?;
        level = level.max(asked);
    }
    Ok(level)
}

/// Whether one request's answer may be repaired ([`geode::schema::repair`]): the body's
/// `geode.repair`, else the `x-geode-repair` header (`true` or `false`), else the gateway's
/// default (`repair` in `geode.toml`). A header that is neither is refused, naming it.
pub fn repair(default: bool, header: Option<&str>, body: Option<bool>) -> Result<bool, ApiError> {
    let header = boolean_header("x-geode-repair", header)?;
    Ok(body.or(header).unwrap_or(default))
}

/// Whether the response cache (`[cache]`, [`geode::cache`]) may answer one request and keep
/// its answer: the body's `geode.cache`, else the `x-geode-cache` header, else yes. Without
/// `[cache]` there is no cache and this changes nothing.
pub fn cache(header: Option<&str>, body: Option<bool>) -> Result<bool, ApiError> {
    let header = boolean_header("x-geode-cache", header)?;
    Ok(body.or(header).unwrap_or(true))
}

/// A `true`/`false` header (any case); anything else is refused, naming the header.
fn boolean_header(name: &'static str, header: Option<&str>) -> Result<Option<bool>, ApiError> {
    match header.map(str::trim) {
        None => Ok(None),
        Some(h) if h.eq_ignore_ascii_case("true") => Ok(Some(true)),
        Some(h) if h.eq_ignore_ascii_case("false") => Ok(Some(false)),
        Some(h) => Err(ApiError::invalid(
            name,
            format!("{name} must be true or false, got {h:?}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> Settings {
        geode::config::Config::parse(
            "[gateway.models.fast]\nadapter = \"openai-payg\"\nmodel = \"gpt-5-mini\"\nfallback = [\"anthropic-payg\"]\n",
            "geode.toml",
        )
        .unwrap()
        .settings(&geode::ProcessEnv)
        .unwrap()
    }

    #[test]
    fn the_cache_is_on_unless_the_body_or_the_header_turns_it_off() {
        assert!(cache(None, None).unwrap());
        assert!(!cache(Some("False"), None).unwrap());
        assert!(cache(Some("false"), Some(true)).unwrap());
        assert!(!cache(None, Some(false)).unwrap());
        assert_eq!(
            cache(Some("no"), None).unwrap_err().param.as_deref(),
            Some("x-geode-cache")
        );
    }

    #[test]
    fn repair_is_the_body_else_the_header_else_the_default() {
        assert!(!repair(false, None, None).unwrap());
        assert!(repair(true, None, None).unwrap());
        assert!(repair(false, Some("TRUE"), None).unwrap());
        assert!(!repair(true, Some("false"), None).unwrap());
        assert!(!repair(false, Some("true"), Some(false)).unwrap());
        let bad = repair(false, Some("yes"), None).unwrap_err();
        assert_eq!(bad.param.as_deref(), Some("x-geode-repair"));
    }

    #[test]
    fn aliases_adapter_paths_and_bare_models_each_route() {
        let cfg = cfg();
        let fast = route("fast", &cfg).unwrap();
        assert_eq!(
            fast.route,
            Route::Adapter {
                name: "openai-payg".into(),
                model: Some("gpt-5-mini".into())
            }
        );
        assert_eq!(fast.fallback, Some(vec!["anthropic-payg".to_owned()]));
        assert_eq!(
            route("openai-compatible/org/model-7b", &cfg).unwrap().route,
            Route::Adapter {
                name: "openai-compatible".into(),
                model: Some("org/model-7b".into())
            }
        );
        assert_eq!(
            route("local", &cfg).unwrap().route,
            Route::Adapter {
                name: "local".into(),
                model: None
            }
        );
        assert_eq!(
            route("gpt-5-mini", &cfg).unwrap().route,
            Route::Model("gpt-5-mini".into())
        );
        assert_eq!(route(" ", &cfg).unwrap_err().code, "invalid_request");
    }

    /// A misspelled adapter is a 404 naming it, never the default adapter serving the request.
    #[test]
    fn an_unknown_adapter_before_a_slash_is_model_not_found() {
        let cfg = cfg();
        for model in ["opnai-payg/x", "OPENAI-PAYG/x", "nosuch/x", "nosuch/"] {
            let e = route(model, &cfg).unwrap_err();
            assert_eq!(
                (e.status.as_u16(), e.code),
                (404, "model_not_found"),
                "{model}"
            );
        }
        let long = format!("{}/x", "a".repeat(100_000));
        let e = route(&long, &cfg).unwrap_err();
        assert_eq!((e.status.as_u16(), e.code), (400, "invalid_request"));
        assert!(
            e.message.len() < 200,
            "not echoed: {} bytes",
            e.message.len()
        );
    }

    #[test]
    fn a_request_raises_the_policy_and_never_lowers_it() {
        assert_eq!(
            require(Require::Wired, Some("enforced"), None).unwrap(),
            Require::Enforced
        );
        assert_eq!(
            require(Require::Wired, None, Some("best-effort")).unwrap(),
            Require::Wired
        );
        assert_eq!(
            require(Require::BestEffort, None, None).unwrap(),
            Require::BestEffort
        );
        let bad = require(Require::BestEffort, Some("strict"), None).unwrap_err();
        assert_eq!(
            (bad.code, bad.param.as_deref()),
            ("invalid_request", Some("x-geode-require"))
        );
    }
}
