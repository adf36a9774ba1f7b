//! The chat prompt: [`ChatTurn`]s from an [`AdapterCallRequest`], rendered with the GGUF's template.
//!
//! Contract: the system prompt (when non-empty) is the first turn, followed by the offered
//! tools and their call format ([`crate::tool_call::instructions`]); every message becomes one
//! turn in order; earlier tool calls are written in the format the model calls in, and tool
//! results inside `<tool_response>` tags. Rendering uses llama.cpp's built-in template engine on the template stored
//! in the GGUF (`tokenizer.chat_template`; ChatML for SmolLM2) and ends with the opening of the
//! assistant turn.

use crate::error::LocalError;
use crate::tool_call::{CLOSE, OPEN, Offer, instructions};
use geode::llm::request::{AdapterCallRequest, ContentBlock, Role};
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};

/// Who speaks a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatRole {
    /// Instructions for the model.
    System,
    /// The caller.
    User,
    /// The model.
    Assistant,
}

impl ChatRole {
    fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::User => "user",
            Self::Assistant => "assistant",
        }
    }
}

/// One turn of the conversation given to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatTurn {
    /// The speaker.
    pub role: ChatRole,
    /// The text.
    pub content: String,
}

impl ChatTurn {
    /// A turn of `role` saying `content`.
    pub fn new(role: ChatRole, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
        }
    }
}

/// The turns of a request: the system prompt (if any), then every message.
pub fn turns_from_request(req: &AdapterCallRequest) -> Vec<ChatTurn> {
    let mut turns = Vec::with_capacity(req.messages.len() + 1);
    let mut system = req.system_prompt.clone();
    // An offer the constraint refuses fails the call before this prompt is used.
    if let Ok(Some(offer)) = Offer::new(&req.tools, &req.tool_choice) {
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(&instructions(&offer));
    }
    if !system.is_empty() {
        turns.push(ChatTurn::new(ChatRole::System, system));
    }
    for message in &req.messages {
        let role = match message.role {
            Role::User => ChatRole::User,
            Role::Assistant => ChatRole::Assistant,
        };
        let parts: Vec<String> = message.content.iter().map(block_text).collect();
        turns.push(ChatTurn::new(role, parts.join("\n")));
    }
    turns
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text { text } => text.clone(),
        ContentBlock::ToolUse { name, input, .. } => {
            let name = serde_json::Value::String(name.clone());
            format!("{OPEN}{{\"name\": {name}, \"arguments\": {input}}}{CLOSE}")
        }
        ContentBlock::ToolResult {
            content, is_error, ..
        } => {
            let error = if *is_error { " error=\"true\"" } else { "" };
            format!("<tool_response{error}>{content}</tool_response>")
        }
        // Never reached: the model takes text only, and the worker refuses parts before any
        // call (the `local` row's inputs).
        ContentBlock::Image { .. } | ContentBlock::Document { .. } => String::new(),
    }
}

/// Renders `turns` with `template`, ending with the opening of the assistant's turn.
pub(crate) fn render(
    model: &LlamaModel,
    template: &LlamaChatTemplate,
    turns: &[ChatTurn],
) -> Result<String, LocalError> {
    if turns.is_empty() {
        return Err(LocalError::Prompt {
            message: "the request has no messages".to_owned(),
        });
    }
    let messages = turns
        .iter()
        .map(|t| LlamaChatMessage::new(t.role.as_str().to_owned(), t.content.clone()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| LocalError::Prompt {
            message: e.to_string(),
        })?;
    model
        .apply_chat_template(template, &messages, true)
        .map_err(|e| LocalError::Prompt {
            message: format!("chat template failed: {e}"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use geode::llm::request::Message;
    use serde_json::json;

    #[test]
    fn system_prompt_comes_first_and_blocks_are_kept() {
        let mut req = AdapterCallRequest::new(
            "",
            vec![
                Message::user("hi"),
                Message::tool_result("1", "42", false),
                Message::assistant("ok"),
            ],
        );
        req.system_prompt = "be brief".to_owned();
        let turns = turns_from_request(&req);
        assert_eq!(turns[0], ChatTurn::new(ChatRole::System, "be brief"));
        assert_eq!(turns[1], ChatTurn::new(ChatRole::User, "hi"));
        assert_eq!(
            turns[2],
            ChatTurn::new(ChatRole::User, "<tool_response>42</tool_response>")
        );
        assert_eq!(turns[3], ChatTurn::new(ChatRole::Assistant, "ok"));
    }

    #[test]
    fn offered_tools_follow_the_system_prompt_and_calls_keep_the_call_format() {
        let mut req = AdapterCallRequest::new(
            "",
            vec![
                Message::user("weather?"),
                Message::tool_call("c1", "get_weather", json!({"city": "Oslo"})),
            ],
        );
        req.tools = vec![geode::llm::request::ToolSpec {
            name: "get_weather".to_owned(),
            description: "the weather".to_owned(),
            input_schema: json!({"type": "object"}),
        }];
        let turns = turns_from_request(&req);
        assert_eq!(turns[0].role, ChatRole::System);
        assert!(turns[0].content.contains("\"get_weather\""), "{turns:?}");
        assert_eq!(
            turns[2].content,
            r#"<tool_call>{"name": "get_weather", "arguments": {"city":"Oslo"}}</tool_call>"#
        );
        req.tool_choice = geode::llm::request::ToolChoice::None;
        assert_eq!(turns_from_request(&req)[0].role, ChatRole::User);
    }

    #[test]
    fn no_system_turn_without_a_system_prompt() {
        let req = AdapterCallRequest::new("", vec![Message::user("hi")]);
        assert_eq!(
            turns_from_request(&req),
            vec![ChatTurn::new(ChatRole::User, "hi")]
        );
    }
}
