//! A conversation as a task takes it: system turns → the system prompt, the last user turn →
//! the prompt, the turns before it → the history, calls to the caller's tools and their results
//! as they are. The gateway builds one from Chat Completions `messages` and Responses `input`;
//! a [`crate::Client`] call takes one as its [`Prompt`] (the Python package's message lists).

use crate::agent::task::Task;
use crate::llm::request::{ContentBlock, Message, Role};
use crate::media::Media;
use serde_json::Value;

/// Why turns do not make a conversation a task can continue.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConversationError {
    /// A role other than `system`, `developer`, `user`, `assistant` (and `tool` with a call id).
    #[error("unknown role {0:?}")]
    UnknownRole(String),
    /// A `tool` turn given as plain text, without the call it answers.
    #[error("a tool turn must name the call it answers")]
    ToolTurnWithoutCall,
    /// A tool call whose arguments are not a JSON object.
    #[error("the arguments of tool call {0:?} are not a JSON object")]
    ToolArguments(String),
    /// A tool result for a call the assistant turn before it did not make.
    #[error("the tool result for {0:?} answers no call of the assistant turn before it")]
    UnaskedToolResult(String),
    /// Images or documents in a turn that is not the user's.
    #[error("only user turns may hold images or documents, not {0:?} turns")]
    PartsOutsideUserTurn(String),
    /// The last turn is the assistant's: there is nothing to answer.
    #[error("the last turn must be the user's or a tool's")]
    LastTurn,
    /// No turn at all (system turns aside).
    #[error("the conversation must hold a user turn")]
    Empty,
}

/// The turns of a conversation, in order.
///
/// ```
/// # fn main() -> Result<(), geode::agent::conversation::ConversationError> {
/// let mut turns = geode::Conversation::new();
/// turns.push("system", "You review pull requests.")?;
/// turns.push("user", "PR 12 adds a test.")?;
/// turns.push("assistant", "Noted: PR 12.")?;
/// turns.push("user", "Merge it?")?;
/// let prompt: geode::Prompt = turns.into_prompt()?; // client.extract::<Decision>(prompt)
/// # let _ = prompt;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation {
    system: Vec<String>,
    turns: Vec<Message>,
}

/// What a call says to the model: one user message, or a whole [`Conversation`] (its system
/// turns replace the client's system prompt). A `&str` or `String` is one user message.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prompt {
    text: String,
    parts: Vec<Media>,
    history: Vec<Message>,
    system: Option<String>,
}

impl Conversation {
    /// An empty conversation.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one text turn: `system` or `developer` (joined into the system prompt), `user` or
    /// `assistant`.
    pub fn push(&mut self, role: &str, text: impl Into<String>) -> Result<(), ConversationError> {
        let text = text.into();
        match role {
            "system" | "developer" => self.system.push(text),
            "user" => self.turns.push(Message::user(text)),
            "assistant" => self.turns.push(Message::assistant(text)),
            "tool" | "function" => return Err(ConversationError::ToolTurnWithoutCall),
            other => return Err(ConversationError::UnknownRole(other.to_owned())),
        }
        Ok(())
    }

    /// Adds one user turn of text and images or documents (which the model sees before the
    /// text); images in any other turn are refused, never dropped.
    pub fn push_parts(
        &mut self,
        role: &str,
        text: impl Into<String>,
        parts: Vec<Media>,
    ) -> Result<(), ConversationError> {
        if parts.is_empty() {
            return self.push(role, text);
        }
        if role != "user" {
            return Err(ConversationError::PartsOutsideUserTurn(role.to_owned()));
        }
        let mut content: Vec<ContentBlock> = parts.into_iter().map(ContentBlock::from).collect();
        let text = text.into();
        if !text.is_empty() {
            content.push(ContentBlock::Text { text });
        }
        self.turns.push(Message {
            role: Role::User,
            content,
        });
        Ok(())
    }

    /// Adds a call the model made to one of the caller's tools, with its arguments as JSON
    /// text: to the assistant turn before it when there is one (an empty one gives its text up).
    pub fn push_tool_call(
        &mut self,
        id: &str,
        name: &str,
        arguments: &str,
    ) -> Result<(), ConversationError> {
        let input = serde_json::from_str::<Value>(arguments)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| ConversationError::ToolArguments(id.to_owned()))?;
        let call = ContentBlock::ToolUse {
            id: id.to_owned(),
            name: name.to_owned(),
            input,
        };
        match self.turns.last_mut() {
            Some(m) if m.role == Role::Assistant => {
                m.content
                    .retain(|b| !matches!(b, ContentBlock::Text { text } if text.is_empty()));
                m.content.push(call);
            }
            _ => self.turns.push(Message {
                role: Role::Assistant,
                content: vec![call],
            }),
        }
        Ok(())
    }

    /// Adds the result of the caller's tool call `id`, which must be a call of the assistant
    /// turn before it; results that follow each other travel in one user turn.
    pub fn push_tool_result(&mut self, id: &str, output: String) -> Result<(), ConversationError> {
        let asked = self
            .turns
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
            .is_some_and(|m| {
                m.content
                    .iter()
                    .any(|b| matches!(b, ContentBlock::ToolUse { id: call, .. } if call == id))
            });
        if !asked {
            return Err(ConversationError::UnaskedToolResult(id.to_owned()));
        }
        let result = ContentBlock::ToolResult {
            tool_use_id: id.to_owned(),
            content: output,
            is_error: false,
        };
        match self.turns.last_mut() {
            Some(m) if is_tool_results(m) => m.content.push(result),
            _ => self.turns.push(Message {
                role: Role::User,
                content: vec![result],
            }),
        }
        Ok(())
    }

    /// Adds a system prompt given apart from the turns (the Responses API's `instructions`),
    /// before the system turns.
    pub fn instructions(&mut self, text: &str) {
        if !text.is_empty() {
            self.system.insert(0, text.to_owned());
        }
    }

    /// The conversation as a call's prompt: the last turn must be the user's, a text (the
    /// prompt) or tool results (then the call continues the conversation, with no new text).
    pub fn into_prompt(mut self) -> Result<Prompt, ConversationError> {
        let (text, parts) = match self.turns.last() {
            Some(m) if is_tool_results(m) => (String::new(), Vec::new()),
            Some(m) if m.role == Role::User => {
                let text = m.text();
                let parts = m.content.iter().filter_map(ContentBlock::media).collect();
                self.turns.pop();
                (text, parts)
            }
            Some(_) => return Err(ConversationError::LastTurn),
            None => return Err(ConversationError::Empty),
        };
        let system = (!self.system.is_empty()).then(|| self.system.join("\n\n"));
        Ok(Prompt {
            text,
            parts,
            history: self.turns,
            system,
        })
    }
}

impl Prompt {
    /// The prompt with `parts` (images, documents) shown before its text.
    pub fn with_parts(mut self, parts: impl IntoIterator<Item = Media>) -> Self {
        self.parts.extend(parts);
        self
    }

    /// Lays the prompt into `task`: its text, history and (when it has one) system prompt.
    pub fn lay_into(self, task: &mut Task) {
        task.prompt = self.text;
        task.parts = self.parts;
        task.history = self.history;
        if let Some(system) = self.system {
            task.system = system;
        }
    }
}

impl From<String> for Prompt {
    fn from(text: String) -> Self {
        Self {
            text,
            ..Self::default()
        }
    }
}

impl From<&str> for Prompt {
    fn from(text: &str) -> Self {
        text.to_owned().into()
    }
}

impl From<&String> for Prompt {
    fn from(text: &String) -> Self {
        text.clone().into()
    }
}

fn is_tool_results(m: &Message) -> bool {
    m.role == Role::User
        && m.content
            .iter()
            .all(|b| matches!(b, ContentBlock::ToolResult { .. }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(turns: &[(&str, &str)]) -> Result<Prompt, ConversationError> {
        let mut c = Conversation::new();
        for (role, text) in turns {
            c.push(role, *text)?;
        }
        c.into_prompt()
    }

    #[test]
    fn the_last_user_turn_is_the_prompt_and_the_turns_before_it_the_history() {
        let p = prompt(&[
            ("system", "Be terse."),
            ("user", "Hi"),
            ("assistant", "Hello"),
            ("developer", "JSON only."),
            ("user", "Decide."),
        ])
        .unwrap();
        assert_eq!(p.text, "Decide.");
        assert_eq!(
            p.history,
            vec![Message::user("Hi"), Message::assistant("Hello")]
        );
        assert_eq!(p.system.as_deref(), Some("Be terse.\n\nJSON only."));
        let mut task = Task::new("");
        task.system = "the client's".to_owned();
        p.lay_into(&mut task);
        assert_eq!(task.prompt, "Decide.");
        assert_eq!(task.history.len(), 2);
        assert_eq!(task.system, "Be terse.\n\nJSON only.");
    }

    #[test]
    fn a_text_prompt_keeps_the_clients_system_prompt() {
        let mut task = Task::new("");
        task.system = "the client's".to_owned();
        Prompt::from("Decide.").lay_into(&mut task);
        assert_eq!(
            (task.prompt.as_str(), task.system.as_str()),
            ("Decide.", "the client's")
        );
        assert!(task.history.is_empty());
    }

    #[test]
    fn turns_that_cannot_be_continued_are_refused_by_kind() {
        assert_eq!(
            prompt(&[("user", "a"), ("assistant", "b")]),
            Err(ConversationError::LastTurn)
        );
        assert_eq!(prompt(&[("system", "s")]), Err(ConversationError::Empty));
        assert_eq!(
            prompt(&[("robot", "x")]),
            Err(ConversationError::UnknownRole("robot".into()))
        );
        assert_eq!(
            prompt(&[("tool", "x")]),
            Err(ConversationError::ToolTurnWithoutCall)
        );
    }

    #[test]
    fn tool_results_answer_the_calls_before_them_and_end_with_no_new_text() {
        let mut c = Conversation::new();
        c.push("user", "weather?").unwrap();
        c.push("assistant", "").unwrap();
        assert_eq!(
            c.push_tool_call("c1", "weather", "[1]"),
            Err(ConversationError::ToolArguments("c1".into()))
        );
        c.push_tool_call("c1", "weather", r#"{"city":"Oslo"}"#)
            .unwrap();
        assert_eq!(
            c.push_tool_result("c9", "x".into()),
            Err(ConversationError::UnaskedToolResult("c9".into()))
        );
        c.push_tool_result("c1", "rain".into()).unwrap();
        let p = c.into_prompt().unwrap();
        assert_eq!(p.text, "");
        assert_eq!(p.history.len(), 3);
        assert!(matches!(
            p.history[1].content[..],
            [ContentBlock::ToolUse { .. }]
        ));
    }
}
