//! Your own Rust type back from the local model, with the guarantee ledger.
//!
//! `cargo run --example typed` (the model comes from `scripts/fetch-model.sh` or
//! `GEODE_LOCAL_MODEL`). The local engine constrains decoding to the type's schema, so the
//! ledger says `constrained (enforced)`.

use geode::schemars::JsonSchema;
use serde::Deserialize;

/// How bad a bug is.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "geode::schemars")]
#[serde(rename_all = "lowercase")]
enum Severity {
    Low,
    Medium,
    High,
}

/// The triage of one bug report.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "geode::schemars")]
struct Triage {
    /// How bad it is.
    severity: Severity,
    /// The component it is in, in one or two words.
    component: String,
    /// The bug in one short sentence.
    summary: String,
    /// Whether a reproduction is still needed.
    needs_repro: bool,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = geode_local::local_client_builder()
        .max_tokens(200)
        .build()?;
    let report = "After upgrading to 2.3 the login page shows a blank screen on Safari; \
                  Chrome works. Console: TypeError: undefined is not a function (auth.js:42).";
    let started = std::time::Instant::now();
    let triage = client
        .extract::<Triage>(format!("Triage this bug report as JSON.\n\n{report}"))
        .await?;
    let t = &triage.value;
    println!(
        "severity={:?} component={:?} needs_repro={}\nsummary: {}",
        t.severity, t.component, t.needs_repro, t.summary
    );
    println!("{}", triage.ledger.summary());
    println!("took {:.1?}", started.elapsed());
    Ok(())
}
