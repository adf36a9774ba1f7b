//! Real-world schemas: asserted formats, ECMA-262 patterns and every draft, one case each.

use super::*;
use crate::schema::formats::KNOWN_FORMATS;
use serde_json::json;

fn compiled(v: Value) -> CompiledSchema {
    CompiledSchema::compile(&ResponseSchema::from_value(v).unwrap()).unwrap()
}

fn valid(schema: &Value, instance: Value) -> bool {
    let c = compiled(schema.clone());
    let report = c.validate(&instance);
    assert_eq!(
        c.is_valid(&instance),
        report.is_empty(),
        "{schema} {instance}"
    );
    report.is_empty()
}

#[test]
fn every_known_format_is_asserted_by_default() {
    let cases: &[(&str, &str, &str)] = &[
        ("date", "2024-02-29", "2023-02-29"),
        ("date-time", "2024-01-01T10:00:00Z", "2024-01-01 10:00"),
        ("duration", "P3DT4H", "3 days"),
        ("email", "a@example.com", "not an email"),
        ("hostname", "example.com", "-bad-.com"),
        ("idn-email", "实例@example.com", "no-at-sign"),
        ("idn-hostname", "例え.jp", "-bad-"),
        ("ipv4", "192.168.0.1", "256.1.1.1"),
        ("ipv6", "::1", "12345::"),
        ("iri", "https://例え.jp/ü", "not an iri"),
        ("iri-reference", "/ü?x", "\\\\bad"),
        ("json-pointer", "/a/b", "a/b"),
        ("regex", "^[a-z]+$", "(unclosed"),
        ("relative-json-pointer", "1/a", "/a"),
        ("time", "10:00:00Z", "25:00:00Z"),
        ("uri", "https://example.com/x", "no scheme"),
        ("uri-reference", "../x", "\\\\bad"),
        ("uri-template", "/x/{id}", "/x/{id"),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", "not-a-uuid"),
    ];
    assert_eq!(cases.len(), KNOWN_FORMATS.len());
    for (format, good, bad) in cases {
        let s = json!({"type": "string", "format": format});
        assert!(valid(&s, json!(good)), "{format}: {good}");
        assert!(!valid(&s, json!(bad)), "{format}: {bad}");
        assert!(compiled(s).unchecked_formats().is_empty(), "{format}");
    }
}

#[test]
fn a_format_newer_than_the_schema_draft_is_still_asserted() {
    for draft in [
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-07/schema#",
    ] {
        for (format, bad) in [
            ("uuid", "not-a-uuid"),
            ("duration", "3 days"),
            ("iri", "not an iri"),
        ] {
            let s = json!({"$schema": draft, "format": format});
            assert!(!valid(&s, json!(bad)), "{draft} {format}");
            assert!(compiled(s).unchecked_formats().is_empty());
        }
    }
}

#[test]
fn unknown_formats_pass_and_are_listed_as_unchecked() {
    let s = json!({"properties": {"a": {"format": "phone"}, "b": {"format": "int32"}, "c": {"format": "uuid"}}});
    assert!(valid(
        &s,
        json!({"a": "not a phone", "b": "x", "c": "123e4567-e89b-12d3-a456-426614174000"})
    ));
    let c = compiled(s);
    assert_eq!(c.unchecked_formats(), ["int32", "phone"]);
    assert_eq!(c.formats(), FormatMode::Assert);
}

#[test]
fn annotation_mode_checks_no_format_and_lists_every_one() {
    let s = ResponseSchema::from_value(
        json!({"properties": {"id": {"format": "uuid"}, "x": {"format": "phone"}}}),
    )
    .unwrap();
    let c = CompiledSchema::compile_with(&s, FormatMode::Annotate).unwrap();
    assert!(c.validate(&json!({"id": "not-a-uuid"})).is_empty());
    assert_eq!(c.unchecked_formats(), ["phone", "uuid"]);
    assert_eq!(c.formats(), FormatMode::Annotate);
}

#[test]
fn ecma_262_patterns_compile_with_ecma_semantics() {
    // `[[a-z]*` is a class of `[` and a-z; the trailing `]*` repeats a literal `]`.
    let nested = json!({"pattern": "^[[a-z]*[-]?[a-z]*]*$"});
    assert!(valid(&nested, json!("abc-def")));
    assert!(valid(&nested, json!("[abc]]")));
    assert!(!valid(&nested, json!("ab1")));
    let hex = json!({"pattern": "^[A-Fa-f\\d]{24}$"});
    assert!(valid(&hex, json!("507f1f77bcf86cd799439011")));
    assert!(!valid(&hex, json!("507f1f77bcf86cd79943901g")));
    let braces = json!({"pattern": "^\\{[a-z]+\\}$"});
    assert!(valid(&braces, json!("{name}")));
    assert!(!valid(&braces, json!("name")));
    // ECMA `\d` is ASCII only; `\w` too.
    assert!(!valid(&json!({"pattern": "^\\d+$"}), json!("١٢٣")));
    // Lookaround and backreferences are ECMA-262 too.
    assert!(valid(
        &json!({"pattern": "^(?!admin$)[a-z]+$"}),
        json!("user")
    ));
    assert!(!valid(
        &json!({"pattern": "^(?!admin$)[a-z]+$"}),
        json!("admin")
    ));
    assert!(valid(&json!({"pattern": "^(a)\\1$"}), json!("aa")));
    // The same dialect for patternProperties.
    let props = json!({"patternProperties": {"^[[a-z]+]$": {"type": "integer"}, "^x[\\d]$": {"type": "string"}}});
    assert!(valid(&props, json!({"[ab]": 1, "x1": "s"})));
    assert!(!valid(&props, json!({"[ab]": "s"})));
    assert!(!valid(&props, json!({"x1": 1})));
}

#[test]
fn a_pattern_that_backtracks_without_bound_fails_fast_with_a_pattern_issue() {
    let s = json!({"type": "array", "items": {"pattern": "^(a|aa)+\\1$"}});
    let c = compiled(s);
    let answer = json!(vec!["a".repeat(40) + "c"; 4]);
    let started = std::time::Instant::now();
    let report = c.validate(&answer);
    assert!(!c.is_valid(&answer));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "bounded, not a hang"
    );
    assert!(!report.issues.is_empty(), "{report:?}");
    assert!(
        report.issues[0].message.contains("backtracking"),
        "{report:?}"
    );
}

const D4: &str = "http://json-schema.org/draft-04/schema#";
const D6: &str = "http://json-schema.org/draft-06/schema#";
const D7: &str = "http://json-schema.org/draft-07/schema#";
const D2019: &str = "https://json-schema.org/draft/2019-09/schema";
const D2020: &str = "https://json-schema.org/draft/2020-12/schema";

#[test]
fn draft_04_exclusive_maximum_is_a_boolean() {
    let s = json!({"$schema": D4, "maximum": 3, "exclusiveMaximum": true});
    assert!(valid(&s, json!(2)));
    assert!(!valid(&s, json!(3)));
}

#[test]
fn draft_06_exclusive_maximum_is_a_number_and_const_exists() {
    let s = json!({"$schema": D6, "exclusiveMaximum": 3});
    assert!(valid(&s, json!(2)) && !valid(&s, json!(3)));
    assert!(!valid(&json!({"$schema": D6, "const": 1}), json!(2)));
    // Draft-04 has no `const`: an unknown keyword.
    assert!(valid(&json!({"$schema": D4, "const": 1}), json!(2)));
}

#[test]
fn draft_07_has_if_then_else_and_draft_06_does_not() {
    let cond = |d: &str| json!({"$schema": d, "if": {"minimum": 10}, "then": {"multipleOf": 2}});
    assert!(!valid(&cond(D7), json!(11)));
    assert!(valid(&cond(D6), json!(11)));
}

#[test]
fn draft_07_definitions_and_ref_siblings_are_ignored() {
    let s = |d: &str| json!({"$schema": d, "definitions": {"n": {"type": "integer"}}, "$ref": "#/definitions/n", "maximum": 1});
    assert!(
        valid(&s(D7), json!(5)),
        "draft-07 ignores keywords beside $ref"
    );
    assert!(!valid(&s(D7), json!("x")));
    assert!(!valid(&s(D2019), json!(5)), "2019-09 applies them");
}

#[test]
fn draft_07_dependencies_and_2019_09_dependent_required() {
    let deps = |d: &str| json!({"$schema": d, "dependencies": {"a": ["b"]}});
    assert!(!valid(&deps(D7), json!({"a": 1})));
    assert!(valid(&deps(D7), json!({"a": 1, "b": 2})));
    let req = |d: &str| json!({"$schema": d, "dependentRequired": {"a": ["b"]}});
    assert!(!valid(&req(D2019), json!({"a": 1})));
    assert!(
        valid(&req(D7), json!({"a": 1})),
        "no `dependentRequired` in draft-07"
    );
}

#[test]
fn draft_2019_09_recursive_ref() {
    let tree = json!({
        "$schema": D2019,
        "$recursiveAnchor": true,
        "type": "object",
        "properties": {"kids": {"type": "array", "items": {"$recursiveRef": "#"}}, "n": {"type": "integer"}}
    });
    assert!(valid(
        &tree,
        json!({"n": 1, "kids": [{"n": 2, "kids": []}]})
    ));
    assert!(!valid(&tree, json!({"n": 1, "kids": [{"n": "x"}]})));
}

#[test]
fn draft_2020_12_dynamic_ref_and_prefix_items() {
    let list = json!({
        "$schema": D2020,
        "$id": "https://geode.invalid/list",
        "$dynamicAnchor": "item",
        "type": "array",
        "items": {"$dynamicRef": "#item"},
        "$defs": {"leaf": {"$dynamicAnchor": "item", "type": ["integer", "array"]}}
    });
    assert!(valid(&list, json!([[1], [[2]]])));
    let tuple = |d: Option<&str>| {
        let mut s = json!({"prefixItems": [{"type": "integer"}], "items": false});
        if let Some(d) = d {
            s["$schema"] = json!(d);
        }
        s
    };
    assert!(!valid(&tuple(Some(D2020)), json!([1, 2])));
    assert!(valid(&tuple(Some(D2020)), json!([1])));
    // No `$schema` means 2020-12; 2019-09 knows no `prefixItems` (and `items: false` forbids all).
    assert!(!valid(&tuple(None), json!([1, 2])));
    assert!(valid(&tuple(None), json!([1])));
    assert!(!valid(&tuple(Some(D2019)), json!([1])));
    let old_tuple =
        json!({"$schema": D2019, "items": [{"type": "integer"}], "additionalItems": false});
    assert!(valid(&old_tuple, json!([1])) && !valid(&old_tuple, json!([1, 2])));
}
