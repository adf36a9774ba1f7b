//! The `openai-compatible` adapter's probe: does this server really enforce
//! `response_format: {type: json_schema}`?
//!
//! Servers that speak Chat Completions differ: llama-server and vLLM compile the schema into a
//! grammar, some builds ignore the field and answer 200 with whatever the model says, and some
//! refuse it with a 4xx. So, once per (model-call URL, model) per process, geode sends one cheap
//! call whose schema the model would never follow unprompted: an object whose one required
//! property `geode_probe` is a `const` random nonce, at temperature 0 with a small token limit,
//! and nothing about the nonce in the prompt.
//!
//! | the server | verdict | mode of later calls |
//! |---|---|---|
//! | answers `{"geode_probe": "<nonce>"}` (or, cut at the token limit, its start up to the nonce) | [`Verdict::Enforced`] | `strict` (json_schema) |
//! | answers 200 with anything else | [`Verdict::Ignored`] | `hint` (json_schema + the schema in the prompt) |
//! | refuses the request with a 400/415/422 | [`Verdict::Refused`] | `json-mode` (`json_object` + the schema in the prompt) |
//!
//! A 404 is not a refusal (a wrong base URL or an unknown model answers so): it is an error.
//!
//! Any other failure (connection refused, 5xx after the retries, 401, a timeout) is the call's
//! error and nothing is remembered: the next call probes again. At most [`MAX_VERDICTS`]
//! verdicts are kept, the oldest making room. Two calls racing on a new server
//! may both probe; the verdicts agree and the second simply overwrites the first.
//!
//! The probe is judged strictly: only the exact object counts (no fence, no prose, no extra or
//! duplicate key, an object root), and a cut answer only when nothing but whitespace follows
//! the nonce. A near miss proves nothing about enforcement, so it is `Ignored`.
//!
//! A verdict is a prediction. When a later answer under `Enforced` breaks the schema it was
//! sent with (a complete answer, not one cut at the token limit, refused or calling tools),
//! the server did not enforce it: [`contradiction`] says so, and the adapter withdraws the
//! verdict ([`withdrawn`]), so that call's ledger says `hint`, not `strict`, and later calls
//! put the schema in the prompt as well.

use crate::llm::call::AdapterError;
use crate::llm::request::{AdapterCallRequest, AdapterResponse, Message};
use crate::schema::ResponseSchema;
use crate::schema::formats::FormatMode;
use crate::schema::validate::CompiledSchema;
use crate::vocab::{StopReason, StructuredOutputMode, Transform};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The probe schema's title, and so its `json_schema.name` on the wire (fakes recognise it).
pub const PROBE_NAME: &str = "geode_probe";

/// The output token limit of the probe call.
pub const PROBE_MAX_TOKENS: u32 = 64;

/// What the probe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The answer was the nonce object: the server constrains decoding to the schema.
    Enforced,
    /// A 200 whose answer is not the nonce object: the schema is not enforced.
    Ignored,
    /// The server refused `response_format: json_schema` with a 4xx.
    Refused,
}

impl Verdict {
    /// The mode later calls with a schema get (the [`crate::llm::registry::SchemaRoute::Probed`]
    /// plan of each call follows it).
    pub fn mode(self) -> StructuredOutputMode {
        match self {
            Self::Enforced => StructuredOutputMode::Strict,
            Self::Ignored => StructuredOutputMode::Hint,
            Self::Refused => StructuredOutputMode::JsonMode,
        }
    }
}

/// A verdict and why, in words (the ledger's transform on `/response_format`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The verdict.
    pub verdict: Verdict,
    /// Why, e.g. `probe: the server answered the nonce of a const schema: json_schema enforced`.
    pub why: String,
}

impl Probe {
    /// The ledger's record of the verdict: a transform on `/response_format`.
    pub fn transform(&self) -> Transform {
        Transform {
            pointer: "/response_format".to_owned(),
            action: self.why.clone(),
        }
    }
}

type Key = (String, String);

/// The most verdicts a process keeps. The model name is the caller's choice (a gateway passes
/// its client's through), so a map without a bound would grow by one entry per name a client
/// invents; past the bound, the verdict found longest ago makes room (it is probed again if
/// it is asked for again).
pub const MAX_VERDICTS: usize = 256;

/// Verdicts by (model-call URL, model), at most `cap` of them.
#[derive(Debug)]
struct Verdicts {
    found: HashMap<Key, (u64, Probe)>,
    next: u64,
    cap: usize,
}

impl Verdicts {
    fn new(cap: usize) -> Self {
        Self {
            found: HashMap::new(),
            next: 0,
            cap: cap.max(1),
        }
    }

    fn get(&self, url: &str, model: &str) -> Option<Probe> {
        self.found
            .get(&(url.to_owned(), model.to_owned()))
            .map(|(_, p)| p.clone())
    }

    fn insert(&mut self, url: &str, model: &str, probe: Probe) {
        let key = (url.to_owned(), model.to_owned());
        if !self.found.contains_key(&key) && self.found.len() >= self.cap {
            let oldest = self
                .found
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.found.remove(&k);
            }
        }
        self.found.insert(key, (self.next, probe));
        self.next += 1;
    }
}

fn cache() -> &'static Mutex<Verdicts> {
    static CACHE: OnceLock<Mutex<Verdicts>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(Verdicts::new(MAX_VERDICTS)))
}

/// The verdict already found for `url` and `model` in this process, if any.
pub fn cached(url: &str, model: &str) -> Option<Probe> {
    cache().lock().ok().and_then(|c| c.get(url, model))
}

/// Remembers `probe` for `url` and `model` (within [`MAX_VERDICTS`]).
pub fn remember(url: &str, model: &str, probe: Probe) {
    if let Ok(mut c) = cache().lock() {
        c.insert(url, model, probe);
    }
}

/// A fresh nonce: 12 lowercase hex digits no model writes by chance.
pub fn nonce() -> String {
    super::uuid_v4().replace('-', "").chars().take(12).collect()
}

/// The probe's schema for `nonce`.
pub fn schema(nonce: &str) -> Result<ResponseSchema, AdapterError> {
    ResponseSchema::from_value(json!({
        "title": PROBE_NAME,
        "type": "object",
        "properties": {PROBE_NAME: {"type": "string", "const": nonce}},
        "required": [PROBE_NAME],
        "additionalProperties": false,
    }))
    .map_err(|e| AdapterError::Protocol {
        adapter: "openai-compatible".to_owned(),
        message: format!("probe schema: {e}"),
    })
}

/// The probe call for `model` and `nonce`: the nonce is only in the schema, never in the
/// prompt.
pub fn request(model: &str, nonce: &str) -> Result<AdapterCallRequest, AdapterError> {
    let mut req = AdapterCallRequest::new(model, vec![Message::user("Say hello.")]);
    req.system_prompt = "You are a helpful assistant.".to_owned();
    req.temperature = Some(0.0);
    req.max_tokens = PROBE_MAX_TOKENS;
    req.response_schema = Some(schema(nonce)?);
    Ok(req)
}

/// The verdict from the probe call's outcome; `Err` when the outcome says nothing about the
/// schema (the server is down, overloaded, refuses the key, ...): that error is the call's.
pub fn judge(
    nonce: &str,
    outcome: Result<AdapterResponse, AdapterError>,
) -> Result<Probe, AdapterError> {
    match outcome {
        Ok(resp) => {
            // The nonce is nowhere in the prompt: a model writes it only when decoding is
            // constrained, so its start (whitespace aside) already shows enforcement when the
            // answer is cut at the token limit. Tool calls are not the answer.
            let answered = resp.tool_uses.is_empty()
                && (is_exact(&resp.text, nonce)
                    || (resp.stop_reason == StopReason::MaxTokens
                        && is_cut_after_nonce(&resp.text, nonce)));
            Ok(if answered {
                Probe {
                    verdict: Verdict::Enforced,
                    why: "probe: the server answered a const-nonce json_schema exactly: \
                          json_schema enforced (strict)"
                        .to_owned(),
                }
            } else {
                Probe {
                    verdict: Verdict::Ignored,
                    why: "probe: the server answered 200 without following a const-nonce \
                          json_schema: not enforced (hint; the schema also goes in the prompt)"
                        .to_owned(),
                }
            })
        }
        Err(AdapterError::SchemaRejected { status, .. })
        | Err(AdapterError::BadRequest {
            status: status @ (400 | 415 | 422),
            ..
        }) => Ok(Probe {
            verdict: Verdict::Refused,
            why: format!(
                "probe: the server refused response_format json_schema (HTTP {status}): \
                 json_object + the schema in the prompt (json-mode)"
            ),
        }),
        Err(e) => Err(e),
    }
}

/// Whether `text` is exactly the probe object: one JSON object (no fence, no prose) whose only
/// key, present once, is [`PROBE_NAME`] with the nonce as its value. A duplicate key would pass
/// a plain parse (the last one wins), and a derived struct would also take a JSON array.
fn is_exact(text: &str, nonce: &str) -> bool {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Exact {
        geode_probe: String,
    }
    let text = text.trim();
    text.starts_with('{')
        && serde_json::from_str::<Exact>(text).is_ok_and(|e| e.geode_probe == nonce)
}

/// Whether `text`, cut at the token limit, is the probe object's start up to the nonce with
/// only whitespace around its tokens and after it: what an enforcing server writes when the
/// model pads with whitespace until the limit. Anything else after the nonce (a comma, another
/// key) or inside the key is a near miss.
fn is_cut_after_nonce(text: &str, nonce: &str) -> bool {
    let key = format!("\"{PROBE_NAME}\"");
    let value = format!("\"{nonce}\"");
    let mut rest = text.trim_start();
    for token in ["{", key.as_str(), ":", value.as_str()] {
        match rest.strip_prefix(token) {
            Some(after) => rest = after.trim_start(),
            None => return false,
        }
    }
    rest.is_empty()
}

/// Why `resp`, an answer to a call sent as `strict` because the probe found the schema
/// enforced, shows that it was not: a complete text answer (not cut at the token limit, not a
/// refusal, no tool call) that is not one JSON value valid against `schema`, the schema on the
/// wire. `None` when the answer is consistent with enforcement or says nothing about it.
/// Formats are not asserted: servers that compile a grammar do not check them.
pub fn contradiction(schema: &ResponseSchema, resp: &AdapterResponse) -> Option<String> {
    if resp.stop_reason != StopReason::EndTurn || !resp.tool_uses.is_empty() {
        return None;
    }
    let Ok(value) = serde_json::from_str::<Value>(resp.text.trim()) else {
        return Some("its answer is not a JSON value".to_owned());
    };
    let compiled = CompiledSchema::compile_cached(schema, FormatMode::Annotate).ok()?;
    (!compiled.is_valid(&value)).then(|| "its answer is not valid against the schema".to_owned())
}

/// The verdict that replaces `Enforced` once an answer contradicted it (`why`, from
/// [`contradiction`]): `Ignored`, with the reason in the ledger's words.
pub fn withdrawn(why: &str) -> Probe {
    Probe {
        verdict: Verdict::Ignored,
        why: format!(
            "probe verdict withdrawn: the server answered outside a json_schema sent as strict \
             ({why}): not enforced (hint; the schema also goes in the prompt)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(text: &str) -> Result<AdapterResponse, AdapterError> {
        Ok(AdapterResponse::text(text))
    }

    #[test]
    fn the_nonce_object_is_enforced_anything_else_ignored() {
        let n = nonce();
        assert_eq!(n.len(), 12);
        assert_ne!(n, nonce());
        let exact = format!("{{\"geode_probe\": \"{n}\"}}");
        assert_eq!(
            judge(&n, answer(&exact)).unwrap().verdict,
            Verdict::Enforced
        );
        let cut = AdapterResponse {
            stop_reason: StopReason::MaxTokens,
            ..AdapterResponse::text(format!("{{\n  \"geode_probe\": \"{n}\"\n"))
        };
        assert_eq!(
            judge(&n, Ok(cut.clone())).unwrap().verdict,
            Verdict::Enforced
        );
        let whole = AdapterResponse {
            stop_reason: StopReason::EndTurn,
            ..cut
        };
        assert_eq!(judge(&n, Ok(whole)).unwrap().verdict, Verdict::Ignored);
        for near in [
            format!("{{\"geode_probe\": \"{n}\", \"more\": \"aa"),
            format!("{{\"geode _probe\": \"{n}\""),
            format!("Here: {{\"geode_probe\": \"{n}\""),
        ] {
            let cut = AdapterResponse {
                stop_reason: StopReason::MaxTokens,
                ..AdapterResponse::text(near.clone())
            };
            assert_eq!(
                judge(&n, Ok(cut)).unwrap().verdict,
                Verdict::Ignored,
                "{near}"
            );
        }
        for other in [
            "Hello!".to_owned(),
            format!("{{\"geode_probe\": \"{}\"}}", &n[..6]),
            format!("{{\"geode_probe\": \"{n}\", \"extra\": 1}}"),
            "{\"geode_probe\": \"000000000000\"}".to_owned(),
            String::new(),
            format!("{{\"geode_probe\": \"x\", \"geode_probe\": \"{n}\"}}"),
            format!("[\"{n}\"]"),
            format!("```json\n{{\"geode_probe\": \"{n}\"}}\n```"),
        ] {
            let p = judge(&n, answer(&other)).unwrap();
            assert_eq!(p.verdict, Verdict::Ignored, "{other}");
            assert_eq!(p.verdict.mode(), StructuredOutputMode::Hint);
        }
    }

    #[test]
    fn a_4xx_refusal_falls_back_and_other_failures_are_errors() {
        let refused = judge(
            "n",
            Err(AdapterError::BadRequest {
                adapter: "a".into(),
                status: 400,
                message: "unsupported response_format".into(),
            }),
        )
        .unwrap();
        assert_eq!(refused.verdict, Verdict::Refused);
        assert_eq!(refused.verdict.mode(), StructuredOutputMode::JsonMode);
        assert!(refused.why.contains("HTTP 400"), "{}", refused.why);
        for e in [
            AdapterError::BadRequest {
                adapter: "a".into(),
                status: 404,
                message: "not found".into(),
            },
            AdapterError::Transport {
                adapter: "a".into(),
                message: "refused".into(),
            },
            AdapterError::Auth {
                adapter: "a".into(),
                status: 401,
                message: "no".into(),
            },
        ] {
            assert!(judge("n", Err(e)).is_err());
        }
    }

    #[test]
    fn verdicts_are_remembered_per_url_and_model() {
        let p = Probe {
            verdict: Verdict::Ignored,
            why: "w".into(),
        };
        remember("http://127.0.0.1:1/x", "m", p.clone());
        assert_eq!(cached("http://127.0.0.1:1/x", "m"), Some(p));
        assert_eq!(cached("http://127.0.0.1:1/x", "other"), None);
        assert_eq!(cached("http://127.0.0.1:2/x", "m"), None);
    }

    #[test]
    fn a_flood_of_invented_model_names_keeps_at_most_the_bound() {
        let mut v = Verdicts::new(4);
        let p = |why: &str| Probe {
            verdict: Verdict::Enforced,
            why: why.to_owned(),
        };
        for i in 0..100 {
            v.insert("http://u/x", &format!("invented-{i}"), p("x"));
        }
        assert_eq!(v.found.len(), 4);
        assert!(
            v.get("http://u/x", "invented-99").is_some(),
            "the newest stays"
        );
        assert!(
            v.get("http://u/x", "invented-0").is_none(),
            "the oldest made room"
        );
        // A verdict found again for a known key replaces it, taking no more room.
        v.insert("http://u/x", "invented-99", p("again"));
        assert_eq!(v.found.len(), 4);
        assert_eq!(v.get("http://u/x", "invented-99").unwrap().why, "again");
    }

    #[test]
    fn an_answer_outside_the_schema_contradicts_enforcement_a_cut_one_does_not() {
        let schema = ResponseSchema::from_value(json!({
            "type": "object",
            "properties": {"a": {"enum": ["x"]}},
            "required": ["a"],
        }))
        .unwrap();
        let said = |text: &str, stop| AdapterResponse {
            stop_reason: stop,
            ..AdapterResponse::text(text)
        };
        assert!(contradiction(&schema, &said("{\"a\": \"x\"}", StopReason::EndTurn)).is_none());
        for text in ["prose", "{\"a\": \"y\"}", "```json\n{\"a\": \"x\"}\n```"] {
            assert!(
                contradiction(&schema, &said(text, StopReason::EndTurn)).is_some(),
                "{text}"
            );
        }
        assert!(contradiction(&schema, &said("{\"a\": \"", StopReason::MaxTokens)).is_none());
        assert!(contradiction(&schema, &said("no", StopReason::Refusal)).is_none());
        let p = withdrawn("its answer is not a JSON value");
        assert_eq!(p.verdict, Verdict::Ignored);
        assert!(p.why.contains("withdrawn"), "{}", p.why);
    }

    #[test]
    fn the_probe_prompt_never_shows_the_nonce() {
        let req = request("m", "abc123abc123").unwrap();
        assert!(!req.system_prompt.contains("abc123"));
        assert!(req.messages.iter().all(|m| !m.text().contains("abc123")));
        assert_eq!(req.temperature, Some(0.0));
        assert_eq!(req.response_schema.unwrap().openai_name(), PROBE_NAME);
    }
}
