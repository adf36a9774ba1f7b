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

/// The repository root (`crates/geode/../..`).
fn repo() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "target") {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The README is a front door, not a notebook: at most 250 lines, and every `docs/…` file it
/// (or any source comment) links to exists.
#[test]
fn the_readme_is_short_and_its_links_into_docs_resolve() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    assert!(
        readme.lines().count() <= 250,
        "README.md has {} lines",
        readme.lines().count()
    );
    let mut files = Vec::new();
    rust_files(&repo().join("crates"), &mut files);
    let texts = std::iter::once(("README.md".to_owned(), readme)).chain(
        files
            .iter()
            .map(|f| (f.display().to_string(), std::fs::read_to_string(f).unwrap())),
    );
    let mut missing = Vec::new();
    for (name, text) in texts {
        for (at, _) in text.match_indices("docs/") {
            let rest = &text[at..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || "/-_.".contains(c)))
                .unwrap_or(rest.len());
            let target = rest[..end].trim_end_matches('.');
            if target.ends_with(".md") && !repo().join(target).is_file() {
                missing.push(format!("{name}: {target}"));
            }
        }
    }
    assert!(missing.is_empty(), "links to missing docs: {missing:#?}");
}

/// The design lives in the repository: no source points at a file outside it or at an issue
/// number, and the file tree is the module tree (no `#[path]` under any `src/`).
#[test]
fn sources_point_only_inside_the_repository_and_have_no_path_attributes() {
    let mut files = Vec::new();
    rust_files(&repo().join("crates"), &mut files);
    let outside = regex::Regex::new(
        r"(?i)\.\./shared|reference-behaviour\.md|design\.md|field-survey\.md|\bissues? #?\d+\b|\(#\d+\)|(^|[^/])\bwire\.md",
    )
    .unwrap();
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let in_src = file.components().any(|c| c.as_os_str() == "src");
        for (n, line) in text.lines().enumerate() {
            if outside.is_match(line) {
                found.push(format!("{}:{}: {line}", file.display(), n + 1));
            }
            if in_src && line.trim_start().starts_with("#[path") {
                found.push(format!("{}:{}: {line}", file.display(), n + 1));
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}
