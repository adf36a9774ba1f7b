//! The README's wiring table is generated from the registry; this keeps them equal.

#[test]
fn readme_wiring_table_matches_the_registry() {
    let readme = include_str!("../../../../README.md");
    let start = readme
        .find("<!-- wiring-table:start -->\n")
        .expect("start marker")
        + "<!-- wiring-table:start -->\n".len();
    let end = readme
        .find("<!-- wiring-table:end -->")
        .expect("end marker");
    assert_eq!(
        &readme[start..end],
        geode::llm::registry::markdown_table(),
        "README drifted from the registry: regenerate with `geode adapters --markdown`"
    );
}
