//! Tests for projection and the Anthropic fit check.

use super::*;
use crate::schema::fixtures::schema;
use serde_json::json;

// ---- Anthropic projection ----

#[test]
fn anthropic_projection_moves_min_length_to_a_residual_and_a_transform() {
    let original = json!({
        "type":"object",
        "properties":{"name":{"type":"string","minLength":3}},
        "required":["name"],
        "additionalProperties":false
    });
    let s = schema(original.clone());
    let p = project_anthropic(&s);
    assert_eq!(p.wire["properties"]["name"], json!({"type":"string"}));
    assert_eq!(
        p.residuals,
        vec![Residual {
            pointer: "/properties/name".into(),
            keyword: "minLength".into(),
            value: json!(3)
        }]
    );
    assert_eq!(p.transforms.len(), 1);
    assert_eq!(p.transforms[0].pointer, "/properties/name");
    assert!(
        p.transforms[0].action.contains("removed keyword minLength"),
        "{:?}",
        p.transforms
    );
    assert_eq!(s.as_value(), &original, "the caller's schema is untouched");
    assert_eq!(
        p.residuals[0].to_string(),
        "/properties/name: minLength 3 (checked locally)"
    );
    assert_eq!(anthropic_native_fits(&s), Ok(()));
}

#[test]
fn anthropic_projection_removes_each_unsupported_constraint() {
    let s = schema(json!({
        "type":"object",
        "properties":{
            "n":{"type":"number","minimum":0,"maximum":10,"exclusiveMinimum":0,"multipleOf":2},
            "s":{"type":"string","maxLength":9,"format":"date","pattern":"^[a-z]+$"},
            "f":{"type":"string","format":"ipv4-cidr","pattern":"(?=a)\\d\\b"},
            "a1":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":3,"uniqueItems":true},
            "a2":{"type":"array","minItems":2},
            "e":{"enum":["x",{"k":1}]},
            "p":{"enum":["x","y"],"not":{"const":"y"}}
        },
        "required":["n","s","f","a1","a2","e","p"],
        "additionalProperties":false
    }));
    let p = project_anthropic(&s);
    let removed: Vec<(String, String)> = p
        .residuals
        .iter()
        .map(|r| (r.pointer.clone(), r.keyword.clone()))
        .collect();
    let want = [
        ("/properties/n", "minimum"),
        ("/properties/n", "maximum"),
        ("/properties/n", "exclusiveMinimum"),
        ("/properties/n", "multipleOf"),
        ("/properties/s", "maxLength"),
        ("/properties/f", "format"),
        ("/properties/f", "pattern"),
        ("/properties/a1", "maxItems"),
        ("/properties/a1", "uniqueItems"),
        ("/properties/a2", "minItems"),
        ("/properties/e", "enum"),
        ("/properties/p", "not"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(a, b)| ((*a).into(), (*b).into()))
        .collect();
    assert_eq!(removed, want);
    assert_eq!(p.transforms.len(), want.len());
    let w = &p.wire["properties"];
    assert_eq!(
        w["s"],
        json!({"type":"string","format":"date","pattern":"^[a-z]+$"})
    );
    assert_eq!(
        w["a1"],
        json!({"type":"array","items":{"type":"string"},"minItems":1})
    );
    assert_eq!(w["p"], json!({"enum":["x","y"]}));
    assert_eq!(anthropic_native_fits(&s), Ok(()));
}

#[test]
fn one_of_becomes_any_of_with_caller_pointers_kept() {
    let s = schema(json!({"oneOf":[{"type":"string","minLength":2},{"type":"null"}]}));
    let p = project_anthropic(&s);
    assert_eq!(p.wire, json!({"anyOf":[{"type":"string"},{"type":"null"}]}));
    let kw: Vec<(&str, &str)> = p
        .residuals
        .iter()
        .map(|r| (r.pointer.as_str(), r.keyword.as_str()))
        .collect();
    assert_eq!(kw, vec![("", "oneOf"), ("/oneOf/0", "minLength")]);
    assert!(p.transforms[0].action.contains("oneOf as anyOf"));
}

#[test]
fn open_objects_are_closed_on_the_wire_with_a_transform_only() {
    let s = schema(
        json!({"type":"object","properties":{"o":{"type":["object","null"],"additionalProperties":true}}}),
    );
    let p = project_anthropic(&s);
    assert_eq!(p.wire["additionalProperties"], json!(false));
    assert_eq!(
        p.wire["properties"]["o"]["additionalProperties"],
        json!(false)
    );
    assert!(p.residuals.is_empty());
    let ptrs: Vec<&str> = p.transforms.iter().map(|t| t.pointer.as_str()).collect();
    assert_eq!(ptrs, vec!["", "/properties/o"]);
}

#[test]
fn simple_patterns_are_told_apart_from_complex_ones() {
    for p in ["^[a-z]+$", "\\d{3}-\\d{4}", "(a|b)+", "(?:x)", "\\\\b"] {
        assert!(simple_pattern(p), "{p}");
    }
    for p in [
        "(?=x)",
        "(?!x)",
        "(?<=x)",
        "(?<!x)",
        "(a)\\1",
        "\\bword",
        "\\Bx",
        "(?<n>a)\\k<n>",
    ] {
        assert!(!simple_pattern(p), "{p}");
    }
}

// ---- the Anthropic fit check ----

fn fits_err(v: Value) -> Vec<String> {
    anthropic_native_fits(&schema(v)).unwrap_err()
}

#[test]
fn recursion_does_not_fit_anthropic_native() {
    for s in [
        json!({"type":"object","properties":{"c":{"$ref":"#"}}}),
        json!({"$ref":"#/$defs/n","$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}}}),
        json!({"$ref":"#/$defs/a","$defs":{"a":{"anyOf":[{"$ref":"#/$defs/b"}]},"b":{"items":{"$ref":"#/$defs/a"}}}}),
    ] {
        let why = fits_err(s.clone());
        assert!(why.iter().any(|w| w.contains("recursive")), "{s}: {why:?}");
    }
}

#[test]
fn shared_non_recursive_definitions_fit() {
    let s = json!({
        "type":"object",
        "properties":{"a":{"$ref":"#/$defs/x"},"b":{"$ref":"#/$defs/x"},"c":{"$ref":"#/$defs/y"}},
        "required":["a","b","c"],
        "additionalProperties":false,
        "$defs":{"x":{"type":"string"},"y":{"type":"array","items":{"$ref":"#/$defs/x"}}}
    });
    assert_eq!(anthropic_native_fits(&schema(s)), Ok(()));
}

#[test]
fn unsupported_shapes_do_not_fit_and_are_named() {
    let cases = [
        (
            json!({"type":"object","additionalProperties":{"type":"string"}}),
            "additionalProperties must be false",
        ),
        (
            json!({"type":"object","patternProperties":{"^x":{}}}),
            "patternProperties",
        ),
        (
            json!({"type":"array","prefixItems":[{"type":"string"}]}),
            "prefixItems",
        ),
        (
            json!({"type":"array","items":[{"type":"string"}]}),
            "tuple-form items",
        ),
        (
            json!({"allOf":[{"$ref":"#/$defs/x"}],"$defs":{"x":{"type":"string"}}}),
            "allOf with $ref",
        ),
        (
            json!({"$ref":"https://example.com/s.json"}),
            "external $ref",
        ),
        (json!({"$ref":"#/$defs/missing"}), "does not resolve"),
        (json!({"$id":"urn:x","type":"string"}), "keyword $id"),
    ];
    for (s, needle) in cases {
        let why = fits_err(s.clone());
        assert!(why.iter().any(|w| w.contains(needle)), "{s}: {why:?}");
    }
}

// ---- serde ----

#[test]
fn residuals_round_trip_through_serde() {
    let r = Residual {
        pointer: String::new(),
        keyword: "oneOf".into(),
        value: json!([]),
    };
    let back: Residual = serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
    assert_eq!(back, r);
}

#[test]
fn anthropic_formats_are_the_strict_ones_and_uri() {
    assert_eq!(AnthropicPolicy::FORMATS[..9], STRICT_FORMATS);
    assert_eq!(AnthropicPolicy::FORMATS[9..], ["uri"]);
    // A format outside the list leaves the wire copy; one inside stays.
    let uri = project_anthropic(&schema(json!({"type": "string", "format": "uri"})));
    assert_eq!(uri.wire["format"], "uri");
    let iri = project_anthropic(&schema(json!({"type": "string", "format": "iri"})));
    assert!(iri.wire.get("format").is_none(), "{}", iri.wire);
}
