//! A contract as an MCP tool, as a peer on a given protocol version may read it.

use geode::config::contracts::Contract;
use rmcp::model::{JsonObject, ProtocolVersion, Tool, ToolAnnotations};
use serde_json::Value;
use std::sync::Arc;

/// Whether a peer on `version` takes a `structuredContent` (and an `outputSchema`) whose root
/// is not an object: 2026-07-28 and later. A peer whose version is unknown is given objects.
pub fn takes_any_root(version: Option<&ProtocolVersion>) -> bool {
    // ISO dates compare as text in the order of time.
    version.is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// Whether a peer on `version` expects arguments that break the `inputSchema` as a tool result
/// (`isError`, so that its model can correct them): 2025-11-25 and later. Before it, the
/// specification lists invalid arguments among the JSON-RPC errors.
pub fn arguments_refused_as_result(version: Option<&ProtocolVersion>) -> bool {
    version.is_some_and(|v| v.as_str() >= ProtocolVersion::V_2025_11_25.as_str())
}

/// One contract, with both shapes of its tool precomputed.
#[derive(Debug, Clone)]
pub struct ContractTool {
    /// The contract.
    pub contract: Contract,
    /// Whether the contract's schema is not `type: object`, so that older peers get it wrapped.
    pub wraps: bool,
    any_root: Tool,
    objects_only: Tool,
}

impl ContractTool {
    /// The tool of `contract`.
    pub fn new(contract: Contract) -> Self {
        let output = contract.output_schema();
        let wraps = output.get("type").and_then(Value::as_str) != Some("object");
        let wrapped = if wraps {
            geode::schema::root::wrap_root(&output)
        } else {
            output.clone()
        };
        let tool = |output_schema: Value| {
            let description = if contract.description.is_empty() {
                format!("The `{}` contract of geode.toml.", contract.name)
            } else {
                contract.description.clone()
            };
            Tool::new(
                contract.name.clone(),
                description,
                object(contract.input_schema()),
            )
            .with_raw_output_schema(object(output_schema))
            .with_title(contract.name.clone())
            // A model writes the answer: nothing on this machine changes, and a provider is
            // reached.
            .with_annotations(
                ToolAnnotations::new()
                    .read_only(true)
                    .destructive(false)
                    .open_world(true),
            )
        };
        Self {
            any_root: tool(output),
            objects_only: tool(wrapped),
            wraps,
            contract,
        }
    }

    /// The tool as a peer on `version` reads it.
    pub fn tool(&self, version: Option<&ProtocolVersion>) -> Tool {
        if takes_any_root(version) {
            self.any_root.clone()
        } else {
            self.objects_only.clone()
        }
    }
}

/// `value`'s members (every schema here is an object).
fn object(value: Value) -> Arc<JsonObject> {
    Arc::new(match value {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contract(schema: &str) -> Contract {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("geode.toml").display().to_string();
        let text = format!("[contracts.c]\nprompt = \"Do {{x}}\"\nschema = {schema}\n");
        let cfg = geode::Config::parse(&text, &path).unwrap();
        let settings = cfg.settings(&geode::ProcessEnv).unwrap();
        settings.contracts["c"].clone()
    }

    #[test]
    fn an_object_root_is_the_same_tool_for_every_version() {
        let t = ContractTool::new(contract("{ type = \"object\" }"));
        assert!(!t.wraps);
        for v in [
            None,
            Some(ProtocolVersion::V_2025_06_18),
            Some(ProtocolVersion::LATEST),
        ] {
            let schema = t.tool(v.as_ref()).output_schema.unwrap();
            assert_eq!(schema["type"], "object");
            assert_eq!(schema["$schema"], geode::config::contracts::DEFAULT_DIALECT);
        }
    }

    #[test]
    fn another_root_is_wrapped_under_value_for_peers_before_2026_07_28() {
        let t = ContractTool::new(contract(
            "{ type = \"array\", items = { type = \"integer\" } }",
        ));
        assert!(t.wraps);
        let now = t
            .tool(Some(&ProtocolVersion::V_2026_07_28))
            .output_schema
            .unwrap();
        assert_eq!(now["type"], "array");
        for older in [None, Some(ProtocolVersion::V_2025_11_25)] {
            let schema = t.tool(older.as_ref()).output_schema.unwrap();
            assert_eq!(schema["type"], "object");
            assert_eq!(schema["required"], serde_json::json!(["value"]));
            assert_eq!(schema["properties"]["value"]["type"], "array");
            assert_eq!(schema["$schema"], geode::config::contracts::DEFAULT_DIALECT);
        }
        let input = t.tool(None).input_schema;
        assert_eq!(input["required"], serde_json::json!(["x"]));
        assert_eq!(input["additionalProperties"], false);
    }

    #[test]
    fn arguments_are_refused_as_a_result_from_2025_11_25() {
        assert!(!arguments_refused_as_result(None));
        assert!(!arguments_refused_as_result(Some(
            &ProtocolVersion::V_2025_06_18
        )));
        assert!(arguments_refused_as_result(Some(
            &ProtocolVersion::V_2025_11_25
        )));
        assert!(arguments_refused_as_result(Some(
            &ProtocolVersion::V_2026_07_28
        )));
    }
}
