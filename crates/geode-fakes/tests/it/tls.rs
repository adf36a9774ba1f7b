//! HTTPS fakes: a generated CA lets a rustls client connect; routing discovery then reports an
//! https origin, as codex in ChatGPT mode requires.
use crate::common;

use common::*;
use geode_fakes::{FakeServer, Kind, Reply, Script, TlsIdentity};
use serde_json::Value;

#[tokio::test]
async fn https_fake_is_trusted_through_its_generated_ca() {
    let identity = TlsIdentity::generate().unwrap();
    let ca = reqwest::Certificate::from_pem(identity.ca_pem().unwrap().as_bytes()).unwrap();
    let server = FakeServer::builder(Kind::ChatGpt)
        .script(Script::always(Reply::text("over tls")))
        .tls(identity)
        .start()
        .await
        .unwrap();
    assert!(server.base_url().starts_with("https://127.0.0.1:"));
    let trusted = reqwest::Client::builder()
        .no_proxy()
        .timeout(LIMIT)
        .add_root_certificate(ca)
        .build()
        .unwrap();
    let check: Value = bounded(
        bounded(
            trusted
                .get(format!(
                    "{}/backend-api/wham/accounts/check",
                    server.base_url()
                ))
                .send(),
        )
        .await
        .unwrap()
        .json(),
    )
    .await
    .unwrap();
    assert_eq!(
        check["accounts"][0]["workspace_backend_origin"],
        server.base_url()
    );
    let request = trusted.post(server.model_url());
    let (_, events) = send_sse(authorized(
        Kind::ChatGpt,
        request.json(&body(Kind::ChatGpt, true)),
    ))
    .await;
    let done = events.last().unwrap().json();
    assert_eq!(
        done["response"]["output"][0]["content"][0]["text"],
        "over tls"
    );

    // A client without the CA refuses the server.
    let untrusted = bounded(
        client()
            .get(format!("{}/v1/models", server.base_url()))
            .send(),
    )
    .await;
    assert!(untrusted.is_err());
    server.shutdown().await;
}
