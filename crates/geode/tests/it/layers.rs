//! The layers of `crates/geode/src` point one way (docs/architecture.md#layers): this reads
//! every source file's `crate::` and `super::` paths (outside comments and test modules) and
//! checks that
//!
//! - no two files import each other, directly or through others (no import cycle);
//! - `vocab` imports nothing of the crate, `schema/` imports only `schema` and `vocab`, and the
//!   ledger imports only `schema` and `vocab`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module path (`llm::adapter`) → the source text that counts (no comments, no test modules).
fn modules() -> BTreeMap<String, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            if !name.ends_with(".rs") || name.ends_with("_tests.rs") || name == "tests.rs" {
                continue;
            }
            let rel = path.strip_prefix(&root).unwrap().with_extension("");
            let mut parts: Vec<String> = rel.iter().map(|p| p.to_str().unwrap().into()).collect();
            if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
                parts.pop();
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            let code: String = code
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            out.insert(parts.join("::"), code);
        }
    }
    out
}

/// The longest known module that `path` (a `::`-separated path) starts with.
fn resolve(path: &[&str], known: &BTreeMap<String, String>) -> Option<String> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].join("::"))
        .find(|m| known.contains_key(m))
}

fn path_at(code: &str, start: usize) -> (Vec<&str>, usize) {
    let end = code[start..]
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .map_or(code.len(), |i| start + i);
    let segs = code[start..end]
        .split("::")
        .filter(|s| !s.is_empty())
        .collect();
    (segs, end)
}

/// Every module `module` imports.
fn imports(module: &str, code: &str, known: &BTreeMap<String, String>) -> BTreeSet<String> {
    let mut deps = BTreeSet::new();
    let parent: Vec<&str> = module.split("::").collect();
    let parent = &parent[..parent.len().saturating_sub(1)];
    for (prefix, base) in [("crate::", Vec::new()), ("super::", parent.to_vec())] {
        for (at, _) in code.match_indices(prefix) {
            let before = code[..at].chars().last();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let (segs, end) = path_at(code, at + prefix.len());
            let mut full = base.clone();
            full.extend(segs.iter().copied());
            let mut targets = vec![full.clone()];
            if code[end..].starts_with('{') {
                let group = &code[end + 1..end + code[end..].find('}').unwrap_or(1)];
                for item in group.split(',') {
                    let mut with_item = full.clone();
                    with_item.extend(item.trim().split("::").filter(|s| !s.is_empty()));
                    targets.push(with_item);
                }
            }
            for t in targets {
                if let Some(m) = resolve(&t, known).filter(|m| m != module) {
                    deps.insert(m);
                }
            }
        }
    }
    deps
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let known = modules();
    known
        .iter()
        .map(|(m, code)| (m.clone(), imports(m, code, &known)))
        .collect()
}

/// The modules on some cycle through `start`, if any (depth-first search back to `start`).
fn cycle_through(start: &str, g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn walk(
        at: &str,
        start: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        seen: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> bool {
        for next in g.get(at).into_iter().flatten() {
            if next == start {
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(next, start, g, seen, path) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![start.to_owned()];
    walk(start, start, g, &mut BTreeSet::new(), &mut path).then_some(path)
}

#[test]
fn no_file_imports_itself_through_others() {
    let g = graph();
    assert!(g.len() > 50, "found only {} modules", g.len());
    let cycles: Vec<String> = g
        .keys()
        .filter_map(|m| cycle_through(m, &g))
        .map(|c| c.join(" → "))
        .collect();
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn lower_layers_import_nothing_above_them() {
    let g = graph();
    let allowed = |module: &str| -> Option<&[&str]> {
        match module {
            "vocab" => Some(&[]),
            "ledger" => Some(&["schema", "vocab"]),
            m if m == "schema" || m.starts_with("schema::") => Some(&["schema", "vocab"]),
            _ => None,
        }
    };
    let mut wrong = Vec::new();
    for (module, deps) in &g {
        let Some(ok) = allowed(module) else { continue };
        for dep in deps {
            let top = dep.split("::").next().unwrap_or_default();
            if !ok.contains(&top) {
                wrong.push(format!("{module} imports {dep}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_import_reader_sees_groups_and_super_paths() {
    let known: BTreeMap<String, String> = ["a", "a::b", "a::c", "d"]
        .into_iter()
        .map(|m| (m.to_owned(), String::new()))
        .collect();
    let deps = imports(
        "a::b",
        "use super::c::X;\nuse crate::{d::Y, a::c};\nlet z = crate::d::f();",
        &known,
    );
    assert_eq!(deps, BTreeSet::from(["a::c".to_owned(), "d".to_owned()]));
}

/// A user who depends on geode does not get the scripted test adapter: it is behind the
/// `testing` feature, which only geode's own tests, benches and doctests turn on.
#[test]
fn the_scripted_adapter_is_not_in_the_default_features() {
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    let manifest: toml::Table = toml::from_str(&manifest).unwrap();
    let features = manifest["features"].as_table().unwrap();
    let default: Vec<&str> = features["default"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f.as_str())
        .collect();
    assert!(
        !default.contains(&"testing"),
        "default features: {default:?}"
    );
    assert!(features.contains_key("testing"));
    let dev = manifest["dev-dependencies"]["geode"]["features"]
        .as_array()
        .unwrap();
    assert!(dev.iter().any(|f| f.as_str() == Some("testing")), "{dev:?}");
}

/// Each public type has one path: only the crate root re-exports from elsewhere in the crate
/// (the facade: the client and its errors); a module may lift items out of a private child of
/// its own, but never re-exports another module's.
#[test]
fn only_the_crate_root_re_exports() {
    let mut re_exports = Vec::new();
    for (module, code) in modules() {
        if module.is_empty() {
            continue;
        }
        for line in code.lines() {
            let line = line.trim_start();
            if line.starts_with("pub use crate::") {
                re_exports.push(format!("{module}: {line}"));
            }
        }
    }
    assert!(re_exports.is_empty(), "{re_exports:#?}");
    let root = &modules()[""];
    assert!(
        root.contains("pub use client::{"),
        "the root re-exports the client"
    );
    assert!(
        !root.contains("pub mod client"),
        "and the client module stays private"
    );
}
