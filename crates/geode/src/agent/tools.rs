//! Tools the model may call inside an [`crate::agent::agent_loop::AgenticLoop`].
//!
//! A [`Tool`] declares a name, a description and an `input_schema` (its arguments' contract,
//! independent of `response_schema`). The [`ToolRegistry`] compiles every `input_schema` once
//! and validates the model's arguments before running a tool: a call with bad arguments, or to
//! an unknown tool, never runs and goes back to the model as an error result naming the problem.
//!
//! A tool may also be the **caller's** ([`ToolRegistry::register_caller`]): declared to the
//! model, never run here. Its calls are validated the same way, and the loop hands valid ones
//! back to the caller (a gateway's client runs them and sends the results in its next request).

use crate::llm::request::{ContentBlock, ToolSpec, ToolUse};
use crate::schema::ResponseSchema;
use crate::schema::formats::FormatMode;
use crate::schema::validate::{CompiledSchema, render_issues};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A tool's failure, sent back to the model as an error result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);

/// A tool the model may call.
#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    /// The tool's name, description and argument schema.
    fn spec(&self) -> ToolSpec;

    /// Runs the tool on arguments already validated against `input_schema`.
    async fn call(&self, input: Value) -> Result<Value, ToolError>;
}

/// Why a tool could not be registered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolRegistryError {
    /// Two tools share a name.
    #[error("tool {0} is registered twice")]
    Duplicate(String),
    /// The tool's `input_schema` is not a usable JSON Schema object.
    #[error("tool {name}: bad input_schema: {source}")]
    BadInputSchema {
        /// The tool name.
        name: String,
        /// The schema problem.
        source: crate::schema::SchemaError,
    },
    /// The route's adapter takes no tools: offering them there would drop them.
    #[error("{adapter} takes no tools, and the task offers {count}: they would be dropped")]
    NotTaken {
        /// The adapter.
        adapter: String,
        /// How many tools the task offers.
        count: usize,
    },
}

/// One tool: `tool` is `None` for a caller's tool, which is declared but never run here.
#[derive(Clone)]
struct Registered {
    tool: Option<Arc<dyn Tool>>,
    spec: ToolSpec,
    validator: Arc<CompiledSchema>,
}

/// The tools of one loop, with their compiled argument schemas.
#[derive(Default, Clone)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Registered>,
    order: Vec<String>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.order)
            .finish()
    }
}

/// The outcome of one tool call, as recorded in the loop result.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolCallRecord {
    /// The call id.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments the model sent.
    pub input: Value,
    /// The result text sent back.
    pub output: String,
    /// True when the call was refused or failed.
    pub is_error: bool,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool; its `input_schema` must compile (an empty schema `{}` accepts any object).
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), ToolRegistryError> {
        let spec = tool.spec();
        self.insert(spec, Some(tool))
    }

    /// Adds a tool the caller runs: the model may call it, the loop validates the call's
    /// arguments and hands a valid call back instead of running it.
    pub fn register_caller(&mut self, spec: ToolSpec) -> Result<(), ToolRegistryError> {
        self.insert(spec, None)
    }

    /// This registry with the caller's tools added (the registry is shared, so it is copied).
    pub fn with_caller_tools(&self, specs: &[ToolSpec]) -> Result<Self, ToolRegistryError> {
        let mut all = self.clone();
        for spec in specs {
            all.register_caller(spec.clone())?;
        }
        Ok(all)
    }

    fn insert(
        &mut self,
        spec: ToolSpec,
        tool: Option<Arc<dyn Tool>>,
    ) -> Result<(), ToolRegistryError> {
        if self.tools.contains_key(&spec.name) {
            return Err(ToolRegistryError::Duplicate(spec.name));
        }
        let schema_value = if spec.input_schema.is_null() {
            serde_json::json!({"type": "object"})
        } else {
            spec.input_schema.clone()
        };
        // Cached: a gateway's clients send the same tool schemas with every request.
        let validator = ResponseSchema::from_value(schema_value)
            .and_then(|s| CompiledSchema::compile_cached(&s, FormatMode::Assert))
            .map_err(|source| ToolRegistryError::BadInputSchema {
                name: spec.name.clone(),
                source,
            })?;
        self.order.push(spec.name.clone());
        self.tools.insert(
            spec.name.clone(),
            Registered {
                tool,
                spec,
                validator,
            },
        );
        Ok(())
    }

    /// Whether `name` is one of the caller's tools.
    pub fn is_caller(&self, name: &str) -> bool {
        self.tools.get(name).is_some_and(|r| r.tool.is_none())
    }

    /// Whether any of the caller's tools is registered.
    pub fn has_caller_tools(&self) -> bool {
        self.tools.values().any(|r| r.tool.is_none())
    }

    /// The specs, in registration order, as sent to the model.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.order
            .iter()
            .filter_map(|n| self.tools.get(n).map(|r| r.spec.clone()))
            .collect()
    }

    /// True when no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Runs one call: validates the arguments, runs the tool, and returns the result block.
    pub async fn execute(&self, call: &ToolUse) -> ToolCallRecord {
        let (output, is_error) = match self.run(call).await {
            Ok(v) => (
                match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                },
                false,
            ),
            Err(e) => (serde_json::json!({ "error": e.0 }).to_string(), true),
        };
        ToolCallRecord {
            id: call.id.clone(),
            name: call.name.clone(),
            input: call.input.clone(),
            output,
            is_error,
        }
    }

    async fn run(&self, call: &ToolUse) -> Result<Value, ToolError> {
        match &self.checked(call)?.tool {
            Some(tool) => tool.call(call.input.clone()).await,
            None => Err(ToolError(format!(
                "`{}` was not run: it is the caller's tool, and another call of this turn was refused; send every call again, corrected",
                call.name
            ))),
        }
    }

    /// Checks one call before it runs or goes back to the caller: a known tool, arguments that
    /// are JSON and match its `input_schema`.
    pub fn check(&self, call: &ToolUse) -> Result<(), ToolError> {
        self.checked(call).map(|_| ())
    }

    fn checked(&self, call: &ToolUse) -> Result<&Registered, ToolError> {
        let Some(reg) = self.tools.get(&call.name) else {
            let known = self.order.join(", ");
            return Err(ToolError(format!(
                "unknown tool `{}`; available tools: [{known}]",
                call.name
            )));
        };
        if let Some(raw) = call.input.get("_raw") {
            return Err(ToolError(format!(
                "arguments for `{}` are not valid JSON: {}",
                call.name,
                crate::agent::excerpt::excerpt(raw.as_str().unwrap_or_default(), 200)
            )));
        }
        let issues = reg.validator.validate(&call.input);
        if !issues.is_empty() {
            return Err(ToolError(format!(
                "arguments for `{}` do not match its input_schema:\n{}",
                call.name,
                render_issues(&issues, issues.more_errors)
            )));
        }
        Ok(reg)
    }
}

impl ToolCallRecord {
    /// The `tool_result` block answering this call.
    pub fn to_block(&self) -> ContentBlock {
        ContentBlock::ToolResult {
            tool_use_id: self.id.clone(),
            content: self.output.clone(),
            is_error: self.is_error,
        }
    }
}

/// A tool built from a closure, for tests and simple programs.
pub struct FnTool<F> {
    spec: ToolSpec,
    f: F,
}

impl<F> FnTool<F>
where
    F: Fn(Value) -> Result<Value, ToolError> + Send + Sync,
{
    /// Wraps `f` as a tool with the given name, description and input schema.
    pub fn new(name: &str, description: &str, input_schema: Value, f: F) -> Self {
        Self {
            spec: ToolSpec {
                name: name.to_owned(),
                description: description.to_owned(),
                input_schema,
            },
            f,
        }
    }
}

#[async_trait::async_trait]
impl<F> Tool for FnTool<F>
where
    F: Fn(Value) -> Result<Value, ToolError> + Send + Sync,
{
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn call(&self, input: Value) -> Result<Value, ToolError> {
        (self.f)(input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn registry() -> ToolRegistry {
        let mut r = ToolRegistry::new();
        r.register(Arc::new(FnTool::new(
            "add",
            "adds",
            json!({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}),
            |v| Ok(json!(v["a"].as_i64().unwrap_or(0) + v["b"].as_i64().unwrap_or(0))),
        )))
        .unwrap();
        r
    }

    #[tokio::test]
    async fn valid_arguments_run_the_tool() {
        let rec = registry()
            .execute(&ToolUse {
                id: "1".into(),
                name: "add".into(),
                input: json!({"a": 2, "b": 3}),
            })
            .await;
        assert!(!rec.is_error);
        assert_eq!(rec.output, "5");
    }

    #[tokio::test]
    async fn bad_arguments_are_an_error_result_naming_the_path() {
        let rec = registry()
            .execute(&ToolUse {
                id: "1".into(),
                name: "add".into(),
                input: json!({"a": "two"}),
            })
            .await;
        assert!(rec.is_error);
        assert!(rec.output.contains("/a"), "{}", rec.output);
        assert!(rec.output.contains("input_schema"), "{}", rec.output);
    }

    #[tokio::test]
    async fn unknown_tools_and_raw_arguments_are_refused() {
        let r = registry();
        let rec = r
            .execute(&ToolUse::from_json_arguments("1", "nope", "{}"))
            .await;
        assert!(rec.is_error && rec.output.contains("unknown tool"));
        let rec = r
            .execute(&ToolUse::from_json_arguments("2", "add", "{not json"))
            .await;
        assert!(rec.is_error && rec.output.contains("not valid JSON"));
    }

    #[test]
    fn duplicate_and_bad_schemas_are_refused() {
        let mut r = registry();
        let dup = r.register(Arc::new(FnTool::new("add", "", json!({}), |_| {
            Ok(json!(0))
        })));
        assert!(matches!(dup, Err(ToolRegistryError::Duplicate(_))));
        let bad = r.register(Arc::new(FnTool::new("x", "", json!([1]), |_| Ok(json!(0)))));
        assert!(matches!(bad, Err(ToolRegistryError::BadInputSchema { .. })));
    }
}
