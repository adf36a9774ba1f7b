//! Images and documents end to end through the `geode` binary: an invoice's fields extracted
//! from a PNG and a PDF (both made here), each part checked on every HTTP wire in the shape the
//! provider documents (docs/wire.md, "Images and documents"), recorded in the ledger by hash,
//! and refused before any request where the route cannot take it.

use crate::support::http_cases::*;
use crate::support::{SECRET, Sandbox, examples, model_calls};
use base64::Engine as _;
use geode_fakes::{FakeServer, Kind, Reply, Script};
use serde_json::{Value, json};

/// A 1x1 white PNG (its chunks' CRCs checked: a real CLI decodes it).
pub(crate) const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0b, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0xf8, 0x0f, 0x04, 0x00,
    0x09, 0xfb, 0x03, 0xfd, 0x68, 0xfa, 0x1c, 0xcc, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44,
    0xae, 0x42, 0x60, 0x82,
];

/// A one-page PDF that says what the invoice says.
pub(crate) const PDF: &[u8] = b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 300 100]/Contents 4 0 R>>endobj\n4 0 obj<</Length 58>>stream\nBT /F1 12 Tf 10 50 Td (Invoice A-17 Acme 40.50 EUR) Tj ET\nendstream endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n";

/// What the fakes answer.
pub(crate) fn invoice() -> Value {
    json!({"vendor": "Acme", "invoice_number": "A-17", "total": 40.5, "currency": "EUR"})
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn sha256(bytes: &[u8]) -> String {
    geode::digest::sha256_hex(bytes)
}

/// Writes the two files into the sandbox's working directory.
fn files(sb: &Sandbox) {
    std::fs::write(sb.cwd.path().join("invoice.png"), PNG).unwrap();
    std::fs::write(sb.cwd.path().join("invoice.pdf"), PDF).unwrap();
}

/// `geode run --adapter ADAPTER --schema invoice --json EXTRA "Extract the invoice."`.
async fn extract(sb: &Sandbox, adapter: &str, extra: &[&str]) -> crate::support::Outcome {
    let schema = examples().join("invoice.schema.json").display().to_string();
    let mut args = vec!["run", "--adapter", adapter, "--schema", &schema, "--json"];
    args.extend_from_slice(extra);
    args.push("Extract the invoice's fields.");
    sb.geode(&args, "").await
}

/// The answer is the invoice and the ledger names both parts by type, size and hash.
fn assert_extracted(out: &crate::support::Outcome, parts: &[(&str, &str, &[u8])]) {
    out.assert_exit(0).assert_hides(SECRET);
    let result = out.json();
    assert_eq!(result["answer"], invoice(), "{}", out.dump());
    let inputs = result["ledger"]["inputs"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(inputs.len(), parts.len(), "{result}");
    for (record, (kind, mime, bytes)) in inputs.iter().zip(parts) {
        assert_eq!(record["kind"], *kind, "{record}");
        assert_eq!(record["media_type"], *mime, "{record}");
        assert_eq!(record["bytes"], bytes.len(), "{record}");
        assert_eq!(record["sha256"], sha256(bytes), "{record}");
    }
    // The ledger never holds the content.
    assert!(!out.stdout.contains(&b64(PDF)), "{}", out.dump());
}

/// A usage error (exit 2) before any request that says each of `needles` (on stderr, or in the
/// `--json` result).
fn refused(out: &crate::support::Outcome, needles: &[&str]) {
    out.assert_exit(2).assert_hides(SECRET);
    for n in needles {
        assert!(out.dump().contains(n), "wanted {n:?}: {}", out.dump());
    }
}

const BOTH: &[&str] = &["--image", "invoice.png", "--file", "invoice.pdf"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invoice_png_and_pdf_reach_the_responses_wire_as_input_image_and_input_file() {
    let (server, sb) = OPENAI_PAYG
        .serve(Script::always(Reply::Json(invoice())))
        .await;
    files(&sb);
    let out = extract(&sb, "openai-payg", BOTH).await;
    assert_extracted(
        &out,
        &[
            ("image", "image/png", PNG),
            ("document", "application/pdf", PDF),
        ],
    );
    let body = &model_calls(&server)[0].body;
    let content = &body["input"][0]["content"];
    assert_eq!(body["input"][0]["role"], "user", "{body}");
    assert_eq!(
        content[0],
        json!({"type": "input_image", "image_url": format!("data:image/png;base64,{}", b64(PNG)), "detail": "auto"})
    );
    assert_eq!(
        content[1],
        json!({"type": "input_file", "filename": "invoice.pdf", "file_data": format!("data:application/pdf;base64,{}", b64(PDF))})
    );
    assert_eq!(content[2]["type"], "input_text", "{content}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chatgpt_backend_gets_the_image_and_refuses_the_pdf_before_any_request() {
    let (server, sb) = CODEX_OAUTH
        .serve(Script::always(Reply::Json(invoice())))
        .await;
    files(&sb);
    let out = extract(&sb, "codex-oauth", &["--image", "invoice.png"]).await;
    assert_extracted(&out, &[("image", "image/png", PNG)]);
    let body = &model_calls(&server)[0].body;
    assert_eq!(
        body["input"][0]["content"][0]["type"], "input_image",
        "{body}"
    );

    let out = extract(&sb, "codex-oauth", BOTH).await;
    refused(
        &out,
        &["codex-oauth: it cannot take this call's images or documents: it takes no documents"],
    );
    assert_eq!(model_calls(&server).len(), 1, "no second request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_gets_image_and_document_blocks_and_a_text_file_as_text() {
    let (server, sb) = ANTHROPIC_PAYG
        .serve(Script::always(Reply::Json(invoice())))
        .await;
    files(&sb);
    std::fs::write(sb.cwd.path().join("notes.txt"), "Paid by transfer.").unwrap();
    let mut args = BOTH.to_vec();
    args.extend(["--file", "notes.txt"]);
    let out = extract(&sb, "anthropic-payg", &args).await;
    assert_extracted(
        &out,
        &[
            ("image", "image/png", PNG),
            ("document", "application/pdf", PDF),
            ("document", "text/plain", b"Paid by transfer."),
        ],
    );
    let body = &model_calls(&server)[0].body;
    let content = &body["messages"][0]["content"];
    assert_eq!(
        content[0],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(PNG)}})
    );
    assert_eq!(
        content[1],
        json!({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": b64(PDF)}, "title": "invoice.pdf"})
    );
    assert_eq!(
        content[2],
        json!({"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "Paid by transfer."}, "title": "notes.txt"})
    );
    assert_eq!(content[3]["type"], "text", "{content}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_provider_that_declares_images_and_pdfs_gets_image_url_and_file_parts() {
    let server = FakeServer::start(Kind::Chat, Script::always(Reply::Json(invoice())))
        .await
        .unwrap();
    let mut sb = Sandbox::new();
    sb.var("VISION_KEY", SECRET);
    let table = |name: &str, inputs: &str| {
        format!(
            "[providers.{name}]\nwire = \"chat\"\nbase_url = \"{}/v1\"\nkey_env = \"VISION_KEY\"\nmodel = \"m\"\nschema = \"json_schema\"\n{inputs}",
            server.base_url()
        )
    };
    sb.config(
        &(table("vision", "inputs = [\"text\", \"image\", \"pdf\"]\n") + &table("plain", "")),
    );
    files(&sb);
    let out = extract(&sb, "vision", BOTH).await;
    assert_extracted(
        &out,
        &[
            ("image", "image/png", PNG),
            ("document", "application/pdf", PDF),
        ],
    );
    let body = &model_calls(&server)[0].body;
    let user = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    assert_eq!(
        user["content"][0],
        json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", b64(PNG))}})
    );
    assert_eq!(
        user["content"][1],
        json!({"type": "file", "file": {"filename": "invoice.pdf", "file_data": format!("data:application/pdf;base64,{}", b64(PDF))}})
    );
    assert_eq!(user["content"][2]["type"], "text", "{user}");

    // An image URL goes on as it is; a document URL has no Chat shape and is refused.
    let url = "https://files.example/scan.png";
    let out = extract(&sb, "vision", &["--image", url]).await;
    out.assert_exit(0);
    let body = &model_calls(&server)[1].body;
    assert!(
        body.to_string().contains(&format!("{{\"url\":\"{url}\"}}")),
        "{body}"
    );
    let out = extract(&sb, "vision", &["--file", "https://files.example/c.pdf"]).await;
    refused(&out, &["it takes no document URLs"]);

    // A provider that declared nothing takes text only.
    let out = extract(&sb, "plain", BOTH).await;
    refused(&out, &["plain: it cannot take", "it takes text only"]);
    assert_eq!(model_calls(&server).len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn glm_vision_models_take_images_and_its_text_models_are_refused_before_any_request() {
    let (server, sb) = GLM_PAYG.serve(Script::always(Reply::Json(invoice()))).await;
    files(&sb);
    let out = extract(
        &sb,
        "glm-payg",
        &["--model", "glm-4.6v", "--image", "invoice.png"],
    )
    .await;
    assert_extracted(&out, &[("image", "image/png", PNG)]);
    let body = &model_calls(&server)[0].body;
    assert!(
        body.to_string().contains(&format!(
            "\"image_url\":{{\"url\":\"data:image/png;base64,{}\"}}",
            b64(PNG)
        )),
        "{body}"
    );
    let out = extract(&sb, "glm-payg", &["--image", "invoice.png"]).await;
    refused(&out, &["glm-payg: it cannot take", "it takes text only"]);
    // Routed by the model name, every GLM candidate is judged and named.
    let schema = examples().join("invoice.schema.json").display().to_string();
    let out = sb
        .geode(
            &[
                "run",
                "--model",
                "glm-5.2",
                "--schema",
                &schema,
                "--image",
                "invoice.png",
                "x",
            ],
            "",
        )
        .await;
    refused(
        &out,
        &["glm-payg: it cannot take this call's images or documents"],
    );
    assert_eq!(model_calls(&server).len(), 1, "no request after the first");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_type_comes_from_the_bytes_and_a_bad_part_is_a_usage_error() {
    let (server, sb) = OPENAI_PAYG
        .serve(Script::always(Reply::Json(invoice())))
        .await;
    std::fs::write(sb.cwd.path().join("scan.png"), PDF).unwrap();
    std::fs::write(
        sb.cwd.path().join("tool.pdf"),
        b"\x7fELF\x02\x01\x01\0secret",
    )
    .unwrap();
    let out = extract(&sb, "openai-payg", &["--image", "scan.png"]).await;
    refused(&out, &["scan.png is a pdf file, not an image"]);
    let out = extract(&sb, "openai-payg", &["--file", "tool.pdf"]).await;
    refused(
        &out,
        &["is not a PNG, JPEG, GIF, WebP, PDF or UTF-8 text file"],
    );
    assert!(!out.stderr.contains("secret"), "{}", out.dump());
    let out = extract(
        &sb,
        "openai-payg",
        &["--image", "http://plain.example/a.png"],
    )
    .await;
    refused(&out, &["only https URLs"]);
    let out = extract(&sb, "openai-payg", &["--image", "missing.png"]).await;
    refused(&out, &["cannot read missing.png"]);
    assert!(model_calls(&server).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_model_refuses_images_before_decoding_and_a_worker_request_carries_parts() {
    let sb = Sandbox::with_local_model();
    files(&sb);
    let out = extract(&sb, "local", &["--image", "invoice.png"]).await;
    refused(&out, &["local: it cannot take", "it takes text only"]);

    let (server, sb) = OPENAI_PAYG
        .serve(Script::always(Reply::Json(invoice())))
        .await;
    files(&sb);
    let line = json!({
        "task_id": "inv-1",
        "description": "Extract the invoice's fields.",
        "adapter": "openai-payg",
        "response_schema": serde_json::from_str::<Value>(&std::fs::read_to_string(examples().join("invoice.schema.json")).unwrap()).unwrap(),
        "parts": [{"image": "invoice.png"}, {"document": "invoice.pdf"}],
    });
    let out = sb.worker(&line.to_string()).await;
    out.assert_exit(0);
    let result = out.json();
    assert_eq!(result["answer"], invoice(), "{result}");
    assert_eq!(
        result["ledger"]["inputs"][1]["sha256"],
        sha256(PDF),
        "{result}"
    );
    let content = &model_calls(&server)[0].body["input"][0]["content"];
    assert_eq!(content[1]["type"], "input_file", "{content}");
    // A part that cannot be read is the failed result of its task, naming the part.
    let bad = json!({"task_id": "inv-2", "description": "x", "parts": [{"image": "none.png"}]});
    let out = sb.worker(&bad.to_string()).await;
    assert_eq!(out.json()["success"], false);
    assert!(
        out.stdout.contains("parts[0]: cannot read none.png"),
        "{}",
        out.dump()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_lines_carry_their_own_parts_and_a_bad_one_is_named_by_its_line() {
    let (server, sb) = OPENAI_PAYG
        .serve(Script::always(Reply::Json(invoice())))
        .await;
    files(&sb);
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(examples().join("invoice.schema.json")).unwrap(),
    )
    .unwrap();
    let line = |id: &str, part: Value| {
        json!({"task_id": id, "description": "Extract the invoice's fields.",
               "response_schema": schema, "parts": [part]})
    };
    let lines = [
        line("a", json!({"image": "invoice.png"})),
        line("b", json!({"document": "invoice.pdf"})),
        line("c", json!({"image": "invoice.pdf"})),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(sb.cwd.path().join("in.jsonl"), text).unwrap();
    let args = [
        "batch",
        "--adapter",
        "openai-payg",
        "--input",
        "in.jsonl",
        "--output",
        "out.jsonl",
    ];
    let out = sb.geode(&args, "").await;
    let results: Vec<Value> = std::fs::read_to_string(sb.cwd.path().join("out.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by_id = |id: &str| {
        results
            .iter()
            .find(|r| r["task_id"] == id)
            .cloned()
            .unwrap()
    };
    let a = by_id("a");
    assert_eq!(a["success"], true, "{a}");
    assert_eq!(a["ledger"]["wire_mode"], "strict", "{a}");
    assert_eq!(a["ledger"]["inputs"][0]["sha256"], sha256(PNG), "{a}");
    assert_eq!(
        by_id("b")["ledger"]["inputs"][0]["media_type"],
        "application/pdf"
    );
    assert!(
        out.stderr
            .contains("bad input line 3: parts[0]: invoice.pdf is a pdf file, not an image"),
        "{}",
        out.dump()
    );
    assert_eq!(model_calls(&server).len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn urls_go_on_as_urls_where_the_wire_takes_them_and_nothing_is_fetched() {
    let image = "https://files.example/scan.png";
    let doc = "https://files.example/contract.pdf";
    let urls = ["--image", image, "--file", doc];
    let (server, sb) = ANTHROPIC_PAYG
        .serve(Script::always(Reply::Json(invoice())))
        .await;
    let out = extract(&sb, "anthropic-payg", &urls).await;
    out.assert_exit(0);
    let content = &model_calls(&server)[0].body["messages"][0]["content"];
    assert_eq!(
        content[0],
        json!({"type": "image", "source": {"type": "url", "url": image}})
    );
    assert_eq!(
        content[1],
        json!({"type": "document", "source": {"type": "url", "url": doc}, "title": "contract.pdf"})
    );
    let inputs = &out.json()["ledger"]["inputs"];
    assert_eq!(inputs[0]["source"], "url", "{inputs}");
    assert_eq!(inputs[0]["sha256"], sha256(image.as_bytes()), "{inputs}");

    let (server, sb) = OPENAI_PAYG
        .serve(Script::always(Reply::Json(invoice())))
        .await;
    let out = extract(&sb, "openai-payg", &urls).await;
    out.assert_exit(0);
    let content = &model_calls(&server)[0].body["input"][0]["content"];
    assert_eq!(content[0]["image_url"], image);
    assert_eq!(content[1], json!({"type": "input_file", "file_url": doc}));
    // The ChatGPT backend takes no URL: refused, not fetched.
    let (server, sb) = CODEX_OAUTH
        .serve(Script::always(Reply::Json(invoice())))
        .await;
    let out = extract(&sb, "codex-oauth", &["--image", image]).await;
    refused(&out, &["it takes no image URLs (give the file instead)"]);
    assert!(model_calls(&server).is_empty());
}
