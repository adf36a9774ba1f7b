//! The response cache end to end through the `geode` binary, over a real transport to the
//! fake providers: a second run makes no request and its ledger says `replayed`; a weaker
//! `require`, a changed schema description, an expired TTL and a damaged entry are misses;
//! invalid and failed answers are never kept; two `geode batch` processes share one
//! directory; Redis; no secret in the store; `geode cache stats|clear`; the worker, the
//! config and the gateway.

use crate::support;

use geode_fakes::{FakeServer, Reply, Script};
use serde_json::{Value, json};
use std::path::Path;
use support::batch::sandbox;
use support::http_cases::{GLM_PAYG, OPENAI_PAYG};
use support::{DECIDE, SECRET, Sandbox, decision_schema, good_answer, model_calls};

/// `geode run --adapter ADAPTER --schema Decision --cache c --json EXTRA... Decide.`, parsed.
async fn run_cached(sb: &Sandbox, adapter: &str, extra: &[&str]) -> Value {
    let mut args = vec!["--cache", "c", "--json"];
    args.extend_from_slice(extra);
    let out = sb.run_decision(adapter, &args, DECIDE).await;
    out.assert_exit(0);
    out.json()
}

/// `geode cache stats --cache c --json`, parsed.
async fn stats(sb: &Sandbox, cache: &str) -> Value {
    let out = sb
        .geode(&["cache", "stats", "--cache", cache, "--json"], "")
        .await;
    out.assert_exit(0);
    out.json()
}

/// Every file under `dir`.
fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

fn holds(bytes: &[u8], needle: &str) -> bool {
    bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_run_makes_no_request_and_its_ledger_says_replayed() {
    let (server, sb) = OPENAI_PAYG
        .serve(Script::always(Reply::Json(good_answer())))
        .await;
    let first = run_cached(&sb, "openai-payg", &[]).await;
    assert_eq!(model_calls(&server).len(), 1);
    assert!(first["ledger"].get("replayed").is_none(), "{first}");
    let tokens = first["prompt_tokens"].as_u64().unwrap();
    assert!(tokens > 0, "{first}");

    let second = run_cached(&sb, "openai-payg", &[]).await;
    assert_eq!(
        model_calls(&server).len(),
        1,
        "the second run made no request"
    );
    assert_eq!(second["answer"], good_answer());
    let ledger = &second["ledger"];
    assert_eq!(ledger["replayed"], true);
    assert!(
        ledger["cached_at"].as_str().unwrap().ends_with('Z'),
        "{ledger}"
    );
    assert_eq!(ledger["wire_mode"], "strict");
    assert_eq!(ledger["full_validation"]["valid"], true);
    assert_eq!(
        (
            second["prompt_tokens"].as_u64(),
            second["completion_tokens"].as_u64()
        ),
        (Some(0), Some(0))
    );
    assert_eq!(
        ledger["original_usage"]["input_tokens"].as_u64(),
        Some(tokens)
    );
    for attempt in ledger["attempts"].as_array().unwrap() {
        assert_eq!(attempt["usage"]["input_tokens"], 0, "{attempt}");
    }

    // The ledger line says so too.
    let out = sb
        .run_decision("openai-payg", &["--cache", "c"], DECIDE)
        .await;
    out.assert_answer(&good_answer()).assert_stderr_has(&[
        "wire_mode=strict (enforced)",
        "replayed from the cache (made ",
        "0 new tokens; the original run used",
    ]);
    assert_eq!(model_calls(&server).len(), 1);

    // `--stream` replays too: the final event carries the replayed ledger.
    let out = sb
        .run_decision("openai-payg", &["--cache", "c", "--stream"], DECIDE)
        .await;
    out.assert_exit(0);
    let last = out.json_lines().pop().unwrap();
    assert_eq!(last["event"], "final", "{}", out.dump());
    assert_eq!(last["value"], good_answer());
    assert_eq!(last["ledger"]["replayed"], true, "{last}");
    assert_eq!(model_calls(&server).len(), 1);

    let s = stats(&sb, "c").await;
    assert_eq!(
        (s["entries"].as_u64(), s["unreadable"].as_u64()),
        (Some(1), Some(0)),
        "{s}"
    );
    let c = &s["counters"];
    assert_eq!(
        (
            c["hits"].as_u64(),
            c["misses"].as_u64(),
            c["stores"].as_u64()
        ),
        (Some(3), Some(1), Some(1)),
        "{s}"
    );
    let text = sb.geode(&["cache", "stats", "--cache", "c"], "").await;
    text.assert_exit(0);
    assert!(
        text.stdout.contains("entries 1 · bytes "),
        "{}",
        text.dump()
    );
    assert!(
        text.stdout
            .contains("hits 3 · misses 1 · writes 1 · damaged 0"),
        "{}",
        text.dump()
    );

    // Cleared: the next run asks again.
    let out = sb.geode(&["cache", "clear", "--cache", "c"], "").await;
    out.assert_exit(0);
    assert!(out.stdout.contains("cleared 1 entries"), "{}", out.dump());
    assert_eq!(stats(&sb, "c").await["entries"], 0);
    let again = run_cached(&sb, "openai-payg", &[]).await;
    assert!(again["ledger"].get("replayed").is_none());
    assert_eq!(model_calls(&server).len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_made_under_a_weaker_require_does_not_answer_a_stronger_one() {
    let (server, sb) = OPENAI_PAYG
        .serve(Script::always(Reply::Json(good_answer())))
        .await;
    run_cached(&sb, "openai-payg", &[]).await;
    let strong = run_cached(&sb, "openai-payg", &["--require", "enforced"]).await;
    assert!(strong["ledger"].get("replayed").is_none(), "{strong}");
    assert_eq!(
        model_calls(&server).len(),
        2,
        "the best-effort entry did not answer"
    );
    // The enforced answer replaced it, and answers both requirements.
    for require in ["enforced", "best-effort"] {
        let r = run_cached(&sb, "openai-payg", &["--require", require]).await;
        assert_eq!(r["ledger"]["replayed"], true, "{require}: {r}");
    }
    assert_eq!(model_calls(&server).len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_changed_only_in_a_description_is_a_miss() {
    let (server, sb) = GLM_PAYG
        .serve(Script::always(Reply::Json(good_answer())))
        .await;
    let mut schema = decision_schema();
    schema["properties"]["reason"]["description"] = json!("Why, in two sentences.");
    let edited = sb.cwd.path().join("edited.schema.json");
    std::fs::write(&edited, schema.to_string()).unwrap();
    run_cached(&sb, "glm-payg", &[]).await;
    let out = sb
        .run(
            "glm-payg",
            &edited.display().to_string(),
            &["--cache", "c", "--json", DECIDE],
        )
        .await;
    out.assert_exit(0);
    assert!(out.json()["ledger"].get("replayed").is_none());
    assert_eq!(model_calls(&server).len(), 2);
    // Each schema now has its own entry.
    assert_eq!(stats(&sb, "c").await["entries"], 2);
    assert_eq!(
        run_cached(&sb, "glm-payg", &[]).await["ledger"]["replayed"],
        true
    );
    assert_eq!(model_calls(&server).len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_and_failed_answers_are_never_kept() {
    let (server, sb) = GLM_PAYG
        .serve(Script::always(Reply::Json(support::bad_enum_answer())))
        .await;
    for round in 1..=2 {
        let out = sb.run_decision("glm-payg", &["--cache", "c"], DECIDE).await;
        out.assert_exit(1);
        assert_eq!(
            model_calls(&server).len(),
            2 * round,
            "each run asked again (and retried)"
        );
    }
    let (server, sb_failed) = OPENAI_PAYG
        .serve(Script::always(Reply::Status {
            status: 500,
            body: Value::Null,
            retry_after: None,
        }))
        .await;
    let out = sb_failed
        .run_decision("openai-payg", &["--cache", "c"], DECIDE)
        .await;
    out.assert_exit(3);
    let calls = server.requests().len();
    let out = sb_failed
        .run_decision("openai-payg", &["--cache", "c"], DECIDE)
        .await;
    out.assert_exit(3);
    assert!(server.requests().len() > calls, "a failure is not replayed");
    let (server, sb_cut) = GLM_PAYG
        .serve(Script::always(Reply::MaxTokens(
            r#"{"decision": "accept""#.into(),
        )))
        .await;
    for _ in 0..2 {
        let out = sb_cut
            .run_decision("glm-payg", &["--cache", "c"], DECIDE)
            .await;
        assert_ne!(out.code, Some(0), "{}", out.dump());
    }
    assert_eq!(
        model_calls(&server).len(),
        2,
        "a truncated answer is not replayed"
    );
    for sandbox in [&sb, &sb_failed, &sb_cut] {
        let s = stats(sandbox, "c").await;
        assert_eq!(
            (s["entries"].as_u64(), s["counters"]["stores"].as_u64()),
            (Some(0), Some(0)),
            "{s}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ttl_bounds_the_age_of_a_replayed_answer() {
    let (server, sb) = GLM_PAYG
        .serve(Script::always(Reply::Json(good_answer())))
        .await;
    run_cached(&sb, "glm-payg", &[]).await;
    let young = run_cached(&sb, "glm-payg", &["--cache-ttl", "1h"]).await;
    assert_eq!(young["ledger"]["replayed"], true);
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let old = run_cached(&sb, "glm-payg", &["--cache-ttl", "1"]).await;
    assert!(old["ledger"].get("replayed").is_none(), "{old}");
    assert_eq!(
        model_calls(&server).len(),
        2,
        "the expired entry was asked again"
    );
    // `[cache] ttl` in geode.toml too; a bad TTL is a usage error.
    sb.config("[cache]\nttl = \"1h\"\n");
    let fresh = run_cached(&sb, "glm-payg", &[]).await;
    assert_eq!(fresh["ledger"]["replayed"], true);
    let out = sb
        .run_decision("glm-payg", &["--cache", "c", "--cache-ttl", "soon"], DECIDE)
        .await;
    out.assert_exit(2);
    let out = Sandbox::new()
        .run_decision("glm-payg", &["--cache-ttl", "60"], DECIDE)
        .await;
    out.assert_exit(2)
        .assert_stderr_has(&["--cache-ttl needs a cache"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupted_or_truncated_entry_file_is_a_miss_never_a_crash() {
    let (server, sb) = GLM_PAYG
        .serve(Script::always(Reply::Json(good_answer())))
        .await;
    run_cached(&sb, "glm-payg", &[]).await;
    let cache = sb.cwd.path().join("c");
    for file in files(&cache.join("geode-cache-v1/content-v2")) {
        let bytes = std::fs::read(&file).unwrap();
        std::fs::write(&file, &bytes[..bytes.len() / 3]).unwrap();
    }
    assert_eq!(stats(&sb, "c").await["unreadable"], 1);
    let r = run_cached(&sb, "glm-payg", &[]).await;
    assert!(r["ledger"].get("replayed").is_none(), "{r}");
    assert_eq!(model_calls(&server).len(), 2);
    assert_eq!(
        run_cached(&sb, "glm-payg", &[]).await["ledger"]["replayed"],
        true,
        "replaced"
    );
    let s = stats(&sb, "c").await;
    assert_eq!(s["counters"]["corrupt"], 1, "{s}");

    // Garbage over every file of the cache: still a miss, exit 0, then a hit again.
    for file in files(&cache) {
        std::fs::write(&file, b"\x00\xffgarbage\n{{{\t").unwrap();
    }
    let r = run_cached(&sb, "glm-payg", &[]).await;
    assert!(r["ledger"].get("replayed").is_none(), "{r}");
    assert_eq!(model_calls(&server).len(), 3);
    assert_eq!(
        run_cached(&sb, "glm-payg", &[]).await["ledger"]["replayed"],
        true,
        "written again over the garbage"
    );
    assert_eq!(model_calls(&server).len(), 3);
    assert_eq!(stats(&sb, "c").await["entries"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_reaches_the_cache_directory() {
    let leaky = json!({"decision": "accept", "reason": format!("the key was {SECRET}")});
    let (server, sb) = OPENAI_PAYG.serve(Script::always(Reply::Json(leaky))).await;
    let first = run_cached(&sb, "openai-payg", &[]).await;
    assert!(!first.to_string().contains(SECRET));
    assert_eq!(stats(&sb, "c").await["entries"], 1);
    let stored = files(&sb.cwd.path().join("c"));
    assert!(!stored.is_empty());
    for file in stored {
        let bytes = std::fs::read(&file).unwrap();
        assert!(!holds(&bytes, SECRET), "{} holds the key", file.display());
        assert!(
            !holds(&bytes, &SECRET[..12]),
            "{} holds part of the key",
            file.display()
        );
    }
    assert_eq!(
        run_cached(&sb, "openai-payg", &[]).await["ledger"]["replayed"],
        true
    );
    assert_eq!(model_calls(&server).len(), 1);
}

/// `n` shorthand tasks, each its own prompt (so each its own cache key).
fn distinct_tasks(n: usize) -> String {
    (0..n)
        .map(|i| {
            json!({"task_id": format!("t{i:04}"), "prompt": format!("Decide on change {i}.")})
                .to_string()
                + "\n"
        })
        .collect()
}

fn batch(out: &str, concurrency: &str) -> Vec<String> {
    let mut args = support::batch::batch_args(&["--cache", "c", "--concurrency", concurrency]);
    let at = args.iter().position(|a| a == "out.jsonl").unwrap();
    args[at] = out.to_owned();
    args
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_batches_at_once_share_one_cache_directory_and_every_entry_reads_back() {
    let server = support::glm_answering(Reply::Json(good_answer())).await;
    let n = 150;
    let sb = sandbox(&server, &distinct_tasks(n));
    let (a, b) = (batch("a.jsonl", "8"), batch("b.jsonl", "8"));
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let b: Vec<&str> = b.iter().map(String::as_str).collect();
    let (pa, pb) = (sb.spawn(&a), sb.spawn(&b));
    for (name, p) in [("a", pa), ("b", pb)] {
        let out = p.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "batch {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for out in ["a.jsonl", "b.jsonl"] {
        let text = std::fs::read_to_string(sb.cwd.path().join(out)).unwrap();
        assert_eq!(text.lines().count(), n, "{out}");
    }
    let cold_calls = model_calls(&server).len();
    assert!(cold_calls >= n, "{cold_calls}");
    let s = stats(&sb, "c").await;
    assert_eq!(
        (s["entries"].as_u64(), s["unreadable"].as_u64()),
        (Some(n as u64), Some(0)),
        "{s}"
    );

    // A third batch reads every entry back: all replayed, valid, no request.
    let c = batch("c.jsonl", "8");
    let c: Vec<&str> = c.iter().map(String::as_str).collect();
    let out = sb.geode(&c, "").await;
    out.assert_exit(0)
        .assert_stderr_has(&[&format!("replayed {n}"), "tokens 0/0"]);
    assert_eq!(
        model_calls(&server).len(),
        cold_calls,
        "the warm batch made no request"
    );
    let results = std::fs::read_to_string(sb.cwd.path().join("c.jsonl")).unwrap();
    for line in results.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        assert_eq!(r["success"], true, "{r}");
        assert_eq!(r["ledger"]["replayed"], true, "{r}");
        assert_eq!(r["answer"], good_answer(), "{r}");
    }
}

/// `geode run --adapter openai-payg --cache CACHE --json ...`, parsed.
async fn run_at(sb: &Sandbox, cache: &str) -> Value {
    run_at_with(sb, cache, &[]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_cache_replays_across_processes_and_survives_damage() {
    let redis = support::redis::Redis::start();
    let url = format!("redis://127.0.0.1:{}/team", redis.port);
    let (server, sb) = OPENAI_PAYG
        .serve(Script::always(Reply::Json(good_answer())))
        .await;
    assert!(run_at(&sb, &url).await["ledger"].get("replayed").is_none());
    assert_eq!(run_at(&sb, &url).await["ledger"]["replayed"], true);
    assert_eq!(model_calls(&server).len(), 1);
    let keys = redis.cli(&["--scan", "--pattern", "geode:cache:team:e:*"]);
    let keys: Vec<&str> = keys.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(keys.len(), 1, "{keys:?}");
    let stored = redis.cli(&["GET", keys[0]]);
    assert!(
        stored.contains("\"replayed\"") || stored.contains("ledger"),
        "{stored}"
    );
    assert!(!stored.contains(SECRET));

    // A damaged value is a miss, not a crash, and is replaced.
    redis.cli(&["SET", keys[0], "garbage"]);
    assert!(run_at(&sb, &url).await["ledger"].get("replayed").is_none());
    assert_eq!(model_calls(&server).len(), 2);
    assert_eq!(run_at(&sb, &url).await["ledger"]["replayed"], true);

    let s = stats(&sb, &url).await;
    assert_eq!(s["entries"], 1, "{s}");
    assert_eq!(s["counters"]["hits"], 2, "{s}");
    assert!(s["location"].as_str().unwrap().ends_with("/team"), "{s}");
    let out = sb.geode(&["cache", "clear", "--cache", &url], "").await;
    out.assert_exit(0);
    assert_eq!(stats(&sb, &url).await["entries"], 0);
}

/// An entry written under a TTL expires in Redis too, so a shared cache does not grow without
/// end; one written without a TTL stays until it is replaced or cleared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_cache_with_a_ttl_lets_redis_drop_its_entries() {
    let redis = support::redis::Redis::start();
    let (_server, sb) = OPENAI_PAYG
        .serve(Script::always(Reply::Json(good_answer())))
        .await;
    let expiry_of_the_one_entry = |name: &str| {
        let keys = redis.cli(&["--scan", "--pattern", &format!("geode:cache:{name}:e:*")]);
        let keys: Vec<&str> = keys.lines().filter(|l| !l.is_empty()).collect();
        assert_eq!(keys.len(), 1, "{keys:?}");
        redis.cli(&["PTTL", keys[0]]).trim().parse::<i64>().unwrap()
    };
    let url = format!("redis://127.0.0.1:{}/ttl", redis.port);
    run_at_with(&sb, &url, &["--cache-ttl", "1h"]).await;
    let ms = expiry_of_the_one_entry("ttl");
    assert!((3_500_000..=3_600_000).contains(&ms), "PTTL {ms}");
    let url = format!("redis://127.0.0.1:{}/forever", redis.port);
    run_at_with(&sb, &url, &[]).await;
    assert_eq!(expiry_of_the_one_entry("forever"), -1, "no TTL: no expiry");
}

/// [`run_at`] with more flags.
async fn run_at_with(sb: &Sandbox, cache: &str, more: &[&str]) -> Value {
    let mut args = vec!["--cache", cache, "--json"];
    args.extend_from_slice(more);
    let out = sb.run_decision("openai-payg", &args, DECIDE).await;
    out.assert_exit(0);
    out.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_and_geode_toml_use_the_cache_too() {
    let (server, sb) = GLM_PAYG
        .serve(Script::always(Reply::Json(good_answer())))
        .await;
    let line = support::worker_line("w", "glm-payg") + "\n";
    let out = sb.geode(&["worker", "--cache", "c"], &line).await;
    out.assert_exit(0);
    let out = sb.geode(&["worker", "--cache", "c"], &line).await;
    out.assert_exit(0);
    assert_eq!(out.json()["ledger"]["replayed"], true);
    assert_eq!(model_calls(&server).len(), 1);
    // A request may keep itself away from the cache: a real call, nothing replayed.
    let mut opted_out: Value = serde_json::from_str(line.trim()).unwrap();
    opted_out["cache"] = Value::Bool(false);
    let out = sb
        .geode(&["worker", "--cache", "c"], &format!("{opted_out}\n"))
        .await;
    out.assert_exit(0);
    assert_ne!(out.json()["ledger"]["replayed"], true, "{}", out.dump());
    assert_eq!(model_calls(&server).len(), 2);

    sb.trusted_config("[cache]\ndir = \"c\"\n");
    let out = sb.worker(&line).await;
    out.assert_exit(0);
    assert_eq!(
        out.json()["ledger"]["replayed"],
        true,
        "[cache] dir in geode.toml"
    );
    let out = sb.geode(&["cache", "stats"], "").await;
    out.assert_exit(0);
    assert!(out.stdout.contains("entries 1"), "{}", out.dump());
    assert_eq!(model_calls(&server).len(), 2);
    let out = Sandbox::new().geode(&["cache", "stats"], "").await;
    out.assert_exit(2).assert_stderr_has(&["no cache"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_replays_from_its_cache_and_a_request_may_opt_out() {
    use crate::e2e_gateway::{Gateway, decision_request, fakes, header};
    let (openai, glm) = fakes(
        Script::always(Reply::Json(good_answer())),
        Script::always(Reply::Json(good_answer())),
    )
    .await;
    let sb = crate::e2e_gateway::sandbox(&openai, &glm);
    sb.trusted_config("[cache]\ndir = \"gw-cache\"\n");
    let gw = Gateway::start(&sb, &[]);
    let calls = |s: &FakeServer| model_calls(s).len();
    let (status, headers, body) = gw.chat(&decision_request("openai-payg"), &[]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(header(&headers, "x-geode-replayed"), "");
    let (status, headers, body) = gw.chat(&decision_request("openai-payg"), &[]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        calls(&openai),
        1,
        "the second request made no upstream request"
    );
    assert!(
        header(&headers, "x-geode-replayed").ends_with('Z'),
        "{headers:?}"
    );
    assert_eq!(body["usage"]["total_tokens"], 0, "{body}");
    assert_eq!(body["geode"]["ledger"]["replayed"], true);
    assert!(
        body["geode"]["usage_counted"]
            .as_str()
            .unwrap()
            .starts_with("none"),
        "{body}"
    );
    let content: Value =
        serde_json::from_str(body["choices"][0]["message"]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, good_answer());

    // Opted out, by header or body: upstream again, nothing replayed.
    let (status, headers, _) = gw
        .chat(
            &decision_request("openai-payg"),
            &[("x-geode-cache", "false")],
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "x-geode-replayed"), "");
    let mut asked = decision_request("openai-payg");
    asked["geode"] = json!({"cache": false});
    let (status, _, body) = gw.chat(&asked, &[]).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["geode"]["ledger"].get("replayed").is_none(), "{body}");
    assert_eq!(calls(&openai), 3);
    let (status, _, body) = gw
        .chat(
            &decision_request("openai-payg"),
            &[("x-geode-cache", "nope")],
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["param"], "x-geode-cache");
    drop(glm);
}
