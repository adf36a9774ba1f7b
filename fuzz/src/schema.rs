//! Schema compilation and validation (`geode::schema::validate`) with any schema and answer.

use geode::schema::ResponseSchema;
use geode::schema::validate::{
    CompiledSchema, missing_required_keys, render_issues, shallow_check,
};
use serde_json::{Deserializer, Value};

/// Reads `data` as two JSON texts, a schema then an answer (`{"type":"object"} {"a":1}`; the
/// answer defaults to `{}`), compiles the schema and validates the answer.
///
/// Invariants: [`ResponseSchema::from_json_str`] agrees with the JSON parser on the schema text;
/// compilation is a validator or a typed error; `is_valid` is `validate(..).is_empty()`;
/// validation is deterministic; the shallow checks never panic.
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut values = Deserializer::from_str(&text).into_iter::<Value>();
    let first = values.next();
    let schema_text = text.get(..values.byte_offset()).unwrap_or_default();
    let answer_text = text.get(values.byte_offset()..).unwrap_or_default();
    let answer = match values.next() {
        Some(Ok(v)) => v,
        _ => Value::Object(Default::default()),
    };
    let schema = match (first, ResponseSchema::from_json_str(schema_text)) {
        (Some(Ok(v)), Ok(schema)) => {
            assert_eq!(schema.as_value(), &v, "from_json_str changed the schema");
            schema
        }
        (Some(Ok(v)), Err(e)) => {
            assert!(!v.is_object(), "an object schema was refused: {e}");
            let _ = e.to_string();
            return;
        }
        (_, Err(e)) => {
            let _ = e.to_string();
            return;
        }
        (_, Ok(_)) => panic!("from_json_str took text the JSON parser refused: {schema_text:?}"),
    };

    let _ = missing_required_keys(&schema, &answer);
    let _ = shallow_check(&schema, answer_text);
    let compiled = match CompiledSchema::compile(&schema) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let issues = compiled.validate(&answer);
    assert_eq!(
        compiled.is_valid(&answer),
        issues.is_empty(),
        "is_valid disagrees with validate: {issues:?}"
    );
    assert_eq!(
        compiled.validate(&answer),
        issues,
        "validation is not deterministic"
    );
    for issue in issues.iter() {
        assert!(
            !issue.keyword.is_empty(),
            "an issue without a keyword: {issue:?}"
        );
    }
    if !issues.is_empty() {
        assert!(
            !render_issues(&issues, issues.more_errors).is_empty(),
            "issues render as nothing"
        );
    }
}
