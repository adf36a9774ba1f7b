//! Calls to the caller's tools from the local model, made well-formed by the grammar.
//!
//! A small model is not trained on any one provider's tool format, so the format is the
//! grammar's: a call is `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (the tags
//! SmolLM's and Qwen's chat templates use), where `name` is one of the offered tools and
//! `arguments` matches that tool's parameter schema, narrowed for decoding like an answer
//! ([`crate::tighten`]). One call per turn.
//!
//! | `tool_choice` | the grammar |
//! |---|---|
//! | `auto` | a call, or the answer (its schema's JSON, else free text) |
//! | `any` | a call to one of the tools |
//! | `tool(name)` | a call to that tool (unknown names are refused) |
//! | `none` | the answer alone (the tools are not offered) |
//!
//! The model learns the tools from a system-prompt block ([`instructions`]); what it wrote is
//! read back by [`parse`], and held back from the text stream by [`Hold`] when it is a call.

use crate::error::LocalError;
use crate::tighten::tighten_within;
use geode::llm::call::TextSink;
use geode::llm::request::{ToolChoice, ToolSpec, ToolUse};
use geode::schema::ResponseSchema;
use serde_json::{Value, json};
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex};

/// What opens a call.
pub const OPEN: &str = "<tool_call>";
/// What closes it.
pub const CLOSE: &str = "</tool_call>";

/// The tools a call may use, and whether it must.
#[derive(Debug, Clone, PartialEq)]
pub struct Offer {
    /// The tools the grammar allows (one, for a named `tool_choice`).
    pub tools: Vec<ToolSpec>,
    /// Whether the answer must be a call.
    pub required: bool,
}

impl Offer {
    /// The offer of a request's tools under its `tool_choice`; `None` when no tool is offered.
    pub fn new(tools: &[ToolSpec], choice: &ToolChoice) -> Result<Option<Self>, LocalError> {
        if tools.is_empty() {
            return Ok(None);
        }
        let (tools, required) = match choice {
            ToolChoice::None => return Ok(None),
            ToolChoice::Auto => (tools.to_vec(), false),
            ToolChoice::Any => (tools.to_vec(), true),
            ToolChoice::Tool(name) => match tools.iter().find(|t| &t.name == name) {
                Some(tool) => (vec![tool.clone()], true),
                None => {
                    return Err(LocalError::Constraint {
                        kind: "tools",
                        reason: format!("tool_choice names {name:?}, which is not offered"),
                    });
                }
            },
        };
        Ok(Some(Self { tools, required }))
    }

    /// The JSON Schema of a call's body, narrowed to fit `max_tokens` (a call to one tool is one
    /// branch of an `anyOf`, so `name` decides which parameter schema applies).
    pub fn call_schema(&self, max_tokens: u32) -> Result<Value, LocalError> {
        let branches: Vec<Value> = self
            .tools
            .iter()
            .map(|t| {
                let parameters = match &t.input_schema {
                    Value::Null => json!({"type": "object"}),
                    p => p.clone(),
                };
                json!({
                    "type": "object",
                    "properties": {"name": {"const": t.name}, "arguments": parameters},
                    "required": ["name", "arguments"],
                    "additionalProperties": false,
                })
            })
            .collect();
        let schema = ResponseSchema::from_value(json!({ "anyOf": branches })).map_err(|e| {
            LocalError::Constraint {
                kind: "tools",
                reason: format!("a tool's parameter schema: {e}"),
            }
        })?;
        Ok(tighten_within(&schema, max_tokens).schema)
    }
}

/// The Lark rule for a call, given its body's (narrowed) schema.
pub fn call_rule(call_schema: &Value) -> String {
    format!(
        "call: {} %json {} {}\n",
        Value::String(OPEN.to_owned()),
        call_schema,
        Value::String(CLOSE.to_owned())
    )
}

/// The system-prompt block that tells the model the tools and the call format.
pub fn instructions(offer: &Offer) -> String {
    let listed: Vec<Value> = offer
        .tools
        .iter()
        .map(
            |t| json!({"name": t.name, "description": t.description, "parameters": t.input_schema}),
        )
        .collect();
    let when = if offer.required {
        "You must call one of these tools."
    } else {
        "You may call one of these tools when it helps; otherwise answer directly."
    };
    format!(
        "{when} To call a tool, answer with {OPEN}{{\"name\": <tool name>, \"arguments\": <arguments>}}{CLOSE} and nothing else.\nTools:\n{}",
        Value::Array(listed)
    )
}

/// The call in `text`, when the model wrote one (the grammar lets nothing else start with
/// [`OPEN`] and end with [`CLOSE`]).
pub fn parse(text: &str) -> Option<ToolUse> {
    let body = text.trim().strip_prefix(OPEN)?.strip_suffix(CLOSE)?;
    let mut call: Value = serde_json::from_str(body).ok()?;
    let name = call.get("name")?.as_str()?.to_owned();
    let input = call.get_mut("arguments")?.take();
    Some(ToolUse {
        id: call_id(),
        name,
        input,
    })
}

/// `call_` and 64 bits from the process's random hasher keys: unique within any conversation a
/// stored response continues, across processes too.
fn call_id() -> String {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    );
    format!("call_{:016x}", h.finish())
}

/// Text deltas held back while they may still open a call: a call is not answer text, so a
/// stream shows none of it; anything else goes out as soon as it cannot be one.
pub struct Hold {
    sink: TextSink,
    state: Mutex<HoldState>,
}

#[derive(Default)]
struct HoldState {
    held: String,
    /// Whether the text was decided to be a call (`Some(true)`) or answer text.
    call: Option<bool>,
}

impl Hold {
    /// A sink that passes answer text on to `sink` and swallows a call.
    pub fn wrap(sink: TextSink) -> TextSink {
        let hold = Arc::new(Self {
            sink,
            state: Mutex::new(HoldState::default()),
        });
        TextSink::new(move |delta| hold.push(delta))
    }

    fn push(&self, delta: &str) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match state.call {
            Some(true) => {}
            Some(false) => self.sink.send(delta),
            None => {
                state.held.push_str(delta);
                let seen = state.held.trim_start();
                if seen.starts_with(OPEN) {
                    state.call = Some(true);
                } else if !OPEN.starts_with(seen) {
                    state.call = Some(false);
                    let held = std::mem::take(&mut state.held);
                    self.sink.send(&held);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weather() -> ToolSpec {
        ToolSpec {
            name: "get_weather".to_owned(),
            description: "the weather".to_owned(),
            input_schema: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        }
    }

    #[test]
    fn the_choice_decides_the_offer() {
        let tools = [weather()];
        assert_eq!(Offer::new(&[], &ToolChoice::Any).unwrap(), None);
        assert_eq!(Offer::new(&tools, &ToolChoice::None).unwrap(), None);
        assert!(
            !Offer::new(&tools, &ToolChoice::Auto)
                .unwrap()
                .unwrap()
                .required
        );
        assert!(
            Offer::new(&tools, &ToolChoice::Any)
                .unwrap()
                .unwrap()
                .required
        );
        let named = ToolChoice::Tool("get_weather".to_owned());
        assert_eq!(Offer::new(&tools, &named).unwrap().unwrap().tools.len(), 1);
        let unknown = ToolChoice::Tool("launch".to_owned());
        assert!(matches!(
            Offer::new(&tools, &unknown),
            Err(LocalError::Constraint { kind: "tools", .. })
        ));
    }

    #[test]
    fn a_call_is_read_back_with_a_fresh_id_and_anything_else_is_not_a_call() {
        let call = parse(
            r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>"#,
        )
        .unwrap();
        assert_eq!(call.name, "get_weather");
        assert_eq!(call.input, json!({"city": "Oslo"}));
        assert!(call.id.starts_with("call_"));
        let again =
            parse(r#"<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>"#).unwrap();
        assert_ne!(call.id, again.id);
        assert_eq!(parse("It is sunny."), None);
        assert_eq!(parse(r#"<tool_call>{"name": "x""#), None);
    }

    #[test]
    fn the_call_schema_names_each_tool_and_its_arguments() {
        let offer = Offer::new(&[weather()], &ToolChoice::Auto)
            .unwrap()
            .unwrap();
        let schema = offer.call_schema(256).unwrap();
        let branch = &schema["anyOf"][0];
        assert_eq!(branch["properties"]["name"]["const"], "get_weather");
        assert_eq!(
            branch["properties"]["arguments"]["required"],
            json!(["city"])
        );
        assert!(call_rule(&schema).starts_with("call: \"<tool_call>\" %json {"));
    }

    #[test]
    fn a_stream_shows_answer_text_and_hides_a_call() {
        let seen = Arc::new(Mutex::new(String::new()));
        let sink = |seen: &Arc<Mutex<String>>| {
            let seen = seen.clone();
            Hold::wrap(TextSink::new(move |d| seen.lock().unwrap().push_str(d)))
        };
        let text = sink(&seen);
        for d in ["<", "b>", "Sunny"] {
            text.send(d);
        }
        assert_eq!(*seen.lock().unwrap(), "<b>Sunny");
        let hidden = Arc::new(Mutex::new(String::new()));
        let call = sink(&hidden);
        for d in ["<tool", "_call>{\"name\"", "}</tool_call>"] {
            call.send(d);
        }
        assert_eq!(*hidden.lock().unwrap(), "");
    }
}
