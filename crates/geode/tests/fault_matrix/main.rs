//! The fault matrix: every (scenario, adapter) cell that applies, exercised through the adapter
//! and the worker, as `geode run` would meet it. The table of scenarios and expected outcomes is
//! [`table::ROWS`]; [`rig`] runs one cell; [`report`] prints the matrix with pass counts (with
//! `--nocapture`) and writes it to `target/fault-matrix.md`.
//!
//! Every cell must end in its expected typed outcome with the right exit code, within its
//! deadline (plus a generous margin), with no secret in the result, the ledger or any error
//! (`Display` or `Debug`), no socket to its fake left open, no process of its CLI left running,
//! and (codex-cli) no schema file left behind. After all cells, no child process of the test
//! is alive and the number of open descriptors is back where it started.
//!
//! The whole matrix runs inside a loopback-only network namespace (see `cli_support`), because
//! the real `claude` and `codex` CLIs take part. Cells run concurrently: HTTP and fake-CLI
//! cells eight at a time, real-CLI cells two at a time. The `local` column runs in
//! geode-local's `fault_matrix_local` test (it links llama.cpp, which this crate does not);
//! the printout merges its verdicts from `target/fault-matrix-local.tsv` when present.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

mod report;
mod rig;
use geode_testkit as support;
use geode_testkit::cli as cli_support;
use geode_testkit::fault_matrix::{run, table};
use geode_testkit::netns_test;

use std::sync::Arc;
use std::time::Duration;
use table::{ADAPTERS, ROWS};
use tokio::sync::Semaphore;

/// The last-resort bound on one cell (its own deadline is far shorter).
const CELL_BOUND: Duration = Duration::from_secs(120);

/// Which pool a cell runs in: 0 the light cells, 1 the real CLIs (heavy processes), 2 the
/// cells that move tens of megabytes (one at a time, so they do not starve the others' timers).
fn pool(fault: table::Fault, column: usize) -> usize {
    use table::Fault as F;
    let cli = matches!(ADAPTERS[column], "claude-cli" | "codex-cli");
    match fault {
        F::EndlessStream | F::OversizedBody | F::CliGiantOutput => 2,
        F::Status(_) | F::RateLimited(_) | F::HangBeforeHeaders | F::SecretInErrorBody if cli => 1,
        _ => 0,
    }
}

/// Rows whose label contains `GEODE_FAULT_ROWS` (all when unset): for debugging one scenario.
fn selected(row: &table::Row) -> bool {
    std::env::var("GEODE_FAULT_ROWS")
        .ok()
        .is_none_or(|want| row.id.contains(want.as_str()))
}

netns_test!(fault_matrix, async {
    let shared = Arc::new(rig::Shared::new());
    let fds_before = support::leaks::open_fds();
    let pools = [
        Arc::new(Semaphore::new(8)),
        Arc::new(Semaphore::new(2)),
        Arc::new(Semaphore::new(1)),
    ];
    let mut cells = tokio::task::JoinSet::new();
    for (i, row) in ROWS.iter().enumerate() {
        for (col, expect) in row.cells.iter().enumerate() {
            let Some(expect) = *expect else { continue };
            if ADAPTERS[col] == "local" || !selected(row) {
                continue; // geode-local's fault_matrix_local runs these (it links the model)
            }
            let shared = shared.clone();
            let permits = pools[pool(row.fault, col)].clone();
            cells.spawn(async move {
                let _permit = permits.acquire_owned().await.unwrap();
                let cell = rig::run_cell(&shared, row.fault, col, expect);
                let verdict = match tokio::time::timeout(CELL_BOUND, cell).await {
                    Ok(v) => v,
                    Err(_) => run::Verdict {
                        got: "hung".into(),
                        exit: None,
                        problems: vec![format!("the cell did not end within {CELL_BOUND:?}")],
                    },
                };
                ((i, col), verdict)
            });
        }
    }
    let mut results = report::Results::new();
    let mut ran = 0;
    while let Some(done) = cells.join_next().await {
        let (at, verdict) = done.unwrap();
        results.insert(at, verdict);
        ran += 1;
    }
    let failed = results.values().filter(|v| !v.problems.is_empty()).count();
    results.extend(report::local_results());
    let mut text = report::render(&results);
    let children = support::leaks::settle(support::leaks::live_children).await;
    let fds_after =
        support::leaks::settle(|| support::leaks::open_fds().saturating_sub(fds_before)).await;
    text.push_str(&format!(
        "\nafter all cells: {} live child processes, {fds_after} descriptors more than before\n",
        children.len()
    ));
    report::write_named("fault-matrix.tsv", &report::lines(&results));
    let path = report::write(&text);
    println!("{text}\n(written to {})", path.display());
    assert!(children.is_empty(), "child processes left: {children:?}");
    assert_eq!(fds_after, 0, "descriptors leaked over the whole matrix");
    let local = ROWS.iter().filter(|r| r.cells[8].is_some()).count();
    if std::env::var_os("GEODE_FAULT_ROWS").is_none() {
        assert_eq!(
            ran,
            table::applicable() - local,
            "every applicable cell ran"
        );
    }
    assert_eq!(failed, 0, "{failed} cells failed (see the matrix above)");
});

#[test]
fn every_scenario_applies_somewhere_and_every_adapter_is_covered() {
    for row in ROWS {
        assert!(
            row.cells.iter().any(Option::is_some),
            "{} applies nowhere",
            row.id
        );
    }
    for (col, adapter) in ADAPTERS.iter().enumerate() {
        let n = ROWS.iter().filter(|r| r.cells[col].is_some()).count();
        assert!(n >= 4, "{adapter} has only {n} cells");
    }
    let ids: std::collections::BTreeSet<&str> = ROWS.iter().map(|r| r.id).collect();
    assert_eq!(ids.len(), ROWS.len(), "row labels are unique");
}

#[test]
fn reliability_doc_shows_the_fault_matrix() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/reliability.md"
    ))
    .unwrap();
    let start = "<!-- fault-matrix:start -->\n";
    let end = "<!-- fault-matrix:end -->";
    let from = doc
        .find(start)
        .expect("docs/reliability.md has the fault-matrix start marker")
        + start.len();
    let to = doc[from..]
        .find(end)
        .expect("docs/reliability.md has the fault-matrix end marker")
        + from;
    let expected = table::markdown();
    if doc[from..to] != expected {
        let path = report::write_named("fault-matrix-doc.md", &expected);
        panic!(
            "the fault matrix in docs/reliability.md is stale: paste {} between the markers",
            path.display()
        );
    }
}
