//! The response store on a real Redis (`redis-server`, installed by `scripts/setup.sh`) on a
//! free loopback port: two gateways share it, scopes stay apart, Redis expires entries, and no
//! error shows the password.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

use geode_gateway::store::{ResponseStore, StoreError, StoreLocation, StoreSettings, Stored};
use serde_json::json;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One redis-server without persistence, stopped on drop.
struct Redis {
    port: u16,
    child: Child,
}

impl Redis {
    fn start(extra: &[&str]) -> Redis {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server is installed by scripts/setup.sh (make test)");
        let r = Redis { port, child };
        let deadline = Instant::now() + Duration::from_secs(20);
        // Up once it answers at all (PONG, or NOAUTH with a password).
        while r.cli(&["PING"]).trim().is_empty() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        r
    }

    fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli is installed by scripts/setup.sh (make test)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn settings(url: String) -> StoreSettings {
    StoreSettings {
        location: StoreLocation::Redis(url),
        max_age: Duration::from_secs(600),
        ..StoreSettings::embedded(std::path::PathBuf::new())
    }
}

fn entry(n: u64) -> Stored {
    Stored {
        response: json!({"id": format!("resp_{n}"), "object": "response"}),
        input_items: vec![json!({"id": format!("msg_{n}"), "type": "message"})],
        context: vec![json!({"type": "message", "role": "user", "content": "hi"})],
    }
}

/// Every text an error can be shown as: Display, Debug, and each source's.
fn texts(e: &StoreError) -> String {
    let mut all = format!("{e} | {e:?}");
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        all.push_str(&format!(" | {s} | {s:?}"));
        source = s.source();
    }
    all
}

const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

#[tokio::test]
async fn store_in_redis_is_shared_by_two_gateways_with_scopes_apart() {
    let redis = Redis::start(&[]);
    let url = format!("redis://127.0.0.1:{}/gw", redis.port);
    let one = ResponseStore::open(&settings(url.clone())).unwrap();
    let two = ResponseStore::open(&settings(url)).unwrap();
    assert!(one.enabled() && two.enabled());
    one.put(Some(A), "resp_1", &entry(1)).await.unwrap();
    assert_eq!(
        two.get(Some(A), "resp_1").await.unwrap(),
        Some(entry(1)),
        "the other gateway reads it"
    );
    assert_eq!(two.get(Some(B), "resp_1").await.unwrap(), None);
    assert_eq!(two.get(None, "resp_1").await.unwrap(), None);
    assert!(!two.delete(Some(B), "resp_1").await.unwrap());
    assert!(!two.delete(None, "resp_1").await.unwrap());
    assert_eq!(
        one.get(Some(A), "resp_1").await.unwrap(),
        Some(entry(1)),
        "left alone"
    );
    // Redis keeps it for max_age, and forgets it after.
    let ttl: u64 = redis
        .cli(&["TTL", &format!("geode:gw:response:{A}/resp_1")])
        .trim()
        .parse()
        .unwrap();
    assert!((1..=600).contains(&ttl), "TTL {ttl}");
    assert!(two.delete(Some(A), "resp_1").await.unwrap());
    assert_eq!(one.get(Some(A), "resp_1").await.unwrap(), None);
    assert!(!one.delete(Some(A), "resp_1").await.unwrap());
    // A bad id is not found, and never reaches Redis as a key.
    assert_eq!(one.get(None, "*").await.unwrap(), None);
    assert_eq!(redis.cli(&["DBSIZE"]).trim(), "0");
    // One entry may take a sixteenth of max_bytes.
    let small = ResponseStore::open(&StoreSettings {
        max_bytes: 16 * 64,
        ..settings(format!("redis://127.0.0.1:{}/gw", redis.port))
    })
    .unwrap();
    let e = small.put(None, "big", &entry(1)).await.unwrap_err();
    assert!(matches!(e, StoreError::TooLarge { max: 64, .. }), "{e}");
    assert_eq!(small.get(None, "big").await.unwrap(), None);
}

#[tokio::test]
async fn store_in_redis_never_shows_its_password() {
    let redis = Redis::start(&["--requirepass", "right-pass-7391"]);
    let good = ResponseStore::open(&settings(format!(
        "redis://:right-pass-7391@127.0.0.1:{}/gw",
        redis.port
    )))
    .unwrap();
    good.put(None, "resp_1", &entry(1)).await.unwrap();
    assert_eq!(good.get(None, "resp_1").await.unwrap(), Some(entry(1)));
    assert!(!format!("{good:?}").contains("right-pass"), "{good:?}");
    let wrong = ResponseStore::open(&settings(format!(
        "redis://:wrong-pass-5512@127.0.0.1:{}/gw",
        redis.port
    )))
    .unwrap();
    let e = wrong.get(None, "resp_1").await.unwrap_err();
    assert!(!texts(&e).contains("wrong-pass"), "{}", texts(&e));
    assert!(texts(&e).contains("***@127.0.0.1"), "{}", texts(&e));
    assert!(
        matches!(&e, StoreError::Redis { message, .. } if message.contains("authentication")),
        "a refused password is said, not timed out: {e}"
    );
    // Nobody listening, and a URL that does not parse.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let down = ResponseStore::open(&settings(format!(
        "redis://user:down-pass-2208@127.0.0.1:{port}/gw"
    )))
    .unwrap();
    let e = down.put(None, "resp_1", &entry(1)).await.unwrap_err();
    assert!(matches!(e, StoreError::Redis { .. }), "{e}");
    assert!(!texts(&e).contains("down-pass"), "{}", texts(&e));
    let e = ResponseStore::open(&settings(
        "redis://:bad-pass-0017@127.0.0.1:1/a b".to_owned(),
    ))
    .unwrap_err();
    assert!(matches!(e, StoreError::Url(_)), "{e}");
    assert!(!texts(&e).contains("bad-pass"), "{}", texts(&e));
}
