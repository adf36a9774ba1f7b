//! Load with faults at test scale: 200 concurrent subtasks against one fake that answers at
//! random with 429, 500, resets, hangs, garbage or a valid answer. Every task must end with a
//! typed outcome within its deadline (plus a generous margin), nothing may leak, and memory must
//! stay bounded. The 1,000-task figures are printed by `cargo bench --bench faults_load`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use geode_testkit as support;

use support::load;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_task_ends_typed_within_its_deadline_and_nothing_leaks() {
    let report = load::run(200, 0x5eed_fa17).await;
    println!("{}", report.render());
    assert_eq!(report.ended, report.tasks, "every task returned a result");
    assert_eq!(report.untyped, 0, "every task ended in a typed outcome");
    assert_eq!(
        report.late, 0,
        "no task ran past its deadline (slowest {} ms)",
        report.slowest_ms
    );
    assert!(
        report.outcomes.len() >= 3,
        "the faults really varied: {:?}",
        report.outcomes
    );
    assert!(
        report.outcomes.contains_key("ok"),
        "some tasks succeeded: {:?}",
        report.outcomes
    );
    assert_eq!(report.sockets_left, 0, "sockets to the fake left open");
    assert_eq!(report.fds_left, 0, "descriptors leaked");
    let growth = report.peak_rss_mib.1 - report.peak_rss_mib.0;
    assert!(
        growth < 512.0,
        "memory grew by {growth:.0} MiB for 200 tasks"
    );
}
