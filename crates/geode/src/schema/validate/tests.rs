//! Tests for validation: issues, hostile schemas, the shallow check and rendering.

use super::*;
use crate::schema::extract;
use crate::schema::fixtures::{decision, schema};
use serde_json::{Map, json};

fn compile(v: Value) -> Result<CompiledSchema, SchemaError> {
    CompiledSchema::compile(&schema(v))
}

/// Wraps `leaf` in `{"type":"object","properties":{"a": …}}` `levels` times, without recursion.
fn nested_properties(levels: usize, leaf: Value) -> Value {
    crate::schema::fixtures::nested_properties(levels, leaf, false)
}

/// Wraps `leaf` in single-element arrays `levels` times.
fn nested_arrays(levels: usize) -> Value {
    let mut v = json!(0);
    for _ in 0..levels {
        v = Value::Array(vec![v]);
    }
    v
}

// ---- issues ----

#[test]
fn decision_answers_validate_and_enum_issues_carry_allowed_values() {
    let c = CompiledSchema::compile(&decision()).unwrap();
    assert!(
        c.validate(&json!({"decision":"accept","reason":"ok"}))
            .is_empty()
    );
    assert!(c.is_valid(&json!({"decision":"accept","reason":"ok"})));
    let issues = c.validate(&json!({"decision":"maybe","reason":"ok"}));
    assert_eq!(
        issues.issues,
        vec![ValidationIssue {
            instance_path: "/decision".into(),
            schema_path: "/properties/decision/enum".into(),
            keyword: "enum".into(),
            message: r#""maybe" is not one of "accept" or "reject""#.into(),
            allowed: Some(vec![json!("accept"), json!("reject")]),
        }]
    );
    assert!(!c.is_valid(&json!({"decision":"maybe","reason":"ok"})));
}

#[test]
fn keywords_are_read_from_the_error_kind() {
    let c = CompiledSchema::compile(&decision()).unwrap();
    let issues = c.validate(&json!({"decision": 1, "extra": true}));
    let mut keywords: Vec<&str> = issues.iter().map(|i| i.keyword.as_str()).collect();
    keywords.sort_unstable();
    assert_eq!(
        keywords,
        vec!["additionalProperties", "enum", "required", "type"]
    );
    assert!(
        issues
            .iter()
            .all(|i| i.keyword != "enum" || i.allowed.is_some())
    );
    assert!(
        issues
            .iter()
            .all(|i| i.keyword == "enum" || i.allowed.is_none())
    );
}

#[test]
fn const_issues_carry_the_allowed_value() {
    let c = compile(json!({"properties":{"v":{"const":{"k":[1]}}}})).unwrap();
    let issues = c.validate(&json!({"v": 2}));
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].keyword, "const");
    assert_eq!(issues[0].allowed, Some(vec![json!({"k":[1]})]));
}

#[test]
fn formats_are_validated() {
    let c = compile(json!({"type":"string","format":"date"})).unwrap();
    assert!(c.validate(&json!("2026-01-31")).is_empty());
    let issues = c.validate(&json!("not a date"));
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].keyword, "format");
}

#[test]
fn long_messages_are_shortened_without_the_instance() {
    let c = compile(json!({"type":"string"})).unwrap();
    let big = json!({"data": "x".repeat(10_000)});
    let issues = c.validate(&big);
    assert_eq!(issues.len(), 1);
    assert!(
        issues[0].message.chars().count() <= MAX_MESSAGE_CHARS + 1,
        "{}",
        issues[0].message
    );
    assert!(
        !issues[0].message.contains("xxxxxxxxxx"),
        "{}",
        issues[0].message
    );
    assert!(
        issues[0].message.contains("string"),
        "{}",
        issues[0].message
    );
}

#[test]
fn issues_serialise_and_skip_absent_allowed() {
    let i = ValidationIssue {
        instance_path: "/a".into(),
        schema_path: "/properties/a/type".into(),
        keyword: "type".into(),
        message: "1 is not of type \"string\"".into(),
        allowed: None,
    };
    let v = serde_json::to_value(&i).unwrap();
    assert!(v.get("allowed").is_none());
    assert_eq!(serde_json::from_value::<ValidationIssue>(v).unwrap(), i);
}

#[test]
fn validation_mode_serialises_in_kebab_case() {
    assert_eq!(
        serde_json::to_value(Validation::Full).unwrap(),
        json!("full")
    );
    assert_eq!(
        serde_json::to_value(Validation::RequiredKeys).unwrap(),
        json!("required-keys")
    );
    let back: Validation = serde_json::from_value(json!("required-keys")).unwrap();
    assert_eq!(back, Validation::RequiredKeys);
    assert_eq!(Validation::default(), Validation::Full);
}

// ---- hostile schemas ----

#[test]
fn remote_and_file_refs_are_compile_errors_not_fetches() {
    for r in [
        "https://example.com/s.json",
        "http://127.0.0.1:9/s.json",
        "file:///etc/passwd",
    ] {
        match compile(json!({"properties":{"a":{"$ref": r}}})) {
            Err(SchemaError::Uncompilable { message, .. }) => {
                // Our refusing retriever was asked, so nothing else fetched it.
                assert!(message.contains("geode never fetches"), "{message}");
            }
            other => panic!("expected Uncompilable for {r}, got {other:?}"),
        }
    }
}

#[test]
fn a_missing_local_ref_is_uncompilable() {
    assert!(matches!(
        compile(json!({"$ref":"#/$defs/nope"})),
        Err(SchemaError::Uncompilable { .. })
    ));
}

#[test]
fn ref_cycles_compile_and_validate_without_hanging() {
    let c = compile(json!({"$ref":"#"})).unwrap();
    assert!(c.validate(&json!({"any": [1, 2]})).is_empty());
    let c = compile(json!({
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        "$ref": "#/$defs/a"
    }))
    .unwrap();
    assert!(c.validate(&json!(1)).is_empty());
}

#[test]
fn recursive_schemas_validate_deep_answers() {
    let c = compile(json!({
        "type": "object",
        "properties": {"child": {"$ref": "#"}, "v": {"type": "integer"}},
        "additionalProperties": false
    }))
    .unwrap();
    assert!(
        c.validate(&json!({"child": {"child": {"v": 1}}}))
            .is_empty()
    );
    let issues = c.validate(&json!({"child": {"child": {"v": "x"}}}));
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].instance_path, "/child/child/v");
}

#[test]
fn ten_thousand_levels_are_too_deep() {
    let deep = nested_properties(5_000, json!({"type":"string"}));
    assert!(matches!(
        check_depth_and_size(&deep),
        Err(SchemaError::TooDeep {
            depth: 129,
            limit: 128
        })
    ));
    // A `ResponseSchema` cannot be taken apart, and dropping 10,000 levels recurses (serde_json's
    // drop), so the compile runs on a thread with room for that drop. serde_json's parser never
    // builds such a value (its limit is 128), only code can.
    let outcome = std::thread::Builder::new()
        .stack_size(256 * 1024 * 1024)
        .spawn(move || match CompiledSchema::compile(&schema(deep)) {
            Err(SchemaError::TooDeep { depth, limit }) => Ok((depth, limit)),
            other => Err(format!("{other:?}")),
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(outcome, Ok((MAX_SCHEMA_DEPTH + 1, MAX_SCHEMA_DEPTH)));
}

#[test]
fn the_deepest_accepted_schema_compiles_and_validates() {
    // 63 property levels = 126 JSON levels plus the leaf: within the limit.
    let s = nested_properties(63, json!({"type":"string"}));
    assert!(check_depth_and_size(&s).is_ok());
    let c = CompiledSchema::compile(&schema(s)).unwrap();
    let mut answer = json!(7);
    for _ in 0..63 {
        answer = json!({ "a": answer });
    }
    let issues = c.validate(&answer);
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].instance_path.matches("/a").count(), 63);
    assert!(matches!(
        check_depth_and_size(&nested_properties(64, json!({"type":"string"}))),
        Err(SchemaError::TooDeep {
            depth: 129,
            limit: 128
        })
    ));
}

#[test]
fn two_hundred_thousand_properties_compile() {
    let props: Map<String, Value> = (0..200_000)
        .map(|i| (format!("p{i}"), json!({"type":"integer"})))
        .collect();
    let c = compile(json!({"type":"object","properties":props})).unwrap();
    assert!(c.validate(&json!({"p0": 1, "p199999": 2})).is_empty());
    assert_eq!(
        c.validate(&json!({"p199999": "x"}))[0].instance_path,
        "/p199999"
    );
}

#[test]
fn more_nodes_than_the_limit_are_too_large() {
    let values: Vec<Value> = (0..MAX_SCHEMA_NODES).map(|i| json!(i)).collect();
    match compile(json!({"enum": values})) {
        Err(SchemaError::TooLarge { nodes, limit }) => {
            assert_eq!(limit, MAX_SCHEMA_NODES);
            assert_eq!(nodes, MAX_SCHEMA_NODES + 1);
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
}

#[test]
fn invalid_keyword_values_are_uncompilable_with_a_pointer() {
    match compile(json!({"properties":{"a":{"type": 5}}})) {
        Err(SchemaError::Uncompilable { pointer, .. }) => {
            assert_eq!(pointer, "/properties/a/type");
        }
        other => panic!("expected Uncompilable, got {other:?}"),
    }
    assert!(matches!(
        compile(json!({"minLength": -1})),
        Err(SchemaError::Uncompilable { .. })
    ));
    assert!(matches!(
        compile(json!({"pattern": "("})),
        Err(SchemaError::Uncompilable { .. })
    ));
}

#[test]
fn answers_deeper_than_the_limit_get_one_depth_issue() {
    let c = compile(json!({})).unwrap();
    let deep = nested_arrays(MAX_INSTANCE_DEPTH + 72);
    let issues = c.validate(&deep);
    assert_eq!(issues.len(), 1);
    assert_eq!(issues[0].keyword, "depth");
    assert!(issues[0].message.contains("128"), "{}", issues[0].message);
    assert!(!c.is_valid(&deep));
    assert!(
        c.validate(&nested_arrays(MAX_INSTANCE_DEPTH - 1))
            .is_empty()
    );
}

// ---- the shallow check ----

#[test]
fn shallow_check_follows_the_reference_worker_check() {
    let s = decision();
    let ok = r#"Sure: {"decision": null, "reason": "x"}"#;
    assert_eq!(
        shallow_check(&s, ok),
        ShallowCheck::Pass {
            object: r#"{"decision": null, "reason": "x"}"#
        }
    );
    assert_eq!(shallow_check(&s, "no json here"), ShallowCheck::NoObject);
    assert_eq!(shallow_check(&s, "{'decision': 1}"), ShallowCheck::NoObject);
    // The last parseable object decides, even when an earlier one had the keys.
    assert_eq!(
        shallow_check(&s, r#"{"decision":1,"reason":2} then {"reason":3}"#),
        ShallowCheck::MissingKeys {
            object: r#"{"reason":3}"#,
            keys: vec!["decision".into()]
        }
    );
    // Nested keys do not count; escaped keys do.
    assert_eq!(
        shallow_check(&s, r#"{"x":{"decision":1,"reason":2},"re\u0061son":0}"#),
        ShallowCheck::MissingKeys {
            object: r#"{"x":{"decision":1,"reason":2},"re\u0061son":0}"#,
            keys: vec!["decision".into()]
        }
    );
}

#[test]
fn shallow_check_without_required_accepts_any_object() {
    let s = schema(json!({"type":"object"}));
    assert_eq!(shallow_check(&s, "{}"), ShallowCheck::Pass { object: "{}" });
    assert_eq!(shallow_check(&s, "[1]"), ShallowCheck::NoObject);
}

#[test]
fn shallow_check_agrees_with_extract_and_missing_required_keys() {
    let s = decision();
    for text in [
        r#"{"decision":"accept","reason":"r"}"#,
        r#"pre {"decision":"accept"} post"#,
        r#"{"a":{"b":1}} {"reason":[1,{"c":"}"}]}"#,
        "nothing",
    ] {
        let via_value = extract::extract_last_object(text).map(|(o, v)| {
            let keys = missing_required_keys(&s, &v);
            if keys.is_empty() {
                ShallowCheck::Pass { object: o }
            } else {
                ShallowCheck::MissingKeys { object: o, keys }
            }
        });
        assert_eq!(
            shallow_check(&s, text),
            via_value.unwrap_or(ShallowCheck::NoObject),
            "{text}"
        );
    }
}

#[test]
fn required_applies_to_objects_only() {
    let s = decision();
    assert!(missing_required_keys(&s, &json!([1])).is_empty());
    assert_eq!(
        missing_required_keys(&s, &json!({"reason": null})),
        vec!["decision"]
    );
}

// ---- rendering ----

#[test]
fn render_issues_gives_one_line_per_issue_with_allowed_values() {
    let c = CompiledSchema::compile(&decision()).unwrap();
    let text = render_issues(&c.validate(&json!({"decision":"maybe"})), 0);
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        vec![
            r#"/: "reason" is a required property"#,
            r#"/decision: "maybe" is not one of "accept" or "reject" (allowed: "accept", "reject")"#,
        ]
    );
    assert_eq!(render_issues(&[], 0), "");
}

#[test]
fn render_issues_summarises_past_twenty() {
    let one = ValidationIssue {
        instance_path: "/a".into(),
        schema_path: String::new(),
        keyword: "type".into(),
        message: "bad".into(),
        allowed: None,
    };
    let text = render_issues(&vec![one.clone(); 25], 0);
    assert_eq!(text.lines().count(), 21);
    assert_eq!(text.lines().last(), Some("… and 5 more"));
    // Errors counted but not collected are added to the unlisted ones.
    let text = render_issues(&vec![one; 25], 999_900);
    assert_eq!(text.lines().last(), Some("… and 999905 more"));
}

#[test]
fn shallow_check_on_non_object_roots_wants_a_value_of_the_type() {
    let ints = schema(json!({"type": "array", "items": {"type": "integer"}, "required": ["x"]}));
    assert_eq!(
        shallow_check(&ints, "[1,2,3]"),
        ShallowCheck::Pass { object: "[1,2,3]" }
    );
    assert_eq!(
        shallow_check(&ints, "Here: [1] ok"),
        ShallowCheck::Pass { object: "[1]" }
    );
    assert_eq!(shallow_check(&ints, r#"{"x":1}"#), ShallowCheck::NoObject);
    assert_eq!(shallow_check(&ints, "no array"), ShallowCheck::NoObject);
    let either = schema(json!({"type": ["object", "string"], "required": ["a"]}));
    assert_eq!(
        shallow_check(&either, r#""text""#),
        ShallowCheck::Pass {
            object: r#""text""#
        }
    );
    assert_eq!(
        shallow_check(&either, r#"{"b":1}"#),
        ShallowCheck::MissingKeys {
            object: r#"{"b":1}"#,
            keys: vec!["a".to_owned()]
        }
    );
    let int = schema(json!({"type": "integer"}));
    assert_eq!(
        shallow_check(&int, " 7 "),
        ShallowCheck::Pass { object: "7" }
    );
    assert_eq!(shallow_check(&int, "7.5"), ShallowCheck::NoObject);
}

#[test]
fn a_schema_is_compiled_once_per_text_and_format_mode() {
    let s =
        ResponseSchema::from_json_str(r#"{"type":"object","required":["cached_once"]}"#).unwrap();
    let same =
        ResponseSchema::from_json_str(r#"{"type":"object","required":["cached_once"]}"#).unwrap();
    let a = CompiledSchema::compile_cached(&s, FormatMode::Assert).unwrap();
    let b = CompiledSchema::compile_cached(&same, FormatMode::Assert).unwrap();
    assert!(std::sync::Arc::ptr_eq(&a, &b), "the same text: one compile");
    let c = CompiledSchema::compile_cached(&s, FormatMode::Annotate).unwrap();
    assert!(
        !std::sync::Arc::ptr_eq(&a, &c),
        "another format mode: another compile"
    );
    assert_eq!(c.formats(), FormatMode::Annotate);
    assert!(!a.validate(&serde_json::json!({})).is_empty());
    // A bad schema is refused every time, never cached as good.
    let bad = ResponseSchema::from_json_str(r#"{"type":12}"#).unwrap();
    assert!(CompiledSchema::compile_cached(&bad, FormatMode::Assert).is_err());
    assert!(CompiledSchema::compile_cached(&bad, FormatMode::Assert).is_err());
}

#[test]
fn a_pattern_too_large_for_the_engine_is_called_too_large_not_invalid() {
    for schema in [
        json!({"type": "string", "pattern": "a{1000000}"}),
        json!({"type": "object", "patternProperties": {"^x{1000000}$": {}}}),
    ] {
        let err = CompiledSchema::compile(&ResponseSchema::from_value(schema.clone()).unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("too large for the regex engine"),
            "{schema}: {err}"
        );
    }
    // A pattern that is not ECMA syntax keeps the validator's reason.
    let err = CompiledSchema::compile(
        &ResponseSchema::from_value(json!({"type": "string", "pattern": "(a"})).unwrap(),
    )
    .unwrap_err()
    .to_string();
    assert!(!err.contains("too large"), "{err}");
}
