//! [`tighten_within`]: the narrowing fitted to the call's token budget.
//!
//! The first caps ([`STRING_CAP`], [`ITEM_CAP`], [`MAP_CAP`]) keep a small schema's answer
//! short, but a large schema has many strings and lists, each of which may take its cap (and a
//! recursive one has no longest answer at all): together they can exceed the budget, and the
//! answer ends there, cut off. So the longest answer of the narrowed schema is measured
//! ([`worst_case`], in tokens), and while it does not fit the budget (less the end-of-turn
//! token), the schema is narrowed again one rung further down [`LADDER`]:
//!
//! | rung | strings | lists | maps | pattern repetitions | recursion, lists of anything | optional properties |
//! |---|---:|---:|---:|---:|---|---|
//! | 0 | 160 | 5 | 8 | 32 | kept | kept |
//! | 1 | 64 | 3 | 4 | 16 | cut | kept |
//! | 2 | 32 | 2 | 2 | 8 | cut | kept |
//! | 3 | 16 | 1 | 1 | 4 | cut | kept |
//! | 4 | 16 | 1 | 1 | 4 | cut | left out |
//! | 5 | 8 | 1 | 1 | 2 | cut | left out |
//! | 6 | 4 | 1 | 1 | 1 | cut | left out |
//!
//! A cap never goes below the schema's `minLength`, `minItems`, `minProperties` or number of
//! `required` names. **Recursion cut**: a `$ref` back into a schema it is inside (found by a
//! depth-first walk of the references from the root, [`recursion_cuts`]) is not decoded: the
//! array whose items it is gets `maxItems: 0` (when `minItems` allows), the optional property
//! whose value it is is left out of its closed object. **Lists of anything**: an array whose
//! `items` may be any JSON value (absent, `true`, `{}`) gets `maxItems: 0` when `minItems`
//! allows. **Beside other schemas** ([`Beside`]): from the second rung the string and list caps
//! also apply where another schema applies to the same value, when no schema of the document
//! needs a longer one. **Required names not declared**: from the second rung, an object that
//! allows any value for keys it does not declare, and could be closed but for `required` names
//! among them, declares those as strings of at most the rung's length and is closed.
//! **Optional properties left out**: a
//! closed object keeps only its `required` ones (and enough for `minProperties`). Each applies
//! only where the other narrowings do (a schema evaluated alone, see [`super`]), and each is
//! named in the ledger with its value, beside a summary at the root with the budget and the
//! worst case before and after. When even the last rung does not fit (required properties,
//! `minItems`, `minLength` or an uncut recursion need more), that is said in the ledger rather
//! than narrowing further: the answer may then end at the budget.

use super::size::{Size, worst_case};
use super::{
    ITEM_CAP, MAP_CAP, REPEAT_CAP, STRING_CAP, Tightened, each_subschema, local_pointer,
    tighten_with,
};
use geode::schema::ResponseSchema;
use geode::vocab::Transform;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// The bounds of one narrowing rung.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Caps {
    /// The `maxLength` of a free string.
    pub string: u64,
    /// The `maxItems` of a list.
    pub items: u64,
    /// The `maxProperties` of a map.
    pub map: u64,
    /// The most repetitions of one part of a `pattern`.
    pub repeat: u32,
    /// Whether an array whose items may be anything gets no items.
    pub cut_free: bool,
    /// Whether optional properties are kept.
    pub optional: bool,
}

/// The first rung: what every schema gets.
pub(super) const FIRST_CAPS: Caps = Caps {
    string: STRING_CAP,
    items: ITEM_CAP,
    map: MAP_CAP,
    repeat: REPEAT_CAP,
    cut_free: false,
    optional: true,
};

/// The rungs, from the first caps down (see the module docs); recursion is cut from the
/// second on.
pub(super) const LADDER: [Caps; 7] = [
    FIRST_CAPS,
    rung(64, 3, 4, 16, true),
    rung(32, 2, 2, 8, true),
    rung(16, 1, 1, 4, true),
    rung(16, 1, 1, 4, false),
    rung(8, 1, 1, 2, false),
    rung(4, 1, 1, 1, false),
];

const fn rung(string: u64, items: u64, map: u64, repeat: u32, optional: bool) -> Caps {
    Caps {
        string,
        items,
        map,
        repeat,
        cut_free: true,
        optional,
    }
}

/// Which caps of a rung past the first also apply to a string or array that is not alone
/// (inside `allOf`, a `$defs` entry referenced beside other keywords, ...): another schema
/// applies to the same value there, so a cap is only safe when no schema of the whole document
/// needs a longer value: strings when no `minLength` exceeds the cap and no `pattern`,
/// `format` or `enum`/`const` string longer than it appears anywhere; arrays when no
/// `minItems` exceeds the cap and no `contains` or `enum`/`const` list longer than it appears.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Beside {
    pub strings: bool,
    pub items: bool,
}

impl Beside {
    /// What `schema` allows at `caps` (nothing on the first rung).
    pub(super) fn of(schema: &Value, caps: &Caps) -> Self {
        if !caps.cut_free {
            return Self::default();
        }
        let mut beside = Self {
            strings: true,
            items: true,
        };
        beside.scan(schema, caps);
        beside
    }

    fn scan(&mut self, node: &Value, caps: &Caps) {
        match node {
            Value::Array(values) => values.iter().for_each(|v| self.scan(v, caps)),
            Value::Object(map) => {
                let above =
                    |k: &str, cap: u64| map.get(k).and_then(Value::as_u64).is_some_and(|m| m > cap);
                if above("minLength", caps.string)
                    || map.get("pattern").is_some_and(Value::is_string)
                    || map.get("format").is_some_and(Value::is_string)
                {
                    self.strings = false;
                }
                if above("minItems", caps.items) || map.contains_key("contains") {
                    self.items = false;
                }
                for key in ["enum", "const"] {
                    if let Some(value) = map.get(key) {
                        self.literals(value, caps, key == "enum");
                    }
                }
                map.values().for_each(|v| self.scan(v, caps));
            }
            _ => {}
        }
    }

    /// An `enum` (a list of values) or `const` value: a long string or list rules out a cap.
    fn literals(&mut self, value: &Value, caps: &Caps, list: bool) {
        let values = match (list, value) {
            (true, Value::Array(values)) => values.as_slice(),
            _ => std::slice::from_ref(value),
        };
        for v in values {
            match v {
                Value::String(s)
                    if u64::try_from(s.chars().count()).unwrap_or(u64::MAX) > caps.string =>
                {
                    self.strings = false;
                }
                Value::Array(a) if u64::try_from(a.len()).unwrap_or(u64::MAX) > caps.items => {
                    self.items = false;
                }
                _ => {}
            }
        }
    }
}

/// Where a recursion is cut: at an array (its items recur) or an object (these properties do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Cut {
    Items,
    Properties(Vec<String>),
}

/// Recursion cuts by the JSON Pointer (into the caller's schema) of the array or object.
pub(super) type Cuts = BTreeMap<String, Cut>;

/// The schema narrowed for decoding so that its longest answer fits `max_tokens` (see the
/// module docs); [`super::tighten`] when it fits already.
pub fn tighten_within(schema: &ResponseSchema, max_tokens: u32) -> Tightened {
    let limit = u64::from(max_tokens.saturating_sub(1));
    let first = tighten_with(schema, &FIRST_CAPS, &Cuts::new());
    let before = worst_case(&first.schema);
    if fits(before, limit) {
        return first;
    }
    let cuts = recursion_cuts(schema.as_value());
    let mut last = (first, before, FIRST_CAPS);
    for caps in &LADDER[1..] {
        let t = tighten_with(schema, caps, &cuts);
        let size = worst_case(&t.schema);
        last = (t, size, *caps);
        if fits(size, limit) {
            break;
        }
    }
    let (mut t, after, caps) = last;
    let summary = Transform {
        pointer: String::new(),
        action: describe(max_tokens, before, after, &caps, fits(after, limit)),
    };
    // After the root's whitespace and type, before the other narrowings.
    let at = t
        .transforms
        .iter()
        .take_while(|t| {
            t.action.starts_with("compact whitespace") || t.action.starts_with("type: object")
        })
        .count();
    t.transforms.insert(at, summary);
    t
}

fn fits(size: Option<Size>, limit: u64) -> bool {
    size.is_some_and(|s| s.tokens() <= limit)
}

fn about(size: Option<Size>) -> String {
    size.map_or_else(
        || "unbounded".to_owned(),
        |s| format!("about {} tokens", s.tokens()),
    )
}

/// The root's ledger entry for the rung reached.
fn describe(
    max_tokens: u32,
    before: Option<Size>,
    after: Option<Size>,
    caps: &Caps,
    fits: bool,
) -> String {
    let optional = if caps.optional {
        ""
    } else {
        ", optional properties left out"
    };
    let rung = format!(
        "strings maxLength {}, lists maxItems {}, maps maxProperties {}, pattern repetitions at \
         most {}, recursion and lists of anything cut{optional}",
        caps.string, caps.items, caps.map, caps.repeat
    );
    if fits {
        format!(
            "narrowed to fit max_tokens {max_tokens} for decoding: {rung} (the longest answer \
             was {}, now {})",
            about(before),
            about(after)
        )
    } else {
        format!(
            "max_tokens {max_tokens} may not be enough: the longest answer is {} even with \
             {rung} (what the schema requires needs more, or a recursion could not be cut); \
             an answer may end at the budget",
            about(after)
        )
    }
}

/// Where to cut each recursion of `schema`: a depth-first walk of its local `$ref`s from the
/// root; a reference to a schema being walked (or one it is inside) closes a cycle, and is cut
/// at the nearest array it is the items of, or object property it is the value of (through
/// `anyOf`/`oneOf`/`allOf` entries).
pub(super) fn recursion_cuts(schema: &Value) -> Cuts {
    let mut walk = RefWalk {
        doc: schema,
        state: HashMap::new(),
        back: Vec::new(),
    };
    walk.region(String::new());
    let mut cuts = Cuts::new();
    for site in walk.back {
        let Some((at, cut)) = container(&site) else {
            continue;
        };
        match (cuts.get_mut(&at), cut) {
            (Some(Cut::Properties(names)), Cut::Properties(more)) => names.extend(more),
            (None, cut) => {
                cuts.insert(at, cut);
            }
            _ => {}
        }
    }
    cuts
}

struct RefWalk<'a> {
    doc: &'a Value,
    /// `false` while a region is walked, `true` once done.
    state: HashMap<String, bool>,
    /// Pointers of the `$ref`s that close a cycle.
    back: Vec<String>,
}

impl RefWalk<'_> {
    fn region(&mut self, pointer: String) {
        let Some(node) = self.doc.pointer(&pointer) else {
            return;
        };
        self.state.insert(pointer.clone(), false);
        let mut sites = Vec::new();
        ref_sites(node, pointer.clone(), &mut sites);
        for (site, target) in sites {
            let walking = self
                .state
                .iter()
                .any(|(p, done)| !done && inside(p, &target));
            if walking || inside(&site, &target) {
                self.back.push(site);
            } else if !self.state.contains_key(&target) {
                self.region(target);
            }
        }
        self.state.insert(pointer, true);
    }
}

/// Whether `pointer` is `outer` or inside it.
fn inside(pointer: &str, outer: &str) -> bool {
    pointer == outer
        || outer.is_empty()
        || pointer
            .strip_prefix(outer)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The local `$ref`s applied to the value of `node` or its parts, without following them (nor
/// entering `$defs`, or keywords left to validation).
fn ref_sites(node: &Value, pointer: String, out: &mut Vec<(String, String)>) {
    let Value::Object(map) = node else {
        return;
    };
    if let Some(target) = map.get("$ref").and_then(local_pointer) {
        out.push((pointer.clone(), target));
    }
    each_subschema(map, &pointer, false, &mut |child, at| {
        ref_sites(child, at, out)
    });
}

/// The array or object (pointer) where the `$ref` at `site` is cut, and how.
fn container(site: &str) -> Option<(String, Cut)> {
    let mut parts: Vec<&str> = site.split('/').collect();
    // Up through combinator entries: `.../anyOf/0`.
    while parts.len() >= 3
        && parts[parts.len() - 1].parse::<usize>().is_ok()
        && ["anyOf", "oneOf", "allOf"].contains(&parts[parts.len() - 2])
    {
        parts.truncate(parts.len() - 2);
    }
    let n = parts.len();
    if n >= 2 && parts[n - 1] == "items" {
        return Some((parts[..n - 1].join("/"), Cut::Items));
    }
    if n >= 3 && parts[n - 2] == "properties" {
        let name = parts[n - 1].replace("~1", "/").replace("~0", "~");
        return Some((parts[..n - 2].join("/"), Cut::Properties(vec![name])));
    }
    None
}
