//! `geode gateway`'s `POST /v1/responses` held to the Open Responses specification, with its
//! stored responses, and its Chat Completions bodies held to the official SDK's types:
//! `tests/conformance/test_open_responses.py` (pytest, in the `openai-sdk` venv with the spec's
//! published types, `openresponses-types`) run against a gateway in front of `geode-fakes`
//! providers and against one on the local model; and, from here, what a continuation by
//! `previous_response_id` sent upstream (the fakes record every request they get).

use crate::e2e_gateway::{Gateway, fakes, sandbox};
use crate::e2e_gateway_sdk::python;
use crate::support::{SECRET, Sandbox, bad_enum_answer, good_answer, model_calls};
use geode_fakes::{FakeServer, Kind, Reply, Script};
use serde_json::{Value, json};
use std::path::PathBuf;

/// Two inbound keys: what one stores, the other never sees.
const KEY_A: &str = "gw-conformance-key-a-4c9e1f";
const KEY_B: &str = "gw-conformance-key-b-83d07a";

/// What the pytest file holds: 49 tests, of which 4 need a route that calls tools, 1 a route
/// whose first answer fails its schema, and 2 a route that takes images and PDFs (the local
/// model takes text only: there, the refusal scenario runs instead).
const ON_THE_FAKES: &str = "49 passed";
const ON_THE_LOCAL_MODEL: &str = "46 passed, 3 skipped";

/// The prompt of the suite's requests that must be refused before any upstream call.
const REFUSED_PROMPT: &str = "This request is refused before any upstream call.";

/// `GEODE_GATEWAY_KEYS` with both keys (comma-separated, as `auth.rs` reads the variable).
fn both_keys(sb: &mut Sandbox) {
    sb.var("GEODE_GATEWAY_KEYS", format!("{KEY_A},{KEY_B}"));
}

/// The gateway over the fakes: `openai-payg` (a Responses upstream) answers in the shape asked
/// (a fixed text for free text), the configured provider `tooled` (a Chat upstream) calls the
/// first tool it is offered until it gets the result, then answers, and `flaky` (a Chat
/// upstream) answers a Decision with a wrong enum value first and a valid one from then on.
async fn fake_gateway(openai: Script, tooled: Script) -> ([FakeServer; 4], Gateway) {
    let (openai, glm) = fakes(openai, Script::always(Reply::Auto)).await;
    let tooled = FakeServer::start(Kind::Chat, tooled).await.unwrap();
    let flaky = FakeServer::start(
        Kind::Chat,
        Script::new([Reply::Json(bad_enum_answer())]).then_default(Reply::Json(good_answer())),
    )
    .await
    .unwrap();
    let mut sb = sandbox(&openai, &glm);
    both_keys(&mut sb);
    sb.var("TOOLED_KEY", SECRET);
    let provider = |name: &str, server: &FakeServer| {
        format!(
            "[providers.{name}]\nwire = \"chat\"\nbase_url = \"{}/v1\"\nkey_env = \"TOOLED_KEY\"\nmodel = \"m\"\nschema = \"json_schema\"\n",
            server.base_url()
        )
    };
    sb.config(&(provider("tooled", &tooled) + &provider("flaky", &flaky)));
    let gw = Gateway::start(&sb, &[]);
    ([openai, glm, tooled, flaky], gw)
}

/// Runs the pytest file against `gw` with `env`; fails with everything it printed unless it
/// passed with `summary` (pytest's closing counts).
async fn conformance_suite(gw: &Gateway, env: &[(&str, &str)], summary: &str) {
    let test =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/test_open_responses.py");
    let out = tokio::process::Command::new(python())
        .args(["-m", "pytest", "-q", "-rfEs", "-p", "no:cacheprovider"])
        .arg(&test)
        .env("GEODE_GATEWAY_URL", &gw.base)
        .env("GEODE_GATEWAY_KEY", KEY_A)
        .env("GEODE_GATEWAY_KEY_B", KEY_B)
        .envs(env.iter().copied())
        .env("NO_PROXY", "127.0.0.1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        // Wide, so that the summary gives each failure's reason on its line.
        .env("COLUMNS", "400")
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}"); // shown with --nocapture
    assert!(
        out.status.success(),
        "pytest failed:\n{stdout}\n{}\ngateway:\n{}",
        String::from_utf8_lossy(&out.stderr),
        gw.log()
    );
    assert!(stdout.contains(summary), "wanted {summary:?}:\n{stdout}");
    let log = gw.log();
    assert!(
        !log.contains(KEY_A) && !log.contains(KEY_B),
        "a key in the log"
    );
}

/// The serialized body of the one upstream model call that holds `needle`.
fn upstream_with(server: &FakeServer, needle: &str) -> String {
    let bodies: Vec<String> = model_calls(server)
        .into_iter()
        .map(|r| r.body.to_string())
        .filter(|b| b.contains(needle))
        .collect();
    assert_eq!(
        bodies.len(),
        1,
        "upstream calls holding {needle:?}: {bodies:#?}"
    );
    bodies.into_iter().next().unwrap()
}

/// Fails unless `haystack` holds every one of `needles`, in that order.
#[track_caller]
fn in_order(haystack: &str, needles: &[&str]) {
    let mut from = 0;
    for needle in needles {
        let at = haystack[from..]
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing (or out of order) in {haystack}"));
        from += at + needle.len();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_responses_endpoint_meets_open_responses_over_the_fakes() {
    let (servers, gw) = fake_gateway(
        Script::always(Reply::Auto),
        Script::always(Reply::CallOfferedTool),
    )
    .await;
    conformance_suite(
        &gw,
        &[
            ("GEODE_MODEL", "openai-payg/gpt-5-mini"),
            ("GEODE_TOOL_MODEL", "tooled"),
            ("GEODE_RETRY_MODEL", "flaky"),
            ("GEODE_IMAGE_MODEL", "openai-payg/gpt-5-mini"),
            ("GEODE_TEXT_ONLY_MODEL", "glm-payg/glm-5.2"),
        ],
        ON_THE_FAKES,
    )
    .await;
    // What the suite refused as not served reached no upstream.
    for server in &servers {
        assert!(
            !model_calls(server)
                .iter()
                .any(|r| r.body.to_string().contains(REFUSED_PROMPT)),
            "a refused request went upstream"
        );
    }
    // The suite's continuation by previous_response_id went upstream with the first turn.
    let second = upstream_with(&servers[0], "Which word did I ask you to remember?");
    in_order(
        &second,
        &[
            "Remember the word heliotrope.",
            "Which word did I ask you to remember?",
        ],
    );
}

/// POSTs `body` to `/v1/responses` with key A; the status and the JSON body.
async fn create(gw: &Gateway, body: &Value) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .post(gw.url("/v1/responses"))
        .bearer_auth(KEY_A)
        .json(body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continuation_by_previous_response_id_sends_the_stored_turns_upstream() {
    let (servers, gw) = fake_gateway(
        Script::new([Reply::text("Noted: heliotrope.")])
            .then_default(Reply::text("The word was heliotrope.")),
        Script::always(Reply::CallOfferedTool),
    )
    .await;
    let [openai, _, tooled, _] = &servers;

    // A conversation: the second request names the first and sends only its new turn.
    let (status, first) = create(
        &gw,
        &json!({
            "model": "openai-payg/gpt-5-mini",
            "instructions": "You keep words in mind.",
            "input": [{"type": "message", "role": "user", "content": "Keep the word heliotrope in mind."}],
        }),
    )
    .await;
    assert_eq!(status, 200, "{first}\n{}", gw.log());
    let (status, second) = create(
        &gw,
        &json!({
            "model": "openai-payg/gpt-5-mini",
            "previous_response_id": first["id"],
            "input": [{"type": "message", "role": "user", "content": "Which word was that?"}],
        }),
    )
    .await;
    assert_eq!(status, 200, "{second}\n{}", gw.log());
    assert_eq!(second["previous_response_id"], first["id"], "{second}");
    let sent = upstream_with(openai, "Which word was that?");
    in_order(
        &sent,
        &[
            "Keep the word heliotrope in mind.",
            "Noted: heliotrope.",
            "Which word was that?",
        ],
    );
    // The first request's instructions are not carried over, and none are made up.
    assert!(!sent.contains("You keep words in mind."), "{sent}");
    assert!(!sent.contains("general assistance"), "{sent}");
    assert_eq!(model_calls(openai).len(), 2);

    // A tool round trip: the second request sends only the call's output.
    let tools = json!([{
        "type": "function", "name": "get_weather", "description": "today's weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"], "additionalProperties": false},
    }]);
    let (status, called) = create(
        &gw,
        &json!({
            "model": "tooled",
            "input": [{"type": "message", "role": "user", "content": "Is it raining in Porto?"}],
            "tools": tools,
        }),
    )
    .await;
    assert_eq!(status, 200, "{called}\n{}", gw.log());
    let call = called["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call")
        .unwrap_or_else(|| panic!("no function_call: {called}"))
        .clone();
    let call_id = call["call_id"].as_str().unwrap();
    let (status, answered) = create(
        &gw,
        &json!({
            "model": "tooled",
            "previous_response_id": called["id"],
            "input": [{"type": "function_call_output", "call_id": call_id, "output": "{\"sky\":\"grey\"}"}],
            "tools": tools,
        }),
    )
    .await;
    assert_eq!(status, 200, "{answered}\n{}", gw.log());
    assert_eq!(answered["status"], "completed", "{answered}");
    let calls = model_calls(tooled);
    assert_eq!(calls.len(), 2, "one upstream call per request: {calls:#?}");
    let messages = calls[1].body["messages"].as_array().unwrap().clone();
    let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
    assert!(
        roles.ends_with(&["user", "assistant", "tool"]),
        "the stored turn, its call, then the result: {roles:?}"
    );
    let assistant = &messages[messages.len() - 2];
    assert_eq!(assistant["tool_calls"][0]["id"], call_id, "{assistant}");
    assert_eq!(
        assistant["tool_calls"][0]["function"]["name"],
        "get_weather"
    );
    let result = &messages[messages.len() - 1];
    assert_eq!(result["tool_call_id"], call_id, "{result}");
    assert!(result.to_string().contains("grey"), "{result}");
    assert!(
        messages[messages.len() - 3]
            .to_string()
            .contains("Is it raining in Porto?"),
        "{messages:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_responses_endpoint_meets_open_responses_on_the_local_model() {
    let mut sb = Sandbox::with_local_model();
    both_keys(&mut sb);
    let gw = Gateway::start(&sb, &[]);
    conformance_suite(
        &gw,
        &[
            ("GEODE_MODEL", "local"),
            ("GEODE_TOOL_MODEL", "local"),
            // SmolLM2-135M seldom chooses a tool on its own; asked to, its call is the
            // grammar's, so always well-formed and valid.
            ("GEODE_TOOL_CHOICE", "required"),
            ("GEODE_TOOL_BUDGET", "96"),
            // Small, so that the run stays quick; a cut answer is then `incomplete`.
            ("GEODE_MAX_OUTPUT_TOKENS", "16"),
        ],
        ON_THE_LOCAL_MODEL,
    )
    .await;
}
