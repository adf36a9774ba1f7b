//! The embedded store, its keys and its settings. The shared store is tested against a real
//! Redis in `tests/store_redis.rs`.

use super::*;
use geode::Environment;
use geode::config::GatewayStoreConfig;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

fn entry(n: u64) -> Stored {
    Stored {
        response: json!({"id": format!("resp_{n}"), "object": "response", "output": []}),
        input_items: vec![json!({"id": format!("msg_{n}"), "type": "message", "role": "user"})],
        context: vec![json!({"type": "message", "role": "user", "content": "hi"})],
    }
}

/// A clock the test moves by hand, in milliseconds.
fn clock(start: u64) -> (Arc<AtomicU64>, embedded::Clock) {
    let now = Arc::new(AtomicU64::new(start));
    let read = now.clone();
    (now, Arc::new(move || read.load(Ordering::SeqCst)))
}

fn settings(dir: &std::path::Path) -> StoreSettings {
    StoreSettings::embedded(dir.to_path_buf())
}

fn open(s: &StoreSettings) -> (Arc<AtomicU64>, ResponseStore) {
    let (now, c) = clock(1_000_000);
    (now, ResponseStore::open_with_clock(s, c).unwrap())
}

#[tokio::test]
async fn store_put_get_delete_round_trip_and_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(&dir.path().join("nested").join("store"));
    let (_, store) = open(&s);
    assert!(store.enabled());
    store.put(Some(A), "resp_1", &entry(1)).await.unwrap();
    assert_eq!(store.get(Some(A), "resp_1").await.unwrap(), Some(entry(1)));
    store.put(Some(A), "resp_1", &entry(2)).await.unwrap();
    assert_eq!(
        store.get(Some(A), "resp_1").await.unwrap(),
        Some(entry(2)),
        "a put replaces"
    );
    store.put(None, "resp_2", &entry(3)).await.unwrap();
    drop(store);
    let (_, store) = open(&s);
    assert_eq!(store.get(None, "resp_2").await.unwrap(), Some(entry(3)));
    assert!(store.delete(None, "resp_2").await.unwrap());
    assert!(!store.delete(None, "resp_2").await.unwrap(), "gone once");
    assert_eq!(store.get(None, "resp_2").await.unwrap(), None);
    assert_eq!(store.get(Some(A), "resp_1").await.unwrap(), Some(entry(2)));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let Some(StoreLocation::Dir(d)) = Some(&s.location) else {
            unreachable!()
        };
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(d), 0o700);
        assert_eq!(mode(&d.join(FILE_NAME)), 0o600);
    }
}

#[tokio::test]
async fn store_scopes_never_see_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let (_, store) = open(&settings(dir.path()));
    store.put(Some(A), "resp_x", &entry(1)).await.unwrap();
    assert_eq!(store.get(Some(B), "resp_x").await.unwrap(), None);
    assert_eq!(store.get(None, "resp_x").await.unwrap(), None);
    assert!(!store.delete(Some(B), "resp_x").await.unwrap());
    assert!(!store.delete(None, "resp_x").await.unwrap());
    assert_eq!(store.get(Some(A), "resp_x").await.unwrap(), Some(entry(1)));
    // The same id under every scope: three entries, each its own.
    store.put(Some(B), "resp_x", &entry(2)).await.unwrap();
    store.put(None, "resp_x", &entry(3)).await.unwrap();
    assert_eq!(store.get(Some(A), "resp_x").await.unwrap(), Some(entry(1)));
    assert_eq!(store.get(Some(B), "resp_x").await.unwrap(), Some(entry(2)));
    assert_eq!(store.get(None, "resp_x").await.unwrap(), Some(entry(3)));
    // A scope that looks like the open gateway's, or that would split differently, is refused.
    for odd in ["-", "a/b", "a-b", ""] {
        assert_eq!(store.get(Some(odd), "resp_x").await.unwrap(), None, "{odd}");
    }
}

#[tokio::test]
async fn store_bad_ids_are_simply_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let (_, store) = open(&settings(dir.path()));
    store.put(None, "ok", &entry(1)).await.unwrap();
    let long = "a".repeat(129);
    for bad in [
        "",
        "../ok",
        "-/ok",
        "ok/..",
        "o k",
        "ok\n",
        "<script>",
        "é",
        long.as_str(),
    ] {
        assert_eq!(store.get(None, bad).await.unwrap(), None, "{bad:?}");
        assert!(!store.delete(None, bad).await.unwrap(), "{bad:?}");
        let e = store.put(None, bad, &entry(2)).await.unwrap_err();
        assert!(matches!(e, StoreError::BadId), "{e}");
        if !bad.is_empty() {
            assert!(!e.to_string().contains(bad), "the id is not echoed: {e}");
        }
    }
    assert!(entry_key(None, &"a".repeat(128)).is_some());
    assert_eq!(store.get(None, "ok").await.unwrap(), Some(entry(1)));
}

#[tokio::test]
async fn store_entries_past_max_age_are_not_returned_and_are_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let s = StoreSettings {
        max_age: Duration::from_secs(60),
        ..settings(dir.path())
    };
    let (now, store) = open(&s);
    store.put(None, "old", &entry(1)).await.unwrap();
    now.fetch_add(30_000, Ordering::SeqCst);
    store.put(None, "young", &entry(2)).await.unwrap();
    now.fetch_add(29_999, Ordering::SeqCst);
    assert!(
        store.get(None, "old").await.unwrap().is_some(),
        "59.999 s old"
    );
    now.fetch_add(1, Ordering::SeqCst);
    assert_eq!(store.get(None, "old").await.unwrap(), None, "60 s old");
    assert!(
        !store.delete(None, "old").await.unwrap(),
        "removed when found"
    );
    assert!(store.get(None, "young").await.unwrap().is_some());
    // Pruning on a put removes what is too old without anyone reading it.
    now.fetch_add(30_000, Ordering::SeqCst);
    store.put(None, "new", &entry(3)).await.unwrap();
    let Inner::Embedded(e) = store.inner.as_ref() else {
        unreachable!()
    };
    assert_eq!(e.usage().await.unwrap().0, 1, "only the new one is left");
    assert!(store.get(None, "new").await.unwrap().is_some());
}

#[tokio::test]
async fn store_count_bound_drops_the_oldest_first() {
    let dir = tempfile::tempdir().unwrap();
    let s = StoreSettings {
        max_entries: 3,
        ..settings(dir.path())
    };
    let (now, store) = open(&s);
    for n in 0..5 {
        store.put(None, &format!("r{n}"), &entry(n)).await.unwrap();
        now.fetch_add(1, Ordering::SeqCst);
    }
    for n in 0..2 {
        assert_eq!(
            store.get(None, &format!("r{n}")).await.unwrap(),
            None,
            "r{n}"
        );
    }
    for n in 2..5 {
        assert_eq!(
            store.get(None, &format!("r{n}")).await.unwrap(),
            Some(entry(n))
        );
    }
    // Puts in the same millisecond keep their order too.
    store.put(None, "s1", &entry(7)).await.unwrap();
    store.put(None, "s2", &entry(8)).await.unwrap();
    assert_eq!(store.get(None, "r2").await.unwrap(), None);
    assert_eq!(store.get(None, "r3").await.unwrap(), None);
    assert!(store.get(None, "r4").await.unwrap().is_some());
}

#[tokio::test]
async fn store_byte_bound_drops_the_oldest_first_and_refuses_a_huge_entry() {
    let dir = tempfile::tempdir().unwrap();
    let big = |n: u64| Stored {
        context: vec![json!("x".repeat(1000))],
        ..entry(n)
    };
    let size = serde_json::to_vec(&big(10)).unwrap().len() as u64 + 16;
    let s = StoreSettings {
        max_bytes: size * 20,
        ..settings(dir.path())
    };
    let (now, store) = open(&s);
    for n in 10..40 {
        store.put(None, &format!("r{n}"), &big(n)).await.unwrap();
        now.fetch_add(1, Ordering::SeqCst);
    }
    let kept: Vec<u64> = {
        let mut kept = Vec::new();
        for n in 10..40 {
            if store.get(None, &format!("r{n}")).await.unwrap().is_some() {
                kept.push(n);
            }
        }
        kept
    };
    assert_eq!(kept, (20..40).collect::<Vec<_>>(), "the newest 20 fit");
    let Inner::Embedded(e) = store.inner.as_ref() else {
        unreachable!()
    };
    assert_eq!(e.usage().await.unwrap(), (20, size * 20));
    let huge = Stored {
        context: vec![json!("x".repeat(usize::try_from(size * 2).unwrap()))],
        ..entry(1)
    };
    let err = store.put(None, "huge", &huge).await.unwrap_err();
    assert!(
        matches!(err, StoreError::TooLarge { max, .. } if max == s.max_entry_bytes()),
        "{err}"
    );
    assert_eq!(store.get(None, "r39").await.unwrap(), Some(big(39)));
}

#[tokio::test]
async fn store_a_second_open_of_the_same_dir_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let s = settings(dir.path());
    let (_, first) = open(&s);
    let err = ResponseStore::open(&s).unwrap_err();
    assert!(
        matches!(&err, StoreError::Locked { dir: d } if d == dir.path()),
        "{err}"
    );
    let text = err.to_string();
    assert!(text.contains("[gateway.store] url = \"redis://"), "{text}");
    first.put(None, "r", &entry(1)).await.unwrap();
    drop(first);
    let (_, again) = open(&s);
    assert!(
        again.get(None, "r").await.unwrap().is_some(),
        "free once closed"
    );
}

#[tokio::test]
async fn store_off_keeps_nothing() {
    let store = ResponseStore::off();
    assert!(!store.enabled());
    store.put(None, "r", &entry(1)).await.unwrap();
    assert_eq!(store.get(None, "r").await.unwrap(), None);
    assert!(!store.delete(None, "r").await.unwrap());
    let s = StoreSettings {
        location: StoreLocation::Off,
        ..settings(std::path::Path::new("/nonexistent"))
    };
    assert!(!ResponseStore::open(&s).unwrap().enabled());
}

#[tokio::test]
async fn store_a_damaged_entry_is_corrupt_without_its_text() {
    let dir = tempfile::tempdir().unwrap();
    let (_, store) = open(&settings(dir.path()));
    let Inner::Embedded(e) = store.inner.as_ref() else {
        unreachable!()
    };
    e.plant("-/bad", b"0123456789abcdef{\"secret-ish text\"")
        .await;
    let err = store.get(None, "bad").await.unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(!format!("{err} {err:?}").contains("secret-ish"), "{err:?}");
}

#[tokio::test]
async fn store_keeps_no_known_secret_and_no_inbound_key() {
    let dir = tempfile::tempdir().unwrap();
    let (_, store) = open(&settings(dir.path()));
    geode::secret::register("sk-upstream-key-4417-abcdef");
    let inbound = "gw-inbound-key-8821-zyxwvu";
    let tenant = geode::digest::sha256_hex(inbound.as_bytes());
    let leaky = Stored {
        response: json!({"id": "resp_s", "output_text": "the key is sk-upstream-key-4417-abcdef"}),
        ..entry(1)
    };
    store.put(Some(&tenant), "resp_s", &leaky).await.unwrap();
    let back = store.get(Some(&tenant), "resp_s").await.unwrap().unwrap();
    assert_eq!(back.response["output_text"], "the key is ***");
    assert_eq!(
        back.input_items, leaky.input_items,
        "the rest is kept as it was"
    );
    drop(store);
    let file = std::fs::read(dir.path().join(FILE_NAME)).unwrap();
    let has = |needle: &str| file.windows(needle.len()).any(|w| w == needle.as_bytes());
    assert!(has(&tenant), "the tenant is the key's hash");
    assert!(
        !has("sk-upstream-key-4417") && !has(inbound),
        "a secret reached the file"
    );
}

struct Vars(Vec<(&'static str, &'static str)>);

impl Environment for Vars {
    fn var(&self, name: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| (*v).to_owned())
    }
    fn file_exists(&self, _: &std::path::Path) -> bool {
        false
    }
    fn on_path(&self, _: &str) -> bool {
        false
    }
}

#[test]
fn store_settings_come_from_the_config_and_the_cache_dir() {
    let home = Vars(vec![("HOME", "/home/u")]);
    let xdg = Vars(vec![("HOME", "/home/u"), ("XDG_CACHE_HOME", "/xdg")]);
    let relative = Vars(vec![("HOME", "/home/u"), ("XDG_CACHE_HOME", "rel")]);
    let cfg = GatewayStoreConfig::default();
    let dir = |env: &Vars| StoreSettings::from_config(&cfg, env).unwrap().location;
    assert_eq!(
        dir(&home),
        StoreLocation::Dir("/home/u/.cache/geode/gateway".into())
    );
    assert_eq!(dir(&xdg), StoreLocation::Dir("/xdg/geode/gateway".into()));
    assert_eq!(
        dir(&relative),
        StoreLocation::Dir("/home/u/.cache/geode/gateway".into()),
        "a relative XDG_CACHE_HOME is ignored"
    );
    assert!(matches!(
        StoreSettings::from_config(&cfg, &Vars(vec![])),
        Err(StoreError::NoDir)
    ));
    let s = StoreSettings::from_config(&cfg, &home).unwrap();
    assert_eq!(
        (s.max_age, s.max_entries, s.max_bytes),
        (DEFAULT_MAX_AGE, 10_000, 256 << 20)
    );
    let file = geode::Config::parse(
        "[gateway.store]\nurl = \"redis://:pw-hidden-1@127.0.0.1:1/r\"\nmax_age = \"1h\"\nmax_entries = 5\n",
        "geode.toml",
    )
    .unwrap();
    let s = StoreSettings::from_config(&file.gateway.store, &Vars(vec![])).unwrap();
    assert_eq!(
        s.location,
        StoreLocation::Redis("redis://:pw-hidden-1@127.0.0.1:1/r".into())
    );
    assert_eq!((s.max_age, s.max_entries), (Duration::from_secs(3600), 5));
    assert!(!format!("{s:?}").contains("pw-hidden-1"), "{s:?}");
    let off = GatewayStoreConfig {
        enabled: false,
        ..GatewayStoreConfig::default()
    };
    assert_eq!(
        StoreSettings::from_config(&off, &Vars(vec![]))
            .unwrap()
            .location,
        StoreLocation::Off
    );
}
