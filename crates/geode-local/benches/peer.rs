//! geode's local engine beside its peer, upstream llama-server, in one run: the 10 pull
//! requests the local runtime was chosen on (docs/local-model.md) with the same GGUF
//! (SmolLM2-135M Q4_1), the same system prompt, the Decision schema, the same sampling (mask,
//! then top-k 40, top-p 0.95, temperature 0.7, seed 1234+i, at most 256 tokens), 2 threads and a
//! 4,096-token context.
//! llama-server (built once by `scripts/install-llama-server.sh`, started here on 127.0.0.1)
//! gets each request through its Chat Completions `response_format: json_schema` path; geode
//! runs the local adapter's engine on the turns the adapter builds for the same request
//! (`turns_from_request`; the adapter adds only a `spawn_blocking` hop). The calls are
//! interleaved, alternating which side goes first, after one untimed warm-up call each.
//!
//! Per call: wall latency (llama-server's includes its loopback HTTP), prompt tokens
//! evaluated and prompt tok/s (the uncached part of the prompt: both reuse the shared prefix),
//! generated tokens and generation tok/s (llama-server's own `timings`; geode's `Generation`),
//! and whether the answer is valid against the schema. Then the means and geode/peer ratios
//! (targets: latency ≤ 1.0×, prompt and generation speed ≥ 95%), and raw speed: one 400-token
//! prompt with nothing cached, and 128 greedy unconstrained tokens of a story.
//!
//! Run with `make bench-peer` (or `cargo bench -p geode-local --bench peer`). Single runs on a
//! possibly shared machine: indications, not error-barred results. Under `cargo test
//! --all-targets` (no `--bench` argument) it only prints how to run it.

use geode::llm::request::{AdapterCallRequest, Message};
use geode::schema::ResponseSchema;
use geode_fakes::llama_server::{LlamaServer, LlamaServerOptions};
use geode_local::prompt::turns_from_request;
use geode_local::{Constraint, EngineConfig, GenerateOptions, LocalEngine};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const SYSTEM: &str = "You are a careful senior software engineer reviewing pull requests.";
const FORMAT: &str = "Answer as JSON with keys \"decision\" (either \"accept\" or \"reject\") and \
                      \"reason\" (one short sentence). Output only the JSON object.";
const MAX_TOKENS: u32 = 256;
const TEMPERATURE: f32 = 0.7;

/// The 10 pull requests the local runtime was chosen on (five to accept, five to reject): title,
/// description, diff.
const PRS: [(&str, &str, &str); 10] = [
    (
        "Add API key to source",
        "Hardcode the production API key so the deploy works.",
        "+API_KEY = \"sk-live-9f8a7b6c5d4e3f2a1b0c\"\n+client = Client(api_key=API_KEY)",
    ),
    (
        "Fix typo in README",
        "Corrects a spelling mistake.",
        "-You will recieve a token.\n+You will receive a token.",
    ),
    (
        "Delete failing tests",
        "The refund tests fail on CI, so this removes them.",
        "-def test_refund_rounds_down():\n-    assert refund(10.005) == 10.00",
    ),
    (
        "Add unit test for parse_date",
        "Covers leap years.",
        "+def test_parse_date_leap_year():\n+    assert parse_date(\"2024-02-29\").day == 29",
    ),
    (
        "Disable TLS verification",
        "The staging certificate is self-signed.",
        "+r = requests.get(url, verify=False)",
    ),
    (
        "Use a parameterised query",
        "Replaces string formatting in the user lookup.",
        "+cur.execute(\"SELECT * FROM users WHERE id = %s\", (uid,))",
    ),
    (
        "Build SQL by concatenation",
        "Simplifies the item search.",
        "+cur.execute(\"SELECT * FROM items WHERE name = '\" + name + \"'\")",
    ),
    (
        "Bump serde to 1.0.219",
        "Routine dependency update.",
        "-serde = \"1.0.210\"\n+serde = \"1.0.219\"",
    ),
    (
        "Sleep to fix flaky test",
        "The integration test is flaky; waiting makes it pass.",
        "+time.sleep(30)",
    ),
    (
        "Log request ids",
        "Adds the request id to the completion log line.",
        "+log.info(\"request done\", request_id=req.id)",
    ),
];

fn user_text(i: usize) -> String {
    let (title, description, diff) = PRS[i];
    format!(
        "Decide whether to accept this pull request.\n\nTitle: {title}\nDescription: \
         {description}\nDiff:\n```\n{diff}\n```\n\n{FORMAT}"
    )
}

/// The Decision schema of `examples/decision.schema.json`.
fn decision() -> Value {
    let text = include_str!("../../../examples/decision.schema.json");
    serde_json::from_str(text).unwrap_or_else(|e| panic!("decision schema: {e}"))
}

/// One call's measurements.
struct Call {
    latency: Duration,
    prompt_n: u64,
    prompt_secs: f64,
    gen_n: u64,
    gen_secs: f64,
    valid: bool,
    text: String,
}

impl Call {
    fn prompt_rate(&self) -> f64 {
        self.prompt_n as f64 / self.prompt_secs.max(1e-9)
    }
    fn gen_rate(&self) -> f64 {
        self.gen_n as f64 / self.gen_secs.max(1e-9)
    }
}

fn valid(schema: &Value, text: &str) -> bool {
    let Ok(value) = serde_json::from_str::<Value>(text.trim()) else {
        return false;
    };
    jsonschema::validator_for(schema).is_ok_and(|v| v.is_valid(&value))
}

/// POSTs `body` to `path` on `origin`'s port (HTTP/1.0, one connection per call, as a client
/// without a pool would); the parsed JSON reply.
fn post(port: u16, path: &str, body: &Value) -> Value {
    let payload = body.to_string();
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .unwrap_or_else(|e| panic!("connect to llama-server: {e}"));
    let head = format!(
        "POST {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n",
        payload.len()
    );
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(payload.as_bytes()))
        .unwrap_or_else(|e| panic!("send: {e}"));
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .unwrap_or_else(|e| panic!("read: {e}"));
    let text = String::from_utf8_lossy(&raw);
    let (status, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    assert!(
        status.starts_with("HTTP/1.1 200") || status.starts_with("HTTP/1.0 200"),
        "llama-server: {status}\n{rest}"
    );
    serde_json::from_str(rest).unwrap_or_else(|e| panic!("reply: {e}: {rest}"))
}

fn peer_call(port: u16, system: &str, user: &str, extra: Value, schema: &Value) -> Call {
    let mut body = json!({
        "model": "SmolLM2-135M-Instruct",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        "max_tokens": MAX_TOKENS,
        "temperature": TEMPERATURE,
        "top_k": 40,
        "top_p": 0.95,
        "min_p": 0.0,
        "samplers": ["top_k", "top_p", "temperature"],
    });
    if let (Some(b), Some(x)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(x.clone());
    }
    let started = Instant::now();
    let reply = post(port, "/v1/chat/completions", &body);
    let latency = started.elapsed();
    let t = &reply["timings"];
    let text = reply
        .pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Call {
        latency,
        prompt_n: t["prompt_n"].as_u64().unwrap_or(0),
        prompt_secs: t["prompt_ms"].as_f64().unwrap_or(0.0) / 1000.0,
        gen_n: t["predicted_n"].as_u64().unwrap_or(0),
        gen_secs: t["predicted_ms"].as_f64().unwrap_or(0.0) / 1000.0,
        valid: valid(schema, &text),
        text,
    }
}

fn peer_decision(port: u16, i: usize) -> Call {
    let schema = decision();
    let extra = json!({
        "seed": 1234 + i,
        "response_format": {"type": "json_schema",
            "json_schema": {"name": "Decision", "schema": schema, "strict": true}},
    });
    peer_call(port, SYSTEM, &user_text(i), extra, &schema)
}

fn geode_call(
    engine: &LocalEngine,
    system: &str,
    user: &str,
    constraint: &Constraint,
    options: &GenerateOptions,
    schema: &Value,
) -> Call {
    let mut req = AdapterCallRequest::new("", vec![Message::user(user)]);
    req.system_prompt = system.to_owned();
    let turns = turns_from_request(&req);
    let started = Instant::now();
    let g = engine
        .generate_shared(&turns, constraint, options, std::sync::Arc::new(|| None))
        .unwrap_or_else(|e| panic!("generate: {e}"));
    let latency = started.elapsed();
    Call {
        latency,
        prompt_n: g.prompt_tokens.saturating_sub(g.cached_prompt_tokens) as u64,
        prompt_secs: g.prompt_time.as_secs_f64(),
        gen_n: g.completion_tokens as u64,
        gen_secs: g.generation_time.as_secs_f64(),
        valid: valid(schema, &g.text),
        text: g.text,
    }
}

fn geode_decision(engine: &LocalEngine, constraint: &Constraint, i: usize) -> Call {
    let options = GenerateOptions {
        max_tokens: MAX_TOKENS,
        temperature: Some(TEMPERATURE),
        seed: 1234 + u32::try_from(i).unwrap_or(0),
        ..GenerateOptions::default()
    };
    geode_call(
        engine,
        SYSTEM,
        &user_text(i),
        constraint,
        &options,
        &decision(),
    )
}

/// Sums over calls: (latency s, prompt tokens, prompt s, generated tokens, generation s, valid).
fn totals(calls: &[Call]) -> (f64, u64, f64, u64, f64, usize) {
    calls.iter().fold((0.0, 0, 0.0, 0, 0.0, 0), |t, c| {
        (
            t.0 + c.latency.as_secs_f64(),
            t.1 + c.prompt_n,
            t.2 + c.prompt_secs,
            t.3 + c.gen_n,
            t.4 + c.gen_secs,
            t.5 + usize::from(c.valid),
        )
    })
}

/// A long user text (about 400 tokens) that shares nothing with the other prompts.
fn raw_text(tag: &str) -> String {
    let mut s = format!("[{tag}] Summarise the following notes in three sentences.\n");
    for n in 0..40 {
        s.push_str(&format!(
            "Note {n}: the {tag} service restarted at hour {} after a memory alarm.\n",
            (n * 7) % 24
        ));
    }
    s
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("geode-local peer bench: run it with `make bench-peer`");
        return;
    }
    let threads = 2;
    let options = LlamaServerOptions {
        threads,
        ..LlamaServerOptions::default()
    };
    let started = Instant::now();
    let server = LlamaServer::start(&options).unwrap_or_else(|e| panic!("{e}"));
    let peer_ready = started.elapsed();
    let port = server
        .origin()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse::<u16>().ok())
        .unwrap_or_else(|| panic!("no port in {}", server.origin()));
    let config = EngineConfig {
        model_path: options.model.clone(),
        n_ctx: options.ctx,
        threads: i32::try_from(threads).unwrap_or(2),
        ..EngineConfig::default()
    };
    let started = Instant::now();
    let engine = LocalEngine::load(&config).unwrap_or_else(|e| panic!("{e}"));
    let geode_ready = started.elapsed();
    let schema = ResponseSchema::from_value(decision()).unwrap_or_else(|e| panic!("{e}"));
    let constraint = Constraint::JsonSchema(schema);

    // Warm-up: one untimed call each (first-call set-up, the system prompt into the cache).
    let _ = peer_decision(port, 9);
    let _ = geode_decision(&engine, &constraint, 9);

    let mut peer = Vec::new();
    let mut geode = Vec::new();
    for i in 0..PRS.len() {
        if i % 2 == 0 {
            peer.push(peer_decision(port, i));
            geode.push(geode_decision(&engine, &constraint, i));
        } else {
            geode.push(geode_decision(&engine, &constraint, i));
            peer.push(peer_decision(port, i));
        }
    }

    println!(
        "peer bench: SmolLM2-135M Q4_1, {threads} threads, ctx {}, Decision schema, temperature \
         {TEMPERATURE}, top-k 40, top-p 0.95, seed 1234+i, max {MAX_TOKENS} tokens",
        options.ctx
    );
    println!(
        "ready: llama-server {:.2} s (process start to /health 200), geode engine load {:.2} s",
        peer_ready.as_secs_f64(),
        geode_ready.as_secs_f64()
    );
    println!();
    println!(
        "| # | pull request | latency peer / geode (ms) | ratio | prompt tok/s peer / geode (tokens) | gen tok/s peer / geode (tokens) | valid peer / geode |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (i, (p, g)) in peer.iter().zip(&geode).enumerate() {
        println!(
            "| {} | {} | {:.0} / {:.0} | {:.2} | {:.0} / {:.0} ({} / {}) | {:.0} / {:.0} ({} / {}) | {} / {} |",
            i + 1,
            PRS[i].0,
            p.latency.as_secs_f64() * 1e3,
            g.latency.as_secs_f64() * 1e3,
            g.latency.as_secs_f64() / p.latency.as_secs_f64().max(1e-9),
            p.prompt_rate(),
            g.prompt_rate(),
            p.prompt_n,
            g.prompt_n,
            p.gen_rate(),
            g.gen_rate(),
            p.gen_n,
            g.gen_n,
            if p.valid { "yes" } else { "no" },
            if g.valid { "yes" } else { "no" },
        );
    }
    let (pl, pp, pps, pg, pgs, pv) = totals(&peer);
    let (gl, gp, gps, gg, ggs, gv) = totals(&geode);
    let n = PRS.len() as f64;
    let (p_prompt, g_prompt) = (pp as f64 / pps.max(1e-9), gp as f64 / gps.max(1e-9));
    let (p_gen, g_gen) = (pg as f64 / pgs.max(1e-9), gg as f64 / ggs.max(1e-9));
    println!();
    println!("| measure | llama-server | geode local | geode / peer | target |");
    println!("|---|---|---|---|---|");
    println!(
        "| mean latency per call | {:.0} ms | {:.0} ms | {:.2}× | ≤ 1.00× |",
        pl / n * 1e3,
        gl / n * 1e3,
        gl / pl.max(1e-9)
    );
    println!(
        "| prompt tok/s (uncached part, all calls) | {p_prompt:.0} ({pp} tok) | {g_prompt:.0} ({gp} tok) | {:.0}% | ≥ 95% |",
        100.0 * g_prompt / p_prompt.max(1e-9)
    );
    println!(
        "| generation tok/s (constrained, all calls) | {p_gen:.0} ({pg} tok) | {g_gen:.0} ({gg} tok) | {:.0}% | ≥ 95% |",
        100.0 * g_gen / p_gen.max(1e-9)
    );
    println!("| valid answers | {pv}/10 | {gv}/10 | | 10/10 |");

    // Raw speed: a 400-token prompt with nothing cached (one token generated), then 128
    // greedy unconstrained tokens of a story.
    let any = json!({});
    let raw = |system: &str, user: &str, max_tokens: u32| {
        let peer = peer_call(
            port,
            system,
            user,
            json!({"cache_prompt": false, "temperature": 0.0, "max_tokens": max_tokens,
                   "seed": 1}),
            &any,
        );
        let options = GenerateOptions {
            max_tokens,
            temperature: Some(0.0),
            ..GenerateOptions::default()
        };
        let geode = geode_call(&engine, system, user, &Constraint::None, &options, &any);
        (peer, geode)
    };
    let (p_raw, g_raw) = raw("You are a helpful assistant.", &raw_text("prefill"), 1);
    println!(
        "| raw prompt tok/s (≈400 tokens, none cached) | {:.0} ({} tok) | {:.0} ({} tok) | {:.0}% | ≥ 95% |",
        p_raw.prompt_rate(),
        p_raw.prompt_n,
        g_raw.prompt_rate(),
        g_raw.prompt_n,
        100.0 * g_raw.prompt_rate() / p_raw.prompt_rate().max(1e-9)
    );
    let (p_gen, g_gen) = raw(
        "You are a storyteller.",
        "Write a long story about a robot who learns to paint.",
        128,
    );
    println!(
        "| raw generation tok/s (greedy, unconstrained) | {:.0} ({} tok) | {:.0} ({} tok) | {:.0}% | ≥ 95% |",
        p_gen.gen_rate(),
        p_gen.gen_n,
        g_gen.gen_rate(),
        g_gen.gen_n,
        100.0 * g_gen.gen_rate() / p_gen.gen_rate().max(1e-9)
    );
    let invalid: Vec<_> = peer
        .iter()
        .chain(&geode)
        .filter(|c| !c.valid)
        .map(|c| c.text.as_str())
        .collect();
    if !invalid.is_empty() {
        println!("\ninvalid answers: {invalid:?}");
    }
    drop(server);
}
