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

/// Copies the directory `from` into `to`, whole.
fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_cannot_plant_answers_in_the_cache() {
    // A cloned repository whose geode.toml chooses the cache's place is refused untrusted.
    let (server, sb) = OPENAI_PAYG
        .serve(Script::always(Reply::Json(good_answer())))
        .await;
    sb.config("[cache]\ndir = \".geode-cache\"\n");
    let out = sb.run_decision("openai-payg", &["--json"], DECIDE).await;
    out.assert_exit(2)
        .assert_stderr_has(&["[cache] dir", "geode config trust"]);
    assert!(model_calls(&server).is_empty());

    // Entries made by another user (shipped in the repository, copied from elsewhere) read as
    // damaged, even from a cache the user chose: the answer is made afresh.
    let (_other_server, other) = OPENAI_PAYG
        .serve(Script::always(Reply::Json(good_answer())))
        .await;
    assert!(!replayed(&run_cached(&other, &[]).await));
    assert!(
        replayed(&run_cached(&other, &[]).await),
        "its own user replays it"
    );
    let victim_cache = sb.cwd.path().join("c");
    copy_dir(&other.cwd.path().join("c"), &victim_cache);
    std::fs::remove_file(sb.cwd.path().join("geode.toml")).unwrap();
    let mine = run_cached(&sb, &["--require", "enforced"]).await;
    assert!(!replayed(&mine), "a planted entry answered: {mine}");
    assert_eq!(model_calls(&server).len(), 1, "the answer was made afresh");
    assert!(
        replayed(&run_cached(&sb, &[]).await),
        "and then kept under the user's seal"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_cache_that_hangs_is_given_up_on_once_and_said_on_stderr() {
    // A "Redis" that takes connections and never answers.
    let frozen = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = frozen.local_addr().unwrap().port();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in frozen.incoming().flatten() {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.push(conn);
        }
    });
    let server = support::glm_answering(Reply::Json(good_answer())).await;
    let sb = support::batch::sandbox(&server, &support::batch::shorthand(0..6));
    let url = format!("redis://127.0.0.1:{port}/x");
    let args = support::batch::batch_args(&["--cache", &url, "--concurrency", "1"]);
    let out = sb
        .geode(&args.iter().map(String::as_str).collect::<Vec<_>>(), "")
        .await;
    out.assert_exit(0);
    assert_eq!(model_calls(&server).len(), 6, "every task ran upstream");
    let tries = accepted.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        tries <= 2,
        "{tries} connections: the store should rest after its first failure"
    );
    // `geode run` says so too, where it once said nothing.
    let out = sb
        .run_decision("glm-payg", &["--cache", &url, "--json"], DECIDE)
        .await;
    out.assert_exit(0).assert_stderr_has(&["cache"]);
    // A location that looks like a URL of another scheme is refused, not made a folder.
    for bad in ["rediss://127.0.0.1:1/x", "unix:///tmp/r.sock", "REDIS:/h"] {
        let out = sb
            .run_decision("glm-payg", &["--cache", bad, "--json"], DECIDE)
            .await;
        out.assert_exit(2).assert_stderr_has(&["cache location"]);
        assert!(!sb.cwd.path().join(bad.split(':').next().unwrap()).exists());
    }
}
