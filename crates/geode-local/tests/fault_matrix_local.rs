//! The `local` column of the fault matrix (`crates/geode/tests/fault_matrix`): a missing or
//! corrupt model file, a constraint llguidance cannot compile, and a cancel while the real model
//! generates, each through the worker as `geode run` meets them. Same table, same run and
//! judgement code as the rest of the matrix; the verdicts go to `target/fault-matrix-local.tsv`,
//! which the main matrix printout merges.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

// Shared with the main matrix, which uses the parts this column does not.
use geode_testkit::fault_matrix::{run, table};
use geode_testkit::fixtures;

use geode::schema::ResponseSchema;
use geode_local::{EngineConfig, LocalAdapter, LocalEngine};
use run::Verdict;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use table::{ADAPTERS, Expect, Fault, ROWS};

const LOCAL: usize = 8;

/// The `Decision` schema (the matrix's fixture).
fn decision() -> ResponseSchema {
    fixtures::decision_schema()
}

async fn local_cell(fault: Fault, expect: Expect) -> Verdict {
    let dir = tempfile::tempdir().unwrap();
    let deadline = Duration::from_secs(60);
    let with_path = |path: PathBuf| {
        LocalAdapter::with_config(EngineConfig {
            model_path: path,
            ..EngineConfig::default()
        })
    };
    let (adapter, schema, cancel_after) = match fault {
        Fault::ModelMissing => (
            with_path(dir.path().join("missing.gguf")),
            Some(decision()),
            None,
        ),
        Fault::ModelCorrupt => {
            let path = dir.path().join("corrupt.gguf");
            let mut bytes = b"GGUF\x03\x00\x00\x00".to_vec();
            bytes.extend(std::iter::repeat_n(0xab_u8, 4096));
            std::fs::write(&path, bytes).unwrap();
            (with_path(path), Some(decision()), None)
        }
        Fault::UncompilableConstraint => {
            // An unsatisfiable string llguidance refuses (a keyword it cannot compile, such as
            // `uniqueItems`, is left to validation instead): the call must fail closed.
            let schema = ResponseSchema::from_value(json!({"type": "object",
                "properties": {"code": {"type": "string", "minLength": 5, "maxLength": 2}},
                "required": ["code"]}))
            .unwrap();
            (LocalAdapter::shared(), Some(schema), None)
        }
        Fault::CancelMidGeneration => {
            // Load the model first, so the cancel lands while tokens are being generated.
            let loaded = tokio::task::spawn_blocking(LocalEngine::shared)
                .await
                .unwrap();
            if let Err(e) = loaded {
                return Verdict::setup_failed(format!("the local model does not load: {e}"));
            }
            (
                LocalAdapter::shared(),
                None,
                Some(Duration::from_millis(500)),
            )
        }
        other => return Verdict::setup_failed(format!("{other:?} does not apply to local")),
    };
    let mut req = run::request(schema, deadline);
    if fault == Fault::CancelMidGeneration {
        req.description = "Write a very long story about a lighthouse keeper.".into();
        req.subagent_max_tokens = 4096;
    }
    let outcome = run::run(Arc::new(adapter), req, deadline, cancel_after).await;
    run::judge(expect, &outcome, deadline, &[])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_fault_cells() {
    assert_eq!(ADAPTERS[LOCAL], "local");
    let mut lines = Vec::new();
    let mut failed = Vec::new();
    for row in ROWS {
        let Some(expect) = row.cells[LOCAL] else {
            continue;
        };
        let verdict = tokio::time::timeout(Duration::from_secs(120), local_cell(row.fault, expect))
            .await
            .unwrap_or_else(|_| Verdict {
                got: "hung".into(),
                exit: None,
                problems: vec!["the cell did not end within 120 s".into()],
            });
        println!(
            "{:<28} {:<12} exit {:?} {:?}",
            row.id, verdict.got, verdict.exit, verdict.problems
        );
        if !verdict.problems.is_empty() {
            failed.push(format!("{}: {}", row.id, verdict.problems.join("; ")));
        }
        lines.push(verdict.to_line(row.id, "local"));
    }
    let path = run::target_dir().join("fault-matrix-local.tsv");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    assert!(lines.len() >= 4, "the local column has its cells");
    assert!(failed.is_empty(), "local cells failed: {failed:#?}");
}
