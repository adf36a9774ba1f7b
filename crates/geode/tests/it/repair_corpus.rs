//! The repair tier measured on a corpus of malformed answers written for it
//! (`tests/corpus/repair.json`): every case's outcome against its expected one, and the
//! table docs/repair.md quotes. A wrong repair (a value other than the expected one, or any
//! value where the case is not repairable) fails the test; so does a missed repair.
//!
//! `cargo test -p geode --test it repair_corpus -- --nocapture` prints the table.

use geode::schema::ResponseSchema;
use geode::schema::repair::{Ending, NotRepairable, RepairInput, RepairKind, Repaired, repair};
use geode::schema::validate::CompiledSchema;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

fn corpus() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/repair.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn ending(case: &Value) -> Ending {
    match case["ending"].as_str().unwrap_or("complete") {
        "complete" => Ending::Complete,
        "max_tokens" => Ending::Truncated,
        "refused" => Ending::Refused,
        other => panic!("unknown ending {other}"),
    }
}

#[derive(Default)]
struct Tally {
    repaired: usize,
    refused: usize,
    not_needed: usize,
    wrong: Vec<String>,
    missed: Vec<String>,
    per_kind: BTreeMap<&'static str, usize>,
    per_reason: BTreeMap<&'static str, usize>,
}

#[test]
fn repair_corpus_has_no_wrong_repair() {
    let corpus = corpus();
    let schemas: BTreeMap<&str, (ResponseSchema, CompiledSchema)> = corpus["schemas"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, s)| {
            let s = ResponseSchema::from_value(s.clone()).unwrap();
            let c = CompiledSchema::compile(&s).unwrap();
            (name.as_str(), (s, c))
        })
        .collect();
    let mut t = Tally::default();
    let mut ids = BTreeSet::new();
    for case in corpus["cases"].as_array().unwrap() {
        let id = case["id"].as_str().unwrap();
        assert!(ids.insert(id), "duplicate case id {id}");
        let (schema, compiled) = &schemas[case["schema"].as_str().unwrap()];
        let text = case["text"].as_str().unwrap();
        let got = repair(&RepairInput::new(text, schema, compiled, ending(case)));
        match (&case["expect"], got) {
            (Value::String(s), Err(why)) if s == "not_repairable" => {
                let reason = reason_name(&why);
                assert_eq!(
                    case["reason"].as_str(),
                    Some(reason),
                    "{id}: not repairable, but why: {why}"
                );
                *t.per_reason.entry(reason).or_default() += 1;
                t.refused += 1;
            }
            (Value::String(s), Ok(Repaired::NotNeeded)) if s == "not_needed" => t.not_needed += 1,
            (Value::String(s), Ok(Repaired::Value { value, .. })) => {
                t.wrong
                    .push(format!("{id}: expected {s}, repaired into {value}"));
            }
            (expected, Ok(Repaired::Value { value, repairs })) => {
                if &value != expected {
                    t.wrong
                        .push(format!("{id}: expected {expected}, repaired into {value}"));
                    continue;
                }
                let kinds: BTreeSet<&str> = repairs.iter().map(|r| r.kind.as_str()).collect();
                let want: BTreeSet<&str> = case["kinds"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|k| k.as_str().unwrap())
                    .collect();
                assert_eq!(kinds, want, "{id}: the repairs declared");
                for k in kinds {
                    *t.per_kind.entry(kind_name(k)).or_default() += 1;
                }
                t.repaired += 1;
            }
            (expected, other) => t
                .missed
                .push(format!("{id}: expected {expected}, got {other:?}")),
        }
    }
    let total = ids.len();
    println!(
        "repair corpus: {total} answers ({} repairable, {} not repairable, {} already valid)",
        t.repaired + t.missed.len(),
        t.refused,
        t.not_needed
    );
    println!("| outcome | answers |\n|---|---|");
    println!(
        "| repaired into the expected value, with the expected repair kinds | {} |",
        t.repaired
    );
    println!(
        "| refused as not repairable (truncated, refused, empty, ambiguous, would need invented values) | {} |",
        t.refused
    );
    println!("| left alone: already valid | {} |", t.not_needed);
    println!("| wrong repairs | {} |", t.wrong.len());
    println!("| missed repairs | {} |", t.missed.len());
    println!("repaired, per kind: {:?}", t.per_kind);
    println!("not repairable, per reason: {:?}", t.per_reason);
    assert!(t.wrong.is_empty(), "wrong repairs:\n{}", t.wrong.join("\n"));
    assert!(t.missed.is_empty(), "missed:\n{}", t.missed.join("\n"));
    for kind in RepairKind::ALL {
        let n = t.per_kind.get(kind.as_str()).copied().unwrap_or(0);
        assert!(
            n >= 5,
            "the corpus has {n} repaired cases of {kind}, fewer than 5"
        );
    }
    assert!(t.refused >= 30, "{} not-repairable cases", t.refused);
}

/// The variant of a not-repairable outcome, as the corpus names it.
fn reason_name(why: &NotRepairable) -> &'static str {
    match why {
        NotRepairable::Truncated => "truncated",
        NotRepairable::Refused => "refused",
        NotRepairable::Empty => "empty",
        NotRepairable::TooLarge { .. } => "too_large",
        NotRepairable::NoValue { .. } => "no_value",
        NotRepairable::Ambiguous { .. } => "ambiguous",
        NotRepairable::CutOff { .. } => "cut_off",
        NotRepairable::StillInvalid { .. } => "still_invalid",
        _ => "other",
    }
}

fn kind_name(k: &str) -> &'static str {
    RepairKind::ALL
        .into_iter()
        .find(|kind| kind.as_str() == k)
        .map(RepairKind::as_str)
        .unwrap_or("unknown")
}
