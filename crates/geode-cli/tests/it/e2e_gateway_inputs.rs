//! Images and documents through the real gateway: Chat `image_url` / `file` parts and Responses
//! `input_image` / `input_file` parts reach the route's wire in its own shape, the ledger names
//! them, and a route that cannot take them is a 400 `unsupported_input` before any upstream
//! call.

use crate::e2e_gateway::{Gateway, fakes, sandbox};
use crate::e2e_inputs::{PDF, PNG, invoice};
use crate::support::{SECRET, examples, model_calls};
use base64::Engine as _;
use geode_fakes::{Reply, Script};
use serde_json::{Value, json};

fn data_url(mime: &str, bytes: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
    format!("data:{mime};base64,{b64}")
}

fn invoice_schema() -> Value {
    serde_json::from_str(&std::fs::read_to_string(examples().join("invoice.schema.json")).unwrap())
        .unwrap()
}

async fn post(gw: &Gateway, path: &str, body: &Value) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .post(gw.url(path))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

fn chat_request(model: &str) -> Value {
    json!({
        "model": model,
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "Extract the invoice's fields."},
            {"type": "image_url", "image_url": {"url": data_url("image/png", PNG)}},
            {"type": "file", "file": {"filename": "invoice.pdf", "file_data": data_url("application/pdf", PDF)}},
        ]}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "invoice", "strict": true, "schema": invoice_schema()}},
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_and_responses_parts_reach_the_wire_and_a_text_route_refuses_them() {
    let (openai, glm) = fakes(
        Script::always(Reply::Json(invoice())),
        Script::always(Reply::Json(invoice())),
    )
    .await;
    let sb = sandbox(&openai, &glm);
    let gw = Gateway::start(&sb, &[]);

    // Chat parts onto the Responses wire.
    let (status, body) = post(
        &gw,
        "/v1/chat/completions",
        &chat_request("openai-payg/gpt-5-mini"),
    )
    .await;
    assert_eq!(status, 200, "{body}\n{}", gw.log());
    let answer: Value =
        serde_json::from_str(body["choices"][0]["message"]["content"].as_str().unwrap()).unwrap();
    assert_eq!(answer, invoice());
    let sent = &model_calls(&openai)[0].body;
    // A user turn goes as its images and documents, in their order, then its text.
    let content = &sent["input"][0]["content"];
    assert_eq!(
        content[0]["image_url"],
        data_url("image/png", PNG),
        "{sent}"
    );
    assert_eq!(
        content[1]["file_data"],
        data_url("application/pdf", PDF),
        "{sent}"
    );
    assert_eq!(content[1]["filename"], "invoice.pdf", "{sent}");
    assert_eq!(content[2]["type"], "input_text", "{sent}");

    // Responses parts, one of them a URL the gateway passes on without fetching.
    let request = json!({
        "model": "openai-payg/gpt-5-mini",
        "input": [{"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Extract the invoice's fields."},
            {"type": "input_image", "image_url": "https://files.example/scan.png", "detail": "auto"},
            {"type": "input_file", "filename": "invoice.pdf", "file_data": data_url("application/pdf", PDF)},
        ]}],
        "text": {"format": {"type": "json_schema", "name": "invoice", "strict": true, "schema": invoice_schema()}},
    });
    let (status, body) = post(&gw, "/v1/responses", &request).await;
    assert_eq!(status, 200, "{body}\n{}", gw.log());
    let sent = &model_calls(&openai)[1].body;
    let content = &sent["input"][0]["content"];
    assert_eq!(
        content[0]["image_url"], "https://files.example/scan.png",
        "{sent}"
    );
    assert_eq!(content[1]["type"], "input_file", "{sent}");

    // A route that takes text only: 400 before any upstream call, naming why.
    let (status, body) = post(
        &gw,
        "/v1/chat/completions",
        &chat_request("glm-payg/glm-5.2"),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "unsupported_input", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("takes text only"),
        "{body}"
    );
    assert!(model_calls(&glm).is_empty());

    // A Files API id, a path, and an image that is really a PDF are 400s naming the field.
    for (part, code) in [
        (
            json!({"type": "input_image", "file_id": "file-abc"}),
            "unsupported_parameter",
        ),
        (
            json!({"type": "input_image", "image_url": "/etc/passwd"}),
            "invalid_request",
        ),
        (
            json!({"type": "input_image", "image_url": data_url("image/png", PDF)}),
            "invalid_request",
        ),
    ] {
        let request = json!({"model": "openai-payg/gpt-5-mini", "input": [
            {"type": "message", "role": "user", "content": [part]}]});
        let (status, body) = post(&gw, "/v1/responses", &request).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (400, Some(code)),
            "{body}"
        );
        assert_eq!(body["error"]["param"], "input", "{body}");
    }
    // An image in an assistant turn is refused, never dropped.
    let request = json!({"model": "openai-payg/gpt-5-mini", "messages": [
        {"role": "assistant", "content": [{"type": "image_url", "image_url": {"url": data_url("image/png", PNG)}}]},
        {"role": "user", "content": "And now?"}]});
    let (status, body) = post(&gw, "/v1/chat/completions", &request).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(model_calls(&openai).len(), 2);
    assert!(!gw.log().contains(SECRET));
}
