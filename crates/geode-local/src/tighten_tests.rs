//! Unit tests of [`super`]: each narrowing, and where it must not apply.

use super::*;

fn tighten(schema: &Value) -> Tightened {
    super::tighten(&ResponseSchema::from_value(schema.clone()).unwrap())
}

fn pointers(t: &Tightened) -> Vec<(&str, &str)> {
    t.transforms
        .iter()
        .map(|t| {
            let kind = if t.action.starts_with("additionalProperties") {
                "close"
            } else if t.action.starts_with("type: object") {
                "root"
            } else if t.action.starts_with("maxLength") {
                "cap"
            } else {
                "whitespace"
            };
            (t.pointer.as_str(), kind)
        })
        .collect()
}

/// Every instance the narrowed schema accepts, the original accepts too.
fn assert_narrower(t: &Tightened, original: &Value, instances: &[Value]) {
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
    let t = tighten(&s);
    assert_eq!(
        pointers(&t),
        vec![
            ("", "whitespace"),
            ("", "close"),
            ("/properties/place", "close"),
            ("/properties/tags/additionalProperties", "cap"),
            ("/properties/plain", "close"),
            ("/properties/list/items", "close"),
        ]
    );
    assert_eq!(t.schema["additionalProperties"], false);
    assert_eq!(
        t.schema["properties"]["place"]["additionalProperties"],
        false
    );
    // A map of strings stays a map (its entries are capped).
    assert_eq!(
        t.schema["properties"]["tags"]["additionalProperties"],
        json!({"type": "string", "maxLength": STRING_CAP})
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
    assert_eq!(
        pointers(&tighten(&s)),
        vec![("", "whitespace"), ("", "root")]
    );
    // anyOf branches are closed only when the parent asserts nothing else.
    let alone =
        json!({"type": "object", "anyOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}]});
    assert_eq!(
        pointers(&tighten(&alone)),
        vec![
            ("", "whitespace"),
            ("/anyOf/0", "close"),
            ("/anyOf/1", "close")
        ]
    );
    let beside =
        json!({"properties": {"a": {}}, "required": ["a"], "anyOf": [{"properties": {"b": {}}}]});
    assert_eq!(
        pointers(&tighten(&beside)),
        vec![("", "whitespace"), ("", "root")]
    );
    // oneOf, not, if/then: never narrowed inside.
    let one_of = json!({"oneOf": [{"type": "object"}, {"type": "string"}]});
    assert_eq!(pointers(&tighten(&one_of)), vec![("", "whitespace")]);
}

#[test]
fn an_untyped_root_is_decoded_as_the_object_geode_reads() {
    let s = json!({"properties": {"subtype": {"type": "string"}}});
    let t = tighten(&s);
    assert_eq!(t.schema["type"], "object");
    assert_eq!(
        pointers(&t),
        vec![
            ("", "whitespace"),
            ("", "root"),
            ("", "close"),
            ("/properties/subtype", "cap")
        ]
    );
    // A root that admits other types is left as it is.
    let array = tighten(&json!({"type": "array", "items": {"type": "integer"}}));
    assert!(array.schema.get("type") == Some(&json!("array")));
}

#[test]
fn closing_never_makes_an_object_unsatisfiable() {
    // A required key that is not declared, and more keys needed than declared.
    let undeclared = json!({"type": "object", "properties": {"a": {}}, "required": ["a", "b"]});
    assert_eq!(pointers(&tighten(&undeclared)), vec![("", "whitespace")]);
    let min = json!({"type": "object", "properties": {"a": {}}, "minProperties": 2});
    assert_eq!(pointers(&tighten(&min)), vec![("", "whitespace")]);
    let enumerated = json!({"type": "object", "enum": [{"a": 1}]});
    assert_eq!(pointers(&tighten(&enumerated)), vec![("", "whitespace")]);
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
    let t = tighten(&s);
    assert_eq!(
        pointers(&t),
        vec![("", "whitespace"), ("", "close"), ("/$defs/Point", "close")]
    );
    assert!(
        t.schema["$defs"]["Base"]
            .get("additionalProperties")
            .is_none()
    );
    // A reference that is not a local pointer: nothing but whitespace is narrowed.
    let remote = json!({"type": "object", "properties": {"a": {"$ref": "other.json"}}});
    assert_eq!(pointers(&tighten(&remote)), vec![("", "whitespace")]);
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
    for untouched in ["patterned", "dated", "named"] {
        assert_eq!(p[untouched], s["properties"][untouched], "{untouched}");
    }
    assert_eq!(p["maybe"]["maxLength"], json!(STRING_CAP));
    let capped: Vec<_> = pointers(&t)
        .into_iter()
        .filter(|(_, k)| *k == "cap")
        .collect();
    assert_eq!(
        capped,
        vec![
            ("/properties/free", "cap"),
            ("/properties/long", "cap"),
            ("/properties/maybe", "cap"),
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
