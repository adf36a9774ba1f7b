//! `geode gateway` under load beside the LiteLLM proxy, both in front of the same fast loopback
//! upstream (an in-process Chat Completions server answering at once), with the same requests
//! (a Decision schema as `response_format`). For 1, 64 and 512 concurrent clients it prints the
//! latency each adds over calling the upstream directly (p50, p99), requests per second, and each
//! process's peak RSS; then the RSS of the gateway holding 1,000 open streams. Beside them, the
//! floor any proxy pays on this machine: a bare relay (axum in, reqwest out, bytes passed through)
//! asked for the plain reply (`relay`) and for the streamed one (`relay-sse`, the exchange geode's
//! Chat adapter makes). Run with
//! `make bench-gateway` (release build; LiteLLM from scripts/install-venv.sh litellm ...).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::header;
use axum::response::Response;
use axum::serve::ListenerExt;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SECONDS_PER_POINT: u64 = 6;
const LOADS: [usize; 3] = [1, 64, 512];
/// The loads of the second table, where the upstream takes [`SLOW_MS`] to answer: the gateway's
/// overhead when it is not the bottleneck, as with any real model.
const SLOW_LOADS: [usize; 2] = [64, 512];
/// How long the `/slow` upstream takes to answer (a fast hosted model takes longer).
const SLOW_MS: u64 = 20;
const OPEN_STREAMS: usize = 1000;
/// The inbound key both gateways require (LiteLLM refuses to start without one).
const KEY: &str = "sk-bench0123456789abcdef0123456789abcdef";

fn decision() -> Value {
    serde_json::from_str(include_str!("../../../examples/decision.schema.json")).unwrap()
}

/// The upstream's answer: a Chat completion holding a valid Decision.
fn completion() -> Value {
    json!({
        "id": "chatcmpl-up", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "{\"decision\":\"accept\",\"reason\":\"the tests pass\"}"}}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29}
    })
}

/// The fast upstream: every call answered at once, as JSON or, when `stream` is asked for (the
/// Chat adapter streams its calls), as SSE; a call whose prompt says `Hold.` gets one delta and
/// is then held open until the client leaves (for the open-streams figure).
async fn upstream(State(answer): State<Arc<String>>, body: axum::body::Bytes) -> Response {
    let request = serde_json::from_slice::<Value>(&body).unwrap_or_default();
    if request["stream"] != true {
        return Response::builder()
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(answer.as_str().to_owned()))
            .unwrap();
    }
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let first = chunk(
        json!({"role": "assistant", "content": "{\"decision\":\"accept\","}),
        Value::Null,
    );
    let hold = body.windows(5).any(|w| w == b"Hold.");
    let rest = if hold {
        Vec::new()
    } else {
        vec![
            chunk(
                json!({"content": "\"reason\":\"the tests pass\"}"}),
                Value::Null,
            ),
            chunk(json!({}), json!("stop")),
            format!(
                "data: {}\n\n",
                json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [],
                "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29}})
            ),
            "data: [DONE]\n\n".to_owned(),
        ]
    };
    let head = futures::stream::iter(
        std::iter::once(first)
            .chain(rest)
            .map(Ok::<_, std::io::Error>),
    );
    let body = if hold {
        Body::from_stream(head.chain(futures::stream::pending()))
    } else {
        Body::from_stream(head)
    };
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(body)
        .unwrap()
}

use futures::StreamExt;

/// The upstream behind `/slow`: the same answer after [`SLOW_MS`].
async fn slow_upstream(state: State<Arc<String>>, body: axum::body::Bytes) -> Response {
    tokio::time::sleep(Duration::from_millis(SLOW_MS)).await;
    upstream(state, body).await
}

async fn start_upstream() -> String {
    let app = Router::new()
        .route("/v1/chat/completions", axum::routing::post(upstream))
        .route(
            "/slow/v1/chat/completions",
            axum::routing::post(slow_upstream),
        )
        .with_state(Arc::new(completion().to_string()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // As providers' servers do: a streamed reply's chunks are not held back by Nagle.
    let listener = listener.tap_io(|tcp| tcp.set_nodelay(true).unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// The floor any proxy pays here: a process that forwards each request's bytes to the upstream
/// and the answer's bytes back (axum in, reqwest out, the parts geode's gateway is made of),
/// with no parsing, validation or logging. Run as `gateway --relay UPSTREAM PORT` by [`start_relay`].
fn relay(upstream: String, port: u16) {
    async fn forward(
        State((client, upstream)): State<(reqwest::Client, Arc<String>)>,
        uri: axum::http::Uri,
        body: axum::body::Bytes,
    ) -> Response {
        let reply = async {
            let r = client
                .post(format!("{upstream}{}", uri.path()))
                .header(header::CONTENT_TYPE, "application/json")
                .body(body)
                .send()
                .await?;
            Ok::<_, reqwest::Error>((r.status(), r.bytes().await?))
        };
        let (status, body) = match reply.await {
            Ok((status, bytes)) => (status, Body::from(bytes)),
            Err(e) => (
                axum::http::StatusCode::BAD_GATEWAY,
                Body::from(e.to_string()),
            ),
        };
        Response::builder()
            .status(status)
            .header(header::CONTENT_TYPE, "application/json")
            .body(body)
            .unwrap()
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let app = Router::new()
            .route("/health", axum::routing::get(|| async { "ok" }))
            .route("/v1/chat/completions", axum::routing::post(forward))
            .route("/slow/v1/chat/completions", axum::routing::post(forward))
            .with_state((reqwest::Client::new(), Arc::new(upstream)));
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        axum::serve(listener, app).await.unwrap();
    });
}

/// This bench binary run again as a [`relay`] in front of `upstream`, in a process of its own.
async fn start_relay(upstream: &str) -> (Proc, String) {
    let port = free_port();
    let child = Proc::spawn(
        Command::new(std::env::current_exe().unwrap())
            .args(["--relay", upstream, &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let base = format!("http://127.0.0.1:{port}");
    wait_ready(&format!("{base}/health"), "relay").await;
    (child, base)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The process groups of the children still running, killed on the way out, by a signal too.
static GROUPS: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

fn kill_group(pgid: i32) {
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pgid),
        nix::sys::signal::Signal::SIGKILL,
    );
}

/// A child in a process group of its own (LiteLLM starts workers), the whole group killed when
/// dropped or when the bench is interrupted.
struct Proc(Child);
impl Proc {
    fn spawn(cmd: &mut Command) -> Proc {
        use std::os::unix::process::CommandExt;
        let child = cmd.process_group(0).spawn().unwrap();
        GROUPS.lock().unwrap().push(child.id() as i32);
        Proc(child)
    }
}
impl Drop for Proc {
    fn drop(&mut self) {
        let pgid = self.0.id() as i32;
        kill_group(pgid);
        let _ = self.0.wait();
        GROUPS.lock().unwrap().retain(|g| *g != pgid);
    }
}

/// On SIGINT, SIGTERM or SIGHUP: every child group killed, then exit 130.
fn kill_children_on_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    tokio::spawn(async {
        let mut int = signal(SignalKind::interrupt()).unwrap();
        let mut term = signal(SignalKind::terminate()).unwrap();
        let mut hup = signal(SignalKind::hangup()).unwrap();
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
            _ = hup.recv() => {}
        }
        for g in GROUPS.lock().unwrap().iter() {
            kill_group(*g);
        }
        std::process::exit(130);
    });
}

/// A status line of /proc/PID/status, in MiB (`VmHWM`: peak RSS; `VmRSS`: now).
fn rss_mib(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// The RSS of a process and all its descendants (LiteLLM runs workers), in MiB.
fn tree_rss_mib(pid: u32, field: &str) -> f64 {
    let mut total = rss_mib(pid, field);
    if let Ok(children) = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")) {
        for c in children
            .split_whitespace()
            .filter_map(|c| c.parse::<u32>().ok())
        {
            total += tree_rss_mib(c, field);
        }
    }
    total
}

async fn wait_ready(url: &str, what: &str) {
    let client = reqwest::Client::new();
    for _ in 0..600 {
        if client
            .get(url)
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} did not come up at {url}");
}

async fn start_geode(upstream: &str, dir: &Path) -> (Proc, String) {
    let provider = |name: &str, base: &str| {
        format!(
            "[providers.{name}]\nwire = \"chat\"\nbase_url = \"{base}/v1\"\nkey_env = \"FAST_KEY\"\nmodel = \"m\"\nschema = \"json_schema\"\n"
        )
    };
    std::fs::write(
        dir.join("geode.toml"),
        provider("fast", upstream) + &provider("slow", &format!("{upstream}/slow")),
    )
    .unwrap();
    let port = free_port();
    let child = Proc::spawn(
        Command::new(env!("CARGO_BIN_EXE_geode"))
            .args([
                "gateway",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--max-in-flight",
                "4096",
            ])
            .current_dir(dir)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", dir)
            .env("FAST_KEY", "bench-upstream-key-0000")
            .env("GEODE_GATEWAY_KEYS", KEY)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let base = format!("http://127.0.0.1:{port}");
    wait_ready(&format!("{base}/health"), "geode gateway").await;
    (child, base)
}

fn litellm_bin() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"));
    let bin = cache.join("geode/venv/litellm/bin/litellm");
    assert!(
        bin.is_file(),
        "{} is missing: run `make bench-gateway` (scripts/install-venv.sh)",
        bin.display()
    );
    bin
}

async fn start_litellm(upstream: &str, dir: &Path) -> (Proc, String) {
    let config = dir.join("litellm.yaml");
    std::fs::write(
        &config,
        format!("model_list:\n  - model_name: fast\n    litellm_params:\n      model: openai/m\n      api_base: {upstream}/v1\n      api_key: bench-upstream-key-0000\n  - model_name: slow\n    litellm_params:\n      model: openai/m\n      api_base: {upstream}/slow/v1\n      api_key: bench-upstream-key-0000\nlitellm_settings:\n  telemetry: false\n"),
    )
    .unwrap();
    let port = free_port();
    let child = Proc::spawn(
        Command::new(litellm_bin())
            .args([
                "--config",
                config.to_str().unwrap(),
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
            ])
            .current_dir(dir)
            .env("LITELLM_LOG", "ERROR")
            .env("LITELLM_MASTER_KEY", KEY)
            .env("LITELLM_TELEMETRY", "False")
            .env("NO_PROXY", "127.0.0.1")
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let base = format!("http://127.0.0.1:{port}");
    wait_ready(&format!("{base}/health/liveliness"), "litellm").await;
    (child, base)
}

/// One measured point: latencies in microseconds, sorted, and the rate.
struct Point {
    sorted_us: Vec<u64>,
    rps: f64,
    errors: usize,
}

impl Point {
    fn pct(&self, p: f64) -> f64 {
        if self.sorted_us.is_empty() {
            return f64::NAN;
        }
        let i = ((self.sorted_us.len() as f64 - 1.0) * p).round() as usize;
        self.sorted_us[i] as f64 / 1000.0
    }
}

/// Under `cargo test`: 4 clients through the gateway for a second, every request answered.
async fn smoke() {
    let upstream = start_upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let (_geode, base) = start_geode(&upstream, dir.path()).await;
    let request = json!({
        "model": "fast/m",
        "messages": [{"role": "user", "content": "Decide."}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "decision", "strict": true, "schema": decision()}}
    });
    let p = load_for(
        &format!("{base}/v1/chat/completions"),
        &request,
        4,
        Duration::from_secs(1),
    )
    .await;
    assert_eq!(p.errors, 0, "every request through the gateway is answered");
    assert!(!p.sorted_us.is_empty());
    println!(
        "gateway bench smoke: {} requests, p50 {:.3} ms",
        p.sorted_us.len(),
        p.pct(0.5)
    );
}

/// `clients` loops posting `body` to `url` for the point's duration.
async fn load(url: &str, body: &Value, clients: usize) -> Point {
    load_for(url, body, clients, Duration::from_secs(SECONDS_PER_POINT)).await
}

/// `clients` loops posting `body` to `url` for `duration`.
async fn load_for(url: &str, body: &Value, clients: usize, duration: Duration) -> Point {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(clients)
        .build()
        .unwrap();
    let body = Arc::new(body.to_string());
    let deadline = Instant::now() + duration;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (client, url, body) = (client.clone(), url.to_owned(), body.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut errors = 0;
            while Instant::now() < deadline {
                let t = Instant::now();
                let ok = match client
                    .post(&url)
                    .header("content-type", "application/json")
                    .header("authorization", format!("Bearer {KEY}"))
                    .body(body.as_str().to_owned())
                    .send()
                    .await
                {
                    Ok(r) => r.status().is_success() && r.bytes().await.is_ok(),
                    Err(_) => false,
                };
                if ok {
                    lat.push(t.elapsed().as_micros() as u64);
                } else {
                    errors += 1;
                }
            }
            (lat, errors)
        }));
    }
    let mut all = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (l, e) = t.await.unwrap();
        all.extend(l);
        errors += e;
    }
    let elapsed = started.elapsed().as_secs_f64();
    all.sort_unstable();
    Point {
        rps: all.len() as f64 / elapsed,
        sorted_us: all,
        errors,
    }
}

/// Opens `n` streams through `base`, waits (at most a minute) until each has its first bytes,
/// and returns the process tree's RSS then (MiB), with how many opened.
async fn open_streams(base: &str, body: &Value, pid: u32, n: usize) -> (f64, usize) {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let mut held = Vec::new();
    let mut opened = 0;
    let mut pending = Vec::new();
    for _ in 0..n {
        let (client, url, body) = (
            client.clone(),
            format!("{base}/v1/chat/completions"),
            body.clone(),
        );
        pending.push(tokio::spawn(async move {
            let mut resp = client
                .post(url)
                .header("authorization", format!("Bearer {KEY}"))
                .json(&body)
                .send()
                .await
                .ok()?;
            resp.chunk().await.ok()??;
            Some(resp)
        }));
    }
    // A gateway that cannot open them all within a minute is measured with those it opened.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    for p in pending {
        match tokio::time::timeout_at(deadline, p).await {
            Ok(Ok(Some(resp))) => {
                opened += 1;
                held.push(resp);
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss = tree_rss_mib(pid, "VmRSS:");
    drop(held);
    (rss, opened)
}

fn main() {
    // Enough descriptors for 1,000 streams through a gateway and the upstream, in this process
    // and in the children, which inherit the limit.
    let _ =
        nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, 16384, 16384);
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, upstream, port] = args.as_slice()
        && flag == "--relay"
    {
        relay(upstream.clone(), port.parse().unwrap());
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // `cargo test` runs this binary without `--bench`: then one short geode-only point proves
    // the path works, without LiteLLM and without minutes of load.
    if !std::env::args().any(|a| a == "--bench") {
        rt.block_on(smoke());
        return;
    }
    rt.block_on(async {
        kill_children_on_signal();
        let upstream = start_upstream().await;
        let dir = tempfile::tempdir().unwrap();
        let (geode, geode_base) = start_geode(&upstream, dir.path()).await;
        let (_relay, relay_base) = start_relay(&upstream).await;
        let with_litellm = std::env::var_os("GEODE_BENCH_NO_LITELLM").is_none();
        let litellm = if with_litellm { Some(start_litellm(&upstream, dir.path()).await) } else { None };
        let request = |model: &str| {
            json!({
                "model": model,
                "messages": [{"role": "user", "content": "Decide."}],
                "response_format": {"type": "json_schema", "json_schema": {"name": "decision", "strict": true, "schema": decision()}}
            })
        };
        // Warm every path once (connections, geode's schema compile cache, LiteLLM's imports).
        let _ = load(&format!("{upstream}/v1/chat/completions"), &request("m"), 1).await;
        let table = async |title: &str, path: &str, model: &str, loads: &[usize]| {
            println!("{title}");
            println!("{:<9} {:>8} {:>9} {:>9} {:>11} {:>11} {:>9} {:>8}", "target", "clients", "p50", "p99", "added p50", "added p99", "req/s", "errors");
            for &clients in loads {
                let direct = load(&format!("{upstream}{path}/v1/chat/completions"), &request("m"), clients).await;
                let row = |name: &str, p: &Point| {
                    println!(
                        "{name:<9} {clients:>8} {:>9.3} {:>9.3} {:>11.3} {:>11.3} {:>9.0} {:>8}",
                        p.pct(0.5), p.pct(0.99), p.pct(0.5) - direct.pct(0.5), p.pct(0.99) - direct.pct(0.99), p.rps, p.errors
                    );
                };
                row("direct", &direct);
                let floor = load(&format!("{relay_base}{path}/v1/chat/completions"), &request("m"), clients).await;
                row("relay", &floor);
                let mut sse = request("m");
                sse["stream"] = json!(true);
                let floor = load(&format!("{relay_base}{path}/v1/chat/completions"), &sse, clients).await;
                row("relay-sse", &floor);
                let g = load(&format!("{geode_base}/v1/chat/completions"), &request(&format!("{model}/m")), clients).await;
                row("geode", &g);
                if let Some((_, base)) = &litellm {
                    let l = load(&format!("{base}/v1/chat/completions"), &request(model), clients).await;
                    row("litellm", &l);
                }
            }
        };
        table(&format!("gateway bench: {SECONDS_PER_POINT} s per point, upstream answers at once on loopback (every process CPU-bound); latencies in ms"), "", "fast", &LOADS).await;
        table(&format!("the same with an upstream that answers in {SLOW_MS} ms (the gateway not the bottleneck, as with any real model)"), "/slow", "slow", &SLOW_LOADS).await;
        println!("peak RSS (MiB): geode {:.1}{}", rss_mib(geode.0.id(), "VmHWM:"),
            litellm.as_ref().map_or(String::new(), |(p, _)| format!(", litellm (all its processes) {:.1}", tree_rss_mib(p.0.id(), "VmHWM:"))));
        let mut streamed = request("fast/m");
        streamed["stream"] = json!(true);
        streamed["messages"][0]["content"] = json!("Hold.");
        let (rss, opened) = open_streams(&geode_base, &streamed, geode.0.id(), OPEN_STREAMS).await;
        println!("geode with {opened} open streams: RSS {rss:.1} MiB");
        if let Some((p, base)) = &litellm {
            let mut streamed = request("fast");
            streamed["stream"] = json!(true);
            streamed["messages"][0]["content"] = json!("Hold.");
            let (rss, opened) = open_streams(base, &streamed, p.0.id(), OPEN_STREAMS).await;
            println!("litellm with {opened} open streams: RSS {rss:.1} MiB (all its processes)");
        }
        drop(litellm);
        drop(geode);
    });
}
