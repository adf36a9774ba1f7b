//! Load with faults: 1,000 concurrent subtasks against one fake provider that answers each call
//! at random (seeded) with 429, 500, a reset, a hang, garbage, an HTML page, a hang mid-body or
//! a valid answer. Prints wall time, peak RSS and the outcome counts (`make bench`).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use geode_testkit as support;

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("benchmark: run with `make bench` (cargo bench)");
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let report = rt.block_on(support::load::run(1000, 0x5eed_fa17));
    println!();
    println!(
        "1,000 concurrent subtasks, random faults (seeded), deadline {:?} each:",
        support::load::TASK_DEADLINE
    );
    println!("{}", report.render());
}
