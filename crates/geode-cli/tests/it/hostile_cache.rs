//! The response cache, trusted project files and the queue under a hostile user, through the
//! `geode` binary over real transports: a cache filled against one endpoint asked from another,
//! entries planted in a cache directory, a project file choosing where the cache lives, a rerun
//! of a queue batch.

use crate::support;

use geode_fakes::{FakeServer, Kind, Reply, Script};
use serde_json::Value;
use support::http_cases::OPENAI_PAYG;
use support::{DECIDE, good_answer, model_calls};

/// `geode run --adapter openai-payg --schema Decision --cache c --json`, parsed.
async fn run_cached(sb: &support::Sandbox, extra: &[&str]) -> Value {
    let mut args = vec!["--cache", "c", "--json"];
    args.extend_from_slice(extra);
    let out = sb.run_decision("openai-payg", &args, DECIDE).await;
    out.assert_exit(0);
    out.json()
}

fn replayed(result: &Value) -> bool {
    result["ledger"]["replayed"] == true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_kept_for_one_endpoint_never_answers_for_another() {
    let (first, mut sb) = OPENAI_PAYG
        .serve(Script::always(Reply::Json(good_answer())))
        .await;
    assert!(!replayed(&run_cached(&sb, &[]).await));
    assert!(
        replayed(&run_cached(&sb, &[]).await),
        "the same endpoint replays"
    );
    // The same adapter, model and schema, pointed at another server (a proxy, staging).
    let second = FakeServer::start(Kind::Responses, Script::always(Reply::Json(good_answer())))
        .await
        .unwrap();
    sb.var("GEODE_OPENAI_BASE_URL", second.base_url());
    let other = run_cached(&sb, &["--require", "enforced"]).await;
    assert!(!replayed(&other), "replayed across endpoints: {other}");
    assert_eq!(model_calls(&second).len(), 1, "the new endpoint was asked");
    assert_eq!(model_calls(&first).len(), 1);
}
