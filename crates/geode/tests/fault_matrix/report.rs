//! The matrix printout: scenario × adapter with a mark per cell and pass counts per row, per
//! adapter and in total.

use crate::rig::Verdict;
use crate::table::{ADAPTERS, Awaits, ROWS};
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
    let mut per_column = [(0usize, 0usize); 9];
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
                    cells.push_str(&format!(" ✓ {} |", expect.kind));
                }
                Some(v) => {
                    cells.push_str(&format!(" ✗ {} |", v.got));
                    failures.push(format!(
                        "- {} × {}: {}",
                        row.id,
                        ADAPTERS[col],
                        v.problems.join("; ")
                    ));
                }
                None => {
                    cells.push_str(" ✗ not run |");
                    failures.push(format!("- {} × {}: not run", row.id, ADAPTERS[col]));
                }
            }
        }
        passed += row_pass;
        total += row_total;
        let mark = match row.awaits {
            Some(Awaits::SizeBudget) => " ¹",
            Some(Awaits::Scrubber) => " ²",
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
    out.push_str("\n\n¹ needs the response size budget; ² needs the process-wide secret scrubber.\n");
    if !failures.is_empty() {
        out.push_str(&format!("\n{} failed cells:\n", failures.len()));
        out.push_str(&failures.join("\n"));
        out.push('\n');
    }
    out
}

/// `target/fault-matrix.md`, next to the test binary's build directory.
pub fn write(text: &str) -> std::path::PathBuf {
    write_named("fault-matrix.md", text)
}

/// Writes `text` to `target/<name>` and returns the path.
pub fn write_named(name: &str, text: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    // target/<profile>/deps/<binary>
    let target = exe
        .ancestors()
        .nth(3)
        .map(std::path::Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir);
    let path = target.join(name);
    if let Err(e) = std::fs::write(&path, text) {
        eprintln!("cannot write {}: {e}", path.display());
    }
    path
}
