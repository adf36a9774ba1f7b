//! The release link's function order (`link/hot-symbols.txt`, see `build.rs` and
//! `scripts/hot-symbols.sh`) is a usable lld `--symbol-ordering-file`: one symbol per line, no
//! duplicates, and the worker's own path in it (the binary's `main` and the worker's loop). The
//! list's order is callgrind's listing order, not strictly the order functions first run; what
//! counts for a worker's memory is that its functions sit together.

#[test]
fn the_hot_symbol_list_holds_the_worker_path_one_symbol_a_line() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/link/hot-symbols.txt"))
            .expect("link/hot-symbols.txt exists (scripts/hot-symbols.sh writes it)");
    let symbols: Vec<&str> = text.lines().collect();
    assert!(symbols.len() > 500, "only {} symbols", symbols.len());
    for s in &symbols {
        assert!(
            !s.is_empty() && !s.contains(char::is_whitespace),
            "not one symbol: {s:?}"
        );
    }
    let unique: std::collections::HashSet<&&str> = symbols.iter().collect();
    assert_eq!(unique.len(), symbols.len(), "duplicates");
    // The binary's entry and the worker's serve loop, as mangled by rustc (legacy scheme).
    for prefix in ["_ZN5geode4main17h", "_ZN5geode10cmd_worker5serve"] {
        assert!(
            symbols.iter().any(|s| s.starts_with(prefix)),
            "no {prefix}… in the list"
        );
    }
}
