//! Unit tests of [`super`]: each narrowing, and where it must not apply.

use super::*;

pub(super) fn tighten(schema: &Value) -> Tightened {
    super::tighten(&ResponseSchema::from_value(schema.clone()).unwrap())
}

pub(super) fn pointers(t: &Tightened) -> Vec<(&str, &'static str)> {
    t.transforms
        .iter()
        .map(|t| (t.pointer.as_str(), kind_of(&t.action)))
        .collect()
}

/// The pointers of the narrowings of one kind, in order.
fn of_kind<'a>(t: &'a Tightened, kind: &str) -> Vec<&'a str> {
    pointers(t)
        .into_iter()
        .filter(|(_, k)| *k == kind)
        .map(|(p, _)| p)
        .collect()
}

/// Tightens `schema` and checks its narrowings: the root's compact whitespace first (every
/// schema without a whitespace choice of its own gets it), then `expected` in order.
fn tightened(schema: &Value, expected: &[(&str, &str)]) -> Tightened {
    let t = tighten(schema);
    let kinds = pointers(&t);
    assert_eq!(kinds.first(), Some(&("", "whitespace")), "{schema}");
    assert_eq!(&kinds[1..], expected, "{schema}");
    t
}

/// The kind of a narrowing, from the start of its ledger action.
pub(super) fn kind_of(a: &str) -> &'static str {
    if a.starts_with("additionalProperties") {
        "close"
    } else if a.starts_with("type: object") {
        "root"
    } else if a.starts_with("maxLength") {
        "cap"
    } else if a.starts_with("maxItems") {
        "items"
    } else if a.starts_with("maxProperties") {
        "size"
    } else if a.starts_with("keys matching") || a.starts_with("patternProperties key") {
        "keys"
    } else if a.starts_with("pattern") {
        "pattern"
    } else if a.starts_with("narrowed to fit max_tokens") || a.starts_with("max_tokens") {
        "budget"
    } else if a.starts_with("properties [") && a.contains("declared as strings") {
        "declare"
    } else if a.starts_with("properties [") {
        "leave out"
    } else if a.starts_with("compact whitespace") {
        "whitespace"
    } else if a.contains("removed from the decoding grammar")
        || a.starts_with("oneOf decoded as anyOf")
        || a.starts_with("format: uri")
        || (a.starts_with("format \"int") && a.contains("decoded as its range"))
    {
        "relaxed"
    } else {
        panic!("unclassified transform {a}")
    }
}

/// Every instance the narrowed schema accepts, the original accepts too.
pub(super) fn assert_narrower(t: &Tightened, original: &Value, instances: &[Value]) {
    let mut narrowed = t.schema.clone();
    narrowed.as_object_mut().unwrap().remove("x-guidance");
    let narrowed = jsonschema::validator_for(&narrowed).unwrap();
    let original = jsonschema::validator_for(original).unwrap();
    for i in instances {
        if narrowed.is_valid(i) {
            assert!(original.is_valid(i), "{i} passes the narrowed schema only");
        }
    }
}

#[test]
fn open_objects_are_closed_at_every_level() {
    let s = json!({
        "type": "object",
        "properties": {
            "place": {"type": "object", "properties": {"lat": {"type": "number"}}},
            "tags": {"type": "object", "additionalProperties": {"type": "string"}},
            "plain": {"type": "object", "additionalProperties": true},
            "closed": {"type": "object", "properties": {}, "additionalProperties": false},
            "list": {"type": "array", "items": {"properties": {"x": {"type": "integer"}}}}
        },
        "required": ["place"]
    });
    let t = tightened(
        &s,
        &[
            ("", "close"),
            ("/properties/place", "close"),
            ("/properties/tags", "keys"),
            ("/properties/tags", "size"),
            ("/properties/tags/additionalProperties", "cap"),
            ("/properties/plain", "close"),
            ("/properties/list", "items"),
            ("/properties/list/items", "close"),
        ],
    );
    assert_eq!(t.schema["additionalProperties"], false);
    assert_eq!(
        t.schema["properties"]["place"]["additionalProperties"],
        false
    );
    // A map of strings stays a map (its keys bounded, its entries capped).
    assert_eq!(
        t.schema["properties"]["tags"],
        json!({
            "type": "object",
            "patternProperties": {MAP_KEY_PATTERN: {"type": "string", "maxLength": STRING_CAP}},
            "additionalProperties": false,
            "maxProperties": MAP_CAP
        })
    );
    assert!(
        t.transforms
            .iter()
            .all(|t| t.action.contains("for decoding"))
    );
    assert_narrower(
        &t,
        &s,
        &[
            json!({"place": {"lat": 1.5}}),
            json!({"place": {"lat": 1.5, "lon": 2}}),
            json!({"place": {}, "extra": 1}),
        ],
    );
}

#[test]
fn objects_combined_in_place_stay_open() {
    let s = json!({
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}},
            {"type": "object", "properties": {"b": {"type": "integer"}}}
        ]
    });
    tightened(&s, &[("", "root")]);
    // anyOf branches are closed only when the parent asserts nothing else.
    let alone =
        json!({"type": "object", "anyOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}]});
    tightened(&alone, &[("/anyOf/0", "close"), ("/anyOf/1", "close")]);
    let beside =
        json!({"properties": {"a": {}}, "required": ["a"], "anyOf": [{"properties": {"b": {}}}]});
    tightened(&beside, &[("", "root")]);
    // oneOf is decoded as anyOf (see below): its branches are narrowed like anyOf's.
    let one_of = json!({"oneOf": [{"type": "object"}, {"type": "string"}]});
    tightened(
        &one_of,
        &[("/oneOf/0", "close"), ("/oneOf/1", "cap"), ("", "relaxed")],
    );
    // allOf branches, and not/if/then subschemas: never narrowed inside.
    let not = json!({"type": "object", "not": {"type": "object", "properties": {"a": {}}}});
    tightened(&not, &[("", "relaxed")]);
}

#[test]
fn an_untyped_root_is_decoded_as_the_object_geode_reads() {
    let s = json!({"properties": {"subtype": {"type": "string"}}});
    let t = tightened(
        &s,
        &[("", "root"), ("", "close"), ("/properties/subtype", "cap")],
    );
    assert_eq!(t.schema["type"], "object");
    // A root that admits other types is left as it is.
    let array = tighten(&json!({"type": "array", "items": {"type": "integer"}}));
    assert!(array.schema.get("type") == Some(&json!("array")));
}

#[test]
fn closing_never_makes_an_object_unsatisfiable() {
    // A required key that is not declared, and more keys needed than declared.
    let undeclared = json!({"type": "object", "properties": {"a": {}}, "required": ["a", "b"]});
    tightened(&undeclared, &[]);
    let min = json!({"type": "object", "properties": {"a": {}}, "minProperties": 2});
    tightened(&min, &[]);
    let enumerated = json!({"type": "object", "enum": [{"a": 1}]});
    tightened(&enumerated, &[]);
}

#[test]
fn definitions_are_closed_only_when_every_reference_is_alone() {
    let s = json!({
        "$defs": {
            "Point": {"type": "object", "properties": {"x": {"type": "number"}}},
            "Base": {"type": "object", "properties": {"id": {"type": "integer"}}}
        },
        "type": "object",
        "properties": {
            "at": {"$ref": "#/$defs/Point", "description": "where"},
            "item": {"allOf": [{"$ref": "#/$defs/Base"}, {"properties": {"name": {"type": "string"}}}]}
        },
        "required": ["at"]
    });
    let t = tightened(&s, &[("", "close"), ("/$defs/Point", "close")]);
    assert!(
        t.schema["$defs"]["Base"]
            .get("additionalProperties")
            .is_none()
    );
    // A reference that is not a local pointer: nothing but whitespace is narrowed.
    let remote = json!({"type": "object", "properties": {"a": {"$ref": "other.json"}}});
    tightened(&remote, &[]);
}

#[test]
fn free_strings_are_capped_but_never_below_what_the_schema_needs() {
    let s = json!({
        "type": "object",
        "properties": {
            "free": {"type": "string"},
            "long": {"type": "string", "minLength": 500},
            "bounded": {"type": "string", "maxLength": 10},
            "patterned": {"type": "string", "pattern": "^a{300}$"},
            "dated": {"type": "string", "format": "date"},
            "named": {"type": "string", "enum": ["x"]},
            "maybe": {"type": ["string", "null"]}
        }
    });
    let t = tighten(&s);
    let p = &t.schema["properties"];
    assert_eq!(p["free"]["maxLength"], json!(STRING_CAP));
    assert_eq!(p["long"]["maxLength"], json!(500));
    assert_eq!(p["bounded"]["maxLength"], json!(10));
    for untouched in ["patterned", "named"] {
        assert_eq!(p[untouched], s["properties"][untouched], "{untouched}");
    }
    assert_eq!(p["maybe"]["maxLength"], json!(STRING_CAP));
    assert_eq!(p["dated"]["maxLength"], json!(STRING_CAP));
    assert_eq!(
        of_kind(&t, "cap"),
        [
            "/properties/free",
            "/properties/long",
            "/properties/dated",
            "/properties/maybe"
        ]
    );
    let long = "y".repeat(600);
    assert_narrower(
        &t,
        &s,
        &[
            json!({"free": "short", "long": long}),
            json!({"free": "x".repeat(200)}),
        ],
    );
}

#[test]
fn whitespace_is_compact_unless_the_caller_chose() {
    let t = tighten(&json!({"type": "integer"}));
    assert_eq!(
        t.schema["x-guidance"],
        json!({"whitespace_flexible": false, "item_separator": ", ", "key_separator": ": "})
    );
    let caller =
        json!({"type": "integer", "x-guidance": {"whitespace_flexible": true, "lenient": true}});
    let t = tighten(&caller);
    assert_eq!(t.schema, caller);
    assert!(t.transforms.is_empty());
}

/// llguidance compiles the schema (single-byte tokens: the grammar, not the model, is tested).
pub(super) fn compiles(schema: &Value) -> Result<(), String> {
    let env = toktrie::ApproximateTokEnv::single_byte_env();
    let factory = llguidance::ParserFactory::new_simple(&env).map_err(|e| e.to_string())?;
    let grammar = llguidance::api::TopLevelGrammar::from_json_schema(schema.clone());
    let parser = factory
        .create_parser(grammar)
        .map_err(|e| format!("{e:#}"))?;
    match llguidance::Matcher::new(Ok(parser)).get_error() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[test]
fn arrays_get_a_max_items_but_never_below_min_items() {
    let s = json!({
        "type": "object",
        "properties": {
            "free": {"type": "array", "items": {"type": "integer"}},
            "many": {"type": "array", "items": {"type": "integer"}, "minItems": 7},
            "bounded": {"type": "array", "items": {"type": "integer"}, "maxItems": 2}
        }
    });
    let t = tighten(&s);
    let p = &t.schema["properties"];
    assert_eq!(p["free"]["maxItems"], json!(ITEM_CAP));
    assert_eq!(p["many"]["maxItems"], json!(7));
    assert_eq!(p["bounded"]["maxItems"], json!(2));
    assert_eq!(
        of_kind(&t, "items"),
        ["/properties/free", "/properties/many"]
    );
    assert_narrower(
        &t,
        &s,
        &[
            json!({"free": [1, 2, 3]}),
            json!({"free": (0..20).collect::<Vec<_>>()}),
            json!({"many": (0..7).collect::<Vec<_>>()}),
            json!({"bounded": [1, 2, 3]}),
        ],
    );
    compiles(&t.schema).unwrap();
}

#[test]
fn a_large_max_length_is_lowered_and_a_pattern_bounded() {
    let s = json!({
        "type": "object",
        "properties": {
            "huge": {"type": "string", "maxLength": 65535},
            "long_min": {"type": "string", "minLength": 200, "maxLength": 4096},
            "prefix": {"type": "string", "pattern": "^pkg:"},
            "word": {"type": ["string", "null"], "pattern": "^[a-z]+$"},
            "floor": {"type": "string", "pattern": "^[a-z]+$", "minLength": 3},
            "exact": {"type": "string", "pattern": "^[0-9]{5}$"}
        }
    });
    let t = tighten(&s);
    let p = &t.schema["properties"];
    assert_eq!(p["huge"]["maxLength"], json!(STRING_CAP));
    assert_eq!(p["long_min"]["maxLength"], json!(200));
    assert_eq!(p["prefix"]["pattern"], json!("^(?:pkg:)$"));
    assert_eq!(p["word"]["pattern"], json!("^(?:[a-z]{1,32})$"));
    for untouched in ["floor", "exact"] {
        assert_eq!(p[untouched], s["properties"][untouched], "{untouched}");
    }
    let huge = &t.transforms[t.transforms.len() - 4];
    assert_eq!(huge.pointer, "/properties/huge");
    assert!(huge.action.contains("the schema allows 65535"), "{huge:?}");
    assert_narrower(
        &t,
        &s,
        &[
            json!({"huge": "x".repeat(100)}),
            json!({"huge": "x".repeat(1000)}),
            json!({"prefix": "pkg:"}),
            json!({"prefix": "pkg:npm/x"}),
            json!({"prefix": "xpkg:"}),
            json!({"word": "abc"}),
            json!({"word": "a".repeat(40)}),
            json!({"word": "ab1"}),
        ],
    );
    compiles(&t.schema).unwrap();
}

#[test]
fn map_keys_are_bounded_and_maps_sized() {
    // A map whose keys follow one pattern: the pattern bounded, the object closed and sized.
    let s = json!({
        "type": "object",
        "patternProperties": {"^[a-zA-Z0-9]([a-zA-Z0-9-]+[a-zA-Z0-9])?$": {"type": "string"}}
    });
    let t = tightened(
        &s,
        &[
            ("", "close"),
            ("", "keys"),
            ("", "size"),
            (
                "/patternProperties/^[a-zA-Z0-9]([a-zA-Z0-9-]+[a-zA-Z0-9])?$",
                "cap",
            ),
        ],
    );
    assert_eq!(
        t.schema["patternProperties"],
        json!({"^(?:[a-zA-Z0-9]([a-zA-Z0-9-]{1,32}[a-zA-Z0-9])?)$":
            {"type": "string", "maxLength": STRING_CAP}})
    );
    assert_eq!(t.schema["maxProperties"], json!(MAP_CAP));
    let many: Map<String, Value> = (0..12).map(|i| (format!("k{i}"), json!("v"))).collect();
    assert_narrower(
        &t,
        &s,
        &[
            json!({"abc": "x"}),
            json!({"a-b": "x", "c": 1}),
            json!({"-bad": "x"}),
            json!({"k".repeat(50): "x"}),
            Value::Object(many),
        ],
    );
    compiles(&t.schema).unwrap();

    // Declared properties beside the pattern: bounded when every declared name the pattern
    // matches still matches; no maxProperties (llguidance needs every declared one required).
    let beside = json!({
        "type": "object",
        "properties": {"basic": {"type": "object", "properties": {"text": {"type": "string"}}}},
        "patternProperties": {"^[a-zA-Z0-9_]*$": {"type": "object", "required": ["text"]}},
        "additionalProperties": false
    });
    let t = tighten(&beside);
    assert!(pointers(&t).contains(&("", "keys")), "{:?}", t.transforms);
    assert!(!pointers(&t).contains(&("", "size")), "{:?}", t.transforms);
    assert_narrower(
        &t,
        &beside,
        &[
            json!({"basic": {"text": "a"}}),
            json!({"basic": {}}),
            json!({"label_1": {"text": "b"}}),
            json!({"bad key": {"text": "b"}}),
        ],
    );
    compiles(&t.schema).unwrap();

    // A declared name longer than the bounded pattern allows, several patterns, or an open
    // additionalProperties schema: keys left as the schema has them.
    let long_name = "n".repeat(40);
    let kept = [
        json!({"type": "object", "properties": {long_name: {}}, "patternProperties": {"^[a-z]*$": {"type": "integer"}}, "additionalProperties": false}),
        json!({"type": "object", "patternProperties": {"^a+$": {}, "^b+$": {}}}),
        json!({"type": "object", "patternProperties": {"^a+$": {"type": "integer"}}, "additionalProperties": {"type": "string"}}),
    ];
    for s in kept {
        assert!(!pointers(&tighten(&s)).contains(&("", "keys")), "{s}");
    }
}

#[test]
fn a_schema_valued_additional_properties_beside_declared_ones_is_closed() {
    let s = json!({
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "additionalProperties": {"type": "object", "properties": {"x": {"type": "string"}}}
    });
    // Nothing is narrowed inside the schema that closing replaced.
    let t = tightened(&s, &[("", "close"), ("/properties/name", "cap")]);
    assert_eq!(t.schema["additionalProperties"], json!(false));
    assert!(t.transforms[1].action.contains("other keys under a schema"));
    assert_narrower(
        &t,
        &s,
        &[
            json!({"name": "a"}),
            json!({"name": "a", "other": {"x": "y"}}),
        ],
    );
}

#[test]
fn strings_with_a_format_are_capped_and_still_compile() {
    // Every format llguidance compiles (its `unknown` matches anything).
    for format in relax::COMPILED_FORMATS.iter().filter(|f| **f != "unknown") {
        let s = json!({"type": "string", "format": format});
        let t = tighten(&s);
        assert_eq!(t.schema["maxLength"], json!(STRING_CAP), "{format}");
        compiles(&t.schema).unwrap_or_else(|e| panic!("{format}: {e}"));
    }
    // With a minLength, a short enough instance may not exist: left alone.
    let floor = json!({"type": "string", "format": "email", "minLength": 3});
    assert!(tighten(&floor).schema.get("maxLength").is_none());
}

#[test]
fn a_closed_object_whose_additional_properties_refer_to_the_root_is_still_narrowed() {
    // JSON Document Transforms: the root's extra keys are documents of the root's own kind.
    let s = json!({
        "type": "object",
        "properties": {"@jdt.path": {"type": "string"}},
        "additionalProperties": {"$ref": "#", "not": {"type": "null"}}
    });
    let t = tightened(&s, &[("", "close"), ("/properties/@jdt.path", "cap")]);
    assert_narrower(
        &t,
        &s,
        &[
            json!({"@jdt.path": "$.a"}),
            json!({"@jdt.path": "$.a", "x": {}}),
        ],
    );
}
