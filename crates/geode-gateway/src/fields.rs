//! Every top-level field of both endpoints' requests, and what the gateway does with it: read
//! into the task (and so put on the route's wire), kept in the response without changing the
//! answer, accepted only at its default value, or refused. A field the tables do not name is
//! refused as OpenAI refuses one: nothing a client sends is dropped in silence. `docs/gateway.md`
//! lists the same tables, and a test holds the two together.

use crate::error::ApiError;
use serde_json::{Map, Value};

/// What the gateway does with one request field.
#[derive(Debug, Clone, Copy)]
pub enum Use {
    /// Read into the task: what it becomes.
    Carried(&'static str),
    /// Accepted and echoed in the response; it does not change the answer (why).
    Kept(&'static str),
    /// Accepted at its default (as docs say it), which is what every answer already is; any
    /// other value would change the answer in a way no route carries, and is refused.
    AtDefault(&'static str, fn(&Value) -> bool),
    /// Refused whatever its value (why).
    Refused(&'static str),
    /// The other endpoint's spelling of something this one names otherwise (its name here).
    Foreign(&'static str),
}

/// One row: a field's name and its use.
pub type Field = (&'static str, Use);

fn null(v: &Value) -> bool {
    v.is_null()
}
fn one(v: &Value) -> bool {
    v.is_null() || v.as_f64() == Some(1.0)
}
fn zero(v: &Value) -> bool {
    v.is_null() || v.as_f64() == Some(0.0)
}
fn no(v: &Value) -> bool {
    v.is_null() || v == &Value::Bool(false)
}
fn empty(v: &Value) -> bool {
    v.is_null() || v.as_array().is_some_and(Vec::is_empty)
}
fn any_truncation(v: &Value) -> bool {
    // `auto` lets a server truncate, and geode never does; `disabled` forbids it.
    v.is_null() || matches!(v.as_str(), Some("auto" | "disabled"))
}
fn standard_tier(v: &Value) -> bool {
    v.is_null() || matches!(v.as_str(), Some("auto" | "default"))
}
fn medium(v: &Value) -> bool {
    v.is_null() || v.as_str() == Some("medium")
}
fn text_only(v: &Value) -> bool {
    v.is_null() || v == &serde_json::json!(["text"])
}

const SAMPLING: &str = "no route takes it: geode sends the provider's default";

/// `POST /v1/responses`.
pub const RESPONSES: &[Field] = &[
    ("model", Use::Carried("the route")),
    (
        "input",
        Use::Carried("the prompt and the turns before it (messages, function calls and outputs)"),
    ),
    ("instructions", Use::Carried("the system prompt")),
    (
        "previous_response_id",
        Use::Carried("the stored conversation it names, before `input`"),
    ),
    (
        "store",
        Use::Carried("whether the response is kept (default true)"),
    ),
    (
        "text",
        Use::Carried(
            "`format`: the schema, `json_object` or free text; `verbosity`: `medium` only",
        ),
    ),
    ("tools", Use::Carried("the client's function tools")),
    ("tool_choice", Use::Carried("how the model may use them")),
    (
        "temperature",
        Use::Carried("the sampling temperature (reasoning models take none: [wire](./wire.md))"),
    ),
    ("max_output_tokens", Use::Carried("the output token limit")),
    (
        "reasoning",
        Use::Carried(
            "`effort`: the reasoning effort, for routes that take one; `summary`: null only",
        ),
    ),
    ("stream", Use::Carried("the answer as events")),
    (
        "geode",
        Use::Carried("geode's extension: require, repair, cache"),
    ),
    (
        "stream_options",
        Use::Kept("`include_obfuscation`: geode never pads its events"),
    ),
    ("metadata", Use::Kept("the client's labels")),
    (
        "safety_identifier",
        Use::Kept("the client's end-user label"),
    ),
    ("prompt_cache_key", Use::Kept("a provider cache hint")),
    ("user", Use::Kept("the older end-user label")),
    (
        "parallel_tool_calls",
        Use::Kept("every call is validated whatever their number"),
    ),
    ("top_p", Use::AtDefault("1", one)),
    ("presence_penalty", Use::AtDefault("0", zero)),
    ("frequency_penalty", Use::AtDefault("0", zero)),
    ("top_logprobs", Use::AtDefault("0", zero)),
    (
        "truncation",
        Use::AtDefault("`disabled` or `auto`", any_truncation),
    ),
    (
        "service_tier",
        Use::AtDefault("`auto` or `default`", standard_tier),
    ),
    ("background", Use::AtDefault("false", no)),
    ("max_tool_calls", Use::AtDefault("null", null)),
    ("include", Use::AtDefault("`[]`", empty)),
    (
        "conversation",
        Use::Refused("conversations continue by `previous_response_id`"),
    ),
    (
        "prompt",
        Use::Refused("stored prompt templates are not served"),
    ),
    ("response_format", Use::Foreign("text.format")),
    ("messages", Use::Foreign("input")),
    ("max_tokens", Use::Foreign("max_output_tokens")),
    ("max_completion_tokens", Use::Foreign("max_output_tokens")),
];

/// `POST /v1/chat/completions`.
pub const CHAT: &[Field] = &[
    ("model", Use::Carried("the route")),
    (
        "messages",
        Use::Carried("the system prompt, the prompt and the turns before it"),
    ),
    (
        "response_format",
        Use::Carried("the schema, `json_object` or free text"),
    ),
    ("tools", Use::Carried("the client's function tools")),
    ("tool_choice", Use::Carried("how the model may use them")),
    (
        "temperature",
        Use::Carried("the sampling temperature (reasoning models take none: [wire](./wire.md))"),
    ),
    (
        "max_completion_tokens",
        Use::Carried("the output token limit"),
    ),
    (
        "max_tokens",
        Use::Carried("the output token limit (older name)"),
    ),
    (
        "reasoning_effort",
        Use::Carried("the reasoning effort, for routes that take one"),
    ),
    ("stream", Use::Carried("the answer as chunks")),
    (
        "geode",
        Use::Carried("geode's extension: require, repair, cache"),
    ),
    (
        "stream_options",
        Use::Kept("the last chunk always carries usage"),
    ),
    ("metadata", Use::Kept("the client's labels")),
    (
        "safety_identifier",
        Use::Kept("the client's end-user label"),
    ),
    ("prompt_cache_key", Use::Kept("a provider cache hint")),
    ("user", Use::Kept("the older end-user label")),
    (
        "parallel_tool_calls",
        Use::Kept("every call is validated whatever their number"),
    ),
    ("n", Use::AtDefault("1", one)),
    ("top_p", Use::AtDefault("1", one)),
    ("presence_penalty", Use::AtDefault("0", zero)),
    ("frequency_penalty", Use::AtDefault("0", zero)),
    ("logprobs", Use::AtDefault("false", no)),
    ("top_logprobs", Use::AtDefault("0", zero)),
    (
        "service_tier",
        Use::AtDefault("`auto` or `default`", standard_tier),
    ),
    ("store", Use::AtDefault("false", no)),
    ("modalities", Use::AtDefault("`[\"text\"]`", text_only)),
    ("verbosity", Use::AtDefault("`medium`", medium)),
    ("seed", Use::Refused(SAMPLING)),
    ("stop", Use::Refused(SAMPLING)),
    ("logit_bias", Use::Refused(SAMPLING)),
    (
        "prediction",
        Use::Refused("predicted outputs are not served"),
    ),
    ("audio", Use::Refused("audio output is not served")),
    (
        "web_search_options",
        Use::Refused("built-in web search is not served"),
    ),
    (
        "functions",
        Use::Refused("the deprecated function fields: send `tools`"),
    ),
    (
        "function_call",
        Use::Refused("the deprecated function fields: send `tool_choice`"),
    ),
    ("text", Use::Foreign("response_format")),
    ("input", Use::Foreign("messages")),
    ("instructions", Use::Foreign("a system message")),
    ("max_output_tokens", Use::Foreign("max_completion_tokens")),
];

/// The table as `docs/gateway.md` shows it (a test holds the two together).
pub fn markdown(table: &[Field]) -> String {
    let mut out = String::from("| field | what the gateway does with it |\n|---|---|\n");
    for (name, use_) in table {
        let what = match use_ {
            Use::Carried(what) => format!("read: {what}"),
            Use::Kept(why) => format!("kept and echoed: {why}"),
            Use::AtDefault(default, _) => {
                format!("accepted at its default, {default}; any other value is refused")
            }
            Use::Refused(why) => format!("refused: {why}"),
            Use::Foreign(ours) => {
                format!("refused: the other endpoint's field; this one takes {ours}")
            }
        };
        out.push_str(&format!("| `{name}` | {what} |\n"));
    }
    out
}

/// The longest field name an error repeats back.
const NAME_SHOWN: usize = 64;

/// Refuses the first field of `body` that `table` refuses, does not know, or has away from its
/// default. `endpoint` names the API in the message.
pub fn check(endpoint: &str, table: &[Field], body: &Map<String, Value>) -> Result<(), ApiError> {
    for (name, value) in body {
        let Some((known, use_)) = table.iter().find(|(n, _)| n == name) else {
            let shown: String = name.chars().take(NAME_SHOWN).collect();
            return Err(ApiError::unsupported(
                "body",
                format!("the {endpoint} API has no field `{shown}`"),
            )
            .param(shown));
        };
        let refusal = match use_ {
            Use::Carried(_) | Use::Kept(_) => continue,
            Use::AtDefault(_, at) if at(value) => continue,
            Use::AtDefault(default, _) => format!(
                "`{known}` is served only at its default ({default}): no route carries another value"
            ),
            Use::Refused(why) => format!("`{known}` is not served: {why}"),
            Use::Foreign(ours) => {
                format!("`{known}` is the other endpoint's field; the {endpoint} API takes {ours}")
            }
        };
        return Err(ApiError::unsupported(known, refusal));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn unknown_refused_and_off_default_fields_are_named() {
        for (table, sent, param) in [
            (
                RESPONSES,
                json!({"model": "m", "frobnicate": 1}),
                "frobnicate",
            ),
            (RESPONSES, json!({"top_p": 0.5}), "top_p"),
            (RESPONSES, json!({"background": true}), "background"),
            (RESPONSES, json!({"conversation": "c"}), "conversation"),
            (RESPONSES, json!({"response_format": {}}), "response_format"),
            (CHAT, json!({"seed": 1}), "seed"),
            (CHAT, json!({"n": 2}), "n"),
            (CHAT, json!({"text": {}}), "text"),
        ] {
            let e = check("X", table, &body(sent)).unwrap_err();
            assert_eq!(
                (e.code, e.param.as_deref()),
                ("unsupported_parameter", Some(param))
            );
            assert!(e.message.contains(param), "{}", e.message);
        }
    }

    #[test]
    fn defaults_and_kept_fields_pass() {
        let sent = json!({
            "model": "m", "top_p": 1, "presence_penalty": 0.0, "truncation": "disabled",
            "background": false, "include": [], "metadata": {"k": "v"}, "max_tool_calls": null,
        });
        check("Responses", RESPONSES, &body(sent)).unwrap();
        let sent = json!({"n": 1, "modalities": ["text"], "logprobs": false, "user": "u"});
        check("Chat Completions", CHAT, &body(sent)).unwrap();
    }

    #[test]
    fn a_long_unknown_name_is_cut() {
        let name = "x".repeat(10_000);
        let e = check("X", CHAT, &body(json!({ name.clone(): 1 }))).unwrap_err();
        assert_eq!(e.param.as_deref().map(str::len), Some(NAME_SHOWN));
        assert!(e.message.len() < 200);
    }

    #[test]
    fn the_docs_list_every_field_as_the_tables_say() {
        let docs = include_str!("../../../docs/gateway.md");
        for (name, table) in [("Responses", RESPONSES), ("Chat Completions", CHAT)] {
            assert!(
                docs.contains(&markdown(table)),
                "docs/gateway.md lacks the {name} table as the code has it:\n{}",
                markdown(table)
            );
        }
    }

    #[test]
    fn each_table_names_a_field_once() {
        for table in [RESPONSES, CHAT] {
            let mut names: Vec<_> = table.iter().map(|(n, _)| n).collect();
            names.sort();
            let before = names.len();
            names.dedup();
            assert_eq!(before, names.len());
        }
    }
}
