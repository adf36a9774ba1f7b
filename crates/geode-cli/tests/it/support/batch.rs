//! What the `geode batch` and `geode serve` tests share: a `glm-payg` sandbox with an input
//! file, shorthand task lines, and the batch command line.

use super::{SECRET, Sandbox, decision_schema_path};
use geode_fakes::FakeServer;
use serde_json::json;

/// A sandbox for `glm-payg` pointed at `server`, with `in.jsonl` holding `input`.
pub fn sandbox(server: &FakeServer, input: &str) -> Sandbox {
    let mut sb = Sandbox::new();
    sb.var("GEODE_GLM_BASE_URL", server.base_url())
        .var("ZAI_API_KEY", SECRET);
    std::fs::write(sb.cwd.path().join("in.jsonl"), input).unwrap();
    sb
}

/// Shorthand lines `{"task_id": "tNNN", "prompt": "Decide."}` for `ids`.
pub fn shorthand(ids: std::ops::Range<usize>) -> String {
    ids.map(|i| json!({"task_id": format!("t{i:03}"), "prompt": "Decide."}).to_string() + "\n")
        .collect()
}

/// `geode batch --adapter glm-payg --schema DECISION --input in.jsonl --output out.jsonl EXTRA`.
pub fn batch_args(extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "batch",
        "--adapter",
        "glm-payg",
        "--schema",
        &decision_schema_path(),
        "--input",
        "in.jsonl",
        "--output",
        "out.jsonl",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args
}
