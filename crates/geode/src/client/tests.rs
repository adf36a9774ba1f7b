#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::typed_schema::TypedSchema;
use super::*;
use crate::agent::task::Route;
use crate::config::Config;
use crate::ledger::RetryDecision;
use crate::llm::request::AdapterResponse;
use crate::llm::scripted::ScriptedAdapter;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::Duration;

fn client(answers: &[&str]) -> (Client, Arc<ScriptedAdapter>) {
    let adapter = Arc::new(ScriptedAdapter::new(
        answers
            .iter()
            .map(|a| Ok(AdapterResponse::text(*a)))
            .collect(),
    ));
    (on(adapter.clone(), Require::default()), adapter)
}

/// A client on `adapter` that requires `require`.
pub(crate) fn on(adapter: Arc<dyn Adapter>, require: Require) -> Client {
    Client::builder()
        .config(Config::default())
        .adapter_instance(adapter)
        .require(require)
        .build()
        .unwrap()
}

/// A client requiring an enforced schema on a scripted adapter that answers nothing (it must
/// not be called), and that adapter.
pub(crate) fn enforced_on_silent() -> (Client, Arc<ScriptedAdapter>) {
    let adapter = Arc::new(ScriptedAdapter::new(vec![]));
    (on(adapter.clone(), Require::Enforced), adapter)
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A decision on a pull request.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Review {
    /// Whether to merge.
    #[serde(rename = "verdict")]
    accept: bool,
    /// Why, in one sentence.
    reason: String,
    /// Optional follow-up.
    follow_up: Option<String>,
    severity: Severity,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Severity {
    Low,
    High,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(tag = "kind")]
enum Shape {
    Circle { r: f64 },
    Square { side: f64 },
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(tag = "t", content = "c")]
enum Event {
    Ping,
    Move { x: i32, y: i32 },
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Meters(f64);

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Tree {
    name: String,
    children: Vec<Tree>,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Tagged {
    tags: HashMap<String, u32>,
}

#[test]
fn client_is_cheap_to_clone_and_thread_safe() {
    fn assert_traits<T: Clone + Send + Sync + 'static>() {}
    assert_traits::<Client>();
    let (c, _) = client(&[]);
    let d = c.clone();
    assert!(Arc::ptr_eq(&c.inner, &d.inner));
}

#[test]
fn a_struct_schema_keeps_docs_and_renames_and_is_made_strict() {
    let t = TypedSchema::of::<Review>().unwrap();
    let s = t.schema.as_value();
    assert!(!t.wrapped);
    assert!(strict(&t), "{s:#}\n{:?}", t.residuals);
    assert_eq!(s["description"], "A decision on a pull request.");
    assert_eq!(
        s["properties"]["verdict"]["description"],
        "Whether to merge."
    );
    assert_eq!(s["additionalProperties"], false);
    let required: Vec<&str> = s["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(required.contains(&"follow_up"), "{required:?}");
    assert!(t.transforms.iter().any(
        |x| x.pointer == "/properties/follow_up" && x.action.contains("required and nullable")
    ));
    assert!(
        t.transforms
            .iter()
            .any(|x| x.pointer.is_empty() && x.action.contains("additionalProperties:false"))
    );
    // Generated once per type: the same Arc comes back.
    assert!(Arc::ptr_eq(&t, &TypedSchema::of::<Review>().unwrap()));
}

#[test]
fn extract_returns_the_type_and_the_ledger_names_the_schema_rewrites() {
    let (c, adapter) =
        client(&[r#"{"verdict": true, "reason": "small", "follow_up": null, "severity": "low"}"#]);
    let got = rt().block_on(c.extract::<Review>("review")).unwrap();
    assert_eq!(
        got.value,
        Review {
            accept: true,
            reason: "small".into(),
            follow_up: None,
            severity: Severity::Low,
        }
    );
    assert_eq!(got.ledger.retry, RetryDecision::FirstPassed);
    assert!(
        got.ledger
            .transforms
            .iter()
            .any(|t| t.action.contains("nullable"))
    );
    let sent = adapter.requests()[0].response_schema.clone().unwrap();
    assert_eq!(sent.as_value()["properties"]["verdict"]["type"], "boolean");
}

fn extract_one<T: JsonSchema + serde::de::DeserializeOwned + 'static>(
    answer: &str,
) -> Extracted<T> {
    let (c, _) = client(&[answer]);
    rt().block_on(c.extract::<T>("go")).unwrap()
}

#[test]
fn non_object_roots_are_wrapped_and_unwrapped() {
    let sev = extract_one::<Severity>(r#"{"value": "high"}"#);
    assert_eq!(sev.value, Severity::High);
    assert!(
        sev.ledger
            .transforms
            .iter()
            .any(|t| t.action.contains("wrapped"))
    );
    let list = extract_one::<Vec<Severity>>(r#"{"value": ["low", "high"]}"#);
    assert_eq!(list.value, vec![Severity::Low, Severity::High]);
    assert_eq!(
        extract_one::<Meters>(r#"{"value": 2.5}"#).value,
        Meters(2.5)
    );
    let opt = extract_one::<Option<Severity>>(r#"{"value": null}"#);
    assert_eq!(opt.value, None);
    assert!(strict(&TypedSchema::of::<Vec<Severity>>().unwrap()));
}

#[test]
fn tagged_enums_round_trip() {
    let s = extract_one::<Shape>(r#"{"value": {"kind": "Square", "side": 2.0}}"#);
    assert_eq!(s.value, Shape::Square { side: 2.0 });
    let e = extract_one::<Event>(r#"{"value": {"t": "Move", "c": {"x": 1, "y": -2}}}"#);
    assert_eq!(e.value, Event::Move { x: 1, y: -2 });
    let p = extract_one::<Event>(r#"{"value": {"t": "Ping"}}"#);
    assert_eq!(p.value, Event::Ping);
    // A variant that does not exist fails validation, not deserialization.
    let (c, _) = client(&[r#"{"value": {"t": "Jump"}}"#, r#"{"value": {"t": "Jump"}}"#]);
    assert!(matches!(
        rt().block_on(c.extract::<Event>("go")),
        Err(Error::Invalid { .. })
    ));
}

#[test]
fn recursive_types_validate_at_every_depth() {
    let t = extract_one::<Tree>(
        r#"{"name": "a", "children": [{"name": "b", "children": [{"name": "c", "children": []}]}]}"#,
    );
    assert_eq!(t.value.children[0].children[0].name, "c");
    let (c, _) = client(&[
        r#"{"name": "a", "children": [{"name": 5, "children": []}]}"#,
        r#"{"name": "a", "children": [{"children": []}]}"#,
    ]);
    let Err(Error::Invalid { errors, ledger }) = rt().block_on(c.extract::<Tree>("go")) else {
        panic!("expected Invalid");
    };
    assert!(
        errors.iter().any(|e| e.instance_path == "/children/0"),
        "{errors:?}"
    );
    assert_eq!(ledger.attempts.len(), 2);
}

#[test]
fn a_map_field_works_but_the_ledger_says_why_the_schema_is_not_strict() {
    let t = TypedSchema::of::<Tagged>().unwrap();
    assert!(!strict(&t));
    let got = extract_one::<Tagged>(r#"{"tags": {"a": 1, "b": 2}}"#);
    assert_eq!(got.value.tags["b"], 2);
    assert!(
        got.ledger
            .residuals
            .iter()
            .any(|r| r.starts_with("/properties/tags") && r.contains("map")),
        "{:?}",
        got.ledger.residuals
    );
}

#[test]
fn invalid_after_the_retry_is_an_error_carrying_errors_and_ledger() {
    let bad = r#"{"verdict": "yes", "reason": "x", "follow_up": null, "severity": "low"}"#;
    let (c, adapter) = client(&[bad, bad]);
    let err = rt().block_on(c.extract::<Review>("go")).unwrap_err();
    let Error::Invalid { errors, ledger } = &err else {
        panic!("{err:?}");
    };
    assert!(errors.iter().any(|e| e.instance_path == "/verdict"));
    assert!(matches!(ledger.retry, RetryDecision::Ran { .. }));
    assert_eq!(adapter.requests().len(), 2);
    assert_eq!(err.exit_code(), crate::protocol::exit::INVALID);
    assert!(
        err.ledger()
            .transforms
            .iter()
            .any(|t| t.action.contains("nullable"))
    );
}

#[test]
fn the_retry_fixes_the_answer() {
    let (c, _) = client(&[
        "no json here",
        r#"{"verdict": false, "reason": "r", "follow_up": "later", "severity": "high"}"#,
    ]);
    let got = rt().block_on(c.extract::<Review>("go")).unwrap();
    assert_eq!(got.value.follow_up.as_deref(), Some("later"));
    assert!(matches!(got.ledger.retry, RetryDecision::Ran { .. }));
}

#[test]
fn provider_failures_and_unmet_require_are_typed() {
    let adapter = Arc::new(ScriptedAdapter::new(vec![Err(
        crate::llm::call::AdapterError::Auth {
            adapter: "scripted".into(),
            status: 401,
            message: "bad key".into(),
        },
    )]));
    let c = on(adapter, Require::default());
    let err = rt().block_on(c.extract::<Review>("go")).unwrap_err();
    assert!(
        matches!(&err, Error::Provider { kind, .. } if *kind == crate::vocab::ErrorKind::Auth),
        "{err:?}"
    );
    assert_eq!(err.ledger().attempts.len(), 1);
    // The adapter's typed error is kept as the source, not only its message.
    let source = std::error::Error::source(&err).expect("a provider failure keeps its source");
    assert!(
        source
            .downcast_ref::<crate::llm::call::AdapterError>()
            .is_some_and(|a| a.kind() == crate::vocab::ErrorKind::Auth),
        "{source:?}"
    );

    let (c, adapter) = enforced_on_silent();
    let err = rt().block_on(c.extract::<Review>("go")).unwrap_err();
    assert!(matches!(err, Error::NotEnforceable { .. }), "{err:?}");
    assert!(err.to_string().contains("below"), "{err}");
    assert!(adapter.requests().is_empty());
}

#[test]
fn other_shapes_from_the_same_client() {
    let (c, adapter) = client(&[r#"{"n": 3}"#, "reject", "AB-12", "yes"]);
    let rt = rt();
    let schema =
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    assert_eq!(
        rt.block_on(c.extract_json(&schema, "n?")).unwrap().value,
        json!({"n": 3})
    );
    assert_eq!(
        rt.block_on(c.choose(&["accept", "reject"], "?"))
            .unwrap()
            .value,
        "reject"
    );
    assert_eq!(
        rt.block_on(c.matches("[A-Z]{2}-[0-9]+", "?"))
            .unwrap()
            .value,
        "AB-12"
    );
    let g = rt
        .block_on(c.grammar("start: \"yes\" | \"no\"\n", "?"))
        .unwrap();
    assert_eq!(g.value, "yes");
    assert!(
        g.ledger
            .residuals
            .iter()
            .any(|r| r.contains("grammar: unchecked"))
    );
    let sent = adapter.requests();
    assert_eq!(sent.len(), 4);
    assert!(sent[0].response_schema.is_some());
    // Refused before any call: a constraint that cannot be compiled, a non-object schema.
    assert!(matches!(
        rt.block_on(c.matches("[", "?")),
        Err(Error::Config { .. })
    ));
    assert!(matches!(
        rt.block_on(c.extract_json(&json!([1]), "?")),
        Err(Error::Config { .. })
    ));
    assert_eq!(adapter.requests().len(), 4);
}

#[test]
fn from_config_routes_and_reuses_built_adapters() {
    let built = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = built.clone();
    let c = Client::builder()
        .config(Config::default())
        .adapter("local")
        .adapter_factory("local", move || {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Arc::new(ScriptedAdapter::repeating(
                AdapterResponse::text(r#"{"value": "low"}"#),
                std::time::Duration::ZERO,
            )) as Arc<dyn Adapter>
        })
        .build()
        .unwrap();
    let rt = rt();
    for _ in 0..3 {
        let got = rt.block_on(c.clone().extract::<Severity>("go")).unwrap();
        assert_eq!(got.value, Severity::Low);
    }
    assert_eq!(built.load(std::sync::atomic::Ordering::SeqCst), 1);
    // An adapter the library cannot build is a configuration error naming it.
    let c = Client::builder()
        .config(Config::default())
        .adapter("nope")
        .build()
        .unwrap();
    let err = rt.block_on(c.extract::<Severity>("go")).unwrap_err();
    assert!(err.to_string().contains("unknown adapter"), "{err}");
    assert_eq!(err.exit_code(), crate::protocol::exit::USAGE);
}

#[test]
fn the_answer_text_is_not_required_to_be_bare_json() {
    let got = extract_one::<Severity>("Sure:\n```json\n{\"value\": \"low\"}\n```");
    assert_eq!(got.value, Severity::Low);
    let v: Value = serde_json::to_value(&got.ledger).unwrap();
    assert_eq!(v["adapter"], "scripted");
}

/// Whether a type's final schema passes the strict check.
fn strict(t: &TypedSchema) -> bool {
    crate::schema::strict::check_strict(t.schema.as_value()).compatible
}

#[test]
fn a_conversation_and_a_temperature_reach_the_adapter_and_a_bad_temperature_is_refused() {
    let adapter = Arc::new(ScriptedAdapter::new(vec![Ok(AdapterResponse::text("yes"))]));
    let client = Client::builder()
        .config(Config::default())
        .adapter_instance(adapter.clone())
        .system("the client's")
        .temperature(0.0)
        .build()
        .unwrap();
    let mut turns = crate::Conversation::new();
    turns.push("developer", "Answer yes or no.").unwrap();
    turns.push("user", "Is water wet?").unwrap();
    turns.push("assistant", "Which water?").unwrap();
    turns.push("user", "Any.").unwrap();
    let answer = rt().block_on(client.choose(&["yes", "no"], turns.into_prompt().unwrap()));
    assert_eq!(answer.unwrap().value, "yes");
    let sent = &adapter.requests()[0];
    assert_eq!(sent.temperature, Some(0.0));
    assert!(
        sent.system_prompt.contains("Answer yes or no."),
        "{}",
        sent.system_prompt
    );
    assert!(
        !sent.system_prompt.contains("the client's"),
        "the conversation's system turn wins"
    );
    let texts: Vec<String> = sent.messages.iter().map(|m| m.text()).collect();
    assert_eq!(texts.len(), 3, "{texts:?}");
    assert_eq!(
        texts[..2],
        ["Is water wet?".to_owned(), "Which water?".to_owned()]
    );
    assert!(texts[2].starts_with("Any."), "{texts:?}");
    for bad in [-0.5, f32::NAN, f32::INFINITY] {
        let built = Client::builder()
            .config(Config::default())
            .temperature(bad)
            .build();
        assert!(matches!(built, Err(Error::Config { .. })), "{bad}");
    }
}

#[test]
fn a_call_lays_its_settings_over_the_clients_and_shares_its_adapters() {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    let built = Arc::new(AtomicUsize::new(0));
    let adapter = Arc::new(ScriptedAdapter::repeating(
        AdapterResponse::text(r#"{"value": "low"}"#),
        std::time::Duration::ZERO,
    ));
    let (counter, shared) = (built.clone(), adapter.clone());
    let base = Client::builder()
        .config(Config::default())
        .adapter("local")
        .model("small")
        .adapter_factory("local", move || {
            counter.fetch_add(1, SeqCst);
            shared.clone() as Arc<dyn Adapter>
        })
        .system("the client's")
        .max_tokens(100)
        .build()
        .unwrap();
    let call = base
        .with(CallSettings {
            model: Some("big".into()),
            max_tokens: Some(7),
            temperature: Some(0.0),
            system: Some("the call's".into()),
            ..CallSettings::default()
        })
        .unwrap();
    let rt = rt();
    assert_eq!(
        rt.block_on(call.extract::<Severity>("go")).unwrap().value,
        Severity::Low
    );
    rt.block_on(base.extract::<Severity>("go")).unwrap();
    let sent = adapter.requests();
    let seen = |i: usize| {
        let r = &sent[i];
        (r.model.as_str(), r.max_tokens, r.temperature)
    };
    assert_eq!(seen(0), ("big", 7, Some(0.0)));
    assert!(sent[0].system_prompt.contains("the call's"));
    assert_eq!(seen(1), ("small", 100, None), "the client keeps its own");
    assert!(sent[1].system_prompt.contains("the client's"));
    assert_eq!(built.load(SeqCst), 1, "one adapter, built once, for both");
    // A stronger `require` for one call is checked before any request.
    let strict = base
        .with(CallSettings {
            require: Some(Require::Enforced),
            ..CallSettings::default()
        })
        .unwrap();
    let err = rt.block_on(strict.extract::<Severity>("go")).unwrap_err();
    assert!(matches!(err, Error::NotEnforceable { .. }), "{err:?}");
    assert_eq!(adapter.requests().len(), 2);
    for bad in [-1.0, f32::NAN] {
        let refused = base.with(CallSettings {
            temperature: Some(bad),
            ..CallSettings::default()
        });
        assert!(matches!(refused, Err(Error::Config { .. })), "{bad}");
    }
}

/// One precedence rule for every edge: a setting given wins over the one under it, `None` keeps
/// it, and laying settings into a task replaces only what they give.
#[test]
fn overrides_win_where_given_and_keep_the_rest() {
    let flags = CallSettings {
        model: Some("gpt-5-mini".into()),
        repair: Some(true),
        ..CallSettings::default()
    };
    let configured = CallSettings {
        adapter: Some("openai-payg".into()),
        model: Some("gpt-5".into()),
        timeout: Some(Duration::from_secs(30)),
        repair: Some(false),
        ..CallSettings::default()
    };
    let both = flags.over(configured);
    assert_eq!(both.model.as_deref(), Some("gpt-5-mini"));
    assert_eq!(both.repair, Some(true));
    assert_eq!(both.timeout, Some(Duration::from_secs(30)));
    let mut task = Task::new("p");
    task.cache = false;
    both.apply(&mut task);
    assert_eq!(
        task.route,
        Route::Adapter {
            name: "openai-payg".into(),
            model: Some("gpt-5-mini".into())
        }
    );
    assert!(
        task.repair && !task.cache,
        "cache was not given, so it stays"
    );
    assert_eq!(task.budgets.timeout, Duration::from_secs(30));
    // A model alone keeps the adapter a task names.
    CallSettings {
        model: Some("o3".into()),
        ..CallSettings::default()
    }
    .apply(&mut task);
    assert_eq!(task.route.adapter(), Some("openai-payg"));
    assert_eq!(task.route.model(), "o3");
}
