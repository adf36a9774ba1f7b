//! A call's prompt from Python: one user message, or a conversation as `(role, text, parts)`
//! turns (the Python layer reads OpenAI-style message dicts, their image and file parts, and
//! lists of prompt pieces into them), laid out by [`geode::Conversation`]; and the parts a call
//! is given apart from its prompt (`parts=`), shown with the last user turn.

use crate::media::NativeMedia;
use crate::outcome::config_error;
use geode::{Conversation, Prompt};
use pyo3::prelude::*;

/// One turn: its role, its text, and its images and documents (user turns only).
type Turn = (String, String, Vec<Py<NativeMedia>>);

/// A string, or turns.
#[derive(FromPyObject)]
pub enum PromptArg {
    Text(String),
    Turns(Vec<Turn>),
}

impl PromptArg {
    /// The prompt with `parts` added to its last user turn; turns that make no conversation
    /// (images in an assistant turn, an assistant turn last) are a `ConfigError` saying why.
    pub fn into_prompt(self, py: Python<'_>, parts: Vec<Py<NativeMedia>>) -> PyResult<Prompt> {
        let turns = match self {
            Self::Text(text) => return Ok(Prompt::from(text).with_parts(media(&parts))),
            Self::Turns(turns) => turns,
        };
        let mut conversation = Conversation::new();
        for (role, text, turn_parts) in turns {
            conversation
                .push_parts(&role, text, media(&turn_parts))
                .map_err(|e| config_error(py, &format!("messages: {e}")))?;
        }
        conversation
            .into_prompt()
            .map(|prompt| prompt.with_parts(media(&parts)))
            .map_err(|e| config_error(py, &format!("messages: {e}")))
    }
}

/// The parts as the prompt owns them.
fn media(parts: &[Py<NativeMedia>]) -> Vec<geode::media::Media> {
    parts.iter().map(|p| p.get().media()).collect()
}
