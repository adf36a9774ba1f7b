//! `geode::Client` on the local model (SmolLM2-135M): the typed answer token by token. The
//! engine constrains decoding, so partials are `enforced`; the answer arrives as several
//! partials (the token loop hands each token's text to the stream), never contradicting the
//! final value. When the model file is missing the test FAILS with the fetch instructions.

use futures::StreamExt;
use geode::schemars::JsonSchema;
use geode::vocab::StructuredOutputMode;
use geode::{Error, PartialGuarantee, StreamEvent};
use serde::Deserialize;
use serde_json::Value;

/// A verdict on a change.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "geode::schemars")]
struct Verdict {
    /// Whether to merge it.
    merge: bool,
    /// One word.
    word: Severity,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "geode::schemars")]
#[serde(rename_all = "lowercase")]
enum Severity {
    Low,
    High,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_model_streams_a_typed_answer_token_by_token() {
    let client = geode_local::local_client_builder()
        .config(geode::config::Config::default())
        .max_tokens(40)
        .build()
        .unwrap();
    let events: Vec<Result<StreamEvent<Verdict>, Error>> = tokio::time::timeout(
        std::time::Duration::from_secs(600),
        client
            .stream::<Verdict>("Should we merge a typo fix in the README? Answer as JSON.")
            .collect(),
    )
    .await
    .expect("the local call did not finish within 10 minutes");
    let Some(Ok(StreamEvent::Final(done))) = events.last() else {
        panic!("{:?}", events.last());
    };
    assert_eq!(done.ledger.wire_mode, StructuredOutputMode::Constrained);
    let last = serde_json::json!({"merge": done.value.merge, "word": match done.value.word {
        Severity::Low => "low",
        Severity::High => "high",
    }});
    let mut partials: Vec<Value> = Vec::new();
    for e in &events[..events.len() - 1] {
        let Ok(StreamEvent::Partial {
            value,
            complete,
            guarantee,
        }) = e
        else {
            panic!("{e:?}");
        };
        assert_eq!(*guarantee, PartialGuarantee::Enforced);
        for p in complete {
            assert_eq!(value.pointer(p), last.pointer(p), "{p}");
        }
        partials.push(value.clone());
    }
    assert!(partials.len() >= 2, "token-by-token partials: {partials:?}");
    assert_eq!(partials.last(), Some(&last));
}
