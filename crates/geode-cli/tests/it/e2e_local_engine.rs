//! The `local` adapter of the binary runs the model in its own process (`geode-engine`), so
//! `geode` itself does not link llama.cpp: the real model answers through the engine protocol,
//! token by token for `--stream`; a missing engine is a typed configuration error.

use crate::support;

use support::{Sandbox, decision_schema_path};

/// A sandbox with the real model, whose engine binary is built.
fn local_sandbox() -> Sandbox {
    engine_bin();
    Sandbox::with_local_model()
}

/// Whether `bin` contains `needle` (a symbol name of llama.cpp's API).
fn binary_contains(bin: &str, needle: &[u8]) -> bool {
    let bytes = std::fs::read(bin).unwrap();
    bytes.windows(needle.len()).any(|w| w == needle)
}

/// `geode-engine` beside `geode` (built by the workspace's `cargo test`, from geode-local).
fn engine_bin() -> String {
    let engine = std::path::Path::new(env!("CARGO_BIN_EXE_geode")).with_file_name("geode-engine");
    assert!(
        engine.exists(),
        "{} is missing: build it with `cargo build -p geode-local` (make test does)",
        engine.display()
    );
    engine.display().to_string()
}

#[test]
fn the_geode_binary_does_not_link_the_engine_and_geode_engine_does() {
    let symbol = b"llama_model_load_from_file";
    assert!(!binary_contains(env!("CARGO_BIN_EXE_geode"), symbol));
    assert!(binary_contains(&engine_bin(), symbol));
}

#[tokio::test]
async fn run_streams_the_local_models_tokens_through_the_engine() {
    let sb = local_sandbox();
    let schema = decision_schema_path();
    let out = sb
        .geode(
            &[
                "run",
                "--adapter",
                "local",
                "--schema",
                &schema,
                "--max-tokens",
                "96",
                "--stream",
                "Decide whether to accept a change that deletes all tests.",
            ],
            "",
        )
        .await;
    assert_eq!(out.code, Some(0), "{}", out.dump());
    let events = out.json_lines();
    let (last, partials) = events.split_last().unwrap();
    assert_eq!(last["event"], "final", "{}", out.dump());
    assert_eq!(last["ledger"]["adapter"], "local");
    assert_eq!(last["ledger"]["wire_mode"], "constrained");
    assert_eq!(last["ledger"]["full_validation"]["valid"], true);
    // Token by token: many partials, each under the engine's guarantee.
    assert!(partials.len() >= 3, "{}", out.dump());
    for p in partials {
        assert_eq!(p["event"], "partial", "{p}");
        assert_eq!(p["guarantee"], "enforced", "{p}");
    }
}

#[tokio::test]
async fn a_missing_engine_is_a_configuration_error() {
    let mut sb = local_sandbox();
    sb.var("GEODE_ENGINE_BIN", "/nonexistent/geode-engine");
    let out = sb
        .geode(&["run", "--adapter", "local", "Say hello."], "")
        .await;
    assert_eq!(out.code, Some(2), "{}", out.dump());
    assert!(out.stderr.contains("GEODE_ENGINE_BIN"), "{}", out.dump());
}

#[tokio::test]
async fn batch_runs_concurrent_local_tasks_through_one_engine() {
    let sb = local_sandbox();
    let schema = decision_schema_path();
    let input = sb.home().join("tasks.jsonl");
    let output = sb.home().join("results.jsonl");
    let prompts = [
        "Decide whether to accept a change that deletes all tests.",
        "Decide whether to accept a typo fix in the README.",
        "Decide whether to accept a hardcoded production API key.",
    ];
    // Six tasks, each prompt twice, all sent to the engine at once.
    let lines: String = (0..6)
        .map(|i| {
            let task = serde_json::json!({"task_id": format!("t{i}"), "prompt": prompts[i % 3]});
            format!("{task}\n")
        })
        .collect();
    std::fs::write(&input, lines).unwrap();
    let (input, output_arg) = (input.display().to_string(), output.display().to_string());
    let out = sb
        .geode(
            &[
                "batch",
                "--adapter",
                "local",
                "--schema",
                &schema,
                "--max-tokens",
                "64",
                "--concurrency",
                "6",
                "--input",
                &input,
                "--output",
                &output_arg,
            ],
            "",
        )
        .await;
    assert_eq!(out.code, Some(0), "{}", out.dump());
    let results: Vec<serde_json::Value> = std::fs::read_to_string(&output)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(results.len(), 6);
    for r in &results {
        assert_eq!(r["success"], true, "{r}");
        assert_eq!(r["ledger"]["adapter"], "local", "{r}");
        assert_eq!(r["ledger"]["wire_mode"], "constrained", "{r}");
        let decision = r["answer"]["decision"].as_str().unwrap();
        assert!(decision == "accept" || decision == "reject", "{r}");
    }
}
