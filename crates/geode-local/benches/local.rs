//! Local-engine benchmark: prints a table of latency and tokens/s next to its targets: ≤ 0.30 s
//! per constrained Decision call on 2 threads (what upstream llama-server takes here), and
//! constrained generation ≥ 95% of unconstrained tokens/s.
//!
//! Run with `cargo bench -p geode-local` (needs the model: `scripts/fetch-model.sh`). Single runs
//! on a possibly shared machine: read the numbers as indications, not error-barred results.
//! `GEODE_LOCAL_THREADS` overrides the thread count. Under `cargo test --all-targets` (no
//! `--bench` argument) it only prints how to run it: the model tests live in `tests/`.

use geode::schema::ResponseSchema;
use geode_local::{
    ChatRole, ChatTurn, Constraint, EngineConfig, GenerateOptions, Generation, LocalEngine,
};
use std::time::{Duration, Instant};

const SYSTEM: &str = "You are a careful senior software engineer reviewing pull requests.";
const FORMAT: &str = "Answer as JSON with keys \"decision\" (either \"accept\" or \"reject\") and \
                      \"reason\" (one short sentence). Output only the JSON object.";

const PRS: [(&str, &str); 10] = [
    (
        "Add API key to source",
        "+API_KEY = \"sk-live-9f8a7b6c5d4e3f2a1b0c\"",
    ),
    (
        "Fix typo in README",
        "-You will recieve a token.\n+You will receive a token.",
    ),
    (
        "Delete failing tests",
        "-def test_refund_rounds_down():\n-    assert refund(10.005) == 10.00",
    ),
    (
        "Add unit test for parse_date",
        "+def test_parse_date_leap_year(): ...",
    ),
    (
        "Disable TLS verification",
        "+r = requests.get(url, verify=False)",
    ),
    (
        "Use a parameterised query",
        "+cur.execute(\"SELECT * FROM users WHERE id = %s\", (uid,))",
    ),
    (
        "Build SQL by concatenation",
        "+cur.execute(\"SELECT * FROM items WHERE name = '\" + name + \"'\")",
    ),
    (
        "Bump serde to 1.0.219",
        "-serde = \"1.0.210\"\n+serde = \"1.0.219\"",
    ),
    ("Sleep to fix flaky test", "+time.sleep(30)"),
    (
        "Log request ids",
        "+log.info(\"request done\", request_id=req.id)",
    ),
];

fn turns(i: usize) -> Vec<ChatTurn> {
    let (title, diff) = PRS[i];
    vec![
        ChatTurn::new(ChatRole::System, SYSTEM),
        ChatTurn::new(
            ChatRole::User,
            format!(
                "Decide whether to accept this pull request.\n\nTitle: {title}\nDiff:\n```\n{diff}\n```\n\n{FORMAT}"
            ),
        ),
    ]
}

/// The Decision schema of `examples/decision.schema.json`.
fn decision() -> Constraint {
    let text = include_str!("../../../examples/decision.schema.json");
    let schema = serde_json::from_str(text).unwrap_or_else(|e| panic!("decision schema: {e}"));
    match ResponseSchema::from_value(schema) {
        Ok(s) => Constraint::JsonSchema(s),
        Err(e) => panic!("schema: {e}"),
    }
}

fn run(
    engine: &LocalEngine,
    i: usize,
    constraint: &Constraint,
    max_tokens: u32,
) -> (Generation, Duration) {
    let options = GenerateOptions {
        max_tokens,
        seed: 1234 + u32::try_from(i).unwrap_or(0),
        ..GenerateOptions::default()
    };
    let started = Instant::now();
    match engine.generate_shared(
        &turns(i),
        constraint,
        &options,
        std::sync::Arc::new(|| None),
    ) {
        Ok(g) => (g, started.elapsed()),
        Err(e) => panic!("generate: {e}"),
    }
}

/// Generation tokens/s over a set of runs (sampling + evaluation of generated tokens).
fn gen_rate(runs: &[(Generation, Duration)]) -> f64 {
    let tokens: usize = runs.iter().map(|(g, _)| g.completion_tokens).sum();
    let secs: f64 = runs
        .iter()
        .map(|(g, _)| g.generation_time.as_secs_f64())
        .sum();
    tokens as f64 / secs.max(1e-9)
}

fn mean_secs(runs: &[(Generation, Duration)]) -> f64 {
    runs.iter().map(|(_, d)| d.as_secs_f64()).sum::<f64>() / runs.len().max(1) as f64
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("geode-local bench: run it with `cargo bench -p geode-local`");
        return;
    }
    let config = EngineConfig::default();
    let started = Instant::now();
    let engine = match LocalEngine::load(&config) {
        Ok(e) => e,
        Err(e) => panic!("{e}"),
    };
    let load = started.elapsed();
    let constrained = decision();

    // First call after load: nothing cached.
    let first = run(&engine, 0, &constrained, 128);
    // The same prompt again: all but the last prompt token reused.
    let same: Vec<_> = (0..5).map(|_| run(&engine, 0, &constrained, 128)).collect();
    // Ten different PRs: the system prompt and the start of the user turn reused.
    let others: Vec<_> = (0..PRS.len())
        .map(|i| run(&engine, i, &constrained, 128))
        .collect();
    // The same ten PRs unconstrained (bounded to 128 tokens).
    let free: Vec<_> = (0..PRS.len())
        .map(|i| run(&engine, i, &Constraint::None, 128))
        .collect();

    let prompt_rate = first.0.prompt_tokens as f64 / first.0.prompt_time.as_secs_f64().max(1e-9);
    let c_rate = gen_rate(&others);
    let u_rate = gen_rate(&free);
    println!(
        "geode-local bench (SmolLM2-135M Q4_1, {} threads; single runs)",
        config.threads
    );
    println!("| measure | value | target / reference |");
    println!("|---|---|---|");
    println!(
        "| model load + llguidance set-up | {:.3} s | spec: ~0.1 s + 0.1 s |",
        load.as_secs_f64()
    );
    println!(
        "| constrained Decision, first call ({} prompt tokens, none cached) | {:.3} s | ≤ 0.30 s |",
        first.0.prompt_tokens,
        first.1.as_secs_f64()
    );
    println!(
        "| constrained Decision, same prompt again (mean of 5, {} cached) | {:.3} s | ≤ 0.30 s |",
        same.first().map_or(0, |r| r.0.cached_prompt_tokens),
        mean_secs(&same)
    );
    println!(
        "| constrained Decision, 10 PRs, shared prefix reused (mean) | {:.3} s | ≤ 0.30 s (llama-server peer 0.30 s; fresh context 0.65 s) |",
        mean_secs(&others)
    );
    println!(
        "| mean completion tokens, constrained / unconstrained | {:.1} / {:.1} | |",
        others.iter().map(|r| r.0.completion_tokens).sum::<usize>() as f64 / 10.0,
        free.iter().map(|r| r.0.completion_tokens).sum::<usize>() as f64 / 10.0
    );
    println!("| prompt evaluation | {prompt_rate:.0} tok/s | spec: 342 tok/s |");
    println!("| generation, constrained | {c_rate:.0} tok/s | ≥ 95% of unconstrained |");
    println!("| generation, unconstrained | {u_rate:.0} tok/s | spec: 105 tok/s |");
    println!(
        "| constrained / unconstrained | {:.0}% | ≥ 95% |",
        100.0 * c_rate / u_rate.max(1e-9)
    );
}
