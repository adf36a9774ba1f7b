//! Unit tests of [`super::budget`]: the narrowing fitted to the token budget, one rule each.

use super::budget::{LADDER, recursion_cuts};
use super::size::worst_case;
use super::tests::{assert_narrower, compiles, kind_of, pointers, tighten};
use super::*;

fn within(schema: &Value, max_tokens: u32) -> Tightened {
    tighten_within(
        &ResponseSchema::from_value(schema.clone()).unwrap(),
        max_tokens,
    )
}

/// The longest answer of the decoding schema, in tokens (`None`: unbounded).
fn worst_tokens(t: &Tightened) -> Option<u64> {
    worst_case(&t.schema).map(|s| s.tokens())
}

/// The root's ledger entry for the budget.
fn summary(t: &Tightened) -> &str {
    let entry = t.transforms.iter().find(|t| kind_of(&t.action) == "budget");
    &entry.unwrap().action
}

fn kinds(t: &Tightened) -> Vec<&'static str> {
    t.transforms.iter().map(|t| kind_of(&t.action)).collect()
}

/// An object of `n` optional free strings.
fn many_strings(n: usize) -> Value {
    let properties: Map<String, Value> = (0..n)
        .map(|i| (format!("field_{i}"), json!({"type": "string"})))
        .collect();
    json!({"type": "object", "properties": properties})
}

#[test]
fn a_small_schema_is_left_as_the_first_caps_make_it() {
    let s = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer"},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}}
        },
        "required": ["name"]
    });
    let t = within(&s, 512);
    assert_eq!(t, tighten(&s));
    assert!(worst_tokens(&t).unwrap() < 511);
    assert!(!kinds(&t).contains(&"budget"));
}

/// An integer with both bounds takes at most the longer bound written out; an `int32` (decoded
/// as its range) 11 characters, not [`size::NUMBER_CHARS`].
#[test]
fn a_bounded_integer_counts_its_longest_bound() {
    let free = |s: Value| worst_case(&s).unwrap().free;
    assert_eq!(
        free(json!({"type": "integer", "minimum": 0, "maximum": 100})),
        3
    );
    assert_eq!(
        free(json!({"type": "integer", "minimum": -5, "maximum": 7})),
        2
    );
    assert_eq!(free(json!({"type": "integer", "minimum": 0})), 24);
    assert_eq!(
        free(json!({"type": "number", "minimum": 0, "maximum": 1})),
        24
    );
    let port = json!({"type": "integer", "format": "int32"});
    assert_eq!(free(tighten(&port).schema), 11);
}

#[test]
fn the_worst_case_counts_free_text_as_tokens_and_follows_references() {
    let s = json!({
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/s"}, "n": {"type": "integer"}, "e": {"enum": ["xy", 1]}},
        "$defs": {"s": {"type": "string", "maxLength": 10}},
        "additionalProperties": false
    });
    // {} + 3 keys of 1 char (+6 each) + "" + e's longest literal "xy" (4 chars) fixed; 10 + 24 free.
    let size = worst_case(&s).unwrap();
    assert_eq!((size.free, size.fixed), (34, 2 + 21 + 2 + 4));
    assert_eq!(worst_case(&json!({"type": "string"})), None);
    assert_eq!(
        worst_case(&json!({"type": "array", "items": {"type": "boolean"}})),
        None
    );
    let recursive = json!({"type": "object", "properties": {"next": {"$ref": "#"}}, "additionalProperties": false});
    assert_eq!(worst_case(&recursive), None);
}

#[test]
fn free_strings_shrink_until_the_answer_fits_but_never_below_min_length() {
    let mut s = many_strings(12);
    s["properties"]["long"] = json!({"type": "string", "minLength": 40});
    s["required"] = json!(["long"]);
    let first = within(&s, 4096);
    assert_eq!(
        first.schema["properties"]["field_0"]["maxLength"],
        json!(STRING_CAP)
    );
    let t = within(&s, 400);
    assert!(worst_tokens(&t).unwrap() <= 399, "{:?}", worst_tokens(&t));
    let cap = t.schema["properties"]["field_0"]["maxLength"]
        .as_u64()
        .unwrap();
    assert!(cap < STRING_CAP);
    assert_eq!(
        t.schema["properties"]["long"]["maxLength"],
        json!(40.max(cap))
    );
    let at = pointers(&t)
        .iter()
        .position(|p| *p == ("", "budget"))
        .unwrap();
    let summary = &t.transforms[at].action;
    assert!(
        summary.contains("max_tokens 400") && summary.contains("strings maxLength"),
        "{summary}"
    );
    assert_narrower(
        &t,
        &s,
        &[json!({"long": "x".repeat(40), "field_1": "y".repeat(cap as usize)})],
    );
}

#[test]
fn lists_and_maps_shrink_but_never_below_min_items() {
    let s = json!({
        "type": "object",
        "properties": {
            "free": {"type": "array", "items": {"type": "string", "maxLength": 20}},
            "three": {"type": "array", "minItems": 3, "items": {"type": "string", "maxLength": 20}},
            "map": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 20}}
        },
        "required": ["three"]
    });
    assert_eq!(within(&s, 1024), tighten(&s));
    let t = within(&s, 150);
    let p = &t.schema["properties"];
    assert!(p["free"]["maxItems"].as_u64().unwrap() < ITEM_CAP);
    assert_eq!(p["three"]["maxItems"], json!(3));
    assert!(p["map"]["maxProperties"].as_u64().unwrap() < MAP_CAP);
    assert!(worst_tokens(&t).unwrap() <= 149, "{:?}", worst_tokens(&t));
    assert_narrower(
        &t,
        &s,
        &[json!({"three": ["a", "b", "c"], "free": ["a"], "map": {"k": "v"}})],
    );
}

#[test]
fn a_recursion_is_cut_where_its_items_or_optional_property_recur() {
    let s = json!({
        "type": "object",
        "properties": {"symbols": {"type": "array", "items": {"$ref": "#/definitions/symbol"}}},
        "definitions": {"symbol": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/definitions/symbol"}},
                "parent": {"anyOf": [{"$ref": "#/definitions/symbol"}, {"type": "null"}]}
            },
            "required": ["name"]
        }}
    });
    assert_eq!(worst_tokens(&tighten(&s)), None);
    let cuts = recursion_cuts(&s);
    assert_eq!(cuts.len(), 2, "{cuts:?}");
    let t = within(&s, 512);
    let symbol = &t.schema["definitions"]["symbol"];
    assert_eq!(symbol["properties"]["children"]["maxItems"], json!(0));
    assert!(symbol["properties"].get("parent").is_none());
    assert_eq!(symbol["required"], json!(["name"]));
    assert!(worst_tokens(&t).unwrap() <= 511);
    let actions: Vec<&str> = t.transforms.iter().map(|t| t.action.as_str()).collect();
    assert!(
        actions
            .iter()
            .any(|a| a.starts_with("maxItems: 0") && a.contains("recursion")),
        "{actions:?}"
    );
    assert!(
        actions
            .iter()
            .any(|a| a.starts_with("properties [\"parent\"]")),
        "{actions:?}"
    );
    assert_narrower(
        &t,
        &s,
        &[json!({"symbols": [{"name": "a", "children": []}]})],
    );
}

#[test]
fn optional_properties_are_left_out_last_and_required_ones_kept() {
    let mut s = many_strings(30);
    s["required"] = json!(["field_0", "field_1"]);
    s["minProperties"] = json!(3);
    let t = within(&s, 96);
    let kept: Vec<&String> = t.schema["properties"].as_object().unwrap().keys().collect();
    // The required two, and one optional for minProperties.
    assert_eq!(kept, ["field_0", "field_1", "field_2"]);
    assert_eq!(t.schema["required"], s["required"]);
    assert_eq!(
        t.schema["properties"]["field_0"]["maxLength"],
        json!(LADDER[4].string)
    );
    assert!(worst_tokens(&t).unwrap() <= 95);
    assert!(kinds(&t).contains(&"leave out"));
    assert_narrower(
        &t,
        &s,
        &[json!({"field_0": "a", "field_1": "b", "field_2": "c"})],
    );
}

#[test]
fn what_the_schema_requires_is_kept_and_the_ledger_says_it_may_not_fit() {
    let s = json!({
        "type": "object",
        "properties": {
            "essay": {"type": "string", "minLength": 300},
            "list": {"type": "array", "minItems": 4, "items": {"type": "string", "minLength": 20}}
        },
        "required": ["essay", "list"]
    });
    let t = within(&s, 128);
    assert_eq!(t.schema["properties"]["essay"]["maxLength"], json!(300));
    assert_eq!(t.schema["properties"]["list"]["maxItems"], json!(4));
    assert_eq!(
        t.schema["properties"]["list"]["items"]["maxLength"],
        json!(20)
    );
    let budget = summary(&t);
    assert!(budget.contains("may not be enough"), "{budget}");
    assert!(budget.contains("an answer may end at the budget"));
}

#[test]
fn a_root_that_refers_to_itself_is_cut_when_optional_and_named_when_required() {
    let s = |required: &str| {
        json!({
            "type": "object",
            "properties": {"value": {"type": "integer"}, "next": {"$ref": "#"}},
            "required": [required]
        })
    };
    let t = within(&s("value"), 64);
    assert!(t.schema["properties"].get("next").is_none(), "{}", t.schema);
    assert!(worst_tokens(&t).unwrap() <= 63);
    // The recursion is required: no answer is finite, nothing may be left out.
    let t = within(&s("next"), 256);
    assert!(t.schema["properties"].get("next").is_some());
    let budget = summary(&t);
    assert!(budget.contains("unbounded"), "{budget}");
}

#[test]
fn each_rung_narrows_more_than_the_one_before() {
    for pair in LADDER.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(b.string <= a.string && b.items <= a.items && b.map <= a.map);
        assert!(a.optional || !b.optional);
    }
}

#[test]
fn every_budget_narrowing_still_compiles() {
    let mut s = many_strings(20);
    s["properties"]["tree"] = json!({"type": "array", "items": {"$ref": "#"}});
    s["properties"]["path"] = json!({"type": "string", "pattern": "^(/[a-z]+)+$"});
    s["properties"]["any"] = json!({"type": "array", "items": true});
    for max_tokens in [32, 96, 512] {
        let t = within(&s, max_tokens);
        compiles(&t.schema).unwrap();
    }
}

#[test]
fn pattern_repetitions_shrink_and_lists_of_anything_are_emptied() {
    let s = json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "pattern": "^/([a-z0-9._-]+(/[a-z0-9._-]+)*)$"},
            "anything": {"type": "array"},
            "some": {"type": "array", "minItems": 1, "items": {}},
            "code": {"type": "string", "pattern": "^[A-Z]+$", "minLength": 2}
        },
        "required": ["path", "anything", "some", "code"]
    });
    let first = tighten(&s);
    assert_eq!(worst_tokens(&first), None);
    let t = within(&s, 200);
    let p = &t.schema["properties"];
    assert_eq!(p["anything"]["maxItems"], json!(0));
    // minItems 1: its items must be written; the answer may not fit, and the ledger says so.
    assert_ne!(p["some"]["maxItems"], json!(0));
    // A pattern under a minLength is left as it is (its shortest match might not reach it).
    assert_eq!(p["code"]["pattern"], s["properties"]["code"]["pattern"]);
    let path = p["path"]["pattern"].as_str().unwrap();
    let last = LADDER[LADDER.len() - 1];
    assert!(path.contains(&format!("{{1,{}}}", last.repeat)), "{path}");
    let budget = summary(&t);
    assert!(budget.contains("may not be enough"), "{budget}");
    compiles(&t.schema).unwrap();
    assert_narrower(
        &t,
        &s,
        &[json!({"path": "/ab/cd", "anything": [], "some": [1], "code": "AB"})],
    );
}

#[test]
fn strings_and_lists_beside_other_schemas_are_capped_only_when_nothing_needs_longer() {
    let s = json!({
        "type": "object",
        "definitions": {"named": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "properties": {"enums": {"type": "array", "items": {"$ref": "#/definitions/enum"}}},
        "required": ["enums"]
    });
    let mut s = s;
    s["definitions"]["enum"] = json!({
        "type": "object",
        "allOf": [
            {"$ref": "#/definitions/named"},
            {"properties": {"members": {"type": "array", "items": {"type": "string"}}}}
        ]
    });
    // The first rung leaves what is combined in allOf alone.
    let first = tighten(&s);
    let members = "/definitions/enum/allOf/1/properties/members";
    assert!(
        first
            .schema
            .pointer(&format!("{members}/maxItems"))
            .is_none()
    );
    let t = within(&s, 64);
    assert_eq!(
        t.schema.pointer(&format!("{members}/maxItems")),
        Some(&json!(1))
    );
    let capped = |p: &str| {
        t.schema
            .pointer(p)
            .and_then(Value::as_u64)
            .is_some_and(|n| n <= 16)
    };
    assert!(
        capped(&format!("{members}/items/maxLength")),
        "{}",
        t.schema
    );
    assert!(
        capped("/definitions/named/properties/name/maxLength"),
        "{}",
        t.schema
    );
    compiles(&t.schema).unwrap();
    // A schema somewhere needs a longer string or list: nothing beside is capped.
    s["definitions"]["named"]["properties"]["code"] = json!({"type": "string", "minLength": 20});
    s["definitions"]["named"]["properties"]["pair"] = json!({"type": "array", "minItems": 2});
    let t = within(&s, 64);
    assert!(t.schema.pointer(&format!("{members}/maxItems")).is_none());
    assert!(
        t.schema
            .pointer("/definitions/named/properties/name/maxLength")
            .is_none()
    );
    s["definitions"]["named"]["properties"]["code"] = json!({"enum": ["x".repeat(40)]});
    let t = within(&s, 64);
    assert!(
        t.schema
            .pointer("/definitions/named/properties/name/maxLength")
            .is_none()
    );
}

#[test]
fn a_required_name_the_schema_does_not_declare_is_decoded_as_a_short_string() {
    let s = json!({
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name", "namespaces"]
    });
    // The first rung cannot close it (any value is allowed for "namespaces").
    let first = tighten(&s);
    assert!(first.schema.get("additionalProperties").is_none());
    assert_eq!(worst_tokens(&first), None);
    let t = within(&s, 128);
    assert_eq!(t.schema["additionalProperties"], json!(false));
    let declared = &t.schema["properties"]["namespaces"];
    assert_eq!(declared["type"], "string");
    assert!(declared["maxLength"].as_u64().unwrap() <= 64);
    assert_eq!(t.schema["required"], s["required"]);
    assert!(kinds(&t).contains(&"declare"));
    assert!(worst_tokens(&t).unwrap() <= 127);
    compiles(&t.schema).unwrap();
    assert_narrower(
        &t,
        &s,
        &[
            json!({"name": "a", "namespaces": "b"}),
            json!({"name": "a"}),
        ],
    );
    // A schema for other keys: declaring them as strings could contradict it.
    let mut typed = s.clone();
    typed["additionalProperties"] = json!({"type": "integer"});
    assert!(
        within(&typed, 128).schema["properties"]
            .get("namespaces")
            .is_none()
    );
}

#[test]
fn a_key_pattern_is_still_bounded_when_the_rung_would_lose_a_declared_name() {
    // WashingtonPost's kicker: labels under free identifier keys beside a declared "basic".
    let s = json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {"basic": {"type": "string"}},
        "patternProperties": {"^[a-zA-Z0-9_]*$": {
            "type": "object",
            "additionalProperties": false,
            "properties": {"text": {"type": "string"}, "url": {"type": "string"}},
            "required": ["text"]
        }}
    });
    let t = within(&s, 96);
    let patterns = t.schema["patternProperties"].as_object().unwrap();
    let key = patterns.keys().next().unwrap();
    // "basic" must still match: the first rung's 32 repetitions, not the last rung's.
    assert_eq!(key, "^(?:[a-zA-Z0-9_]{0,32})$");
    // With the optional "basic" left out, every declared one is required: the map is sized.
    assert_eq!(t.schema["maxProperties"], json!(1));
    assert!(worst_tokens(&t).unwrap() <= 95, "{:?}", worst_tokens(&t));
    compiles(&t.schema).unwrap();
    assert_narrower(
        &t,
        &s,
        &[json!({"a": {"text": "x"}}), json!({"basic": "b"})],
    );
}
