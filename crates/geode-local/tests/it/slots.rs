//! The engine's sequence slots with the real SmolLM2-135M model: prefix reuse across calls and
//! slots, concurrent calls decoded together answering as they do one at a time, and one call
//! ending early (cancelled, refused) without disturbing the others.
//!
//! One model load per test binary; the tests take a lock so their counts do not interleave.
//! When the model file is missing every test FAILS with the fetch instructions.

use crate::common;
use common::{engine, serial};

use geode::llm::adapter::Adapter;
use geode::llm::call::{AdapterError, CallCx, TextSink};
use geode::llm::request::{AdapterCallRequest, AdapterResponse, Message};
use geode::schema::ResponseSchema;
use geode_local::LocalAdapter;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

const SYSTEM: &str = "You are a careful senior software engineer reviewing pull requests.";

const PRS: [&str; 4] = [
    "Title: Add API key to source\nDiff:\n+API_KEY = \"sk-live-9f8a7b6c5d4e3f2a1b0c\"",
    "Title: Fix typo in README\nDiff:\n-You will recieve a token.\n+You will receive a token.",
    "Title: Disable TLS verification\nDiff:\n+r = requests.get(url, verify=False)",
    "Title: Bump serde to 1.0.219\nDiff:\n-serde = \"1.0.210\"\n+serde = \"1.0.219\"",
];

/// A greedy Decision call on pull request `i`.
fn request(i: usize) -> AdapterCallRequest {
    let text = format!(
        "Decide whether to accept this pull request.\n\n{}\n\nAnswer as JSON with keys \
         \"decision\" (\"accept\" or \"reject\") and \"reason\" (one short sentence).",
        PRS[i]
    );
    let mut req = AdapterCallRequest::new("", vec![Message::user(text)]);
    req.system_prompt = SYSTEM.to_owned();
    req.max_tokens = 64;
    req.temperature = Some(0.0);
    let schema = include_str!("../../../../examples/decision.schema.json");
    req.response_schema =
        Some(ResponseSchema::from_value(serde_json::from_str(schema).unwrap()).unwrap());
    req.metadata.insert("seed".to_owned(), json!(7));
    req
}

async fn call(adapter: &LocalAdapter, req: AdapterCallRequest) -> AdapterResponse {
    match adapter.call(req, &CallCx::new()).await {
        Ok(resp) => resp,
        Err(e) => panic!("local call failed: {e}"),
    }
}

/// The answers to `PRS` one call at a time.
async fn sequential(adapter: &LocalAdapter) -> Vec<String> {
    let mut texts = Vec::new();
    for i in 0..PRS.len() {
        texts.push(call(adapter, request(i)).await.text);
    }
    texts
}

/// Every PR's call started at once, each on a task of its own.
fn spawn_all(adapter: &Arc<LocalAdapter>) -> Vec<JoinHandle<String>> {
    (0..PRS.len())
        .map(|i| {
            let adapter = Arc::clone(adapter);
            tokio::spawn(async move { call(&adapter, request(i)).await.text })
        })
        .collect()
}

/// The answers of [`spawn_all`]'s tasks, in PR order.
async fn answers(tasks: Vec<JoinHandle<String>>) -> Vec<String> {
    let mut got = Vec::new();
    for task in tasks {
        got.push(task.await.unwrap());
    }
    got
}

/// Concurrent answers against the sequential ones. A token evaluated in a batch with other
/// sequences goes through other matrix kernels than one evaluated alone, so its logits can
/// differ in the last bits, and greedy decoding can, rarely, then pick another word of a free
/// text. So: every answer is a valid Decision with the same decision, and most are identical
/// (answers routed to the wrong call, or a sequence disturbed by another, would differ).
fn assert_same_answers(got: &[String], expected: &[String]) {
    assert_eq!(got.len(), expected.len());
    let decision = |text: &str| {
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        value["decision"].as_str().map(str::to_owned)
    };
    let mut identical = 0;
    for (g, e) in got.iter().zip(expected) {
        assert!(decision(g).is_some(), "{g}");
        assert_eq!(decision(g), decision(e), "{got:?} vs {expected:?}");
        identical += usize::from(g == e);
    }
    assert!(identical * 4 >= got.len() * 3, "{got:?} vs {expected:?}");
}

#[tokio::test]
async fn a_repeated_call_evaluates_only_its_last_prompt_token_and_answers_the_same() {
    let _serial = serial().await;
    let adapter = LocalAdapter::new(engine());
    // A system prompt of its own: no other test's calls share more than its first tokens.
    let request = |i: usize| {
        let mut req = request(i);
        req.system_prompt = format!("{SYSTEM} Be brief.");
        req
    };
    let first = call(&adapter, request(0)).await;
    assert!(first.usage.cached_input_tokens < first.usage.input_tokens / 2);
    let second = call(&adapter, request(0)).await;
    assert_eq!(first.text, second.text);
    assert_eq!(first.usage.input_tokens, second.usage.input_tokens);
    // Everything but the last prompt token (evaluated again for its logits) is reused.
    assert_eq!(
        second.usage.cached_input_tokens,
        second.usage.input_tokens - 1
    );
    // Another prompt in between keeps the first one's cells in their slot.
    let other = call(&adapter, request(1)).await;
    assert!(other.usage.cached_input_tokens > 0);
    assert!(other.usage.cached_input_tokens < other.usage.input_tokens - 1);
    let third = call(&adapter, request(0)).await;
    assert_eq!(third.text, first.text);
    assert_eq!(
        third.usage.cached_input_tokens,
        third.usage.input_tokens - 1
    );
}

#[tokio::test]
async fn concurrent_calls_through_one_engine_answer_as_sequential_ones() {
    let _serial = serial().await;
    let adapter = Arc::new(LocalAdapter::new(engine()));
    let expected = sequential(&adapter).await;
    // Twice: the second round also starts from prefixes the slots hold.
    for _ in 0..2 {
        assert_same_answers(&answers(spawn_all(&adapter)).await, &expected);
    }
}

#[tokio::test]
async fn a_cancelled_or_refused_call_does_not_disturb_the_others() {
    let _serial = serial().await;
    let adapter = Arc::new(LocalAdapter::new(engine()));
    let expected = sequential(&adapter).await;
    let tasks = spawn_all(&adapter);
    // A call cancelled after its first streamed text, while the others decode.
    let cancelled = {
        let adapter = Arc::clone(&adapter);
        tokio::spawn(async move {
            let mut cx = CallCx::new();
            let cancel = cx.cancel.clone();
            cx.on_text = Some(TextSink::new(move |_| cancel.cancel()));
            let mut req = request(2);
            req.max_tokens = 256;
            req.response_schema = None;
            req.messages
                .push(Message::user("Then tell a long story about code review."));
            adapter.call(req, &cx).await
        })
    };
    // A call the engine refuses (its prompt does not fit the context).
    let refused = {
        let adapter = Arc::clone(&adapter);
        tokio::spawn(async move {
            let long = "review ".repeat(6000);
            adapter
                .call(
                    AdapterCallRequest::new("", vec![Message::user(long)]),
                    &CallCx::new(),
                )
                .await
        })
    };
    let cancelled = tokio::time::timeout(Duration::from_secs(120), cancelled)
        .await
        .expect("the cancelled call ends")
        .unwrap();
    assert!(
        matches!(cancelled, Err(AdapterError::Cancelled { .. })),
        "{cancelled:?}"
    );
    let refused = refused.await.unwrap();
    assert!(refused.is_err(), "{refused:?}");
    assert_same_answers(&answers(tasks).await, &expected);
}

#[tokio::test]
async fn idle_slots_keep_a_bounded_number_of_tokens_the_newest_always() {
    let _serial = serial().await;
    let adapter = LocalAdapter::new(engine());
    // Long prompts of their own: each one alone passes the idle bound.
    let long = |tag: &str| {
        let filler = (0..geode_local::IDLE_KEEP_TOKENS / 2)
            .map(|i| format!("{tag}{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        let mut req = request(0);
        req.system_prompt = format!("{tag}: {filler}");
        req
    };
    let a = call(&adapter, long("alpha")).await;
    assert!(a.usage.input_tokens > geode_local::IDLE_KEEP_TOKENS as u64);
    let b = call(&adapter, long("beta")).await;
    // When `c` comes, `b` is the newest idle slot and keeps its prompt whatever its size; `a`
    // is past the bound and is dropped.
    call(&adapter, long("gamma")).await;
    let b_again = call(&adapter, long("beta")).await;
    assert_eq!(b_again.usage.cached_input_tokens, b.usage.input_tokens - 1);
    let a_again = call(&adapter, long("alpha")).await;
    assert!(
        a_again.usage.cached_input_tokens < 16,
        "{} of {} tokens reused",
        a_again.usage.cached_input_tokens,
        a_again.usage.input_tokens
    );
}
