//! Streaming `claude-cli`'s answer as it is written: with `--include-partial-messages` the CLI
//! prints the Messages API's stream events as `{"type":"stream_event","event":{…}}` lines, and
//! this picks out the answer's deltas for [`CallCx::on_text`](crate::llm::call::CallCx::on_text).
//!
//! | line | what is handed on |
//! |---|---|
//! | `content_block_start` of the first answer block of the main conversation: a `StructuredOutput` `tool_use` (schema asked) or a `text` block (no schema) | nothing; that block's index is followed from now on |
//! | `content_block_delta` of the followed block: `input_json_delta` / `text_delta` | its `partial_json` / `text` |
//! | `content_block_stop` of the followed block | nothing; no later block is followed |
//! | anything else (other blocks, a subagent's events, `assistant`/`user`/`result` lines, non-JSON) | nothing |
//!
//! Only the first answer block streams: when the CLI rejects that `StructuredOutput` input and
//! asks the model again, the later inputs are not streamed (the deltas would not form one JSON
//! text); the final value comes from the result object as before.

use serde_json::Value;

/// The tool the CLI offers the model for the structured answer.
pub const STRUCTURED_OUTPUT_TOOL: &str = "StructuredOutput";

/// Which block is streamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Follow {
    /// No answer block has started yet.
    Waiting,
    /// The block with this index is the answer.
    Block(u64),
    /// The first answer block has ended.
    Done,
}

/// Picks the answer's deltas out of `stream-json` lines, one line at a time.
#[derive(Debug)]
pub struct PartialAnswer {
    schema_asked: bool,
    follow: Follow,
}

impl PartialAnswer {
    /// A picker for a call that asked (`schema_asked`) or did not ask for a schema.
    pub fn new(schema_asked: bool) -> Self {
        Self {
            schema_asked,
            follow: Follow::Waiting,
        }
    }

    /// The answer text in `line`, if it carries some (see the module table).
    pub fn delta(&mut self, line: &str) -> Option<String> {
        if self.follow == Follow::Done || !line.contains("\"stream_event\"") {
            return None;
        }
        let v: Value = serde_json::from_str(line).ok()?;
        if v.get("type")?.as_str()? != "stream_event"
            || v.get("parent_tool_use_id").is_some_and(|p| !p.is_null())
        {
            return None;
        }
        let event = v.get("event")?;
        let index = event.get("index").and_then(Value::as_u64);
        match (event.get("type")?.as_str()?, self.follow) {
            ("content_block_start", Follow::Waiting) if self.is_answer(&event["content_block"]) => {
                self.follow = Follow::Block(index?);
            }
            ("content_block_delta", Follow::Block(i)) if index == Some(i) => {
                let delta = &event["delta"];
                let text = match delta.get("type")?.as_str()? {
                    "input_json_delta" => delta.get("partial_json")?,
                    "text_delta" => delta.get("text")?,
                    _ => return None,
                };
                return text.as_str().map(str::to_owned);
            }
            ("content_block_stop", Follow::Block(i)) if index == Some(i) => {
                self.follow = Follow::Done;
            }
            _ => {}
        }
        None
    }

    fn is_answer(&self, block: &Value) -> bool {
        match block.get("type").and_then(Value::as_str) {
            Some("tool_use") => {
                self.schema_asked
                    && block.get("name").and_then(Value::as_str) == Some(STRUCTURED_OUTPUT_TOOL)
            }
            Some("text") => !self.schema_asked,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn line(event: Value) -> String {
        json!({"type": "stream_event", "event": event, "parent_tool_use_id": null}).to_string()
    }

    fn start(index: u64, block: Value) -> String {
        line(json!({"type": "content_block_start", "index": index, "content_block": block}))
    }

    fn delta(index: u64, delta: Value) -> String {
        line(json!({"type": "content_block_delta", "index": index, "delta": delta}))
    }

    fn stop(index: u64) -> String {
        line(json!({"type": "content_block_stop", "index": index}))
    }

    fn json_delta(index: u64, piece: &str) -> String {
        delta(
            index,
            json!({"type": "input_json_delta", "partial_json": piece}),
        )
    }

    fn tool(name: &str) -> Value {
        json!({"type": "tool_use", "id": "t1", "name": name, "input": {}})
    }

    fn picked(p: &mut PartialAnswer, lines: &[String]) -> String {
        lines.iter().filter_map(|l| p.delta(l)).collect()
    }

    #[test]
    fn the_structured_output_input_streams_and_nothing_after_it() {
        let lines = [
            start(0, json!({"type": "text", "text": ""})),
            delta(0, json!({"type": "text_delta", "text": "Let me answer."})),
            stop(0),
            start(1, tool(STRUCTURED_OUTPUT_TOOL)),
            json_delta(1, "{\"decision\":"),
            json_delta(0, "not this block"),
            json_delta(1, "\"accept\"}"),
            stop(1),
            start(0, tool(STRUCTURED_OUTPUT_TOOL)),
            json_delta(0, "{\"second\":\"try\"}"),
        ];
        let mut p = PartialAnswer::new(true);
        assert_eq!(picked(&mut p, &lines), "{\"decision\":\"accept\"}");
    }

    #[test]
    fn without_a_schema_the_first_text_block_streams() {
        let lines = [
            start(0, json!({"type": "text", "text": ""})),
            delta(0, json!({"type": "text_delta", "text": "Hello"})),
            delta(0, json!({"type": "text_delta", "text": ", world"})),
            stop(0),
        ];
        let mut p = PartialAnswer::new(false);
        assert_eq!(picked(&mut p, &lines), "Hello, world");
    }

    #[test]
    fn other_tools_subagents_and_other_lines_hand_on_nothing() {
        let mut sub = json!({"type": "stream_event", "parent_tool_use_id": "toolu_1",
            "event": {"type": "content_block_start", "index": 0, "content_block": tool(STRUCTURED_OUTPUT_TOOL)}});
        let lines = [
            start(0, tool("Bash")),
            json_delta(0, "{\"command\":\"ls\"}"),
            sub.to_string(),
            json!({"type": "assistant", "message": {"content": []}}).to_string(),
            "not json at all".to_owned(),
            "{\"type\":\"stream_event\"".to_owned(),
        ];
        let mut p = PartialAnswer::new(true);
        assert_eq!(picked(&mut p, &lines), "");
        // The subagent's block was not followed either.
        sub["event"] = json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": "{}"}});
        assert_eq!(p.delta(&sub.to_string()), None);
    }
}
