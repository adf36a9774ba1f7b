//! End-to-end tests of the `local` adapter with the real SmolLM2-135M model.
//!
//! One model load per test binary (the process-wide [`LocalEngine::shared`]); tests take a
//! global lock so calls never interleave (OpenMP threads busy-wait: with another job on the
//! second core a call went from 0.65 s to 2–7 s).
//! When the model file is missing every test FAILS with the fetch instructions; none is skipped.

use crate::common;
use common::{engine, serial};

use geode::llm::adapter::Adapter;
use geode::llm::call::{AdapterError, CallCx};
use geode::llm::request::{AdapterCallRequest, AdapterResponse, Message};
use geode::schema::validate::CompiledSchema;
use geode::schema::{ResponseSchema, TextConstraint};
use geode::vocab::{StopReason, StructuredOutputMode};
use geode_local::{
    ChatRole, ChatTurn, Constraint, EngineConfig, GenerateOptions, LocalAdapter, LocalEngine,
    LocalError,
};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;

const SYSTEM: &str = "You are a careful senior software engineer reviewing pull requests.";

/// (title, description, diff) of ten pull requests: five to accept, five to reject.
const PRS: [(&str, &str, &str); 10] = [
    (
        "Add API key to source",
        "Hardcode the production API key so the deploy works.",
        "+API_KEY = \"sk-live-9f8a7b6c5d4e3f2a1b0c\"\n+client = Client(api_key=API_KEY)",
    ),
    (
        "Fix typo in README",
        "Corrects 'recieve' to 'receive'.",
        "-You will recieve a token.\n+You will receive a token.",
    ),
    (
        "Delete failing tests",
        "The payment tests fail on CI, so remove them.",
        "-def test_refund_rounds_down():\n-    assert refund(10.005) == 10.00",
    ),
    (
        "Add unit test for parse_date",
        "Covers the leap-year case.",
        "+def test_parse_date_leap_year():\n+    assert parse_date('2024-02-29').day == 29",
    ),
    (
        "Disable TLS verification",
        "Requests to the billing API fail with certificate errors.",
        "-r = requests.get(url)\n+r = requests.get(url, verify=False)",
    ),
    (
        "Use a parameterised query",
        "Replace string formatting in the user lookup.",
        "-cur.execute(\"SELECT * FROM users WHERE id = %s\" % uid)\n+cur.execute(\"SELECT * FROM users WHERE id = %s\", (uid,))",
    ),
    (
        "Build SQL by concatenation",
        "Simplify the search query.",
        "-cur.execute(q, (name,))\n+cur.execute(\"SELECT * FROM items WHERE name = '\" + name + \"'\")",
    ),
    (
        "Bump serde to 1.0.219",
        "Routine dependency update.",
        "-serde = \"1.0.210\"\n+serde = \"1.0.219\"",
    ),
    (
        "Sleep to fix flaky test",
        "The integration test is flaky; wait longer.",
        "+time.sleep(30)\n assert server.is_ready()",
    ),
    (
        "Log request ids",
        "Adds the request id to access logs for tracing.",
        "-log.info(\"request done\")\n+log.info(\"request done\", request_id=req.id)",
    ),
];

fn user_prompt(i: usize, answer_format: &str) -> String {
    let (title, description, diff) = PRS[i];
    format!(
        "Decide whether to accept this pull request.\n\nTitle: {title}\nDescription: {description}\n\
         Diff:\n```\n{diff}\n```\n\n{answer_format}"
    )
}

const JSON_FORMAT: &str = "Answer as JSON with keys \"decision\" (either \"accept\" or \"reject\") \
                           and \"reason\" (one short sentence). Output only the JSON object.";

/// The Decision schema of `examples/decision.schema.json`.
fn decision_schema() -> ResponseSchema {
    let text = include_str!("../../../../examples/decision.schema.json");
    ResponseSchema::from_value(serde_json::from_str(text).unwrap()).unwrap()
}

fn request(i: usize, answer_format: &str, max_tokens: u32) -> AdapterCallRequest {
    let mut req = AdapterCallRequest::new("", vec![Message::user(user_prompt(i, answer_format))]);
    req.system_prompt = SYSTEM.to_owned();
    req.max_tokens = max_tokens;
    req.metadata.insert("seed".to_owned(), json!(1234 + i));
    req
}

/// [`request`] for a Decision (the JSON answer format, under the Decision schema).
fn decision_request(i: usize, max_tokens: u32) -> AdapterCallRequest {
    let mut req = request(i, JSON_FORMAT, max_tokens);
    req.response_schema = Some(decision_schema());
    req
}

async fn call(adapter: &LocalAdapter, req: AdapterCallRequest) -> AdapterResponse {
    match adapter.call(req, &CallCx::new()).await {
        Ok(resp) => resp,
        Err(e) => panic!("local call failed: {e}"),
    }
}

fn assert_constrained_plumbing(resp: &AdapterResponse) {
    assert_eq!(resp.wire.mode, StructuredOutputMode::Constrained);
    assert_eq!(
        resp.stop_reason,
        StopReason::EndTurn,
        "text: {:?}",
        resp.text
    );
    assert!(resp.usage.input_tokens > 0);
    assert!(resp.usage.output_tokens > 0);
}

#[tokio::test]
async fn decision_schema_output_always_validates() {
    let _serial = serial().await;
    let adapter = LocalAdapter::new(engine());
    let compiled = CompiledSchema::compile(&decision_schema()).unwrap();
    for i in 0..PRS.len() {
        let resp = call(&adapter, decision_request(i, 256)).await;
        println!("schema[{i}]: {}", resp.text);
        assert_constrained_plumbing(&resp);
        let value: Value = serde_json::from_str(&resp.text)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", resp.text));
        let issues = compiled.validate(&value);
        assert!(issues.is_empty(), "{:?}: {issues:?}", resp.text);
    }
}

/// Runs every PR with the answer format `prompt` under `constraint` (at most `max_tokens`),
/// checks the constrained plumbing, and hands each answer to `check`.
async fn each_pr_under(
    label: &str,
    prompt: &str,
    max_tokens: u32,
    constraint: TextConstraint,
    check: impl Fn(&str),
) {
    let _serial = serial().await;
    let adapter = LocalAdapter::new(engine());
    for i in 0..PRS.len() {
        let mut req = request(i, prompt, max_tokens);
        req.text_constraint = Some(constraint.clone());
        let resp = call(&adapter, req).await;
        println!("{label}[{i}]: {}", resp.text);
        assert_constrained_plumbing(&resp);
        check(&resp.text);
    }
}

#[tokio::test]
async fn choice_output_is_always_one_of_the_options() {
    let options = vec!["accept".to_owned(), "reject".to_owned()];
    let prompt = "Answer with one word: accept or reject.";
    let choice = TextConstraint::Choice(options.clone());
    each_pr_under("choice", prompt, 16, choice, |text| {
        assert!(options.iter().any(|o| o == text), "{text:?}");
    })
    .await;
}

#[tokio::test]
async fn regex_output_always_matches_the_whole_pattern() {
    let pattern = r"(accept|reject): [a-z][a-z ]{0,39}\.";
    let full = regex::Regex::new(&format!("^(?:{pattern})$")).unwrap();
    let prompt = "Answer as 'accept: <reason>.' or 'reject: <reason>.' in lower case.";
    let regex = TextConstraint::Regex(pattern.to_owned());
    each_pr_under("regex", prompt, 64, regex, |text| {
        assert!(full.is_match(text), "{text:?}");
    })
    .await;
}

#[tokio::test]
async fn lark_grammar_output_always_has_the_structure() {
    let grammar = r#"
start: VERDICT " because " REASON "."
VERDICT: "ACCEPT" | "REJECT"
REASON: /[a-z][a-z ]{0,39}/
"#;
    let prompt = "Answer as 'ACCEPT because <reason>.' or 'REJECT because <reason>.'";
    let lark = TextConstraint::Grammar(grammar.to_owned());
    each_pr_under("grammar", prompt, 64, lark, |text| {
        let rest = text
            .strip_prefix("ACCEPT because ")
            .or_else(|| text.strip_prefix("REJECT because "))
            .unwrap_or_else(|| panic!("bad verdict: {text:?}"));
        let reason = rest
            .strip_suffix('.')
            .unwrap_or_else(|| panic!("no final period: {text:?}"));
        assert!(!reason.is_empty() && reason.len() <= 40, "{text:?}");
        assert!(
            reason.starts_with(|c: char| c.is_ascii_lowercase()),
            "{text:?}"
        );
        assert!(
            reason.chars().all(|c| c.is_ascii_lowercase() || c == ' '),
            "{text:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn unconstrained_output_is_reported_not_enforced() {
    let _serial = serial().await;
    let adapter = LocalAdapter::new(engine());
    let compiled = CompiledSchema::compile(&decision_schema()).unwrap();
    let (mut strict, mut valid) = (0, 0);
    for i in 0..PRS.len() {
        let resp = call(&adapter, request(i, JSON_FORMAT, 64)).await;
        assert_eq!(resp.wire.mode, StructuredOutputMode::None);
        assert!(resp.usage.output_tokens > 0 && resp.usage.output_tokens <= 64);
        assert!(
            matches!(
                resp.stop_reason,
                StopReason::EndTurn | StopReason::MaxTokens
            ),
            "{:?}",
            resp.stop_reason
        );
        if resp.stop_reason == StopReason::MaxTokens {
            assert_eq!(resp.usage.output_tokens, 64);
        }
        if let Ok(value) = serde_json::from_str::<Value>(&resp.text) {
            strict += 1;
            if compiled.validate(&value).is_empty() {
                valid += 1;
            }
        }
    }
    println!("unconstrained: {strict}/10 parse as JSON, {valid}/10 satisfy the schema");
}

#[tokio::test]
async fn schema_llguidance_rejects_fails_closed_with_the_reason() {
    let _serial = serial().await;
    let adapter = LocalAdapter::new(engine());
    // A keyword llguidance cannot compile (`uniqueItems`, `not`, ...) is left to validation
    // (`geode_local::tighten`); an unsatisfiable schema is still refused, with the reason.
    let schema = ResponseSchema::from_value(json!({
        "type": "object",
        "properties": {
            "code": {"type": "string", "minLength": 5, "maxLength": 2}
        },
        "required": ["code"]
    }))
    .unwrap();
    let mut req = request(0, JSON_FORMAT, 32);
    req.response_schema = Some(schema.clone());
    match adapter.call(req, &CallCx::new()).await {
        Err(e @ AdapterError::Unsupported { .. }) => {
            assert!(e.to_string().contains("minLength"), "{e}");
        }
        other => panic!("expected a fail-closed Unsupported error, got {other:?}"),
    }
    // The engine API gives the typed reason too.
    let turns = [ChatTurn::new(ChatRole::User, "hi")];
    let err = engine()
        .generate(
            &turns,
            &Constraint::JsonSchema(schema),
            &GenerateOptions::default(),
            &|| None,
        )
        .err();
    match err {
        Some(LocalError::Constraint { kind, reason }) => {
            assert_eq!(kind, "json_schema");
            assert!(reason.contains("minLength"), "{reason}");
        }
        other => panic!("expected LocalError::Constraint, got {other:?}"),
    }
}

#[tokio::test]
async fn bad_regex_and_grammar_fail_closed() {
    let _serial = serial().await;
    let engine = engine();
    let turns = [ChatTurn::new(ChatRole::User, "hi")];
    for constraint in [
        Constraint::Regex("(unclosed".to_owned()),
        Constraint::Grammar("start: undefined_rule".to_owned()),
        Constraint::Choice(Vec::new()),
    ] {
        let kind = constraint.kind();
        match engine.generate(&turns, &constraint, &GenerateOptions::default(), &|| None) {
            Err(LocalError::Constraint { kind: k, reason }) => {
                assert_eq!(k, kind);
                assert!(!reason.is_empty());
            }
            other => panic!("{kind}: expected LocalError::Constraint, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn small_max_tokens_truncates() {
    let _serial = serial().await;
    let adapter = LocalAdapter::new(engine());
    let resp = call(&adapter, decision_request(0, 5)).await;
    assert_eq!(resp.stop_reason, StopReason::MaxTokens, "{:?}", resp.text);
    assert_eq!(resp.usage.output_tokens, 5);
    assert_eq!(resp.wire.mode, StructuredOutputMode::Constrained);
    assert!(resp.text.starts_with('{'), "{:?}", resp.text);
}

#[tokio::test]
async fn repeated_prompt_reuses_the_cached_prefix() {
    let _serial = serial().await;
    let adapter = LocalAdapter::new(engine());
    let req = decision_request(3, 128);
    let first = call(&adapter, req.clone()).await;
    let second = call(&adapter, req).await;
    assert_eq!(first.usage.input_tokens, second.usage.input_tokens);
    // All but the last prompt token (evaluated again for its logits) come from the cache.
    assert_eq!(
        second.usage.cached_input_tokens,
        second.usage.input_tokens - 1
    );
    // Another PR shares the system prompt and the start of the user turn.
    let third = call(&adapter, decision_request(4, 128)).await;
    assert!(third.usage.cached_input_tokens > 0);
    assert!(third.usage.cached_input_tokens < third.usage.input_tokens);
}

#[tokio::test]
async fn concurrent_calls_share_one_engine() {
    let _serial = serial().await;
    let adapter = Arc::new(LocalAdapter::new(engine()));
    let mut tasks = Vec::new();
    for i in 0..3 {
        let adapter = Arc::clone(&adapter);
        tasks.push(tokio::spawn(async move {
            let mut req = request(i, "Answer with one word: accept or reject.", 16);
            req.text_constraint = Some(TextConstraint::Choice(vec![
                "accept".to_owned(),
                "reject".to_owned(),
            ]));
            adapter.call(req, &CallCx::new()).await
        }));
    }
    for task in tasks {
        let resp = task.await.unwrap().unwrap();
        assert!(
            resp.text == "accept" || resp.text == "reject",
            "{:?}",
            resp.text
        );
    }
}

#[tokio::test]
async fn cancelled_and_expired_calls_stop() {
    let _serial = serial().await;
    let adapter = LocalAdapter::new(engine());
    let cx = CallCx::new();
    cx.cancel.cancel();
    let err = adapter.call(request(0, JSON_FORMAT, 64), &cx).await.err();
    assert!(
        matches!(err, Some(AdapterError::Cancelled { .. })),
        "{err:?}"
    );

    let turns = [ChatTurn::new(ChatRole::User, "Tell me a long story.")];
    let err = engine()
        .generate(
            &turns,
            &Constraint::None,
            &GenerateOptions::default(),
            &|| Some(geode_local::Interruption::Timeout),
        )
        .err();
    assert!(matches!(err, Some(LocalError::Timeout)), "{err:?}");
}

#[test]
fn missing_model_file_is_a_typed_error_naming_the_path() {
    let config = EngineConfig {
        model_path: PathBuf::from("/nonexistent/geode/model.gguf"),
        ..EngineConfig::default()
    };
    match LocalEngine::load(&config) {
        Err(e @ LocalError::ModelMissing { .. }) => {
            let text = e.to_string();
            assert!(text.contains("/nonexistent/geode/model.gguf"), "{text}");
            assert!(text.contains("fetch-model.sh"), "{text}");
        }
        other => panic!("expected ModelMissing, got {other:?}"),
    }
}

/// A request for an answer to `schema` of at most `max_tokens`, with this seed.
fn schema_request(prompt: &str, schema: &Value, max_tokens: u32, seed: u32) -> AdapterCallRequest {
    let mut req = AdapterCallRequest::new("", vec![Message::user(prompt)]);
    req.max_tokens = max_tokens;
    req.metadata.insert("seed".to_owned(), json!(seed));
    req.response_schema = Some(ResponseSchema::from_value(schema.clone()).unwrap());
    req
}

/// A schema whose longest answer (12 optional free strings of up to 160 characters) is far
/// past a 96-token budget: the engine narrows it to fit (shorter strings, then optional
/// properties left out), so the answer ends by itself, valid, and the ledger says why.
#[tokio::test]
async fn a_schema_too_large_for_the_budget_is_narrowed_to_end_within_it() {
    let _serial = serial().await;
    let adapter = LocalAdapter::new(engine());
    let fields = [
        "title",
        "summary",
        "author",
        "publisher",
        "city",
        "country",
        "genre",
        "language",
        "review",
        "moral",
        "setting",
        "ending",
    ];
    let properties: serde_json::Map<String, Value> = fields
        .iter()
        .map(|f| ((*f).to_owned(), json!({"type": "string"})))
        .collect();
    let schema = json!({"type": "object", "properties": properties, "required": ["title"]});
    let compiled =
        CompiledSchema::compile(&ResponseSchema::from_value(schema.clone()).unwrap()).unwrap();
    for seed in 0..3 {
        let req = schema_request(
            "Describe a long novel in great detail as JSON, filling in every field with \
                 several long sentences.",
            &schema,
            96,
            seed,
        );
        let resp = call(&adapter, req).await;
        assert_constrained_plumbing(&resp);
        assert!(
            resp.usage.output_tokens < 96,
            "{}",
            resp.usage.output_tokens
        );
        let value: Value = serde_json::from_str(&resp.text).unwrap();
        assert!(compiled.is_valid(&value), "{}", resp.text);
        let budget = resp
            .wire
            .transforms
            .iter()
            .find(|t| t.action.starts_with("narrowed to fit max_tokens 96"));
        assert!(budget.is_some(), "{:?}", resp.wire.transforms);
    }
}

/// A JSON number has no length limit llguidance can impose: asked for many digits, the model
/// would write them until the budget ends. In the last tokens of the budget the engine prefers
/// the mask's closing tokens, so the answer ends, valid, before the budget.
#[tokio::test]
async fn a_runaway_number_is_closed_before_the_budget_ends() {
    let _serial = serial().await;
    let adapter = LocalAdapter::new(engine());
    let schema = json!({
        "type": "object",
        "properties": {"pi": {"type": "number"}, "name": {"type": "string", "maxLength": 20}},
        "required": ["pi", "name"]
    });
    let compiled =
        CompiledSchema::compile(&ResponseSchema::from_value(schema.clone()).unwrap()).unwrap();
    for seed in 0..3 {
        let req = schema_request(
            "Write the number pi with as many digits as you can (at least 500 digits), then \
                 its name.",
            &schema,
            48,
            seed,
        );
        let resp = call(&adapter, req).await;
        assert_constrained_plumbing(&resp);
        let value: Value = serde_json::from_str(&resp.text).unwrap();
        assert!(compiled.is_valid(&value), "{}", resp.text);
    }
}
