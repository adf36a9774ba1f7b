use super::*;
use crate::schema::fixtures::arb_json;
use proptest::prelude::*;
use serde_json::json;

/// The tape takes exactly what serde_json takes, and reads it to the same value.
fn same_as_serde(text: &str) {
    let ours = Tape::parse(text);
    let theirs = serde_json::from_str::<Value>(text);
    match (&ours, &theirs) {
        (Ok(tape), Ok(value)) => assert_eq!(&tape.root().to_value(), value, "{text:?}"),
        (Err(_), Err(_)) => {}
        _ => panic!("{text:?}: tape {ours:?}, serde_json {theirs:?}"),
    }
}

#[test]
fn the_tape_takes_what_serde_json_takes() {
    let corpus = [
        "{}",
        "[]",
        " {\"a\" : [1, -2, 3.5e2, true, false, null, \"x\"]} \n",
        "0",
        "-0",
        "-0.0",
        "1E2",
        "1e-400",
        "123456789012345678901234567890",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "-9223372036854775809",
        r#""a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00""#,
        r#"{"\u0061": 1}"#,
        "\"héllo\"",
        "[[[[[]]]]]",
        // Refused by both.
        "",
        " ",
        "[1,]",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{a:1}",
        "[1 2]",
        "01",
        "1.",
        ".5",
        "1e",
        "+1",
        "NaN",
        "Infinity",
        "1e400",
        "-1e400",
        "tru",
        "nul",
        "\"\t\"",
        "\"\\x\"",
        "\"\\u12\"",
        r#""\ud800""#,
        r#""\udc00""#,
        r#""\ud800x""#,
        r#""\ud800\u0041""#,
        r#""\ud800\ud800""#,
        "{} {}",
        "[1] x",
        "[",
        "{\"a\":",
        "\"open",
        "]",
    ];
    for text in corpus {
        same_as_serde(text);
    }
    same_as_serde(&"9".repeat(400));
}

#[test]
fn depth_stops_where_serde_json_stops() {
    let nested = |n: usize| "[".repeat(n) + &"]".repeat(n);
    assert!(Tape::parse(&nested(MAX_TAPE_DEPTH)).is_ok());
    assert_eq!(
        Tape::parse(&nested(MAX_TAPE_DEPTH + 1)).unwrap_err(),
        TapeError::TooDeep
    );
    same_as_serde(&nested(MAX_TAPE_DEPTH));
    same_as_serde(&nested(MAX_TAPE_DEPTH + 1));
    // Ten thousand levels are refused without touching the call stack.
    assert_eq!(
        Tape::parse(&nested(10_000)).unwrap_err(),
        TapeError::TooDeep
    );
}

#[test]
fn errors_say_what_and_where() {
    assert_eq!(
        Tape::parse("[1, 2,]").unwrap_err(),
        TapeError::Syntax { at: 6 }
    );
    assert_eq!(
        Tape::parse("1e400").unwrap_err(),
        TapeError::NumberOutOfRange
    );
    assert_eq!(
        TapeError::TooDeep.to_string(),
        "JSON nests deeper than 127 levels"
    );
}

#[test]
fn repeated_keys_are_flagged_and_read_as_serde_json_reads_them() {
    for text in [
        r#"{"a":1,"a":2}"#,
        r#"{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"b":0}"#,
        r#"{"x":{"a":1,"\u0061":2}}"#,
    ] {
        let tape = Tape::parse(text).unwrap();
        assert!(tape.has_duplicate_keys(), "{text}");
        same_as_serde(text);
    }
    // A big object goes through the hash table: distinct keys (some sharing a hash bucket's
    // prefix) pass, one repeat anywhere is found.
    let keys: Vec<String> = (0..1000).map(|i| format!("\"field_{i}\":{i}")).collect();
    let big = format!("{{{}}}", keys.join(","));
    assert!(!Tape::parse(&big).unwrap().has_duplicate_keys());
    let repeat = format!("{{{},\"field_500\":0}}", keys.join(","));
    assert!(Tape::parse(&repeat).unwrap().has_duplicate_keys());
    let nested = format!("{{\"x\":[{big},{repeat}]}}");
    assert!(Tape::parse(&nested).unwrap().has_duplicate_keys());
    let tape = Tape::parse(r#"{"a":1,"a":2}"#).unwrap();
    assert_eq!(tape.root().get("a").unwrap().raw(), "2");
    assert_eq!(tape.root().members().count(), 2);
    for text in [
        r#"{"a":1,"b":{"a":2}}"#,
        r#"[{"a":1},{"a":1}]"#,
        r#"{"a":1,"\u0062":2}"#,
    ] {
        assert!(!Tape::parse(text).unwrap().has_duplicate_keys(), "{text}");
    }
}

#[test]
fn nodes_read_types_members_and_pointers() {
    let text = r#"{"a":[1,{"b~c/d":"v"}],"s":"x\ny","n":-1.5,"e":{},"z":[]}"#;
    let tape = Tape::parse(text).unwrap();
    let root = tape.root();
    assert_eq!(root.kind(), Kind::Object);
    assert_eq!(root.len(), 5);
    assert_eq!(tape.values(), 9);
    let keys: Vec<String> = root
        .members()
        .map(|(k, _)| k.as_str().unwrap().into_owned())
        .collect();
    assert_eq!(keys, ["a", "s", "n", "e", "z"]);
    assert_eq!(root.get("s").unwrap().as_str().unwrap(), "x\ny");
    assert_eq!(root.get("s").unwrap().raw(), "x\\ny");
    assert!(root.get("s").unwrap().str_is("x\ny"));
    assert_eq!(root.get("n").unwrap().raw(), "-1.5");
    assert!(root.get("missing").is_none());
    assert!(root.get("e").unwrap().is_empty());
    assert_eq!(root.pointer("/a/1/b~0c~1d").unwrap().as_str().unwrap(), "v");
    assert_eq!(root.pointer("").unwrap().kind(), Kind::Object);
    for missing in ["/a/2", "/a/01", "/a/-1", "/s/0", "a", "/nope"] {
        assert!(root.pointer(missing).is_none(), "{missing}");
    }
    let z = root.get("z").unwrap();
    assert_eq!(z.elements().count(), 0);
    assert_eq!(root.get("a").unwrap().elements().len(), 2);
    assert_eq!(
        Tape::parse(text).unwrap().root().to_value(),
        serde_json::from_str::<Value>(text).unwrap()
    );
}

#[test]
fn a_string_tape_holds_its_text_as_content() {
    let tape = Tape::string("a\"b\\");
    assert_eq!(tape.root().as_str().unwrap(), "a\"b\\");
    assert_eq!(tape.root().to_value(), json!("a\"b\\"));
}

proptest! {
    #[test]
    fn any_value_reads_back_whole(v in arb_json()) {
        for text in [v.to_string(), serde_json::to_string_pretty(&v).unwrap()] {
            let tape = Tape::parse(&text).unwrap();
            prop_assert!(!tape.has_duplicate_keys());
            prop_assert_eq!(tape.root().to_value(), v.clone());
        }
    }

    #[test]
    fn any_edit_of_json_gets_serde_jsons_verdict(
        v in arb_json(),
        at in any::<prop::sample::Index>(),
        byte in prop::sample::select(b"{}[]\":,.-+eE0123456789tfnu\\ \x01x".to_vec()),
        delete in any::<bool>(),
    ) {
        let mut bytes = v.to_string().into_bytes();
        let i = at.index(bytes.len() + 1);
        if delete && i < bytes.len() {
            bytes.remove(i);
        } else {
            bytes.insert(i, byte);
        }
        if let Ok(text) = String::from_utf8(bytes) {
            same_as_serde(&text);
        }
    }
}
