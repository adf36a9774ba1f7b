//! Which adapter serves a call, and the fail-closed policy.
//!
//! Order: the explicit adapter name; else the model name's family (the rows'
//! `models` patterns: `gpt-*`, `o1`/`o3`/`o4*`, `*-codex` → OpenAI; `claude-*` → Anthropic;
//! `glm-*` → GLM), choosing the
//! family's adapters that are configured here, pay-as-you-go first, then subscription, then CLI;
//! else the configured default; else the first configured provider (pay-as-you-go before
//! subscription; CLIs only when named); else `local`.
//!
//! [`Require`] then removes candidates whose mode *for this schema* is too weak:
//! `enforced` keeps `constrained` and `strict`; `wired` adds `hint`, a forced output `tool`,
//! `cli-validated` and `cli-flag`; `best-effort` keeps everything. When none is left the call
//! fails before any request, with one reason per candidate. A candidate that cannot take the
//! call's images or documents ([`crate::media::Accepts`]) is removed the same way.

use crate::llm::registry::{
    ADAPTERS, AdapterSpec, Billing, Environment, Family, PlanCx, embedded, family_of_model, spec,
};
use crate::media::PartRecord;
use crate::schema::ResponseSchema;
use crate::vocab::{Require, StructuredOutputMode};

/// What the caller asked for.
#[derive(Debug, Clone, Default)]
pub struct RouteRequest<'a> {
    /// An explicit adapter name.
    pub adapter: Option<&'a str>,
    /// The model name ("" = none).
    pub model: &'a str,
    /// The guarantee required.
    pub require: Require,
    /// The schema, if any.
    pub schema: Option<&'a ResponseSchema>,
    /// Whether extended thinking is on (rules out Anthropic's forced tool).
    pub thinking: bool,
    /// The configured default adapter.
    pub default_adapter: Option<&'a str>,
    /// Providers defined in `geode.toml`, found by name ([`crate::config::Config::providers`]).
    pub providers: &'a [&'static AdapterSpec],
    /// The call's images and documents: a candidate that cannot take them is removed.
    pub parts: &'a [PartRecord],
}

impl RouteRequest<'_> {
    /// The row named `name`: built-in, else a configured provider.
    fn spec(&self, name: &str) -> Result<&'static AdapterSpec, RoutingError> {
        spec(name)
            .or_else(|| self.providers.iter().copied().find(|p| p.name == name))
            .ok_or_else(|| RoutingError::UnknownAdapter(name.to_owned()))
    }
}

/// A candidate that was removed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The adapter.
    pub adapter: String,
    /// What kind of reason: a missing configuration is the route's problem, a guarantee below
    /// the requirement the schema's.
    pub kind: RejectionKind,
    /// Why it cannot serve the call.
    pub reason: String,
}

/// Why a candidate was removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectionKind {
    /// Its credential or setting is missing.
    NotConfigured,
    /// Its mode for the schema guarantees less than the call requires.
    BelowRequire,
    /// It cannot take the call's images or documents.
    InputsNotTaken,
}

/// The chosen adapter.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    /// Its spec.
    pub spec: &'static AdapterSpec,
    /// The mode it will use for the schema.
    pub mode: StructuredOutputMode,
    /// Candidates removed on the way.
    pub rejected: Vec<Rejection>,
}

/// Why no adapter could be chosen.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum RoutingError {
    /// The named adapter does not exist.
    #[error("unknown adapter {0:?}; known adapters: {known}, and any [providers.NAME] of geode.toml", known = ADAPTERS.iter().map(|a| a.name).collect::<Vec<_>>().join(", "))]
    UnknownAdapter(String),
    /// Every candidate was removed.
    #[error("{}", no_candidate(require, reasons))]
    NoCandidate {
        /// The requirement.
        require: &'static str,
        /// One reason per candidate.
        reasons: Vec<Rejection>,
    },
    /// Nothing is configured and the registry has no local row to fall back on.
    #[error("no adapter is configured (set a provider's key, or name an adapter)")]
    NoEmbedded,
}

/// Why every candidate was removed, one reason each: the requirement is named unless only the
/// call's images or documents removed them.
fn no_candidate(require: &str, reasons: &[Rejection]) -> String {
    let each: Vec<String> = reasons
        .iter()
        .map(|r| format!("{}: {}", r.adapter, r.reason))
        .collect();
    let inputs_only = !reasons.is_empty()
        && reasons
            .iter()
            .all(|r| r.kind == RejectionKind::InputsNotTaken);
    if inputs_only {
        format!("no adapter can take this call: {}", each.join("; "))
    } else {
        format!(
            "no adapter can serve this call with require={require}: {}",
            each.join("; ")
        )
    }
}

fn judge(
    spec: &'static AdapterSpec,
    req: &RouteRequest<'_>,
) -> Result<StructuredOutputMode, Rejection> {
    let cx = PlanCx {
        thinking: req.thinking,
        ..PlanCx::default()
    };
    let model = if req.model.is_empty() {
        spec.default_model
    } else {
        req.model
    };
    if let Err(e) = spec.inputs.for_model(model).check(req.parts) {
        return Err(Rejection {
            adapter: spec.name.to_owned(),
            kind: RejectionKind::InputsNotTaken,
            reason: format!("it cannot take this call's images or documents: {e}"),
        });
    }
    let mode = spec.schema_route.plan(req.schema, cx).mode;
    if req.schema.is_none() || mode.level() >= req.require {
        Ok(mode)
    } else {
        Err(Rejection {
            adapter: spec.name.to_owned(),
            kind: RejectionKind::BelowRequire,
            reason: format!(
                "its mode for this schema is {mode} ({}), below {}",
                mode.level().as_str(),
                req.require.as_str()
            ),
        })
    }
}

/// Chooses the adapter for one call.
pub fn route(req: &RouteRequest<'_>, env: &dyn Environment) -> Result<Route, RoutingError> {
    let candidates: Vec<&'static AdapterSpec> = if let Some(name) = req.adapter {
        vec![req.spec(name)?]
    } else if let Some(family) = family_of_model(req.model) {
        let mut fam: Vec<&'static AdapterSpec> = ADAPTERS
            .iter()
            .filter(|a| a.family == family && a.is_configured(env))
            .collect();
        fam.sort_by_key(|a| a.billing);
        if fam.is_empty() {
            return Err(RoutingError::NoCandidate {
                require: req.require.as_str(),
                reasons: ADAPTERS
                    .iter()
                    .filter(|a| a.family == family)
                    .map(|a| Rejection {
                        adapter: a.name.to_owned(),
                        kind: RejectionKind::NotConfigured,
                        reason: format!("not configured (needs {})", a.credential_text()),
                    })
                    .collect(),
            });
        }
        fam
    } else if let Some(name) = req.default_adapter {
        vec![req.spec(name)?]
    } else {
        let configured_remote = ADAPTERS
            .iter()
            .filter(|a| {
                a.family != Family::Local && a.billing != Billing::Cli && a.is_configured(env)
            })
            .min_by_key(|a| a.billing);
        match configured_remote {
            Some(a) => vec![a],
            _ => vec![embedded().ok_or(RoutingError::NoEmbedded)?],
        }
    };
    let mut rejected = Vec::new();
    for c in candidates {
        match judge(c, req) {
            Ok(mode) => {
                return Ok(Route {
                    spec: c,
                    mode,
                    rejected,
                });
            }
            Err(r) => rejected.push(r),
        }
    }
    Err(RoutingError::NoCandidate {
        require: req.require.as_str(),
        reasons: rejected,
    })
}
