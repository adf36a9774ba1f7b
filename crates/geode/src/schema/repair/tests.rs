use super::*;
use serde_json::json;

fn schema(v: Value) -> (ResponseSchema, CompiledSchema) {
    let s = ResponseSchema::from_value(v).unwrap();
    let c = CompiledSchema::compile(&s).unwrap();
    (s, c)
}

fn decision() -> (ResponseSchema, CompiledSchema) {
    let s = crate::schema::fixtures::decision();
    let c = CompiledSchema::compile(&s).unwrap();
    (s, c)
}

fn run(s: &(ResponseSchema, CompiledSchema), text: &str) -> Result<Repaired, NotRepairable> {
    repair(&RepairInput::new(text, &s.0, &s.1, Ending::Complete))
}

/// The repaired value and the fixes as `kind@path`.
fn fixed(s: &(ResponseSchema, CompiledSchema), text: &str) -> (Value, Vec<String>) {
    match run(s, text) {
        Ok(Repaired::Value { value, repairs }) => (
            value,
            repairs
                .iter()
                .map(|r| format!("{}@{}", r.kind, r.instance_path))
                .collect(),
        ),
        other => panic!("{text:?}: {other:?}"),
    }
}

#[test]
fn kinds_serialise_as_their_names() {
    for kind in RepairKind::ALL {
        assert_eq!(
            serde_json::to_value(kind).unwrap(),
            json!(kind.as_str()),
            "{kind:?}"
        );
    }
    let r = Repair::new(RepairKind::TrailingCommas, "/a");
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"kind": "trailing_commas", "instance_path": "/a"})
    );
}

#[test]
fn a_valid_answer_needs_no_repair() {
    let d = decision();
    for text in [
        r#"{"decision": "accept", "reason": "ok"}"#,
        "Sure: {\"decision\": \"reject\", \"reason\": \"no\"} done",
        "```json\n{\"decision\": \"reject\", \"reason\": \"no\"}\n```",
    ] {
        assert_eq!(run(&d, text), Ok(Repaired::NotNeeded), "{text}");
    }
}

#[test]
fn each_syntax_kind_is_named_with_its_place() {
    let d = decision();
    let cases: [(&str, &[&str]); 9] = [
        (
            "{'decision': 'accept', 'reason': 'it's fine'}",
            &["single_quotes@/decision", "single_quotes@/reason"],
        ),
        (
            "{decision: \"accept\", reason: \"ok\"}",
            &["unquoted_keys@/decision", "unquoted_keys@/reason"],
        ),
        (
            "{\"decision\": \"accept\", \"reason\": \"ok\",}",
            &["trailing_commas@"],
        ),
        (
            "{\n  // the verdict\n  \"decision\": \"accept\", /* why */ \"reason\": \"ok\" # end\n}",
            &["comments@"],
        ),
        (
            "{\"decision\": \"accept\", \"reason\": \"ok\"",
            &["missing_closing_bracket@"],
        ),
        (
            "{“decision”: “accept”, “reason”: “ok”}",
            &["smart_quotes@/decision", "smart_quotes@/reason"],
        ),
        (
            "Here you go:\n{'decision': 'accept', 'reason': 'ok'}\nAnything else?",
            &[
                "fence_or_prose@",
                "single_quotes@/decision",
                "single_quotes@/reason",
            ],
        ),
        (
            "```json\n{\"decision\": \"accept\", \"reason\": \"ok\",}\n```",
            &["fence_or_prose@", "trailing_commas@"],
        ),
        (
            "{\"decision\": \"Accept\", \"reason\": \"ok\"}",
            &["enum_case@/decision"],
        ),
    ];
    for (text, want) in cases {
        let (value, got) = fixed(&d, text);
        assert_eq!(value["decision"], "accept", "{text}");
        assert_eq!(got, want, "{text}");
    }
}

#[test]
fn python_literals_and_quoted_keys_in_nested_places() {
    let s = schema(json!({
        "type": "object",
        "properties": {
            "ok": {"type": "boolean"},
            "note": {"type": ["string", "null"]},
            "items": {"type": "array", "items": {"type": "object", "properties": {"a/b": {"type": "integer"}}}}
        },
        "required": ["ok", "note", "items"]
    }));
    let (value, got) = fixed(
        &s,
        "{'ok': True, 'note': None, 'items': [{'a/b': 1}, {\"a/b\": 2},]}",
    );
    assert_eq!(
        value,
        json!({"ok": true, "note": null, "items": [{"a/b": 1}, {"a/b": 2}]})
    );
    assert_eq!(
        got,
        [
            "single_quotes@/ok",
            "python_literals@/ok",
            "single_quotes@/note",
            "python_literals@/note",
            "single_quotes@/items",
            "single_quotes@/items/0/a~1b",
            "trailing_commas@/items",
        ]
    );
}

#[test]
fn schema_guided_fixes_follow_refs_and_options() {
    let s = schema(json!({
        "type": "object",
        "$defs": {"Level": {"type": "string", "enum": ["low", "high"]}},
        "properties": {
            "count": {"type": "integer"},
            "ratio": {"type": ["number", "null"]},
            "done": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "level": {"$ref": "#/$defs/Level"},
            "maybe": {"anyOf": [{"$ref": "#/$defs/Level"}, {"type": "null"}]}
        },
        "required": ["count", "ratio", "done", "tags", "level", "maybe"]
    }));
    let (value, got) = fixed(
        &s,
        r#"{"count": "3", "ratio": " 0.5 ", "done": "TRUE", "tags": "solo", "level": "HIGH", "maybe": "Low"}"#,
    );
    assert_eq!(
        value,
        json!({"count": 3, "ratio": 0.5, "done": true, "tags": ["solo"], "level": "high", "maybe": "low"})
    );
    assert_eq!(
        got,
        [
            "string_to_number@/count",
            "string_to_number@/ratio",
            "string_to_boolean@/done",
            "wrap_in_array@/tags",
            "enum_case@/level",
            "enum_case@/maybe",
        ]
    );
}

#[test]
fn nothing_is_coerced_where_two_readings_exist() {
    let s = schema(json!({
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "either": {"type": ["integer", "string"], "maxLength": 1},
            "e": {"enum": ["A", "a"]},
            "flag": {"type": "boolean"},
            "list": {"type": "array", "items": {"type": "integer"}}
        }
    }));
    for text in [
        r#"{"n": "1,000"}"#,
        r#"{"n": "2.5"}"#,
        r#"{"n": "+3"}"#,
        r#"{"either": "12"}"#,
        r#"{"e": "À"}"#,
        r#"{"flag": "yes"}"#,
        r#"{"list": "3"}"#,
        r#"{"n": "NaN"}"#,
    ] {
        assert!(
            matches!(run(&s, text), Err(NotRepairable::StillInvalid { .. })),
            "{text}: {:?}",
            run(&s, text)
        );
    }
}

#[test]
fn cut_refused_and_empty_answers_are_never_repaired() {
    let d = decision();
    let text = "{\"decision\": \"accept\", \"reason\": \"ok\"";
    let at = |ending| repair(&RepairInput::new(text, &d.0, &d.1, ending));
    assert_eq!(at(Ending::Truncated), Err(NotRepairable::Truncated));
    assert_eq!(at(Ending::Refused), Err(NotRepairable::Refused));
    assert_eq!(run(&d, "  \n "), Err(NotRepairable::Empty));
}

/// An answer and a test of the reason it is not repaired.
type Expected = (&'static str, fn(&NotRepairable) -> bool);

#[test]
fn what_would_need_a_guess_is_not_repairable() {
    let d = decision();
    let cases: [Expected; 11] = [
        ("{\"decision\": {\"x\": \"accept\"", |e| {
            matches!(e, NotRepairable::CutOff { missing: 2 })
        }),
        ("{\"decision\": \"accept\", \"reason\": \"ok", |e| {
            matches!(e, NotRepairable::NoValue { .. })
        }),
        ("{\"decision\": \"accept\", \"reason\":", |e| {
            matches!(e, NotRepairable::NoValue { .. })
        }),
        ("{\"decision\": \"accept\",", |e| {
            matches!(e, NotRepairable::NoValue { .. })
        }),
        ("{\"decision\": accept, \"reason\": \"ok\"}", |e| {
            matches!(e, NotRepairable::NoValue { .. })
        }),
        ("{\"decision\": \"accept\",, \"reason\": \"ok\"}", |e| {
            matches!(e, NotRepairable::NoValue { .. })
        }),
        ("{'decision': 'accept'}", |e| {
            matches!(e, NotRepairable::StillInvalid { .. })
        }),
        (
            "First {'decision': 'accept', 'reason': 'a'} then {'decision': 'reject', 'reason': 'b'}",
            |e| matches!(e, NotRepairable::Ambiguous { count: 2 }),
        ),
        (
            "Example: {\"decision\": \"Accept\", \"reason\": \"x\"} Mine: {'decision': 'reject', 'reason': 'y'}",
            |e| matches!(e, NotRepairable::Ambiguous { count: 2 }),
        ),
        ("[{'decision': 'accept', 'reason': 'a'}]", |e| {
            matches!(e, NotRepairable::StillInvalid { .. })
        }),
        ("{\"decision\": \"accept\", \"reason\": undefined}", |e| {
            matches!(e, NotRepairable::NoValue { .. })
        }),
    ];
    for (text, ok) in cases {
        let got = run(&d, text);
        assert!(matches!(&got, Err(e) if ok(e)), "{text}: {got:?}");
    }
}

#[test]
fn a_scalar_root_is_not_looked_for_in_prose() {
    let s = schema(json!({"type": "integer"}));
    assert!(matches!(
        run(&s, "The answer is 42."),
        Err(NotRepairable::NoValue { .. })
    ));
    let (value, got) = fixed(&s, "\"42\"");
    assert_eq!(
        (value, got),
        (json!(42), vec!["string_to_number@".to_owned()])
    );
}

#[test]
fn a_wrapped_root_is_read_under_value() {
    let s = schema(json!({"type": "array", "items": {"type": "integer"}}));
    let input = RepairInput {
        wrapped_root: true,
        ..RepairInput::new("{'value': [1, 2,]}", &s.0, &s.1, Ending::Complete)
    };
    let Ok(Repaired::Value { value, repairs }) = repair(&input) else {
        panic!("{:?}", repair(&input));
    };
    assert_eq!(value, json!([1, 2]));
    assert_eq!(
        repairs,
        [
            Repair::new(RepairKind::SingleQuotes, ""),
            Repair::new(RepairKind::TrailingCommas, "")
        ]
    );
}

#[test]
fn strings_keep_escapes_and_unicode() {
    let s = schema(json!({"type": "object", "properties": {"t": {"type": "string"}}}));
    let (value, _) = fixed(&s, r#"{'t': 'a\'b \"c\" \u00e9 \ud83d\ude00 ‘q’',}"#);
    assert_eq!(value["t"], "a'b \"c\" é 😀 ‘q’");
}

#[test]
fn hostile_inputs_end_typed_and_bounded() {
    let s = schema(json!({"type": "object"}));
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    assert!(run(&s, &deep).is_err());
    let many = "{".repeat(100_000);
    assert!(run(&s, &many).is_err());
    let big = format!("{{'a': '{}'}}", "x".repeat(MAX_REPAIR_BYTES));
    assert_eq!(
        run(&s, &big),
        Err(NotRepairable::TooLarge {
            limit: MAX_REPAIR_BYTES
        })
    );
    for text in [
        "{'a': 1e400}",
        "{'a': \"\u{1}\"}",
        "{'a': '\\q'}",
        "{/* open",
    ] {
        assert!(run(&s, text).is_err(), "{text}");
    }
}

proptest::proptest! {
    /// Whatever the text, repair ends typed (no panic), and a value it gives validates.
    #[test]
    fn any_text_ends_typed_and_a_repaired_value_validates(
        text in "[{}\\[\\],:'\"“”‘’ a-zA-Z0-9_.#/*\\\\\\n-]{0,60}"
    ) {
        let d = decision();
        for s in [&d, &schema(json!({"type": "array", "items": {"type": "integer"}}))] {
            if let Ok(Repaired::Value { value, repairs }) = run(s, &text) {
                proptest::prop_assert!(s.1.validate(&value).is_empty(), "{text:?} → {value}");
                proptest::prop_assert!(!repairs.is_empty());
            }
        }
    }
}

/// A Decision written sloppily in one of many ways, and the value it stands for.
fn sloppy_decision() -> impl proptest::strategy::Strategy<Value = (String, Value)> {
    use proptest::prelude::*;
    (
        proptest::bool::ANY,
        "[a-z]{1,5}(('[a-z]{1,3})| [a-z]{1,5}|, [a-z]{1,4}){0,4}",
        0usize..4,
        0usize..3,
        0usize..3,
        (
            proptest::bool::ANY,
            proptest::bool::ANY,
            proptest::bool::ANY,
        ),
        0usize..3,
    )
        .prop_map(
            |(accept, reason, key_q, value_q, case, (comma, comment, open_end), wrap)| {
                let decision = if accept { "accept" } else { "reject" };
                let shown = match case {
                    0 => decision.to_owned(),
                    1 => decision.to_uppercase(),
                    _ => format!("{}{}", &decision[..1].to_uppercase(), &decision[1..]),
                };
                let key = |k: &str| match key_q {
                    0 => format!("\"{k}\""),
                    1 => format!("'{k}'"),
                    2 => k.to_owned(),
                    _ => format!("“{k}”"),
                };
                let val = |v: &str| match value_q {
                    0 => format!("\"{v}\""),
                    1 => format!("'{v}'"),
                    _ => format!("“{v}”"),
                };
                let mut text = format!(
                    "{{{}: {}, {}{}: {}",
                    key("decision"),
                    val(&shown),
                    if comment { "/* why */ " } else { "" },
                    key("reason"),
                    val(&reason)
                );
                // A comma then the end is the look of a cut-off answer: never repaired.
                if comma && !open_end {
                    text.push(',');
                }
                if !open_end {
                    text.push('}');
                }
                let text = match (wrap, open_end) {
                    (1, _) => format!("```json\n{text}\n```"),
                    (2, false) => format!("Here it is: {text} Hope that helps."),
                    _ => text,
                };
                (text, json!({"decision": decision, "reason": reason}))
            },
        )
}

proptest::proptest! {
    /// Every sloppy writing of a Decision reads back as exactly that Decision: never another
    /// value, never refused.
    #[test]
    fn a_sloppy_decision_reads_back_as_itself((text, want) in sloppy_decision()) {
        let got = run(&decision(), &text);
        match got {
            Ok(Repaired::Value { value, .. }) => proptest::prop_assert_eq!(value, want, "{}", text),
            Ok(Repaired::NotNeeded) => {
                let (_, strict) = extract_answer(&text, AnswerRoot::Object).unwrap();
                proptest::prop_assert_eq!(strict, want, "{}", text);
            }
            Err(e) => proptest::prop_assert!(false, "{text:?}: {e}"),
        }
    }
}

#[test]
fn a_number_is_taken_from_a_string_only_when_it_is_the_number_written() {
    let s = schema(json!({
        "type": "object",
        "required": ["n", "x"],
        "properties": {"n": {"type": "integer"}, "x": {"type": "number"}}
    }));
    // Thirty digits for an integer, and 2^53 + 1 with a fraction: no JSON number holds them.
    for text in [
        r#"{"n": "123456789012345678901234567890", "x": 1}"#,
        r#"{"n": 1, "x": "9007199254740993.0"}"#,
    ] {
        assert!(
            matches!(run(&s, text), Err(NotRepairable::StillInvalid { .. })),
            "{text}: {:?}",
            run(&s, text)
        );
    }
    // What a JSON number holds exactly is taken, in any spelling of it.
    let (value, _) = fixed(&s, r#"{"n": "42", "x": "1e3"}"#);
    assert_eq!(value, json!({"n": 42, "x": 1000.0}));
    let (value, _) = fixed(&s, r#"{"n": "-7", "x": "0.1"}"#);
    assert_eq!(value, json!({"n": -7, "x": 0.1}));
}

#[test]
fn a_fenced_example_beside_the_answer_in_prose_is_not_chosen() {
    let d = decision();
    let text = "An example of the shape:\n```json\n{\"decision\": \"accept\", \"reason\": \"example\"}\n```\nMy answer: {decision: 'reject', reason: 'the tests fail'}";
    assert_eq!(run(&d, text), Err(NotRepairable::Ambiguous { count: 2 }));
    // The same value in the fence and the prose is one value.
    let same = "```json\n{'decision': 'reject', 'reason': 'r'}\n```";
    assert!(matches!(run(&d, same), Ok(Repaired::Value { .. })));
}

#[test]
fn a_missing_bracket_is_closed_only_when_the_model_is_known_to_have_ended() {
    let d = decision();
    let text = "{'decision': 'accept', 'reason': 'ok'";
    assert!(matches!(run(&d, text), Ok(Repaired::Value { .. })));
    let unknown = repair(&RepairInput::new(text, &d.0, &d.1, Ending::Unknown));
    assert_eq!(unknown, Err(NotRepairable::CutOff { missing: 1 }));
    // Every other fix is still made when the ending is unknown.
    let whole = "{'decision': 'accept', 'reason': 'ok',}";
    let fixed_unknown = repair(&RepairInput::new(whole, &d.0, &d.1, Ending::Unknown));
    assert!(
        matches!(fixed_unknown, Ok(Repaired::Value { .. })),
        "{fixed_unknown:?}"
    );
}

#[test]
fn an_array_in_prose_is_found_for_a_root_only_items_describe() {
    let s = schema(json!({"items": {"type": "integer"}}));
    assert_eq!(run(&s, "Here: [1, 2]"), Ok(Repaired::NotNeeded));
}
