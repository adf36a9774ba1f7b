//! Unit tests of [`super`]'s keywords left to validation ([`super::relax`]), and of the
//! narrowings beside and inside them.

use super::tests::{assert_narrower, compiles, kind_of, pointers, tighten};
use super::*;

#[test]
fn keywords_llguidance_cannot_compile_are_left_to_validation_and_named() {
    let s = json!({
        "type": "object",
        "properties": {
            "kind": {"oneOf": [{"const": "a"}, {"const": "b"}]},
            "both": {"anyOf": [{"type": "string"}, {"type": "integer"}], "oneOf": [{"type": "string"}, {"minimum": 0}]},
            "name": {"type": "string", "not": {"const": "root"}},
            "home": {"type": "string", "format": "iri"},
            "topic": {"type": "string", "format": "topic"},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true, "maxItems": 3}
        },
        "required": ["kind"],
        "if": {"required": ["name"]},
        "then": {"required": ["home"]},
        "dependencies": {"home": ["name"]}
    });
    let refused = compiles(&s).unwrap_err();
    assert!(
        refused.contains("Unimplemented keys") || refused.contains("oneOf"),
        "{refused}"
    );
    let t = tighten(&s);
    let relaxed: Vec<(&str, &str)> = t
        .transforms
        .iter()
        .filter(|t| kind_of(&t.action) == "relaxed")
        .map(|t| (t.pointer.as_str(), t.action.split(' ').next().unwrap_or("")))
        .collect();
    assert_eq!(
        relaxed,
        vec![
            ("", "if"),
            ("", "then"),
            ("", "dependencies"),
            ("/properties/kind", "oneOf"),
            ("/properties/both", "oneOf"),
            ("/properties/name", "not"),
            ("/properties/home", "format:"),
            ("/properties/topic", "format"),
            ("/properties/tags", "uniqueItems"),
        ]
    );
    let p = &t.schema["properties"];
    assert_eq!(p["kind"]["anyOf"], s["properties"]["kind"]["oneOf"]);
    assert_eq!(
        p["both"]["allOf"],
        json!([{"anyOf": s["properties"]["both"]["oneOf"]}])
    );
    assert_eq!(p["home"]["format"], "uri");
    assert!(p["topic"].get("format").is_none() && p["name"].get("not").is_none());
    for gone in ["if", "then", "dependencies"] {
        assert!(t.schema.get(gone).is_none(), "{gone}");
    }
    // Each is named as checked by validating the answer (iri → uri is a narrowing instead).
    for t in t
        .transforms
        .iter()
        .filter(|t| kind_of(&t.action) == "relaxed")
    {
        assert!(
            t.action.contains("checked by validating the answer") || t.action.contains("IRI"),
            "{t:?}"
        );
    }
    compiles(&t.schema).unwrap();
}

#[test]
fn narrowing_reaches_beside_and_inside_keywords_left_to_validation() {
    let s = json!({
        "type": "object",
        "properties": {
            "id": {"type": "string", "not": {"const": ""}},
            "kind": {"oneOf": [
                {"type": "object", "properties": {"name": {"type": "string"}}},
                {"type": "array", "items": {"type": "integer"}}
            ]},
            "extra": {
                "type": "object",
                "properties": {"a": {"type": "integer"}},
                "dependencies": {"a": ["b"]}
            },
            "labels": {
                "type": "object",
                "patternProperties": {"^[a-z]+$": {"type": "string"}}
            },
            "map": {"type": "object", "additionalProperties": {"type": "string", "not": {"const": "x"}}}
        }
    });
    let t = tighten(&s);
    let p = &t.schema["properties"];
    // Beside `not`: the string is capped, and `not` left to validation.
    assert_eq!(p["id"]["maxLength"], json!(STRING_CAP));
    assert!(p["id"].get("not").is_none());
    // Inside oneOf (decoded as anyOf): each branch narrowed.
    assert_eq!(p["kind"]["anyOf"][0]["additionalProperties"], json!(false));
    assert_eq!(p["kind"]["anyOf"][1]["maxItems"], json!(ITEM_CAP));
    // Beside dependencies: the object is not closed (the dependency may need another key).
    assert!(p["extra"].get("additionalProperties").is_none());
    // The one pattern of a map: its values are narrowed too.
    assert_eq!(
        p["labels"]["patternProperties"]["^(?:[a-z]{1,32})$"]["maxLength"],
        json!(STRING_CAP)
    );
    // A moved map value still loses its `not`.
    assert_eq!(
        p["map"]["patternProperties"][MAP_KEY_PATTERN],
        json!({"type": "string", "maxLength": STRING_CAP})
    );
    let at: Vec<(&str, &str)> = pointers(&t);
    for expected in [
        ("/properties/id", "cap"),
        ("/properties/id", "relaxed"),
        ("/properties/kind", "relaxed"),
        ("/properties/kind/oneOf/0", "close"),
        ("/properties/kind/oneOf/1", "items"),
        ("/properties/labels/patternProperties/^[a-z]+$", "cap"),
        ("/properties/map/additionalProperties", "relaxed"),
    ] {
        assert!(at.contains(&expected), "{expected:?} not in {at:?}");
    }
    compiles(&t.schema).unwrap();
}

#[test]
fn what_llguidance_still_refuses_is_named_in_its_error() {
    // An unsatisfiable string: nothing to leave to validation, the call is refused (fail
    // closed) with the keywords in the reason.
    let s = json!({
        "type": "object",
        "properties": {"code": {"type": "string", "minLength": 5, "maxLength": 2}},
        "required": ["code"]
    });
    let refused = compiles(&tighten(&s).schema).unwrap_err();
    assert!(refused.contains("minLength"), "{refused}");
}

/// OpenAPI's `int32` / `int64` (which llguidance does not bound: an integer of any length
/// decodes) are decoded as their ranges (a narrowing: every answer of the grammar is one of the
/// caller's schema), keeping a schema's own tighter bound; the grammar compiles and the change is
/// named.
#[test]
fn integer_formats_are_decoded_as_their_ranges() {
    let s = json!({
        "type": "object",
        "properties": {
            "port": {"type": "integer", "format": "int32"},
            "replicas": {"type": "integer", "format": "int32", "minimum": 0},
            "size": {"type": "integer", "format": "int64", "maximum": 1e30}
        },
        "required": ["port", "replicas", "size"]
    });
    let t = tighten(&s);
    let p = &t.schema["properties"];
    assert_eq!(
        p["port"],
        json!({"type": "integer", "minimum": -2147483648_i64, "maximum": 2147483647})
    );
    assert_eq!(
        p["replicas"],
        json!({"type": "integer", "minimum": 0, "maximum": 2147483647})
    );
    assert_eq!(p["size"]["minimum"], json!(-9_223_372_036_854_774_784_i64));
    assert_eq!(p["size"]["maximum"], json!(9_223_372_036_854_774_784_i64));
    compiles(&t.schema).unwrap();
    // On a string, or with no type, the bounds constrain only numbers: still compiles.
    for odd in [
        json!({"type": "string", "format": "int32"}),
        json!({"format": "int64"}),
        json!({"type": ["integer", "string"], "format": "int32"}),
    ] {
        compiles(&tighten(&odd).schema).unwrap_or_else(|e| panic!("{odd}: {e}"));
    }
    let answer = |port: &str| format!(r#"{{"port": {port}, "replicas": 1, "size": 2}}"#);
    assert!(grammar_accepts(&t.schema, &answer("8080")));
    assert!(grammar_accepts(&t.schema, &answer("-2147483648")));
    assert!(!grammar_accepts(&t.schema, &answer("2147483648")));
    assert!(!grammar_accepts(&t.schema, &answer(&"9".repeat(200))));
    assert!(
        grammar_accepts(&s, &answer(&"9".repeat(200))),
        "unbounded before"
    );
    let long = json!({"port": 1e200, "replicas": 1, "size": 2});
    assert_narrower(
        &t,
        &s,
        &[long, json!({"port": 1, "replicas": 0, "size": 3})],
    );
    let named: Vec<&str> = t
        .transforms
        .iter()
        .filter(|t| t.action.contains("decoded as its range"))
        .map(|t| t.pointer.as_str())
        .collect();
    assert_eq!(
        named,
        [
            "/properties/port",
            "/properties/replicas",
            "/properties/size"
        ]
    );
    assert!(
        t.transforms.iter().any(|t| t.action
            == "format \"int32\" decoded as its range -2147483648..=2147483647 where the schema's \
                bounds are wider (llguidance does not know it; a narrowing)"),
        "{:?}",
        t.transforms
    );
}

/// Whether the grammar llguidance compiles from `schema` takes all of `text` as a whole answer
/// (one byte a token, as in [`compiles`]).
fn grammar_accepts(schema: &Value, text: &str) -> bool {
    let env = toktrie::ApproximateTokEnv::single_byte_env();
    let factory = llguidance::ParserFactory::new_simple(&env).unwrap();
    let grammar = llguidance::api::TopLevelGrammar::from_json_schema(schema.clone());
    let mut m = llguidance::Matcher::new(factory.create_parser(grammar));
    let bytes: Vec<u32> = text.bytes().map(u32::from).collect();
    m.consume_tokens(&bytes).is_ok() && m.is_accepting().unwrap_or(false)
}

#[test]
fn not_of_everything_matches_nothing_and_is_decoded_as_false() {
    // A `false` root is `{"not": {}}` in a ResponseSchema: removing `not` would decode anything.
    for root in [json!({"not": {}}), json!(false), json!({"not": true})] {
        let t = tighten(&root);
        assert_eq!(t.schema, json!(false), "{root}");
        let refused = compiles(&t.schema).unwrap_err();
        assert!(refused.contains("false"), "{refused}");
    }
    // An optional property that matches nothing is left out; a required one is refused.
    let optional = json!({
        "type": "object",
        "properties": {"gone": {"not": {"description": "never"}}, "kept": {"type": "integer"}},
    });
    let t = tighten(&optional);
    assert_eq!(t.schema.pointer("/properties/gone"), Some(&json!(false)));
    assert!(t.transforms.iter().any(|t| t.pointer == "/properties/gone"
        && t.action.starts_with("not of a schema every value matches")));
    compiles(&t.schema).unwrap();
    let required = json!({
        "type": "object",
        "properties": {"x": {"type": "string", "not": {}}},
        "required": ["x"],
    });
    assert!(compiles(&tighten(&required).schema).is_err());
    // `not` of a real schema is still left to validation.
    let t = tighten(&json!({"type": "string", "not": {"const": "a"}}));
    assert!(t.schema.get("not").is_none() && t.schema.get("type").is_some());
}
