//! What a fake answers: a [`Script`] of [`Reply`] steps, played in order.
//!
//! Contract:
//! - Only *model calls* (`POST …/responses`, `POST …/v1/messages`, `POST …/chat/completions`)
//!   consume a step. Side endpoints (model lists, `count_tokens`, `HEAD /`, OAuth refresh, …) and
//!   requests the fake rejects before answering (the ChatGPT backend's body checks) do not.
//! - Steps are taken in arrival order. When they run out, [`Script::default_reply`] is played if
//!   set, otherwise the last step is repeated; an empty script with no default plays
//!   [`Reply::Auto`].
//! - A script loads from JSON (see [`Script::from_json`]): either a bare array of replies or
//!   `{"steps": [...], "default": <reply>, "usage": {"input_tokens": N, "output_tokens": M}}`.
//!   Replies use serde's external tagging in snake case, for example
//!   `{"text": "hi"}`, `{"json": {"a": 1}}`, `{"tool_call": {"name": "f", "arguments": {}}}`,
//!   `{"status": {"status": 429, "retry_after": 2}}`, `"connection_reset"`, `"auto"`,
//!   `{"slow_body": {"delay_ms": 500, "then": {"text": "late"}}}`, `"hang_mid_body"`,
//!   `{"hang_mid_text": "{\"a\": [1, 2"}`, `"reset_mid_body"`, `"endless"`, `"garbage"`, `"html"`, `{"in_band_error": "overloaded"}`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;
use std::sync::Mutex;

/// One scripted answer to one model call.
///
/// Content replies are rendered in the shape of the server's [`crate::Kind`]; fault replies
/// (`ConnectionReset`, `StreamCut`, `SlowBody`, `Hang`, `HangMidBody`, `ResetMidBody`,
/// `Endless`, `Garbage`, `Html`) act on the connection or the body itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// Answer in the shape the request asks for, like the Python fakes: an instance of the
    /// request's output schema (Responses `text.format`, Chat `response_format`, Messages
    /// `output_config.format`/`output_format`), or a call to an offered `StructuredOutput` tool
    /// (Messages, unless the last user turn already carries a `tool_result`), else a fixed text.
    Auto,
    /// Call the first function tool the request offers, with an instance of its schema as the
    /// arguments, until the conversation holds a tool result; then answer as [`Reply::Auto`].
    /// One script serves a whole tool round trip, whichever client comes when.
    CallOfferedTool,
    /// A normal answer with this text.
    Text(String),
    /// A normal answer whose text is this JSON value, serialised compactly.
    Json(Value),
    /// One tool (function) call.
    ToolCall {
        /// The tool name.
        name: String,
        /// The arguments object (sent as a JSON string where the provider uses strings).
        #[serde(default)]
        arguments: Value,
    },
    /// A refusal carrying this text (Responses `refusal` part, Messages `stop_reason:"refusal"`,
    /// Chat `message.refusal`).
    Refusal(String),
    /// A truncated answer with this partial text: Responses `status:"incomplete"` with reason
    /// `max_output_tokens`, Messages `stop_reason:"max_tokens"`, Chat `finish_reason:"length"`.
    MaxTokens(String),
    /// HTTP 400 with a provider-shaped error about the output schema, carrying this message.
    SchemaRejection(String),
    /// An HTTP error status. A `null` body becomes the provider's usual error body.
    Status {
        /// The HTTP status code (401, 429, 500, …).
        status: u16,
        /// The JSON body; `null` means "the provider's usual error body for this status".
        #[serde(default)]
        body: Value,
        /// Seconds for a `retry-after` header, if any.
        #[serde(default)]
        retry_after: Option<u64>,
    },
    /// Read the request, then close the socket without writing any response.
    ConnectionReset,
    /// Start a normal text answer and stop mid-way: a streamed answer ends cleanly in the middle
    /// of an event, without its terminal event; a JSON answer sends half its bytes and aborts.
    StreamCut,
    /// Delay the inner reply: streamed answers send their headers at once and the first event
    /// after the delay; every other answer sends nothing until the delay is over.
    SlowBody {
        /// The delay in milliseconds.
        delay_ms: u64,
        /// What to play after the delay.
        then: Box<Reply>,
    },
    /// Read the request and never answer (until the client gives up or the server stops).
    Hang,
    /// Start a normal text answer, send about half of it, then go silent with the connection
    /// open (a hang mid-body).
    HangMidBody,
    /// [`Reply::HangMidBody`] with this answer text (a JSON answer whose first half a
    /// streaming client can already show).
    HangMidText(String),
    /// Start a normal text answer, send about half of it, then abort the connection (a reset
    /// mid-stream; a JSON answer behaves as [`Reply::StreamCut`]).
    ResetMidBody,
    /// A 200 text answer whose body never ends: streamed answers repeat a text delta, JSON
    /// answers an unterminated string; throttled to about 16 MB/s.
    Endless,
    /// A 200 whose body is binary garbage (not UTF-8, not JSON), cut into `data:` lines so an
    /// SSE reader sees events whose payload is garbage.
    Garbage,
    /// A 200 `text/html` page (what a proxy sends) instead of the provider's answer.
    Html,
    /// A 200 that reports a provider failure inside the answer, carrying this message:
    /// a Responses `error` event (`response.failed` object when not streamed), an Anthropic
    /// `error` event (`overloaded_error`; an error object when not streamed), a Chat
    /// `{"error": {...}}` body.
    InBandError(String),
    /// Plays the inner reply as if the request had not asked to stream: one JSON body even to
    /// `"stream": true` (what some OpenAI-compatible servers and proxies do). The ChatGPT
    /// backend always streams, so there it changes nothing.
    IgnoreStream(Box<Reply>),
    /// A 200 whose Responses (and ChatGPT) stream ends with the terminal `response.failed`
    /// carrying this message (a `status: "failed"` body when not streamed); the other wires play
    /// [`Reply::InBandError`].
    ResponseFailed(String),
}

impl Reply {
    /// A plain-text answer.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::Text(text.into())
    }

    /// A tool call with these arguments.
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Reply {
        Reply::ToolCall {
            name: name.into(),
            arguments,
        }
    }

    /// An HTTP error with the provider's usual body for that status.
    pub fn status(status: u16) -> Reply {
        Reply::Status {
            status,
            body: Value::Null,
            retry_after: None,
        }
    }

    /// A 429 with the provider's usual body and a `retry-after` header.
    pub fn rate_limited(retry_after_secs: u64) -> Reply {
        Reply::Status {
            status: 429,
            body: Value::Null,
            retry_after: Some(retry_after_secs),
        }
    }

    /// `then`, delayed by `delay_ms` (see [`Reply::SlowBody`]).
    pub fn slow(delay_ms: u64, then: Reply) -> Reply {
        Reply::SlowBody {
            delay_ms,
            then: Box::new(then),
        }
    }
}

/// Token counts reported in every successful answer's usage block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Prompt tokens (`input_tokens` / `prompt_tokens`).
    pub input_tokens: u64,
    /// Completion tokens (`output_tokens` / `completion_tokens`).
    pub output_tokens: u64,
}

impl Default for TokenUsage {
    fn default() -> Self {
        TokenUsage {
            input_tokens: 11,
            output_tokens: 7,
        }
    }
}

/// The replies a fake plays, in order (see the module docs for the exhaustion rule).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Script {
    /// The replies, one per model call.
    #[serde(default)]
    pub steps: Vec<Reply>,
    /// Played once `steps` are used up; `None` repeats the last step.
    #[serde(default, rename = "default")]
    pub default_reply: Option<Reply>,
    /// Usage numbers reported in answers.
    #[serde(default)]
    pub usage: TokenUsage,
}

/// Why a script could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file could not be read.
    #[error("cannot read script file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The text is not a valid script.
    #[error("invalid script: {0}")]
    Parse(#[from] serde_json::Error),
}

/// The accepted file shapes: a bare array of replies, or the full object.
#[derive(Deserialize)]
#[serde(untagged)]
enum ScriptFile {
    Steps(Vec<Reply>),
    Full(Script),
}

impl Script {
    /// A script that plays these replies in order, then repeats the last one.
    pub fn new(steps: impl IntoIterator<Item = Reply>) -> Script {
        Script {
            steps: steps.into_iter().collect(),
            ..Script::default()
        }
    }

    /// A script that always plays `reply`.
    pub fn always(reply: Reply) -> Script {
        Script::new([reply])
    }

    /// Sets the reply played after the steps run out.
    pub fn then_default(mut self, reply: Reply) -> Script {
        self.default_reply = Some(reply);
        self
    }

    /// Sets the usage numbers reported in answers.
    pub fn with_usage(mut self, usage: TokenUsage) -> Script {
        self.usage = usage;
        self
    }

    /// Parses a script from JSON text (bare array or full object).
    pub fn from_json(text: &str) -> Result<Script, ScriptError> {
        Ok(match serde_json::from_str::<ScriptFile>(text)? {
            ScriptFile::Steps(steps) => Script::new(steps),
            ScriptFile::Full(script) => script,
        })
    }

    /// Reads and parses a script file.
    pub fn from_file(path: &Path) -> Result<Script, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Script::from_json(&text)
    }

    /// The reply for the model call number `index` (0-based).
    fn reply_at(&self, index: usize) -> Reply {
        if let Some(reply) = self.steps.get(index) {
            return reply.clone();
        }
        self.default_reply
            .clone()
            .or_else(|| self.steps.last().cloned())
            .unwrap_or(Reply::Auto)
    }
}

/// A script being played: hands out replies in arrival order, safe to share between
/// connections.
#[derive(Debug)]
pub(crate) struct Player {
    script: Script,
    next: Mutex<usize>,
}

impl Player {
    pub(crate) fn new(script: Script) -> Player {
        Player {
            script,
            next: Mutex::new(0),
        }
    }

    /// Takes the next reply.
    pub(crate) fn next_reply(&self) -> Reply {
        let index = {
            let mut next = self
                .next
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            let index = *next;
            *next = next.saturating_add(1);
            index
        };
        self.script.reply_at(index)
    }

    pub(crate) fn usage(&self) -> TokenUsage {
        self.script.usage
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn steps_play_in_order_then_repeat_the_last() {
        let player = Player::new(Script::new([Reply::text("a"), Reply::text("b")]));
        assert_eq!(player.next_reply(), Reply::text("a"));
        assert_eq!(player.next_reply(), Reply::text("b"));
        assert_eq!(player.next_reply(), Reply::text("b"));
    }

    #[test]
    fn default_reply_follows_exhausted_steps() {
        let script = Script::new([Reply::text("a")]).then_default(Reply::status(500));
        let player = Player::new(script);
        assert_eq!(player.next_reply(), Reply::text("a"));
        assert_eq!(player.next_reply(), Reply::status(500));
    }

    #[test]
    fn empty_script_answers_auto() {
        assert_eq!(Player::new(Script::default()).next_reply(), Reply::Auto);
    }

    #[test]
    fn script_parses_from_bare_array_and_full_object() {
        let bare = Script::from_json(
            r#"[{"text":"hi"},"connection_reset",{"tool_call":{"name":"f","arguments":{"x":1}}},
               {"slow_body":{"delay_ms":5,"then":"hang"}},{"status":{"status":429,"retry_after":3}}]"#,
        )
        .unwrap();
        assert_eq!(
            bare.steps,
            vec![
                Reply::text("hi"),
                Reply::ConnectionReset,
                Reply::tool_call("f", json!({"x": 1})),
                Reply::slow(5, Reply::Hang),
                Reply::rate_limited(3),
            ]
        );
        let full = Script::from_json(
            r#"{"steps":[{"json":{"a":1}}],"default":"stream_cut","usage":{"input_tokens":3,"output_tokens":4}}"#,
        )
        .unwrap();
        assert_eq!(full.steps, vec![Reply::Json(json!({"a": 1}))]);
        assert_eq!(full.default_reply, Some(Reply::StreamCut));
        assert_eq!(full.usage.output_tokens, 4);
    }

    #[test]
    fn bad_script_is_an_error_not_a_panic() {
        assert!(matches!(
            Script::from_json(r#"[{"nope":1}]"#),
            Err(ScriptError::Parse(_))
        ));
        assert!(matches!(
            Script::from_file(Path::new("/nonexistent/script.json")),
            Err(ScriptError::Read { .. })
        ));
    }
}
