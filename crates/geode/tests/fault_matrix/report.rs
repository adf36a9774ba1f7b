//! The matrix printout: scenario × adapter with a mark per cell and pass counts per row, per
//! adapter and in total.

use crate::run::Verdict;
use crate::table::{ADAPTERS, Guard, ROWS};
use std::collections::BTreeMap;

/// Results by (row index, column).
pub type Results = BTreeMap<(usize, usize), Verdict>;

/// The matrix as markdown, then one line per failed cell.
pub fn render(results: &Results) -> String {
    let short: Vec<String> = ADAPTERS.iter().map(|a| a.to_string()).collect();
    let mut out = String::from("| scenario | pass |");
    for a in &short {
        out.push_str(&format!(" {a} |"));
    }
    out.push_str("\n|---|---|");
    out.push_str(&"---|".repeat(ADAPTERS.len()));
    out.push('\n');
    let mut per_column = [(0usize, 0usize); ADAPTERS.len()];
    let (mut passed, mut total) = (0, 0);
    let mut failures = Vec::new();
    for (i, row) in ROWS.iter().enumerate() {
        let mut cells = String::new();
        let (mut row_pass, mut row_total) = (0, 0);
        for (col, expect) in row.cells.iter().enumerate() {
            let Some(expect) = expect else {
                cells.push_str(" · |");
                continue;
            };
            row_total += 1;
            per_column[col].1 += 1;
            match results.get(&(i, col)) {
                Some(v) if v.problems.is_empty() => {
                    row_pass += 1;
                    per_column[col].0 += 1;
                    cells.push_str(&format!(" ✓ {} |", expect.outcome));
                }
                Some(v) => {
                    cells.push_str(&format!(" ✗ {} |", v.got));
                    let exit = v.exit.map_or("none".to_owned(), |c| c.to_string());
                    failures.push(format!(
                        "- {} × {} (got {}, exit {exit}): {}",
                        row.id,
                        ADAPTERS[col],
                        v.got,
                        v.problems.join("; ")
                    ));
                }
                None if ADAPTERS[col] == "local" => {
                    cells.push_str(" – not run here |");
                }
                None => {
                    cells.push_str(" ✗ not run |");
                    failures.push(format!("- {} × {}: not run", row.id, ADAPTERS[col]));
                }
            }
        }
        passed += row_pass;
        total += row_total;
        let mark = match row.guard {
            Some(Guard::SizeBudget) => " ¹",
            Some(Guard::Scrubber) => " ²",
            None => "",
        };
        out.push_str(&format!(
            "| {}{mark} | {row_pass}/{row_total} |{cells}\n",
            row.id
        ));
    }
    out.push_str(&format!("| **all** | **{passed}/{total}** |"));
    for (p, t) in per_column {
        out.push_str(&format!(" {p}/{t} |"));
    }
    out.push_str(
        "\n\n¹ the response size budget; ² the process-wide secret scrubber. \
         The local column comes from `cargo test -p geode-local --test fault_matrix_local` \
         (target/fault-matrix-local.tsv); \"not run here\" means that test has not run.\n",
    );
    if !failures.is_empty() {
        out.push_str(&format!("\n{} failed cells:\n", failures.len()));
        out.push_str(&failures.join("\n"));
        out.push('\n');
    }
    out
}

/// `target/fault-matrix.md`.
pub fn write(text: &str) -> std::path::PathBuf {
    write_named("fault-matrix.md", text)
}

/// Writes `text` to `target/<name>` and returns the path.
pub fn write_named(name: &str, text: &str) -> std::path::PathBuf {
    let path = crate::run::target_dir().join(name);
    if let Err(e) = std::fs::write(&path, text) {
        eprintln!("cannot write {}: {e}", path.display());
    }
    path
}

/// Every verdict as tab-separated lines ([`Verdict::to_line`]), for tools.
pub fn lines(results: &Results) -> String {
    let mut out = String::new();
    for ((row, col), v) in results {
        out.push_str(&v.to_line(ROWS[*row].id, ADAPTERS[*col]));
        out.push('\n');
    }
    out
}

/// The local column's verdicts, from the file geode-local's `fault_matrix_local` writes.
pub fn local_results() -> Results {
    let path = crate::run::target_dir().join(LOCAL_RESULTS);
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut out = Results::new();
    for (row_id, adapter, verdict) in text.lines().filter_map(Verdict::from_line) {
        let row = ROWS.iter().position(|r| r.id == row_id);
        let col = ADAPTERS.iter().position(|a| *a == adapter);
        if let (Some(row), Some(col)) = (row, col) {
            out.insert((row, col), verdict);
        }
    }
    out
}

/// The file the local cells' verdicts are written to, under the target directory.
pub const LOCAL_RESULTS: &str = "fault-matrix-local.tsv";
