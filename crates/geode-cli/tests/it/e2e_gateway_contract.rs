//! One contract, every path: `model: "contract/NAME"` through the real gateway runs the same
//! `[contracts.NAME]` that `geode run --contract` and `geode mcp` serve (the fixtures of
//! `e2e_mcp.rs`): its inputs from the last user turn's JSON, its schema, route and `require`.

use crate::e2e_gateway::Gateway;
use crate::e2e_mcp::{Fakes, configure};
use crate::support::{SECRET, Sandbox, model_calls};
use serde_json::{Value, json};

async fn chat(gw: &Gateway, body: &Value) -> (u16, Value) {
    let (status, _, body) = gw.chat(body, &[]).await;
    (status, body)
}

fn ask(model: &str, user: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": user}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contract_is_a_model_name_with_its_schema_route_and_require() {
    let fakes = Fakes::start().await;
    let mut sb = Sandbox::new();
    configure(&mut sb, &fakes);
    let gw = Gateway::start(&sb, &[]);

    let args = json!({"diff": "+ fn add(a: u32, b: u32) -> u32 { a + b }", "risk": 2}).to_string();
    let (status, body) = chat(&gw, &ask("contract/review", &args)).await;
    assert_eq!(status, 200, "{body}\n{}", gw.log());
    let answer: Value =
        serde_json::from_str(body["choices"][0]["message"]["content"].as_str().unwrap()).unwrap();
    assert!(
        ["accept", "reject"].contains(&answer["decision"].as_str().unwrap()),
        "{answer}"
    );
    let ledger = &body["geode"]["ledger"];
    assert_eq!(ledger["adapter"], "openai-payg", "{ledger}");
    assert_eq!(ledger["wire_mode"], "strict", "{ledger}");
    // The prompt is the contract's template, rendered with the arguments.
    let sent = model_calls(&fakes.openai)[0].body.to_string();
    assert!(sent.contains("(risk 2 of 5)"), "{sent}");
    assert!(sent.contains("fn add(a: u32"), "{sent}");

    // The contract's `require = "enforced"` on a best-effort route: refused before any call.
    let (status, body) = chat(&gw, &ask("contract/strict_json", r#"{"diff": "x"}"#)).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "schema_not_enforceable", "{body}");
    assert!(model_calls(&fakes.json_only).is_empty());

    // Arguments that are not the inputs, a format of the request's own, an unknown contract.
    let (status, body) = chat(&gw, &ask("contract/review", "Please review this.")).await;
    assert_eq!(
        (status, body["error"]["param"].as_str()),
        (400, Some("messages")),
        "{body}"
    );
    let (status, body) = chat(
        &gw,
        &ask("contract/review", r#"{"diff": "x", "risk": "high"}"#),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("risk"),
        "{body}"
    );
    let mut with_format = ask("contract/review", &args);
    with_format["response_format"] = json!({"type": "json_object"});
    let (status, body) = chat(&gw, &with_format).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("unsupported_parameter")),
        "{body}"
    );
    let (status, body) = chat(&gw, &ask("contract/nope", "{}")).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("model_not_found")),
        "{body}"
    );
    assert_eq!(model_calls(&fakes.openai).len(), 1);
    assert!(!gw.log().contains(SECRET));
}
