//! Real-world-like schemas on the local model: `geode run --adapter local
//! --require enforced --max-tokens 512` on schemas that leave objects open, ask for long free
//! strings, nest objects, leave the root's type open, leave lists, map keys and patterned
//! strings unbounded, or use keywords llguidance cannot compile (`oneOf`, `not`, formats it does
//! not know: decoded without them and validated afterwards). Each answer is valid, no attempt ends
//! at the token budget, the text carries no whitespace padding, and the ledger names how
//! decoding was narrowed.

use crate::support;

use serde_json::{Value, json};
use support::Sandbox;

/// One case: a schema, a prompt, and the transforms (pointer, start of the action) the ledger
/// must name.
struct Case {
    name: &'static str,
    schema: Value,
    prompt: &'static str,
    transforms: &'static [(&'static str, &'static str)],
}

fn corpus() -> Vec<Case> {
    vec![
        Case {
            name: "open object (a weather report)",
            schema: json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "temperature_c": {"type": "number"},
                    "conditions": {"type": "string"}
                },
                "required": ["city", "temperature_c"]
            }),
            prompt: "Report the weather in Lisbon today.",
            transforms: &[
                ("", "compact whitespace"),
                ("", "additionalProperties: false"),
                ("/properties/city", "maxLength: 160"),
            ],
        },
        Case {
            name: "long free strings (an article)",
            schema: json!({
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "body": {"type": "string", "description": "The full article text."},
                    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3}
                },
                "required": ["title", "body"],
                "additionalProperties": true
            }),
            prompt: "Write a long news article about a new bridge opening in a small town.",
            transforms: &[
                ("", "additionalProperties: false"),
                // Three strings and three tags of 160 characters could outrun 512 tokens.
                (
                    "",
                    "narrowed to fit max_tokens 512 for decoding: strings maxLength 64",
                ),
                ("/properties/body", "maxLength: 64"),
                ("/properties/tags/items", "maxLength: 64"),
            ],
        },
        Case {
            name: "nested objects (an order)",
            schema: json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "definitions": {
                    "address": {
                        "type": "object",
                        "properties": {
                            "street": {"type": "string"},
                            "city": {"type": "string"},
                            "zip": {"type": "string", "pattern": "^[0-9]{5}$"}
                        },
                        "required": ["city"]
                    }
                },
                "properties": {
                    "customer": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "minLength": 2},
                            "shipping": {"$ref": "#/definitions/address"}
                        },
                        "required": ["name", "shipping"]
                    },
                    "items": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "sku": {"type": "string"},
                                "quantity": {"type": "integer", "minimum": 1}
                            },
                            "required": ["sku", "quantity"]
                        },
                        "minItems": 1,
                        "maxItems": 3
                    }
                },
                "required": ["customer", "items"]
            }),
            prompt: "Create an order of two books for a customer in Boston.",
            transforms: &[
                ("/definitions/address", "additionalProperties: false"),
                ("/properties/customer", "additionalProperties: false"),
                ("/properties/items/items", "additionalProperties: false"),
            ],
        },
        Case {
            name: "untyped root (a subtype trait)",
            schema: json!({
                "$schema": "http://json-schema.org/draft-04/schema#",
                "title": "Subtype trait",
                "properties": {"subtype": {"type": "string"}}
            }),
            prompt: "Give the subtype of a blog post.",
            transforms: &[("", "type: object"), ("", "additionalProperties: false")],
        },
        Case {
            name: "a list and a map (a kettle's stock)",
            schema: json!({
                "type": "object",
                "properties": {
                    "features": {"type": "array", "items": {"type": "string", "maxLength": 40}},
                    "stock": {"type": "object", "additionalProperties": {"type": "integer"}}
                },
                "required": ["features", "stock"]
            }),
            prompt: "Name two features of a kettle, and how many are in stock in two shops.",
            transforms: &[
                ("", "narrowed to fit max_tokens 512"),
                ("/properties/features", "maxItems: 3"),
                ("/properties/stock", "keys matching"),
                ("/properties/stock", "maxProperties: 4"),
            ],
        },
        Case {
            name: "a patterned code, a huge maxLength, a pattern map (a kettle's label)",
            schema: json!({
                "type": "object",
                "properties": {
                    "sku": {"type": "string", "pattern": "^[A-Z]+-"},
                    "blurb": {"type": "string", "maxLength": 65535},
                    "colours": {
                        "type": "object",
                        "patternProperties": {"^[a-z]+$": {"type": "string", "maxLength": 20}}
                    }
                },
                "required": ["sku", "blurb", "colours"]
            }),
            prompt: "Label a kettle: its code, one sentence about it, and the colour of its lid.",
            transforms: &[
                ("", "narrowed to fit max_tokens 512"),
                ("/properties/sku", "pattern \"^(?:[A-Z]{1,16}-)$\""),
                ("/properties/blurb", "maxLength: 64"),
                (
                    "/properties/colours",
                    "patternProperties key \"^(?:[a-z]{1,16})$\"",
                ),
                ("/properties/colours", "additionalProperties: false"),
            ],
        },
        Case {
            name: "keywords llguidance cannot compile (a catalogue entry)",
            schema: json!({
                "type": "object",
                "properties": {
                    "kind": {"oneOf": [{"const": "book"}, {"const": "film"}]},
                    "title": {"type": "string", "not": {"const": ""}},
                    "homepage": {"type": "string", "format": "iri"},
                    "shelf": {"type": "string", "format": "shelf-code"}
                },
                "required": ["kind", "title"]
            }),
            prompt: "Catalogue the film Casablanca.",
            transforms: &[
                ("/properties/kind", "oneOf decoded as anyOf"),
                ("/properties/title", "not removed from the decoding grammar"),
                ("/properties/homepage", "format: uri for decoding"),
                ("/properties/shelf", "format \"shelf-code\" removed"),
            ],
        },
    ]
}

#[tokio::test]
async fn real_world_like_schemas_get_a_valid_answer_within_budget_and_name_the_narrowing() {
    let sb = Sandbox::with_local_model();
    for (i, case) in corpus().iter().enumerate() {
        let path = sb.home().join(format!("schema{i}.json"));
        std::fs::write(&path, case.schema.to_string()).unwrap();
        let path = path.display().to_string();
        let out = sb
            .geode(
                &[
                    "run",
                    "--adapter",
                    "local",
                    "--require",
                    "enforced",
                    "--max-tokens",
                    "512",
                    "--schema",
                    &path,
                    "--json",
                    case.prompt,
                ],
                "",
            )
            .await;
        let name = case.name;
        assert_eq!(out.code, Some(0), "{name}: {}", out.dump());
        let result = out.json();
        assert_eq!(result["success"], true, "{name}: {result}");
        assert!(result["answer"].is_object(), "{name}: {result}");
        let ledger = &result["ledger"];
        assert_eq!(ledger["wire_mode"], "constrained", "{name}: {ledger}");
        assert_eq!(ledger["full_validation"]["valid"], true, "{name}: {ledger}");
        for attempt in ledger["attempts"].as_array().unwrap() {
            assert_ne!(attempt["stop_reason"], "max_tokens", "{name}: {ledger}");
        }
        let output = result["output"].as_str().unwrap();
        // JSON strings cannot hold a raw newline or tab: any here would be padding.
        assert!(
            output.starts_with('{') && !output.contains(['\n', '\t', '\r']),
            "{name}: padded output {output:?}"
        );
        let transforms = ledger["transforms"].as_array().unwrap();
        for (pointer, action) in case.transforms {
            assert!(
                transforms.iter().any(|t| t["pointer"] == *pointer
                    && t["action"].as_str().unwrap().starts_with(action)),
                "{name}: no transform {action:?} at {pointer:?} in {ledger}"
            );
        }
        // Narrowing never touches a string the schema already constrains.
        assert!(
            !transforms
                .iter()
                .any(|t| t["pointer"] == "/definitions/address/properties/zip"),
            "{name}: {ledger}"
        );
    }
}

#[tokio::test]
async fn schema_check_for_local_shows_each_narrowing_and_each_keyword_left_to_validation() {
    let mut sb = Sandbox::with_local_model();
    let path = sb.home().join("catalogue.json");
    let cases = corpus();
    let case = cases
        .iter()
        .find(|c| c.name.starts_with("keywords llguidance"))
        .unwrap();
    let mut schema = case.schema.clone();
    schema["properties"]["tags"] = json!({"type": "array", "items": {"type": "string"}});
    std::fs::write(&path, schema.to_string()).unwrap();
    let path = path.display().to_string();
    let args = ["schema", "check", "--adapter", "local", "--json", &path];
    let out = sb.geode(&args, "").await;
    assert_eq!(out.code, Some(0), "{}", out.dump());
    let report = out.json();
    assert_eq!(report["mode"], "constrained", "{report}");
    let decoding = &report["decoding"];
    assert_eq!(
        decoding["schema"]["properties"]["kind"]["anyOf"], schema["properties"]["kind"]["oneOf"],
        "{report}"
    );
    assert_eq!(
        decoding["schema"]["properties"]["tags"]["maxItems"], 5,
        "{report}"
    );
    let transforms = decoding["transforms"].as_array().unwrap();
    for (pointer, action) in case
        .transforms
        .iter()
        .chain(&[("/properties/tags", "maxItems: 5")])
    {
        assert!(
            transforms
                .iter()
                .any(|t| t["pointer"] == *pointer
                    && t["action"].as_str().unwrap().starts_with(action)),
            "no {action:?} at {pointer:?} in {report}"
        );
    }
    // The text form names them too.
    let text = sb
        .geode(&["schema", "check", "--adapter", "local", &path], "")
        .await;
    assert!(
        text.stdout
            .contains("  decoding /properties/tags: maxItems: 5 for decoding"),
        "{}",
        text.dump()
    );
    assert!(
        text.stdout
            .contains("  decoding /properties/title: not removed from the decoding grammar"),
        "{}",
        text.dump()
    );
    // With --max-tokens, the narrowing fitted to that budget: optional properties left out.
    let small = sb
        .geode(
            &[
                "schema",
                "check",
                "--adapter",
                "local",
                "--max-tokens",
                "64",
                &path,
            ],
            "",
        )
        .await;
    assert!(
        small
            .stdout
            .contains("  decoding /: narrowed to fit max_tokens 64 for decoding"),
        "{}",
        small.dump()
    );
    assert!(
        small.stdout.contains("left out for decoding (optional"),
        "{}",
        small.dump()
    );
    // Without the engine the plan is still shown, and the narrowings are said to be unknown.
    sb.var("GEODE_ENGINE_BIN", "/nonexistent/geode-engine");
    let missing = sb.geode(&args, "").await;
    assert_eq!(missing.code, Some(0), "{}", missing.dump());
    let report = missing.json();
    assert!(report.get("decoding").is_none(), "{report}");
    assert!(
        report["decoding_error"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/geode-engine"),
        "{report}"
    );
}
