//! Stored responses through the real gateway: a conversation continued by
//! `previous_response_id` sends its history upstream, survives a restart of the gateway
//! (the embedded store), is shared by two gateways on one Redis, is visible only to the
//! inbound key that made it, and is forgotten on `DELETE`. And what a request carries reaches
//! the wire: nothing the client did not write, and the fields the gateway reads.

use crate::e2e_gateway::{Gateway, fakes, sandbox};
use crate::support::redis::Redis;
use crate::support::{good_answer, model_calls};
use geode_fakes::{Reply, Script};
use serde_json::{Value, json};

const KEY_A: &str = "gw-store-key-a-6b1f0e";
const KEY_B: &str = "gw-store-key-b-93c4d2";

async fn call(
    gw: &Gateway,
    method: &str,
    path: &str,
    key: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let client = reqwest::Client::new();
    let url = gw.url(path);
    let req = match method {
        "POST" => client.post(url).json(&body.unwrap_or(Value::Null)),
        "DELETE" => client.delete(url),
        _ => client.get(url),
    };
    let resp = req.bearer_auth(key).send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn turn(text: &str, previous: Option<&str>) -> Value {
    let mut body = json!({"model": "openai-payg/gpt-5-mini", "input": text});
    if let Some(id) = previous {
        body["previous_response_id"] = json!(id);
    }
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_continues_by_id_survives_a_restart_and_is_forgotten_on_delete() {
    let (openai, glm) = fakes(
        Script::always(Reply::Json(good_answer())),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let mut sb = sandbox(&openai, &glm);
    sb.var("GEODE_GATEWAY_KEYS", format!("{KEY_A},{KEY_B}"));
    let mut gw = Gateway::start(&sb, &[]);
    let (status, first) = call(
        &gw,
        "POST",
        "/v1/responses",
        KEY_A,
        Some(turn("My name is Alice.", None)),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["store"], true);
    let id = first["id"].as_str().unwrap().to_owned();
    // Nothing the client did not write went upstream: no instructions at all.
    let sent = &model_calls(&openai)[0].body;
    assert!(sent.get("instructions").is_none(), "{sent}");
    assert!(!sent.to_string().contains("general assistance"), "{sent}");

    let (status, second) = call(
        &gw,
        "POST",
        "/v1/responses",
        KEY_A,
        Some(turn("What is my name?", Some(&id))),
    )
    .await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["previous_response_id"], json!(id));
    assert_ne!(second["id"], first["id"]);
    // The first turn, its answer, then the new turn: in that order, upstream.
    let sent = model_calls(&openai)[1].body.to_string();
    let answer = first["output"][0]["content"][0]["text"].as_str().unwrap();
    let (alice, said, asked) = (
        sent.find("My name is Alice.")
            .expect("the first turn went upstream"),
        sent.find(&answer.replace('"', "\\\""))
            .expect("the first answer went upstream"),
        sent.find("What is my name?").unwrap(),
    );
    assert!(alice < said && said < asked, "{sent}");

    // Another key sees nothing: not the response, not its items, cannot continue or delete it.
    for path in [
        format!("/v1/responses/{id}"),
        format!("/v1/responses/{id}/input_items"),
    ] {
        let (status, body) = call(&gw, "GET", &path, KEY_B, None).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (404, Some("response_not_found")),
            "{body}"
        );
    }
    let calls = model_calls(&openai).len();
    let (status, _) = call(
        &gw,
        "POST",
        "/v1/responses",
        KEY_B,
        Some(turn("Who?", Some(&id))),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(
        model_calls(&openai).len(),
        calls,
        "refused before any upstream call"
    );
    assert_eq!(
        call(&gw, "DELETE", &format!("/v1/responses/{id}"), KEY_B, None)
            .await
            .0,
        404
    );

    // A restart keeps it (the embedded store is a file under the cache directory).
    gw.stop();
    let gw = Gateway::start(&sb, &[]);
    let (status, got) = call(&gw, "GET", &format!("/v1/responses/{id}"), KEY_A, None).await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["output"], first["output"]);
    let (status, items) = call(
        &gw,
        "GET",
        &format!("/v1/responses/{id}/input_items"),
        KEY_A,
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(items["object"], "list");
    assert_eq!(items["data"][0]["content"][0]["text"], "My name is Alice.");
    assert!(items["data"][0]["id"].is_string());

    let (status, gone) = call(&gw, "DELETE", &format!("/v1/responses/{id}"), KEY_A, None).await;
    assert_eq!(
        (status, &gone),
        (
            200,
            &json!({"id": id, "object": "response", "deleted": true})
        )
    );
    assert_eq!(
        call(&gw, "GET", &format!("/v1/responses/{id}"), KEY_A, None)
            .await
            .0,
        404
    );
    // `store: false` keeps nothing.
    let mut unkept = turn("Forget this.", None);
    unkept["store"] = json!(false);
    let (_, body) = call(&gw, "POST", "/v1/responses", KEY_A, Some(unkept)).await;
    assert_eq!(body["store"], false);
    let path = format!("/v1/responses/{}", body["id"].as_str().unwrap());
    assert_eq!(call(&gw, "GET", &path, KEY_A, None).await.0, 404);
    assert!(!gw.log().contains(KEY_A) && !gw.log().contains(KEY_B));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_on_one_redis_continue_each_others_conversations() {
    let redis = Redis::start();
    let (openai, glm) = fakes(
        Script::always(Reply::Json(good_answer())),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let mut sb = sandbox(&openai, &glm);
    sb.var("GEODE_GATEWAY_KEYS", format!("{KEY_A},{KEY_B}"));
    sb.trusted_config(&format!(
        "[gateway.store]\nurl = \"redis://127.0.0.1:{}/responses\"\n",
        redis.port
    ));
    let (one, two) = (Gateway::start(&sb, &[]), Gateway::start(&sb, &[]));
    let (status, first) = call(
        &one,
        "POST",
        "/v1/responses",
        KEY_A,
        Some(turn("My name is Alice.", None)),
    )
    .await;
    assert_eq!(status, 200, "{first}\n{}", one.log());
    let id = first["id"].as_str().unwrap();
    let (status, got) = call(&two, "GET", &format!("/v1/responses/{id}"), KEY_A, None).await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["id"], first["id"]);
    assert_eq!(
        call(&two, "GET", &format!("/v1/responses/{id}"), KEY_B, None)
            .await
            .0,
        404
    );
    let (status, _) = call(
        &two,
        "POST",
        "/v1/responses",
        KEY_A,
        Some(turn("What is my name?", Some(id))),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        model_calls(&openai)[1]
            .body
            .to_string()
            .contains("My name is Alice.")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_request_asks_reaches_the_wire_or_is_refused_before_any_call() {
    let (openai, glm) = fakes(
        Script::always(Reply::Json(good_answer())),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let sb = sandbox(&openai, &glm);
    let gw = Gateway::start(&sb, &[]);
    let mut asked = turn("Decide.", None);
    asked["reasoning"] = json!({"effort": "low"});
    asked["instructions"] = json!("Be brief.");
    let (status, body) = call(&gw, "POST", "/v1/responses", "", Some(asked)).await;
    assert_eq!(status, 200, "{body}");
    let sent = &model_calls(&openai)[0].body;
    assert_eq!(sent["reasoning"]["effort"], "low", "{sent}");
    assert_eq!(sent["instructions"], "Be brief.");
    assert_eq!(body["reasoning"]["effort"], "low");
    assert_eq!(body["instructions"], "Be brief.");
    let chat = json!({
        "model": "openai-payg/gpt-5-mini", "reasoning_effort": "minimal",
        "messages": [{"role": "user", "content": "Decide."}],
    });
    let (status, _, _) = gw.chat(&chat, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(
        model_calls(&openai)[1].body["reasoning"]["effort"],
        "minimal"
    );
    for (path, body, param) in [
        (
            "/v1/responses",
            json!({"model": "openai-payg", "input": "x", "top_p": 0.5}),
            "top_p",
        ),
        (
            "/v1/responses",
            json!({"model": "openai-payg", "input": "x", "frobnicate": 1}),
            "frobnicate",
        ),
        (
            "/v1/chat/completions",
            json!({"model": "openai-payg", "messages": [], "stop": ["x"]}),
            "stop",
        ),
        (
            "/v1/chat/completions",
            json!({"model": "openai-payg", "messages": [], "seed": 7}),
            "seed",
        ),
    ] {
        let (status, err) = call(&gw, "POST", path, "", Some(body)).await;
        assert_eq!(status, 400, "{err}");
        assert_eq!(err["error"]["code"], "unsupported_parameter");
        assert_eq!(err["error"]["param"], param);
    }
    assert_eq!(
        model_calls(&openai).len(),
        2,
        "no refused request went upstream"
    );
}
