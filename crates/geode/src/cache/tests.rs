//! The cache through the worker with a scripted adapter and a real directory store: hits make
//! no call and say so, misses for every reason the module promises, nothing secret kept.

use super::entry::{CacheEntry, ENTRY_FORMAT};
use super::key::CacheKey;
use super::seal::SealKey;
use super::store::dir::STORE_DIR;
use super::{Cache, CacheLocation, Lookup, Miss};
use crate::agent::task::{Answer, Output, RunError, Task};
use crate::agent::worker::{WorkerEnv, run_task};
use crate::digest::canonical;
use crate::llm::request::AdapterResponse;
use crate::llm::scripted::ScriptedAdapter;
use crate::schema::ResponseSchema;
use crate::vocab::parse_duration as parse_ttl;
use crate::vocab::{Require, StopReason, StructuredOutputMode, Usage};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const GOOD: &str = r#"{"decision": "accept", "reason": "the tests pass"}"#;

fn schema_with(description: &str) -> ResponseSchema {
    ResponseSchema::from_value(json!({
        "type": "object",
        "description": description,
        "required": ["decision", "reason"],
        "properties": {
            "decision": {"enum": ["accept", "reject"]},
            "reason": {"type": "string"}
        },
        "additionalProperties": false
    }))
    .unwrap()
}

fn task() -> Task {
    Task {
        output: Output::Schema(schema_with("A decision.")),
        ..Task::new("Decide whether to merge.")
    }
}

fn answer(text: &str) -> AdapterResponse {
    AdapterResponse {
        usage: Usage {
            input_tokens: 120,
            output_tokens: 30,
            ..Usage::default()
        },
        ..AdapterResponse::text(text)
    }
}

fn adapter(answers: &[&str], mode: StructuredOutputMode) -> Arc<ScriptedAdapter> {
    Arc::new(ScriptedAdapter::new(answers.iter().map(|a| Ok(answer(a))).collect()).with_mode(mode))
}

/// The key the tests' caches seal with (one per test process, never the user's).
fn seal() -> SealKey {
    static KEY: std::sync::OnceLock<SealKey> = std::sync::OnceLock::new();
    KEY.get_or_init(SealKey::ephemeral).clone()
}

fn cache(dir: &Path, ttl: Option<Duration>) -> Cache {
    Cache::open_sealed(&CacheLocation::Dir(dir.to_path_buf()), ttl, seal()).unwrap()
}

/// Runs `task` on `adapter` with `cache`; returns the result and the adapter's calls so far.
async fn run(
    task: &Task,
    adapter: &Arc<ScriptedAdapter>,
    cache: &Cache,
) -> (Result<Answer, RunError>, usize) {
    let mut env = WorkerEnv::new(adapter.clone());
    env.store = Some(cache.as_store());
    let r = run_task(task, &env).await;
    (r, adapter.requests().len())
}

/// Every file under `dir`, concatenated.
fn all_bytes(dir: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.extend(std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

#[test]
fn canonical_json_sorts_keys_and_a_description_changes_the_schema_hash() {
    let a: Value =
        serde_json::from_str(r#"{"b": 1, "a": {"d": [1, {"f": 2, "e": 3}], "c": "x"}}"#).unwrap();
    let b: Value =
        serde_json::from_str(r#"{"a": {"c": "x", "d": [1, {"e": 3, "f": 2}]}, "b": 1}"#).unwrap();
    assert_eq!(canonical(&a), canonical(&b));
    assert_eq!(
        canonical(&a),
        r#"{"a":{"c":"x","d":[1,{"e":3,"f":2}]},"b":1}"#
    );
    let adapter = ScriptedAdapter::new(vec![]);
    let key = |t: &Task| CacheKey::of(t, &adapter, t.output.schema().unwrap());
    let base = key(&task());
    let described = Task {
        output: Output::Schema(schema_with("A decision, said differently.")),
        ..task()
    };
    let other = key(&described);
    assert_ne!(base.schema_sha256, other.schema_sha256);
    assert_ne!(base.hex, other.hex);
    assert_eq!(base.hex.len(), 64);
}

#[test]
fn every_part_of_the_request_and_policy_is_in_the_key_but_require_and_timeout_are_not() {
    let adapter = ScriptedAdapter::new(vec![]);
    let key = |t: &Task| CacheKey::of(t, &adapter, t.output.schema().unwrap()).hex;
    let base = key(&task());
    let changed: Vec<(&str, Task)> = vec![
        ("prompt", Task::new("Other.")),
        (
            "system",
            Task {
                system: "Be brief.".into(),
                ..task()
            },
        ),
        (
            "temperature",
            Task {
                temperature: Some(0.2),
                ..task()
            },
        ),
        (
            "repair",
            Task {
                repair: true,
                ..task()
            },
        ),
        (
            "formats",
            Task {
                formats: crate::schema::formats::FormatMode::Annotate,
                ..task()
            },
        ),
        (
            "history",
            Task {
                history: vec![crate::llm::request::Message::user("earlier")],
                ..task()
            },
        ),
        (
            "effort",
            Task {
                effort: crate::vocab::Effort::Low,
                ..task()
            },
        ),
    ];
    for (what, mut t) in changed {
        if what == "prompt" {
            t.output = task().output;
        }
        assert_ne!(key(&t), base, "{what} must change the key");
    }
    let mut t = task();
    t.budgets.max_tokens = 7;
    assert_ne!(key(&t), base, "max_tokens");
    let mut t = task();
    t.require = Require::Enforced;
    t.budgets.timeout = Duration::from_secs(3);
    assert_eq!(
        key(&t),
        base,
        "require is checked at lookup; the timeout only bounds time"
    );
    let named = ScriptedAdapter::new(vec![]).named("other-adapter");
    assert_ne!(
        CacheKey::of(&task(), &named, task().output.schema().unwrap()).hex,
        base
    );
    let strict = ScriptedAdapter::new(vec![]).with_mode(StructuredOutputMode::Strict);
    let wire = CacheKey::of(&task(), &strict, task().output.schema().unwrap());
    assert_ne!(
        wire.wire_sha256,
        CacheKey::of(&task(), &adapter, task().output.schema().unwrap()).wire_sha256
    );
}

#[test]
fn a_registry_adapter_keys_on_its_plan_of_the_schema() {
    let spec = crate::llm::registry::spec("glm-payg").unwrap();
    let strict = crate::llm::registry::spec("openai-payg").unwrap();
    struct Row(&'static crate::llm::registry::AdapterSpec);
    #[async_trait::async_trait]
    impl crate::llm::adapter::Adapter for Row {
        fn spec(&self) -> Option<&'static crate::llm::registry::AdapterSpec> {
            Some(self.0)
        }
        async fn call(
            &self,
            _: crate::llm::request::AdapterCallRequest,
            _: &crate::llm::call::CallCx,
        ) -> Result<AdapterResponse, crate::llm::call::AdapterError> {
            Ok(AdapterResponse::default())
        }
    }
    let t = task();
    let s = t.output.schema().unwrap();
    let (a, b) = (
        CacheKey::of(&t, &Row(spec), s),
        CacheKey::of(&t, &Row(strict), s),
    );
    assert_ne!(a.wire_sha256, b.wire_sha256);
    assert_eq!(a.schema_sha256, b.schema_sha256);
    assert_eq!(a, CacheKey::of(&t, &Row(spec), s), "the key is stable");
}

#[tokio::test]
async fn a_second_run_is_replayed_with_no_call_the_original_ledger_and_zero_new_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let cache = cache(dir.path(), None);
    let adapter = adapter(&[GOOD], StructuredOutputMode::Strict);
    let (first, calls) = run(&task(), &adapter, &cache).await;
    let first = first.unwrap();
    assert_eq!(calls, 1);
    assert!(!first.ledger.replayed);
    let (second, calls) = run(&task(), &adapter, &cache).await;
    let second = second.unwrap();
    assert_eq!(calls, 1, "a hit makes no call");
    assert_eq!(second.value, first.value);
    assert_eq!(second.text, first.text);
    assert!(second.ledger.replayed);
    assert!(second.ledger.cached_at.as_deref().unwrap().ends_with('Z'));
    assert_eq!(second.usage, Usage::default(), "no new token");
    assert_eq!(second.ledger.original_usage, Some(first.usage));
    assert!(
        second
            .ledger
            .attempts
            .iter()
            .all(|a| a.usage == Usage::default())
    );
    assert_eq!(second.ledger.wire_mode, first.ledger.wire_mode);
    let summary = second.ledger.summary();
    assert!(
        summary.contains("replayed from the cache (made "),
        "{summary}"
    );
    assert!(
        summary.contains("0 new tokens; the original run used 120 in, 30 out"),
        "{summary}"
    );
    let c = cache.counters();
    assert_eq!((c.hits, c.misses, c.stores), (1, 1, 1));
    cache.flush_counters().await.unwrap();
    let stats = cache.stats().await.unwrap();
    assert_eq!((stats.entries, stats.unreadable), (1, 0));
    assert_eq!(stats.counters.hits, 1);
    assert!(stats.bytes > 0);
}

#[test]
fn a_ledger_without_a_replay_serialises_as_before() {
    let plain = serde_json::to_value(crate::ledger::GuaranteeLedger::default()).unwrap();
    for field in ["replayed", "cached_at", "original_usage"] {
        assert!(plain.get(field).is_none(), "{field}");
    }
    assert!(
        !crate::ledger::GuaranteeLedger::default()
            .summary()
            .contains("replayed")
    );
}

#[tokio::test]
async fn an_entry_made_under_a_weaker_require_does_not_answer_a_stronger_one() {
    let dir = tempfile::tempdir().unwrap();
    let cache = cache(dir.path(), None);
    let adapter = adapter(&[GOOD, GOOD], StructuredOutputMode::Strict);
    let (r, calls) = run(&task(), &adapter, &cache).await;
    assert!(r.is_ok() && calls == 1);
    let enforced = Task {
        require: Require::Enforced,
        ..task()
    };
    let (r, calls) = run(&enforced, &adapter, &cache).await;
    assert!(!r.unwrap().ledger.replayed);
    assert_eq!(
        calls, 2,
        "the best-effort entry did not answer require=enforced"
    );
    // The enforced run replaced it: it answers both now.
    for t in [&enforced, &task()] {
        let (r, calls) = run(t, &adapter, &cache).await;
        assert!(r.unwrap().ledger.replayed);
        assert_eq!(calls, 2);
    }
}

#[tokio::test]
async fn invalid_failed_and_truncated_answers_are_never_kept() {
    let dir = tempfile::tempdir().unwrap();
    let cache = cache(dir.path(), None);
    let bad = r#"{"decision": "maybe", "reason": "?"}"#;
    let adapter = adapter(&[bad, bad], StructuredOutputMode::Strict);
    let (r, _) = run(&task(), &adapter, &cache).await;
    assert!(matches!(r, Err(RunError::Invalid { .. })));
    let truncated = AdapterResponse {
        stop_reason: StopReason::MaxTokens,
        ..answer(r#"{"decision": "accept", "reason": "cut"#)
    };
    let cut = Arc::new(ScriptedAdapter::new(vec![Ok(truncated)]));
    let (r, _) = run(&task(), &cut, &cache).await;
    assert!(r.is_err());
    let failing = Arc::new(ScriptedAdapter::new(vec![]));
    let (r, _) = run(&task(), &failing, &cache).await;
    assert!(r.is_err());
    assert_eq!(cache.counters().stores, 0);
    assert_eq!(cache.stats().await.unwrap().entries, 0);
    // Free text has no schema to validate: not kept either.
    let text = Arc::new(ScriptedAdapter::new(vec![
        Ok(answer("hello")),
        Ok(answer("hello")),
    ]));
    let free = Task::new("Say hello.");
    run(&free, &text, &cache).await.0.unwrap();
    assert_eq!(run(&free, &text, &cache).await.1, 2);
}

#[tokio::test]
async fn an_entry_older_than_the_ttl_is_a_miss_and_a_young_one_a_hit() {
    let dir = tempfile::tempdir().unwrap();
    let adapter = adapter(&[GOOD, GOOD], StructuredOutputMode::Strict);
    run(&task(), &adapter, &cache(dir.path(), None))
        .await
        .0
        .unwrap();
    let young = cache(dir.path(), Some(Duration::from_secs(3600)));
    assert!(
        run(&task(), &adapter, &young)
            .await
            .0
            .unwrap()
            .ledger
            .replayed
    );
    tokio::time::sleep(Duration::from_millis(30)).await;
    let short = cache(dir.path(), Some(Duration::from_millis(10)));
    let s = task();
    match short.lookup(&s, adapter.as_ref()).await {
        Lookup::Miss { why, .. } => assert_eq!(why, Miss::Expired),
        other => panic!("{other:?}"),
    }
    let (r, calls) = run(&task(), &adapter, &short).await;
    assert!(!r.unwrap().ledger.replayed);
    assert_eq!(calls, 2);
    let entry = CacheEntry {
        format: ENTRY_FORMAT,
        key: "k".into(),
        created_at_ms: 1_000,
        require: Require::Wired,
        text: String::new(),
        value: Value::Null,
        termination: Default::default(),
        usage: Usage::default(),
        ledger: Default::default(),
    };
    let at = |ms| SystemTime::UNIX_EPOCH + Duration::from_millis(ms);
    assert!(
        entry
            .serves(Require::Wired, Some(Duration::from_secs(1)), at(2_000))
            .is_ok()
    );
    assert!(
        entry
            .serves(Require::Wired, Some(Duration::from_secs(1)), at(2_001))
            .is_err()
    );
    assert!(entry.serves(Require::Enforced, None, at(1_000)).is_err());
    assert!(
        entry
            .serves(Require::BestEffort, None, at(9_999_999))
            .is_ok()
    );
    assert_eq!(entry.created_at(), "1970-01-01T00:00:01.000Z");
}

#[tokio::test]
async fn a_damaged_entry_is_a_miss_is_replaced_and_nothing_panics() {
    let dir = tempfile::tempdir().unwrap();
    let cache = cache(dir.path(), None);
    let adapter = adapter(&[GOOD, GOOD, GOOD], StructuredOutputMode::Strict);
    run(&task(), &adapter, &cache).await.0.unwrap();
    // Cut every content file in half: its hash no longer holds.
    let content = dir.path().join(STORE_DIR).join("content-v2");
    let mut files = vec![content];
    while let Some(p) = files.pop() {
        if p.is_dir() {
            files.extend(std::fs::read_dir(&p).unwrap().flatten().map(|e| e.path()));
        } else {
            let bytes = std::fs::read(&p).unwrap();
            std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
        }
    }
    assert_eq!(cache.stats().await.unwrap().unreadable, 1);
    let (r, calls) = run(&task(), &adapter, &cache).await;
    assert!(!r.unwrap().ledger.replayed);
    assert_eq!(calls, 2, "a damaged entry is a miss");
    assert_eq!(cache.counters().corrupt, 1);
    let (r, calls) = run(&task(), &adapter, &cache).await;
    assert!(r.unwrap().ledger.replayed, "the fresh answer replaced it");
    assert_eq!(calls, 2);
    // Bytes that are whole but not an entry (another shape, another key) are a miss too.
    let key = CacheKey::of(&task(), adapter.as_ref(), task().output.schema().unwrap());
    for garbage in [
        &b"not json"[..],
        br#"{"format": 1, "key": "another"}"#,
        br#"{"format": 99}"#,
    ] {
        cacache::write_sync(dir.path().join(STORE_DIR), &key.hex, garbage).unwrap();
        match cache.lookup(&task(), adapter.as_ref()).await {
            Lookup::Miss {
                why: Miss::Corrupt(_),
                ..
            } => {}
            other => panic!("{other:?}"),
        }
    }
    // Garbage in the index is skipped.
    let index = dir.path().join(STORE_DIR).join("index-v5");
    let mut buckets = vec![index];
    while let Some(p) = buckets.pop() {
        if p.is_dir() {
            buckets.extend(std::fs::read_dir(&p).unwrap().flatten().map(|e| e.path()));
        } else {
            std::fs::write(&p, "\ngarbage\tnot an index line\n{{{").unwrap();
        }
    }
    assert!(matches!(
        cache.lookup(&task(), adapter.as_ref()).await,
        Lookup::Miss {
            why: Miss::Absent,
            ..
        }
    ));
}

#[tokio::test]
async fn the_stored_entry_holds_no_secret_and_a_task_may_opt_out() {
    let secret = "sk-cache-test-5f2c9a7e1b3d4c6a8e0f";
    crate::secret::register(secret);
    let dir = tempfile::tempdir().unwrap();
    let cache = cache(dir.path(), None);
    let leaky = format!(r#"{{"decision": "accept", "reason": "the key is {secret}"}}"#);
    let adapter = adapter(&[&leaky], StructuredOutputMode::Strict);
    let (r, _) = run(&task(), &adapter, &cache).await;
    assert!(!r.unwrap().text.contains(secret));
    assert_eq!(cache.counters().stores, 1);
    let bytes = all_bytes(&dir.path().join(STORE_DIR));
    assert!(!bytes.is_empty());
    assert!(
        !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
        "the secret is in the cache directory"
    );
    assert!(!bytes.windows(12).any(|w| w == &secret.as_bytes()[..12]));
    let opted_out = Task {
        cache: false,
        ..task()
    };
    let more = adapter_with(&[GOOD]);
    let (r, calls) = run(&opted_out, &more, &cache).await;
    assert!(!r.unwrap().ledger.replayed);
    assert_eq!(calls, 1, "an opted-out task is not answered from the cache");
}

fn adapter_with(answers: &[&str]) -> Arc<ScriptedAdapter> {
    adapter(answers, StructuredOutputMode::Strict)
}

#[tokio::test]
async fn a_replayed_value_is_validated_again() {
    let dir = tempfile::tempdir().unwrap();
    let cache = cache(dir.path(), None);
    let adapter = adapter_with(&[GOOD, GOOD]);
    run(&task(), &adapter, &cache).await.0.unwrap();
    // Tamper with the stored value (whole bytes, so only validation can catch it).
    let key = CacheKey::of(&task(), adapter.as_ref(), task().output.schema().unwrap());
    let bytes = cacache::read_sync(dir.path().join(STORE_DIR), &key.hex).unwrap();
    let mut entry: CacheEntry = CacheEntry::decode(&bytes, &key.hex).unwrap();
    entry.value = json!({"decision": "perhaps", "reason": "x"});
    cacache::write_sync(
        dir.path().join(STORE_DIR),
        &key.hex,
        entry.encode(&seal()).unwrap(),
    )
    .unwrap();
    match cache.lookup(&task(), adapter.as_ref()).await {
        Lookup::Miss {
            why: Miss::NotReplayed(why),
            ..
        } => assert!(why.contains("not valid"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn clear_removes_entries_and_counters_and_only_what_the_cache_owns() {
    let dir = tempfile::tempdir().unwrap();
    // The user's own files, under the names cacache and geode once used at the top.
    std::fs::write(dir.path().join("keep-me.txt"), "mine").unwrap();
    for own in ["tmp", "geode", "index-v5", "content-v2"] {
        std::fs::create_dir(dir.path().join(own)).unwrap();
        std::fs::write(dir.path().join(own).join("mine.txt"), "mine").unwrap();
    }
    let cache = cache(dir.path(), None);
    run(&task(), &adapter_with(&[GOOD]), &cache)
        .await
        .0
        .unwrap();
    cache.flush_counters().await.unwrap();
    assert_eq!(cache.clear().await.unwrap(), 1);
    let stats = cache.stats().await.unwrap();
    assert_eq!((stats.entries, stats.counters.stores), (0, 0));
    assert!(dir.path().join("keep-me.txt").exists());
    for own in ["tmp", "geode", "index-v5", "content-v2"] {
        assert!(
            dir.path().join(own).join("mine.txt").exists(),
            "clear deleted the user's {own}/"
        );
    }
    // A store directory that geode did not make is not taken for one, nor cleared.
    let other = tempfile::tempdir().unwrap();
    std::fs::create_dir(other.path().join(STORE_DIR)).unwrap();
    let refused = Cache::open_sealed(
        &CacheLocation::Dir(other.path().to_path_buf()),
        None,
        seal(),
    );
    assert!(refused.is_err(), "an untagged store directory was opened");
    #[cfg(unix)]
    {
        let linked = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(dir.path().join(STORE_DIR), linked.path().join(STORE_DIR))
            .unwrap();
        assert!(
            Cache::open_sealed(
                &CacheLocation::Dir(linked.path().to_path_buf()),
                None,
                seal()
            )
            .is_err()
        );
    }
}

#[tokio::test]
async fn a_fifo_where_the_counters_go_hangs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cache = cache(dir.path(), None);
    let fifo = dir.path().join(STORE_DIR).join("counters.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let stats = tokio::time::timeout(Duration::from_secs(20), cache.stats()).await;
    let stats = stats.expect("stats hung on a FIFO").unwrap();
    assert_eq!((stats.entries, stats.unreadable), (0, 0), "an empty cache");
    let flushed = tokio::time::timeout(Duration::from_secs(20), cache.flush_counters()).await;
    assert!(flushed.is_ok(), "flushing the counters hung on a FIFO");
}

#[test]
fn ttls_are_seconds_or_durations_and_locations_dirs_or_redis() {
    assert_eq!(parse_ttl("90").unwrap(), Duration::from_secs(90));
    assert_eq!(parse_ttl("1.5").unwrap(), Duration::from_millis(1500));
    assert_eq!(parse_ttl("2d").unwrap(), Duration::from_secs(172_800));
    for bad in ["0", "-3", "", "NaN", "tomorrow", "0s"] {
        assert!(parse_ttl(bad).is_err(), "{bad}");
    }
    assert_eq!(
        CacheLocation::parse("redis://h:1/x").unwrap(),
        CacheLocation::Redis("redis://h:1/x".into())
    );
    assert_eq!(
        CacheLocation::parse("REDIS://h:1/x").unwrap(),
        CacheLocation::Redis("redis://h:1/x".into()),
        "the scheme in any case"
    );
    for dir in ["./c", "c", "a:b", "/var/cache/geode"] {
        assert_eq!(
            CacheLocation::parse(dir).unwrap(),
            CacheLocation::Dir(dir.into())
        );
    }
    // Never a local folder named after a URL.
    for url in [
        "rediss://h:1/x",
        "unix:///tmp/redis.sock",
        "redis:/h:1",
        "http://h/x",
    ] {
        assert!(CacheLocation::parse(url).is_err(), "{url}");
    }
    assert_eq!(
        super::redis_url_with_name("redis://h:1"),
        "redis://h:1/default"
    );
    assert_eq!(
        super::redis_url_with_name("redis://:p/w@h:1"),
        "redis://:p/w@h:1/default"
    );
    assert_eq!(
        super::redis_url_with_name("redis://h:1/team"),
        "redis://h:1/team"
    );
}

#[test]
fn images_and_documents_key_by_their_hash_wherever_they_are() {
    use crate::media::Media;
    let adapter = ScriptedAdapter::new(vec![]);
    let key = |t: &Task| CacheKey::of(t, &adapter, t.output.schema().unwrap()).hex;
    let png = |tail: &[u8]| {
        let bytes = [b"\x89PNG\r\n\x1a\n".as_slice(), tail].concat();
        Media::from_bytes(&bytes, None).unwrap()
    };
    let with = |parts: Vec<Media>| Task { parts, ..task() };
    let base = key(&task());
    let a = key(&with(vec![png(b"a")]));
    assert_ne!(a, base, "a part is part of the question");
    assert_eq!(
        a,
        key(&with(vec![png(b"a")])),
        "the same bytes, the same key"
    );
    assert_ne!(a, key(&with(vec![png(b"b")])), "other bytes, another key");
    // A part in an earlier turn counts too, by its hash.
    let earlier = |m: Media| {
        let mut turn = crate::llm::request::Message::user("look");
        turn.content.insert(0, m.into());
        Task {
            history: vec![turn],
            ..task()
        }
    };
    assert_ne!(key(&earlier(png(b"a"))), key(&earlier(png(b"b"))));
    assert_eq!(key(&earlier(png(b"a"))), key(&earlier(png(b"a"))));
}
