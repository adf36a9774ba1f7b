//! Which provider a fake imitates, and the dispatch to its protocol module.
//!
//! | kind | model call | streamed when | module |
//! |---|---|---|---|
//! | `responses` | `POST …/responses` | `stream: true` | [`crate::responses`] |
//! | `chatgpt` | `POST …/backend-api/codex/responses` (any `…/responses`) | always (required) | [`crate::chatgpt`] |
//! | `messages` | `POST …/v1/messages` | `stream: true` | [`crate::messages`] |
//! | `chat` | `POST …/chat/completions` | `stream: true` | [`crate::chat`] |

use crate::plan::{Call, Content, Ids, Plan, Route};
use crate::record::RecordedRequest;
use crate::{chat, chatgpt, messages, responses};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::str::FromStr;

/// The provider protocol a [`crate::FakeServer`] speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The OpenAI Responses API (`POST /v1/responses`; `/responses` for codex providers).
    Responses,
    /// The ChatGPT/Codex backend: Responses over SSE only, with its body checks, plus the OAuth
    /// refresh and routing-discovery endpoints.
    ChatGpt,
    /// The Anthropic Messages API (`POST /v1/messages`).
    Messages,
    /// Chat Completions as GLM / Z.ai serve them (`POST …/chat/completions`).
    Chat,
}

impl Kind {
    /// All kinds, in a stable order.
    pub const ALL: [Kind; 4] = [Kind::Responses, Kind::ChatGpt, Kind::Messages, Kind::Chat];

    /// The kind's command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Responses => "responses",
            Kind::ChatGpt => "chatgpt",
            Kind::Messages => "messages",
            Kind::Chat => "chat",
        }
    }

    /// The path a client should POST model calls to, relative to the base URL.
    pub fn model_path(self) -> &'static str {
        match self {
            Kind::Responses => "/v1/responses",
            Kind::ChatGpt => "/backend-api/codex/responses",
            Kind::Messages => "/v1/messages",
            Kind::Chat => "/v1/chat/completions",
        }
    }

    pub(crate) fn route(self, req: &RecordedRequest, origin: &str, ids: &Ids) -> Route {
        match self {
            Kind::Responses => responses::route(req),
            Kind::ChatGpt => chatgpt::route(req, origin, ids),
            Kind::Messages => messages::route(req),
            Kind::Chat => chat::route(req),
        }
    }

    pub(crate) fn auto(self, body: &Value) -> Content {
        match self {
            Kind::Responses | Kind::ChatGpt => responses::auto(body),
            Kind::Messages => messages::auto(body),
            Kind::Chat => chat::auto(body),
        }
    }

    /// What [`crate::Reply::CallOfferedTool`] says: a call to the first function tool the
    /// request offers (its arguments an instance of the tool's schema) until the conversation
    /// holds a tool result, then [`Self::auto`].
    pub(crate) fn call_offered_tool(self, body: &Value) -> Content {
        // (where the tools are defined, their name, their schema, what marks a tool result)
        let (name, schema) = match self {
            Kind::Responses | Kind::ChatGpt => ("/name", "/parameters"),
            Kind::Chat => ("/function/name", "/function/parameters"),
            Kind::Messages => ("/name", "/input_schema"),
        };
        let answered = match self {
            Kind::Responses | Kind::ChatGpt => body["input"]
                .as_array()
                .is_some_and(|items| items.iter().any(|i| i["type"] == "function_call_output")),
            Kind::Chat => body["messages"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["role"] == "tool")),
            Kind::Messages => body["messages"].as_array().is_some_and(|m| {
                m.iter().any(|m| {
                    m["content"]
                        .as_array()
                        .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
                })
            }),
        };
        let offered = body["tools"].as_array().and_then(|tools| {
            tools.iter().find_map(|t| {
                let n = t.pointer(name)?.as_str()?;
                (n != "StructuredOutput").then(|| (n.to_owned(), t.pointer(schema).cloned()))
            })
        });
        match offered {
            Some((name, schema)) if !answered => Content::ToolCall {
                name,
                arguments: crate::instance::instance(&schema.unwrap_or(Value::Null)),
            },
            _ => self.auto(body),
        }
    }

    pub(crate) fn answer(self, call: &Call, content: &Content) -> Plan {
        match self {
            Kind::Responses => responses::answer(call, content, call.wants_stream()),
            Kind::ChatGpt => responses::answer(call, content, true),
            Kind::Messages => messages::answer(call, content),
            Kind::Chat => chat::answer(call, content),
        }
    }

    /// A 200 whose Responses stream ends in `response.failed` (see
    /// [`crate::Reply::ResponseFailed`]); the other wires play their in-band error.
    pub(crate) fn response_failed(self, call: &Call, message: &str) -> Plan {
        match self {
            Kind::Responses => responses::failed_response(call, message, call.wants_stream()),
            Kind::ChatGpt => responses::failed_response(call, message, true),
            Kind::Messages | Kind::Chat => self.in_band_error(call, message),
        }
    }

    /// A 200 answer that reports a provider failure carrying `message`, in this wire's shape
    /// (the ChatGPT backend always streams).
    pub(crate) fn in_band_error(self, call: &Call, message: &str) -> Plan {
        let stream = call.wants_stream() || self == Kind::ChatGpt;
        match self {
            Kind::Responses | Kind::ChatGpt => responses::in_band_error(call, message, stream),
            Kind::Messages => messages::in_band_error(message, stream),
            Kind::Chat => chat::in_band_error(message, stream),
        }
    }

    pub(crate) fn error_body(self, status: u16) -> Value {
        match self {
            Kind::Responses => responses::error_body(status),
            Kind::ChatGpt => chatgpt::error_body(status),
            Kind::Messages => messages::error_body(status),
            Kind::Chat => chat::error_body(status),
        }
    }

    pub(crate) fn schema_rejection(self, message: &str) -> Value {
        match self {
            Kind::Responses | Kind::ChatGpt => responses::schema_rejection(message),
            Kind::Messages => messages::schema_rejection(message),
            Kind::Chat => chat::schema_rejection(message),
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error for an unknown kind name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown kind {0:?} (expected responses, chatgpt, messages or chat)")]
pub struct UnknownKind(pub String);

impl FromStr for Kind {
    type Err = UnknownKind;

    fn from_str(s: &str) -> Result<Kind, UnknownKind> {
        Kind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownKind(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_round_trip() {
        for kind in Kind::ALL {
            assert_eq!(kind.name().parse::<Kind>(), Ok(kind));
        }
        assert!("gemini".parse::<Kind>().is_err());
    }
}
