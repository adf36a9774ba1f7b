//! Client-side tools: a request's function tools become the task's caller tools, which geode
//! offers to the model and never runs. A turn that calls them ends with the calls, each one's
//! arguments validated against its `parameters` (an invalid call goes back to the model, not to
//! the client); the client runs them and sends the results as its next turns.
//!
//! | request field | Chat | Responses | becomes |
//! |---|---|---|---|
//! | `tools` | `{type: function, function: {name, description, parameters}}` | `{type: function, name, description, parameters}` | the task's tools; any other tool type is refused |
//! | `tool_choice` | `auto`, `none`, `required`, `{type: function, function: {name}}` | `auto`, `none`, `required`, `{type: function, name}` | the task's tool choice |
//! | `parallel_tool_calls` | accepted, not forwarded | accepted, not forwarded | every call is validated whatever their number, which is what `false` is asked for |
//!
//! A tool's `strict` is accepted: geode validates every call's arguments itself.

use crate::error::ApiError;
use geode::{ToolChoice, ToolSpec};
use serde_json::{Value, json};

/// Where a request's tool definitions keep their fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Chat Completions: under `function`.
    Chat,
    /// Responses: on the tool itself.
    Responses,
}

/// The request's tools and tool choice.
pub fn read(
    tools: Option<&Value>,
    choice: Option<&Value>,
    shape: Shape,
) -> Result<(Vec<ToolSpec>, ToolChoice), ApiError> {
    let specs = match tools {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .map(|t| spec(t, shape))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(ApiError::invalid("tools", "tools must be a list")),
    };
    let choice = match choice {
        None | Some(Value::Null) => ToolChoice::Auto,
        Some(c) => tool_choice(c, shape)?,
    };
    if let ToolChoice::Tool(name) = &choice
        && !specs.iter().any(|s| &s.name == name)
    {
        return Err(ApiError::invalid(
            "tool_choice",
            format!("tool_choice names {name:?}, which is not among the tools"),
        ));
    }
    if specs.is_empty() && matches!(choice, ToolChoice::Any) {
        return Err(ApiError::invalid(
            "tool_choice",
            "tool_choice is required, but no tools are given",
        ));
    }
    Ok((specs, choice))
}

fn spec(tool: &Value, shape: Shape) -> Result<ToolSpec, ApiError> {
    let kind = tool.get("type").and_then(Value::as_str).unwrap_or("?");
    if kind != "function" {
        return Err(ApiError::unsupported(
            "tools",
            format!("tools of type {kind} are not served; only function tools are"),
        ));
    }
    let def = match shape {
        Shape::Chat => tool
            .get("function")
            .ok_or_else(|| ApiError::invalid("tools", "a function tool needs its `function`"))?,
        Shape::Responses => tool,
    };
    let name = def
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| ApiError::invalid("tools", "a function tool needs a name"))?;
    let input_schema = match def.get("parameters") {
        None | Some(Value::Null) => json!({"type": "object"}),
        Some(p) => p.clone(),
    };
    Ok(ToolSpec {
        name: name.to_owned(),
        description: def
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        input_schema,
    })
}

fn tool_choice(choice: &Value, shape: Shape) -> Result<ToolChoice, ApiError> {
    match choice {
        Value::String(s) => match s.as_str() {
            "auto" => Ok(ToolChoice::Auto),
            "none" => Ok(ToolChoice::None),
            "required" => Ok(ToolChoice::Any),
            other => Err(ApiError::invalid(
                "tool_choice",
                format!("unknown tool_choice {other:?}"),
            )),
        },
        Value::Object(o) if o.get("type").and_then(Value::as_str) == Some("function") => {
            let name = match shape {
                Shape::Chat => choice.pointer("/function/name"),
                Shape::Responses => o.get("name"),
            };
            name.and_then(Value::as_str)
                .map(|n| ToolChoice::Tool(n.to_owned()))
                .ok_or_else(|| ApiError::invalid("tool_choice", "a function choice needs a name"))
        }
        _ => Err(ApiError::unsupported(
            "tool_choice",
            "only auto, none, required and one named function are served",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_shapes_read_into_the_same_specs() {
        let chat = json!([{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}]);
        let resp = json!([{"type": "function", "name": "f", "description": "d", "parameters": {"type": "object"}}]);
        let (a, _) = read(Some(&chat), None, Shape::Chat).unwrap();
        let (b, _) = read(Some(&resp), None, Shape::Responses).unwrap();
        assert_eq!(a, b);
        assert_eq!(a[0].name, "f");
    }

    #[test]
    fn choices_map_and_bad_ones_are_refused() {
        let tools = json!([{"type": "function", "name": "f"}]);
        let read_choice = |c: Value| read(Some(&tools), Some(&c), Shape::Responses).map(|(_, c)| c);
        assert_eq!(read_choice(json!("required")).unwrap(), ToolChoice::Any);
        assert_eq!(read_choice(json!("none")).unwrap(), ToolChoice::None);
        assert_eq!(
            read_choice(json!({"type": "function", "name": "f"})).unwrap(),
            ToolChoice::Tool("f".into())
        );
        let e = read_choice(json!({"type": "function", "name": "g"})).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("tool_choice"));
        let e = read_choice(json!({"type": "allowed_tools"})).unwrap_err();
        assert_eq!(e.code, "unsupported_parameter");
    }

    #[test]
    fn other_tool_types_are_refused_not_dropped() {
        let e = read(
            Some(&json!([{"type": "web_search"}])),
            None,
            Shape::Responses,
        )
        .unwrap_err();
        assert_eq!(e.code, "unsupported_parameter");
        assert!(e.message.contains("web_search"), "{}", e.message);
    }
}
