//! The strict check (`geode::schema::strict`), every adapter's schema route plan and limit
//! preflight (`geode::llm::registry::SchemaRoute`), and the Messages schema placement
//! (`geode::llm::wire::messages::place_schema`) on any JSON value.

use geode::llm::registry::{ADAPTERS, PlanCx};
use geode::llm::request::{AdapterCallRequest, Message, ToolSpec};
use geode::llm::wire::messages::{OUTPUT_TOOL_PREFIX, Placement, output_tool_name, place_schema};
use geode::schema::ResponseSchema;
use geode::schema::preflight::Preflight;
use geode::schema::projection::{anthropic_native_fits, project_anthropic};
use geode::schema::strict::{check_strict, is_reference_strict};
use geode::vocab::StructuredOutputMode;
use serde_json::Value;

/// Parses `data` as JSON; checks it for strict mode and, when it is an object, plans it on
/// every adapter's schema route, preflights it and places it on Messages requests with and without thinking,
/// an assistant prefill and a tool whose name takes the output tool's.
///
/// Invariants: every function is deterministic; `compatible` iff no reasons; reason pointers and
/// residual pointers lead into the schema (a residual names the keyword and value found there);
/// the placement follows the table in
/// `placement.rs` and an output tool's name is unique, prefixed and at most 64 characters.
pub fn run(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let verdict = check_strict(&value);
    super::check::same(&verdict, &check_strict(&value), "check_strict");
    assert_eq!(
        verdict.compatible,
        verdict.reasons.is_empty(),
        "{verdict:?}"
    );
    for reason in &verdict.reasons {
        assert!(
            value.pointer(&reason.pointer).is_some(),
            "reason {reason} points outside the schema"
        );
    }
    let _ = is_reference_strict(&value);

    let Ok(schema) = ResponseSchema::from_value(value) else {
        return;
    };
    let preflight = Preflight::new(&schema);
    for route in ADAPTERS.iter().map(|a| a.schema_route) {
        let plan = route.plan(Some(&schema), PlanCx::default());
        super::check::same(&plan, &route.plan(Some(&schema), PlanCx::default()), "plan");
        for r in &plan.residuals {
            let found = schema
                .as_value()
                .pointer(&r.pointer)
                .and_then(|n| n.get(&r.keyword));
            assert_eq!(found, Some(&r.value), "residual {r} is not in the schema");
        }
        let limits = route.limit_violations(&preflight).to_vec();
        super::check::same(
            &limits,
            &route.limit_violations(&Preflight::new(&schema)).to_vec(),
            "preflight",
        );
    }
    let fits = anthropic_native_fits(&schema);
    for (thinking, prefill, clash) in [
        (0, false, false),
        (0, true, false),
        (0, false, true),
        (2048, false, false),
        (2048, true, true),
    ] {
        place(&schema, fits.is_ok(), thinking, prefill, clash);
    }
}

/// Places `schema` on one request and checks the decision.
fn place(schema: &ResponseSchema, fits: bool, thinking: u32, prefill: bool, clash: bool) {
    let mut messages = vec![Message::user("question")];
    if prefill {
        messages.push(Message::assistant("{"));
    }
    let mut req = AdapterCallRequest::new("model", messages);
    req.response_schema = Some(schema.clone());
    req.thinking_budget = thinking;
    if clash {
        req.tools.push(ToolSpec {
            name: output_tool_name(schema, &[]),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
        });
    }
    let placed = place_schema(&req);
    super::check::same(&placed, &place_schema(&req), "place_schema");
    let native = fits && !prefill;
    match &placed.placement {
        Placement::Native { schema: wire } => {
            assert!(native, "native placement of a schema that does not fit");
            assert_eq!(placed.mode, StructuredOutputMode::Strict);
            assert_eq!(wire, &project_anthropic(schema).wire);
        }
        Placement::OutputTool { name, input_schema } => {
            assert!(
                !native && thinking == 0,
                "output tool where the table says otherwise"
            );
            assert_eq!(placed.mode, StructuredOutputMode::Tool);
            assert!(name.starts_with(OUTPUT_TOOL_PREFIX), "{name}");
            assert!(name.chars().count() <= 64, "{name}");
            assert!(req.tools.iter().all(|t| &t.name != name), "{name} is taken");
            assert_eq!(input_schema.get("type"), Some(&Value::from("object")));
        }
        Placement::Prompt => {
            assert!(!native, "prompt placement of a schema that fits natively");
            assert_eq!(placed.mode, StructuredOutputMode::Prompt);
        }
        Placement::None => panic!("no placement for a given schema"),
    }
}
