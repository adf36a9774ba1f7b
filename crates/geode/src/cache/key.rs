//! The cache key: SHA-256 over the canonical JSON of everything that decides the answer.
//!
//! | part | holds | why |
//! |---|---|---|
//! | `request` | adapter, its endpoint ([`Adapter::endpoint`]: the URL or program the answer comes from), model, system prompt, earlier turns, prompt, the caller's tools and tool choice, temperature, output and thinking tokens, effort, rounds, fallback chain | the same question to the same model |
//! | `schema_sha256` | the caller's schema, canonical (keys sorted) | any change, even a `description`, is another question |
//! | `wire_sha256` | the adapter's plan of the schema ([`crate::schema::subset::WirePlan`]: mode, wire copy, rewrites) | the same schema sent another way is another answer |
//! | `policy` | `repair`, `formats`, `validation` | they decide which answers count as valid |
//! | `scope` | [`Task::cache_scope`], only when set | one tenant's answers never answer another |
//!
//! `require` is not hashed: the entry keeps the `require` it was made under and the lookup
//! refuses it for a stronger one ([`super::entry::CacheEntry::serves`]), so the stronger run
//! replaces it and then answers both. Object keys are sorted, so two schemas that differ only
//! in key order share a key; the budgets that only bound time (`timeout_s`) are left out.

use crate::agent::task::{Budgets, Task};
use crate::digest::{canonical, sha256_hex};
use crate::llm::adapter::Adapter;
use crate::llm::registry::PlanCx;
use crate::llm::request::Message;
use crate::media::Media;
use crate::schema::ResponseSchema;
use serde_json::{Value, json};

/// Bumped when what goes into a key changes, so older entries simply miss.
const KEY_FORMAT: u32 = 3;

/// A request's cache key and the two hashes it was made from (shown in logs and tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheKey {
    /// The key: 64 hex digits.
    pub hex: String,
    /// SHA-256 of the caller's schema, canonical.
    pub schema_sha256: String,
    /// SHA-256 of the adapter's plan of the schema.
    pub wire_sha256: String,
}

impl CacheKey {
    /// The key of `task` on `adapter` (its schema: `schema`). The task is taken apart field by
    /// field, so a field added to [`Task`] or [`Budgets`] is a compile error here until it is
    /// put in the key or left out on purpose.
    pub fn of(task: &Task, adapter: &dyn Adapter, schema: &ResponseSchema) -> Self {
        let Task {
            prompt,
            parts,
            history,
            system,
            route,
            fallback,
            // Hashed as `schema_sha256` and `wire_sha256`.
            output: _,
            // Kept in the entry, compared on lookup (see the module's table).
            require: _,
            validation,
            repair,
            // Whether the cache is consulted at all.
            cache: _,
            cache_scope,
            formats,
            budgets,
            effort,
            temperature,
            tools,
            tool_choice,
        } = task;
        let Budgets {
            // Bound time only.
            timeout: _,
            time_budget: _,
            max_tokens,
            max_rounds,
            thinking,
        } = budgets;
        let schema_sha256 = sha256_hex(canonical(schema.as_value()));
        let wire_sha256 = sha256_hex(canonical(&wire_plan(*thinking, adapter, schema)));
        let mut whole = json!({
            "key_format": KEY_FORMAT,
            "request": {
                "adapter": adapter.name(),
                "endpoint": adapter.endpoint(),
                "model": route.model(),
                "system": system,
                "history": history.iter().map(turn_for_key).collect::<Vec<_>>(),
                "parts": parts.iter().map(Media::record).collect::<Vec<_>>(),
                "prompt": prompt,
                "tools": tools,
                "tool_choice": tool_choice,
                "temperature": temperature,
                "max_tokens": max_tokens,
                "thinking": thinking,
                "effort": effort,
                "max_rounds": max_rounds,
                "fallback": fallback,
            },
            "schema_sha256": schema_sha256,
            "wire_sha256": wire_sha256,
            "policy": {
                "repair": repair,
                "formats": formats,
                "validation": validation,
            },
        });
        // Only a scoped task's key names its scope: unscoped keys stay what they were.
        if let Some(scope) = cache_scope {
            whole["scope"] = json!(scope);
        }
        Self {
            hex: sha256_hex(canonical(&whole)),
            schema_sha256,
            wire_sha256,
        }
    }
}

/// A turn as the key hashes it: images and documents by their record (type, size, SHA-256),
/// so that a key is the same size whatever the parts weigh.
fn turn_for_key(m: &Message) -> Value {
    let content: Vec<Value> = m
        .content
        .iter()
        .map(|b| match b.part_record() {
            Some(record) => json!({ "part": record }),
            None => json!(b),
        })
        .collect();
    json!({ "role": m.role, "content": content })
}

/// How the adapter puts `schema` on its wire for this task: its row's plan (the route's plan
/// before any probe, so that the key does not change once a probe has run), or, for an
/// adapter outside the registry, its name and mode.
fn wire_plan(thinking: u32, adapter: &dyn Adapter, schema: &ResponseSchema) -> Value {
    match adapter.spec() {
        Some(spec) => {
            let cx = PlanCx {
                thinking: thinking > 0,
                prefill: false,
                probed: None,
            };
            let plan = spec.schema_route.plan(Some(schema), cx);
            json!({"row": spec.name, "plan": serde_json::to_value(plan).unwrap_or(Value::Null)})
        }
        None => json!({"adapter": adapter.name(), "mode": adapter.wire_mode(Some(schema))}),
    }
}
