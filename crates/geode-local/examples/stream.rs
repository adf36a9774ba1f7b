//! Streaming a typed answer from the local model: partial values as tokens arrive (with the
//! JSON Pointers of the closed parts), each list element as soon as it closes and validates,
//! then the final value validated in full. Prints the time to the first complete field next to
//! the time to the final answer.
//!
//! `cargo run --example stream` (the model comes from `scripts/fetch-model.sh` or
//! `GEODE_LOCAL_MODEL`).

use futures::StreamExt;
use geode::StreamEvent;
use geode::schemars::JsonSchema;
use serde::Deserialize;
use std::time::Instant;

/// One step of a plan.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "geode::schemars")]
struct Step {
    /// What to do, in a few words.
    action: String,
    /// Minutes it takes.
    minutes: u32,
}

/// A short plan.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "geode::schemars")]
struct Plan {
    /// The plan's goal.
    goal: String,
    /// Three steps.
    steps: Vec<Step>,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let client = geode_local::local_client_builder()
        .max_tokens(300)
        .build()?;
    let started = Instant::now();
    let mut first_complete = None;
    let mut partials = 0usize;
    let mut events = client.stream::<Plan>("Make a three-step plan to bake bread, as JSON.");
    while let Some(event) = events.next().await {
        match event? {
            StreamEvent::Partial {
                value,
                complete,
                guarantee,
            } => {
                if first_complete.is_none() && !complete.is_empty() {
                    first_complete = Some(started.elapsed());
                    println!("first complete field {:?} ({guarantee:?})", complete[0]);
                }
                partials += 1;
                if partials.is_multiple_of(10) {
                    println!("partial: {value}");
                }
            }
            StreamEvent::Item { index, value } => println!("step {index} closed: {value}"),
            StreamEvent::Retry { reason } => println!("retry: {reason}"),
            StreamEvent::Final(plan) => {
                println!("final goal: {}", plan.value.goal);
                for (i, step) in plan.value.steps.iter().enumerate() {
                    println!("  {}. {} ({} min)", i + 1, step.action, step.minutes);
                }
                println!("{}", plan.ledger.summary());
            }
        }
    }
    println!(
        "{partials} partials; first complete field after {:.2?}; final after {:.2?}",
        first_complete.unwrap_or_default(),
        started.elapsed()
    );
    Ok(())
}
