//! The layers of `crates/geode/src` read bottom-up (docs/architecture.md#layers). This reads every
//! source file as Rust tokens (so comments, strings and doc text never count), drops every item
//! under `#[cfg(test)]` wherever it stands, and collects each module's imports: `crate::`,
//! `super::` and `self::` paths, and paths through the module's own children (`entry::encode`).
//! On that graph it checks that
//!
//! - no set of modules imports each other, directly or through others (no import cycle);
//! - each module imports only its own layer and the layers below it, in the order of [`LAYERS`];
//! - `vocab`, `secret` and `digest` import nothing above them, `schema` and `media` only
//!   themselves and those, the ledger only `schema`, `media` and those.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// The crate's top-level modules, bottom floor first. A module may import its own floor and the
/// floors below it; the crate root (`lib.rs`) stands above all of them.
const LAYERS: &[&[&str]] = &[
    &["vocab", "secret", "digest"],
    &["schema", "media"],
    &["ledger"],
    &["llm"],
    &["agent"],
    &["redis"],
    &["cache"],
    &["protocol"],
    &["batch"],
    &["config"],
    &["client"],
];

/// Module path (`llm::adapter`) → the tokens that count (test items dropped).
fn modules() -> BTreeMap<String, TokenStream> {
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
            let rel = path.strip_prefix(&root).unwrap().with_extension("");
            let is_test = name.ends_with("_tests.rs") || rel.iter().any(|p| p == "tests");
            if !name.ends_with(".rs") || is_test {
                continue;
            }
            let mut parts: Vec<String> = rel.iter().map(|p| p.to_str().unwrap().into()).collect();
            if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
                parts.pop();
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let tokens: TokenStream = text
                .parse()
                .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
            out.insert(parts.join("::"), without_test_items(tokens));
        }
    }
    out
}

/// `tokens` with every item under `#[cfg(test)]` left out, at any depth.
fn without_test_items(tokens: TokenStream) -> TokenStream {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Vec::with_capacity(trees.len());
    let mut i = 0;
    while i < trees.len() {
        if is_cfg_test(&trees[i..]) {
            i = end_of_item(&trees, i + 2);
            continue;
        }
        out.push(match &trees[i] {
            TokenTree::Group(g) => {
                let mut inner =
                    proc_macro2::Group::new(g.delimiter(), without_test_items(g.stream()));
                inner.set_span(g.span());
                TokenTree::Group(inner)
            }
            other => other.clone(),
        });
        i += 1;
    }
    out.into_iter().collect()
}

/// Whether `trees` starts with `#[cfg(test)]`.
fn is_cfg_test(trees: &[TokenTree]) -> bool {
    let [TokenTree::Punct(hash), TokenTree::Group(attr), ..] = trees else {
        return false;
    };
    hash.as_char() == '#'
        && attr.delimiter() == Delimiter::Bracket
        && attr.stream().to_string().replace(' ', "") == "cfg(test)"
}

/// The index just past the item that starts at `i` (after its attribute): more attributes, then
/// everything up to a `;` or the item's body in braces (a `use` item always ends at its `;`).
fn end_of_item(trees: &[TokenTree], mut i: usize) -> usize {
    while matches!(&trees.get(i), Some(TokenTree::Punct(p)) if p.as_char() == '#') {
        i += 2;
    }
    let is_use = trees[i..]
        .iter()
        .take_while(|t| !matches!(t, TokenTree::Group(_)))
        .any(|t| matches!(t, TokenTree::Ident(id) if id == "use"));
    while let Some(t) = trees.get(i) {
        i += 1;
        match t {
            TokenTree::Punct(p) if p.as_char() == ';' => break,
            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace && !is_use => break,
            _ => {}
        }
    }
    i
}

/// The longest known module that `path` starts with.
fn resolve(path: &[String], known: &BTreeMap<String, TokenStream>) -> Option<String> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].join("::"))
        .find(|m| known.contains_key(m))
}

/// Every path a token list names, as segments, each with its `::`-group items spelled out
/// (`a::{b, c::d}` gives `a`, `a::b` and `a::c::d`). A path's first segment is where it starts.
fn paths(tokens: &[TokenTree], out: &mut Vec<Vec<String>>) {
    let mut i = 0;
    while i < tokens.len() {
        let starts_path = matches!(&tokens[i], TokenTree::Ident(_))
            && !(i >= 2 && is_colon(&tokens[i - 1]) && is_colon(&tokens[i - 2]))
            && !(i >= 1 && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '.'));
        if starts_path {
            i = path_at(tokens, i, Vec::new(), out);
            continue;
        }
        if let TokenTree::Group(g) = &tokens[i] {
            paths(&g.stream().into_iter().collect::<Vec<_>>(), out);
        }
        i += 1;
    }
}

/// Reads the path at `tokens[i]` below `prefix` into `out`; the index just past it.
fn path_at(
    tokens: &[TokenTree],
    mut i: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    loop {
        match tokens.get(i) {
            Some(TokenTree::Ident(id)) => prefix.push(id.to_string()),
            Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
                let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                for item in inner.split(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ','))
                {
                    if !item.is_empty() {
                        path_at(item, 0, prefix.clone(), out);
                    }
                }
                out.push(prefix);
                return i + 1;
            }
            _ => break,
        }
        i += 1;
        if tokens.get(i).is_some_and(is_colon) && tokens.get(i + 1).is_some_and(is_colon) {
            i += 2;
        } else {
            break;
        }
    }
    out.push(prefix);
    i
}

fn is_colon(t: &TokenTree) -> bool {
    matches!(t, TokenTree::Punct(p) if p.as_char() == ':')
}

/// Every module `module` imports: paths from `crate`, `super` (any number) and `self`, and paths
/// through a child module of its own.
fn imports(
    module: &str,
    tokens: &TokenStream,
    known: &BTreeMap<String, TokenStream>,
) -> BTreeSet<String> {
    let here: Vec<String> = module
        .split("::")
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    let mut found = Vec::new();
    paths(&tokens.clone().into_iter().collect::<Vec<_>>(), &mut found);
    let mut deps = BTreeSet::new();
    for path in found {
        let (base, rest) = match path[0].as_str() {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (here.clone(), &path[1..]),
            "super" => {
                let ups = path.iter().take_while(|s| *s == "super").count();
                (
                    here[..here.len().saturating_sub(ups)].to_vec(),
                    &path[ups..],
                )
            }
            child if path.len() > 1 && known.contains_key(&below(&here, child)) => {
                (here.clone(), &path[..])
            }
            _ => continue,
        };
        let full: Vec<String> = base.into_iter().chain(rest.iter().cloned()).collect();
        if let Some(m) = resolve(&full, known).filter(|m| m != module) {
            deps.insert(m);
        }
    }
    deps
}

/// The path of `child` below the module at `here`.
fn below(here: &[String], child: &str) -> String {
    let mut path = here.to_vec();
    path.push(child.to_owned());
    path.join("::")
}

type Graph = BTreeMap<String, BTreeSet<String>>;

fn graph() -> Graph {
    let known = modules();
    known
        .iter()
        .map(|(m, code)| (m.clone(), imports(m, code, &known)))
        .collect()
}

/// The graph's strongly connected sets of more than one node (Tarjan), each sorted.
fn cycles(g: &Graph) -> BTreeSet<Vec<String>> {
    struct Tarjan<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: BTreeSet<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.g.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut set = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    set.push(w.to_owned());
                    if w == v {
                        break;
                    }
                }
                if set.len() > 1 {
                    set.sort();
                    self.out.insert(set);
                }
            }
        }
    }
    let mut t = Tarjan {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: BTreeSet::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.out
}

/// The module graph seen one level at a time: for each module, its children (each with all
/// below it) as nodes, and an arrow where anything in one child's subtree imports anything in
/// another's. A parent is its children's facade and they may reach its shared items through
/// `super::`, so arrows to and from the parent's own file are not a cycle; arrows between
/// siblings are. Keyed by the parent (`""` is the crate root).
fn sibling_graphs(g: &Graph) -> BTreeMap<String, Graph> {
    let mut out: BTreeMap<String, Graph> = BTreeMap::new();
    for (module, deps) in g {
        for dep in deps {
            let a: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
            let b: Vec<&str> = dep.split("::").filter(|s| !s.is_empty()).collect();
            let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
            if common == a.len() || common == b.len() {
                continue;
            }
            out.entry(a[..common].join("::"))
                .or_default()
                .entry(a[common].to_owned())
                .or_default()
                .insert(b[common].to_owned());
        }
    }
    out
}

/// Every import cycle, as `parent: child, child, ...` (`(root)` for the crate root).
fn import_cycles(g: &Graph) -> BTreeSet<String> {
    sibling_graphs(g)
        .iter()
        .flat_map(|(parent, siblings)| {
            let parent = if parent.is_empty() { "(root)" } else { parent };
            cycles(siblings)
                .into_iter()
                .map(move |c| format!("{parent}: {}", c.join(", ")))
        })
        .collect()
}

/// The floor of a module: its top-level module's place in [`LAYERS`]; the root stands above all.
fn floor(module: &str) -> usize {
    let top = module.split("::").next().unwrap_or_default();
    LAYERS
        .iter()
        .position(|floor| floor.contains(&top))
        .unwrap_or_else(|| {
            assert!(module.is_empty(), "`{top}` has no floor in LAYERS");
            LAYERS.len()
        })
}

/// Every import that runs from a lower floor to a higher one, as (importer's top, imported's top).
fn upward(g: &Graph) -> BTreeMap<(String, String), Vec<String>> {
    let mut out: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (module, deps) in g {
        for dep in deps {
            if floor(dep) > floor(module) {
                let top = |m: &str| m.split("::").next().unwrap_or_default().to_owned();
                out.entry((top(module), top(dep)))
                    .or_default()
                    .push(format!("{module} imports {dep}"));
            }
        }
    }
    out
}

#[test]
fn no_modules_import_each_other_through_others() {
    let g = graph();
    assert!(g.len() > 50, "found only {} modules", g.len());
    let found = import_cycles(&g);
    assert!(found.is_empty(), "import cycles: {found:#?}");
}

/// The rule behind the named ones: `agent` imports no `cache`, `batch`, `config` or `client`;
/// `llm` imports no `config` or `agent`; `cache` imports no `batch` or `config`; and so on for
/// every pair of floors.
#[test]
fn every_module_imports_only_its_floor_and_below() {
    let wrong: Vec<String> = upward(&graph())
        .into_iter()
        .map(|((a, b), lines)| format!("`{a}` imports no `{b}`:\n  {}", lines.join("\n  ")))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The guard would see today's circle had it come back: the cache's test module declared
/// above its imports hid them from the reader this one replaced.
#[test]
fn the_old_circle_would_be_seen() {
    let known = known_of(&[
        "",
        "agent",
        "agent::worker",
        "cache",
        "cache::key",
        "config",
    ]);
    let cache = "#[cfg(test)]\nmod tests;\nuse crate::agent::worker::X;\nuse crate::config::C;";
    let mut g: Graph = known.keys().map(|m| (m.clone(), BTreeSet::new())).collect();
    g.insert(
        "cache".into(),
        imports("cache", &without_test_items(cache.parse().unwrap()), &known),
    );
    g.insert(
        "agent::worker".into(),
        BTreeSet::from(["cache::key".to_owned()]),
    );
    assert_eq!(
        import_cycles(&g),
        BTreeSet::from(["(root): agent, cache".to_owned()])
    );
    assert_eq!(
        upward(&g).into_keys().collect::<Vec<_>>(),
        [
            ("agent".to_owned(), "cache".to_owned()),
            ("cache".into(), "config".into())
        ]
    );
}

#[test]
fn the_foundations_import_only_what_is_below_them() {
    let g = graph();
    let allowed = |module: &str| -> Option<&[&str]> {
        let top = module.split("::").next().unwrap_or_default();
        match top {
            "vocab" | "secret" | "digest" => Some(&["vocab", "secret", "digest"]),
            "schema" => Some(&["schema", "vocab", "secret", "digest"]),
            "media" => Some(&["media", "vocab", "secret", "digest"]),
            "ledger" => Some(&["schema", "media", "vocab", "secret", "digest"]),
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

fn known_of(names: &[&str]) -> BTreeMap<String, TokenStream> {
    names
        .iter()
        .map(|m| ((*m).to_owned(), TokenStream::new()))
        .collect()
}

#[test]
fn the_import_reader_sees_groups_super_self_and_child_paths() {
    let known = known_of(&["", "a", "a::b", "a::c", "a::c::e", "d", "f"]);
    let code = "use super::c::X;\nuse crate::{d::Y, a::c};\nlet z = crate::d::f();";
    let deps = imports("a::b", &code.parse().unwrap(), &known);
    assert_eq!(deps, BTreeSet::from(["a::c".to_owned(), "d".to_owned()]));
    let code = "mod c; use c::e::Z; fn g() { self::b::h(); super::f::i(); x.c::<u8>(); }";
    let deps = imports("a", &code.parse().unwrap(), &known);
    assert_eq!(
        deps,
        BTreeSet::from(["a::b".to_owned(), "a::c::e".to_owned(), "f".to_owned()])
    );
}

/// The old reader cut each file at its first `#[cfg(test)]`, so a file that declared its test
/// module above its imports showed none of them; comments and strings that name paths count not.
#[test]
fn the_import_reader_drops_test_items_wherever_they_stand() {
    let known = known_of(&["", "a", "b", "c", "d"]);
    let code = r#"
        #[cfg(test)]
        mod tests;
        use crate::b::X;
        #[cfg(test)]
        #[allow(dead_code)]
        mod inline { use crate::c::Y; }
        #[cfg(test)] use crate::{c::Z, c::W};
        // crate::d::in_a_comment
        /// [`crate::d::in_a_doc`]
        fn f() -> &'static str { "crate::d::in_a_string" }
    "#;
    let deps = imports("a", &without_test_items(code.parse().unwrap()), &known);
    assert_eq!(deps, BTreeSet::from(["b".to_owned()]));
}

#[test]
fn the_cycle_finder_sees_a_loop_through_three() {
    let g: Graph = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]
        .into_iter()
        .fold(Graph::new(), |mut g, (x, y)| {
            g.entry(x.into()).or_default().insert(y.into());
            g.entry(y.into()).or_default();
            g
        });
    assert_eq!(
        cycles(&g),
        BTreeSet::from([vec!["a".to_owned(), "b".into(), "c".into()]])
    );
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
    for (module, tokens) in modules() {
        if module.is_empty() {
            continue;
        }
        let code = tokens.to_string().replace(" :: ", "::");
        if code.contains("pub use crate::") {
            re_exports.push(module);
        }
    }
    assert!(re_exports.is_empty(), "{re_exports:#?}");
    let root = modules()[""].to_string();
    assert!(
        root.contains("pub use client :: {"),
        "the root re-exports the client"
    );
    assert!(
        !root.contains("pub mod client"),
        "and the client module stays private"
    );
}
