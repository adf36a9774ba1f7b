//! The ChatGPT/Codex backend fake: its body checks (`stream: true`, `store: false`), SSE-only
//! answers, zstd request bodies, and the side endpoints codex uses (OAuth refresh, routing discovery).
use crate::common;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::*;
use geode_fakes::{FakeServer, Kind, Reply};
use serde_json::{Value, json};

async fn post(server: &FakeServer, body: &Value, account: bool) -> (u16, Value) {
    let mut request = client()
        .post(server.model_url())
        .bearer_auth(SECRET)
        .json(body);
    if account {
        request = request.header("chatgpt-account-id", "acct_test");
    }
    let response = bounded(request.send()).await.unwrap();
    let status = response.status().as_u16();
    let text = bounded(response.text()).await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

#[tokio::test]
async fn rejects_requests_the_real_backend_rejects_without_spending_a_step() {
    let server = start(Kind::ChatGpt, [Reply::text("first step")]).await;
    let valid = body(Kind::ChatGpt, true);
    let mut no_stream = valid.clone();
    no_stream["stream"] = json!(false);
    let mut stream_absent = valid.clone();
    stream_absent.as_object_mut().unwrap().remove("stream");
    let mut no_store = valid.clone();
    no_store.as_object_mut().unwrap().remove("store");
    let mut store_true = valid.clone();
    store_true["store"] = json!(true);
    let mut max_tokens = valid.clone();
    max_tokens["max_output_tokens"] = json!(100);
    let cases = [
        (&no_stream, true, "Stream must be set to true"),
        (&stream_absent, true, "Stream must be set to true"),
        (&no_store, true, "Store must be set to false"),
        (&store_true, true, "Store must be set to false"),
        (
            &max_tokens,
            true,
            "Unsupported parameter: max_output_tokens",
        ),
        (&valid, false, "Missing chatgpt-account-id header"),
    ];
    for (request, account, detail) in cases {
        let (status, v) = post(&server, request, account).await;
        assert_eq!(status, 400, "{detail}");
        assert_eq!(v["detail"], detail);
    }
    let unauthenticated = send(client().post(server.model_url()).json(&valid)).await;
    assert_eq!(unauthenticated.status(), 401);

    let events = call_sse(&server, &valid).await;
    let done = events.last().unwrap();
    assert_eq!(done.name.as_deref(), Some("response.completed"));
    assert_eq!(
        done.json()["response"]["output"][0]["content"][0]["text"],
        "first step",
        "rejected requests must not consume script steps"
    );
    assert_eq!(
        server.requests().len(),
        cases.len() + 2,
        "rejections are recorded"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn answers_on_the_bare_responses_path_too() {
    let server = start(Kind::ChatGpt, [Reply::tool_call("f", json!({"a": 1}))]).await;
    let bare = client().post(format!("{}/responses", server.base_url()));
    let (status, events) = send_sse(authorized(
        Kind::ChatGpt,
        bare.json(&body(Kind::ChatGpt, true)),
    ))
    .await;
    assert_eq!(status, 200);
    let done = events.last().unwrap().json();
    assert_eq!(done["response"]["output"][0]["type"], "function_call");
    server.shutdown().await;
}

#[tokio::test]
async fn zstd_request_bodies_are_decoded_and_recorded() {
    let server = start(Kind::ChatGpt, [Reply::Auto]).await;
    let mut request = body(Kind::ChatGpt, true);
    request["text"] = json!({"verbosity": "low", "format": {"type": "json_schema",
        "name": "codex_output_schema", "strict": true,
        "schema": {"type": "object", "properties": {"ok": {"type": "boolean"}},
                   "required": ["ok"], "additionalProperties": false}}});
    let raw = serde_json::to_vec(&request).unwrap();
    let packed =
        ruzstd::encoding::compress_to_vec(&raw[..], ruzstd::encoding::CompressionLevel::Fastest);
    let response = send(
        client()
            .post(server.model_url())
            .bearer_auth(SECRET)
            .header("chatgpt-account-id", "acct_test")
            .header("content-type", "application/json")
            .header("content-encoding", "zstd")
            .body(packed.clone()),
    )
    .await;
    assert_eq!(response.status(), 200);
    let events = parse_sse(&bounded(response.text()).await.unwrap());
    let text = events.last().unwrap().json()["response"]["output"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"ok": true})
    );
    let recorded = &server.requests()[0];
    assert_eq!(recorded.body, request);
    assert_eq!(recorded.raw_body_len, packed.len());
    assert_eq!(recorded.header("content-encoding"), Some("zstd"));
    server.shutdown().await;
}

fn jwt_claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).expect("a JWT");
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}

#[tokio::test]
async fn oauth_refresh_returns_rotated_tokens_and_is_recorded_masked() {
    let server = start(Kind::ChatGpt, []).await;
    let grant = json!({"client_id": "app_EMoamEEZ73f0CkXaXp7hrann", "grant_type": "refresh_token",
                       "refresh_reason": "proactive_expiry", "refresh_token": SECRET});
    let response = send(
        client()
            .post(format!("{}/oauth/token", server.base_url()))
            .json(&grant),
    )
    .await;
    assert_eq!(response.status(), 200);
    let tokens = json_of(response).await;
    let refresh = tokens["refresh_token"].as_str().unwrap();
    assert!(
        !refresh.is_empty() && refresh != SECRET,
        "the refresh token rotates"
    );
    let access = jwt_claims(tokens["access_token"].as_str().unwrap());
    assert_eq!(
        access["https://api.openai.com/auth"]["chatgpt_account_id"],
        "acct_fake_123"
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(
        access["exp"].as_u64().unwrap() > now,
        "fresh tokens are not expired"
    );
    let id = jwt_claims(tokens["id_token"].as_str().unwrap());
    assert!(id["email"].is_string());

    let bad = send(
        client()
            .post(format!("{}/oauth/token", server.base_url()))
            .json(&json!({"grant_type": "password"})),
    )
    .await;
    assert_eq!(bad.status(), 400);

    let recorded = server.requests();
    assert_eq!(recorded[0].route(), "/oauth/token");
    assert_eq!(recorded[0].body["refresh_token"], "***");
    assert_eq!(recorded[0].body["grant_type"], "refresh_token");
    assert!(!format!("{recorded:?}").contains(SECRET));
    server.shutdown().await;
}

#[tokio::test]
async fn routing_discovery_points_back_at_this_server() {
    let server = start(Kind::ChatGpt, []).await;
    let get = |path: &str| {
        client()
            .get(format!("{}{path}", server.base_url()))
            .bearer_auth(SECRET)
            .header("chatgpt-account-id", "acct_test")
            .send()
    };
    let check: Value = bounded(
        bounded(get("/backend-api/wham/accounts/check"))
            .await
            .unwrap()
            .json(),
    )
    .await
    .unwrap();
    assert_eq!(check["default_account_id"], "acct_test");
    assert_eq!(
        check["accounts"][0]["workspace_backend_origin"],
        json!(server.base_url())
    );
    assert_eq!(
        check["accounts"][0]["account_routing_override"],
        "NO_CONSTRAINT"
    );
    let settings = bounded(get("/backend-api/wham/settings/user"))
        .await
        .unwrap();
    assert_eq!(settings.status(), 200);
    let models = bounded(get("/backend-api/codex/models?client_version=0.171.0"))
        .await
        .unwrap();
    assert_eq!(models.status(), 200);
    // A WebSocket upgrade attempt is refused, so codex falls back to HTTPS POST.
    let upgrade = send(
        client()
            .get(server.model_url())
            .header("connection", "Upgrade")
            .header("upgrade", "websocket"),
    )
    .await;
    assert_eq!(upgrade.status(), 404);
    server.shutdown().await;
}
