//! A call's prompt from Python: one user message, or a conversation as `(role, text)` turns (the
//! Python layer reads OpenAI-style message dicts into them), laid out by [`geode::Conversation`].

use crate::outcome::config_error;
use geode::{Conversation, Prompt};
use pyo3::prelude::*;

/// A string, or turns.
#[derive(FromPyObject)]
pub enum PromptArg {
    Text(String),
    Turns(Vec<(String, String)>),
}

impl PromptArg {
    /// The prompt; turns that make no conversation are a `ConfigError` saying why.
    pub fn into_prompt(self, py: Python<'_>) -> PyResult<Prompt> {
        let turns = match self {
            Self::Text(text) => return Ok(text.into()),
            Self::Turns(turns) => turns,
        };
        let mut conversation = Conversation::new();
        for (role, text) in turns {
            conversation
                .push(&role, text)
                .map_err(|e| config_error(py, &format!("messages: {e}")))?;
        }
        conversation
            .into_prompt()
            .map_err(|e| config_error(py, &format!("messages: {e}")))
    }
}
