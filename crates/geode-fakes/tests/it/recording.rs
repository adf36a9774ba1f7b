//! Recording: every request in order, secrets masked everywhere, scripts spent only by model
//! calls, independent servers.
use crate::common;

use common::*;
use geode_fakes::{FakeServer, Kind, Reply, Script};
use serde_json::{Value, json};

#[tokio::test]
async fn secrets_never_reach_the_records() {
    for kind in Kind::ALL {
        let server = FakeServer::start(kind, Script::always(Reply::text("ok")))
            .await
            .unwrap();
        let mut request = body(kind, true);
        request["metadata"] = json!({"api_key": SECRET, "note": "kept"});
        let response = bounded(
            model_call(&server, &request)
                .header("cookie", format!("session={SECRET}"))
                .header("x-goog-api-key", SECRET)
                .header("proxy-authorization", format!("Basic {SECRET}"))
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(response.status(), 200, "{kind}");
        let query = send(
            client()
                .get(format!(
                    "{}/v1/models?key={SECRET}&beta=true",
                    server.base_url()
                ))
                .bearer_auth(SECRET),
        )
        .await;
        drop(query);

        let records = server.requests();
        assert_eq!(records.len(), 2, "{kind}");
        let debug = format!("{records:?}");
        let json = serde_json::to_string(&records).unwrap();
        assert!(!debug.contains(SECRET), "{kind}: secret in Debug: {debug}");
        assert!(!json.contains(SECRET), "{kind}: secret in JSON: {json}");
        let first = &records[0];
        match kind {
            Kind::Messages => assert_eq!(first.header("x-api-key"), Some("***")),
            _ => assert_eq!(first.header("authorization"), Some("Bearer ***")),
        }
        assert_eq!(first.header("proxy-authorization"), Some("Basic ***"));
        assert_eq!(first.header("cookie"), Some("***"));
        assert_eq!(
            first.body["metadata"],
            json!({"api_key": "***", "note": "kept"})
        );
        assert_eq!(records[1].path, "/v1/models?key=***&beta=true");
        if kind == Kind::ChatGpt {
            assert_eq!(first.header("chatgpt-account-id"), Some("acct_test"));
        }
        server.shutdown().await;
    }
}

#[tokio::test]
async fn requests_are_recorded_in_order_with_body_and_length() {
    let server = start_auto(Kind::Responses).await;
    let c = client();
    let url = server.model_url();
    for i in 0..3 {
        let body = json!({"model": "m", "input": format!("turn {i}")});
        let sent = serde_json::to_vec(&body).unwrap();
        let response = bounded(
            c.post(&url)
                .header("content-type", "application/json")
                .body(sent)
                .send(),
        )
        .await
        .unwrap();
        assert_eq!(response.status(), 200);
    }
    let raw = "not json at all";
    bounded(c.post(&url).body(raw).send()).await.unwrap();
    let records = server.requests();
    assert_eq!(records.len(), 4);
    for (i, record) in records[..3].iter().enumerate() {
        assert_eq!(record.method, "POST");
        assert_eq!(record.path, "/v1/responses");
        assert_eq!(record.body["input"], json!(format!("turn {i}")));
        assert_eq!(
            record.raw_body_len,
            serde_json::to_vec(&record.body).unwrap().len()
        );
        assert_eq!(record.header("content-type"), Some("application/json"));
    }
    assert_eq!(records[3].body, Value::Null);
    assert_eq!(records[3].raw_body_len, raw.len());
    server.shutdown().await;
}

#[tokio::test]
async fn side_endpoints_do_not_spend_script_steps() {
    let server = FakeServer::start(
        Kind::Messages,
        Script::new([Reply::text("one"), Reply::text("two")]).then_default(Reply::status(503)),
    )
    .await
    .unwrap();
    let texts = [
        call_json(&server, &body(Kind::Messages, false)).await,
        {
            send(client().head(server.base_url())).await;
            send(client().get(format!("{}/v1/models", server.base_url()))).await;
            call_json(&server, &body(Kind::Messages, false)).await
        },
        call_json(&server, &body(Kind::Messages, false)).await,
    ];
    assert_eq!(texts[0].1["content"][0]["text"], "one");
    assert_eq!(texts[1].1["content"][0]["text"], "two");
    assert_eq!(texts[2].0, 503, "the default follows the exhausted steps");
    assert_eq!(texts[2].1["error"]["type"], "api_error");
    server.shutdown().await;
}

#[tokio::test]
async fn servers_are_independent_and_listen_on_loopback_ports() {
    let a = FakeServer::start(Kind::Chat, Script::always(Reply::text("a")))
        .await
        .unwrap();
    let b = FakeServer::start(Kind::Chat, Script::always(Reply::text("b")))
        .await
        .unwrap();
    assert_ne!(a.addr().port(), b.addr().port());
    assert!(a.addr().ip().is_loopback());
    assert!(a.base_url().starts_with("http://127.0.0.1:"));
    let (_, va) = call_json(&a, &body(Kind::Chat, false)).await;
    let (_, vb) = call_json(&b, &body(Kind::Chat, false)).await;
    assert_eq!(va["choices"][0]["message"]["content"], "a");
    assert_eq!(vb["choices"][0]["message"]["content"], "b");
    assert_eq!((a.requests().len(), b.requests().len()), (1, 1));
    let port = a.addr().port();
    a.shutdown().await;
    // After shutdown nothing listens there any more.
    let refused = bounded(
        client()
            .get(format!("http://127.0.0.1:{port}/v1/models"))
            .send(),
    )
    .await;
    assert!(refused.is_err());
    drop(b);
}

#[tokio::test]
async fn tap_receives_each_recorded_request() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let server = FakeServer::builder(Kind::Responses)
        .tap(tx)
        .start()
        .await
        .unwrap();
    call_json(&server, &body(Kind::Responses, false)).await;
    let seen = bounded(rx.recv()).await.expect("a tapped request");
    assert_eq!(seen, server.requests()[0]);
    assert_eq!(seen.header("authorization"), Some("Bearer ***"));
    server.shutdown().await;
}
