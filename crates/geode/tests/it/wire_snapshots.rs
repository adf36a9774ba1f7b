//! The exact request every HTTP adapter puts on its wire: body and headers, secrets
//! masked by the fake's recorder, for a set of requests that covers each placement rule: a
//! strict-compatible schema, a non-strict one, a `$ref`/`$defs` schema, a schema with framework
//! tools, a choice constraint without a schema, and an array root (wrapped where the wire needs
//! an object root). A change to any byte of a body or header
//! fails here: refactors of the wire code must keep these snapshots unchanged
//! (`tests/snapshots/`; review a deliberate change with `cargo insta review`).
use geode_testkit::{built, env};

use env::MapEnv;
use geode::llm::adapter::Adapter;
use geode::llm::call::CallCx;
use geode::llm::request::{AdapterCallRequest, Message, ToolSpec};
use geode::schema::{ResponseSchema, TextConstraint};
use geode_fakes::{FakeServer, Kind, Reply, SchemaSupport, Script};
use serde_json::{Map, Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const KEY: &str = "sk-snapshot-SECRET-0001";

/// The adapter `name` as `geode` builds it on the machine `env`, without retries.
fn built(name: &str, env: MapEnv) -> Arc<dyn Adapter> {
    built::built_without_retries(name, &env)
}

fn schema(v: Value) -> ResponseSchema {
    ResponseSchema::from_value(v).unwrap()
}

fn decision() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/decision.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn loose() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/loose.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn with_refs() -> Value {
    json!({"title": "Tree", "type": "object",
           "properties": {"root": {"$ref": "#/$defs/node"}},
           "required": ["root"], "additionalProperties": false,
           "$defs": {"node": {"type": "object",
               "properties": {"name": {"type": "string"},
                              "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
               "required": ["name", "children"], "additionalProperties": false}}})
}

/// The requests every adapter is snapshotted with.
fn requests() -> Vec<(&'static str, AdapterCallRequest)> {
    let base = || {
        let mut r = AdapterCallRequest::new("", vec![Message::user("Decide about the change.")]);
        r.system_prompt = "You review pull requests.".into();
        r.max_tokens = 512;
        r
    };
    let mut strict = base();
    strict.response_schema = Some(schema(decision()));
    // Not strict as written (optional properties, open objects); the OpenAI wires send it strict,
    // every property required and nullable (`schema::nullable`), the others as written.
    let mut non_strict = base();
    non_strict.response_schema = Some(schema(loose()));
    let mut refs = base();
    refs.response_schema = Some(schema(with_refs()));
    let mut tools = base();
    tools.response_schema = Some(schema(decision()));
    tools.tools = vec![ToolSpec {
        name: "read_file".into(),
        description: "Reads a file of the pull request.".into(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}},
                             "required": ["path"], "additionalProperties": false}),
    }];
    // A non-object root: wrapped under `value` where the wire needs an object root.
    let mut array_root = base();
    array_root.response_schema = Some(schema(
        json!({"type": "array", "items": {"type": "integer"}}),
    ));
    let mut choice = base();
    choice.text_constraint = Some(TextConstraint::Choice(vec![
        "accept".into(),
        "reject".into(),
    ]));
    vec![
        ("strict", strict),
        ("non_strict", non_strict),
        ("refs", refs),
        ("tools", tools),
        ("choice", choice),
        ("array_root", array_root),
    ]
}

/// Header values that change from run to run.
const VOLATILE_HEADERS: [&str; 4] = ["session-id", "x-client-request-id", "user-agent", "host"];

/// The recorded model call: method, path, sorted headers (volatile ones replaced) and body.
/// `openai-compatible`'s probe is not a model call ([`snapshot_of_probe`]).
fn snapshot_of(server: &FakeServer) -> Value {
    let calls: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| {
            r.method == "POST"
                && ["/responses", "/v1/messages", "/chat/completions"]
                    .iter()
                    .any(|p| r.route().ends_with(p))
                && !geode_fakes::chat::is_probe(&r.body)
        })
        .collect();
    assert_eq!(calls.len(), 1, "one model call: {calls:?}");
    snapshot_of_call(&calls[0])
}

/// `openai-compatible`'s probe, its random nonce replaced by `<nonce>`.
fn snapshot_of_probe(server: &FakeServer) -> Value {
    let mut probes: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| geode_fakes::chat::is_probe(&r.body))
        .collect();
    assert_eq!(
        probes.len(),
        1,
        "one probe per server and model: {probes:?}"
    );
    let probe = &mut probes[0];
    let nonce = probe
        .body
        .pointer_mut("/response_format/json_schema/schema/properties/geode_probe/const")
        .expect("the probe's const nonce");
    assert_eq!(nonce.as_str().map(str::len), Some(12), "{nonce}");
    *nonce = json!("<nonce>");
    snapshot_of_call(probe)
}

fn snapshot_of_call(call: &geode_fakes::RecordedRequest) -> Value {
    let mut headers: Vec<(String, String)> = call
        .headers
        .iter()
        .map(|(k, v)| {
            let v = if VOLATILE_HEADERS.contains(&k.as_str()) {
                "<volatile>".to_owned()
            } else {
                v.clone()
            };
            (k.clone(), v)
        })
        .collect();
    headers.sort();
    let headers: Map<String, Value> = headers.into_iter().map(|(k, v)| (k, v.into())).collect();
    let text = serde_json::to_string(&call.body).unwrap();
    assert!(!text.contains(KEY), "the key is in the body");
    json!({"method": call.method, "route": call.route(), "headers": headers, "body": call.body})
}

async fn snapshot_adapter(name: &str, kind: Kind, build: impl Fn(&FakeServer) -> Arc<dyn Adapter>) {
    snapshot_adapter_on(name, kind, SchemaSupport::Enforce, build).await;
}

/// [`snapshot_adapter`] for an adapter built from a key variable (set to [`KEY`]) and a base-URL
/// variable (set to the fake's URL).
async fn snapshot_keyed(name: &str, kind: Kind, key_env: &str, base_env: &str) {
    snapshot_keyed_under(name, kind, key_env, base_env, "").await;
}

/// [`snapshot_keyed`] with the base URL at `path` under the fake (GLM's `/api/.../v4`).
async fn snapshot_keyed_under(name: &str, kind: Kind, key_env: &str, base_env: &str, path: &str) {
    snapshot_adapter(name, kind, |s| {
        let env = MapEnv::new()
            .set(key_env, KEY)
            .set(base_env, format!("{}{path}", s.base_url()));
        built(name, env)
    })
    .await;
}

/// [`snapshot_adapter`] on a fake whose `json_schema` support is `support`.
async fn snapshot_adapter_on(
    name: &str,
    kind: Kind,
    support: SchemaSupport,
    build: impl Fn(&FakeServer) -> Arc<dyn Adapter>,
) {
    for (case, req) in requests() {
        let server = auto_server(kind, support).await;
        call_once(build(&server), req, &format!("{name} {case}")).await;
        insta::assert_json_snapshot!(format!("{name}__{case}"), snapshot_of(&server));
    }
}

/// A fake of `kind` answering [`Reply::Auto`], with `support` for `json_schema`.
async fn auto_server(kind: Kind, support: SchemaSupport) -> FakeServer {
    FakeServer::builder(kind)
        .script(Script::always(Reply::Auto))
        .schema_support(support)
        .start()
        .await
        .unwrap()
}

/// One call of `adapter` with `req`, which must succeed within its bound.
async fn call_once(adapter: Arc<dyn Adapter>, req: AdapterCallRequest, label: &str) {
    let cx = CallCx::new().with_timeout(Duration::from_secs(20));
    tokio::time::timeout(Duration::from_secs(30), adapter.call(req, &cx))
        .await
        .expect("the call ended within its bound")
        .unwrap_or_else(|e| panic!("{label}: {e}"));
}

#[tokio::test]
async fn openai_payg_wire() {
    snapshot_keyed(
        "openai-payg",
        Kind::Responses,
        "OPENAI_API_KEY",
        "GEODE_OPENAI_BASE_URL",
    )
    .await;
}

#[tokio::test]
async fn codex_oauth_wire() {
    let dir = tempfile::tempdir().unwrap();
    geode_fakes::chatgpt::write_codex_auth(dir.path(), false).unwrap();
    snapshot_adapter("codex-oauth", Kind::ChatGpt, |s| {
        let env = MapEnv::new()
            .set("CODEX_HOME", dir.path().display().to_string())
            .set("GEODE_CODEX_BASE_URL", s.base_url())
            .set("GEODE_CODEX_AUTH_URL", s.base_url());
        built("codex-oauth", env)
    })
    .await;
}

#[tokio::test]
async fn anthropic_payg_wire() {
    snapshot_keyed(
        "anthropic-payg",
        Kind::Messages,
        "ANTHROPIC_API_KEY",
        "GEODE_ANTHROPIC_BASE_URL",
    )
    .await;
}

#[tokio::test]
async fn anthropic_oauth_wire() {
    snapshot_keyed(
        "anthropic-oauth",
        Kind::Messages,
        "CLAUDE_CODE_OAUTH_TOKEN",
        "GEODE_ANTHROPIC_BASE_URL",
    )
    .await;
}

#[tokio::test]
async fn glm_payg_wire() {
    let (name, key, base) = ("glm-payg", "ZAI_API_KEY", "GEODE_GLM_BASE_URL");
    snapshot_keyed_under(name, Kind::Chat, key, base, "/api/paas/v4").await;
}

#[tokio::test]
async fn glm_coding_plan_wire() {
    let (name, key, base) = (
        "glm-coding-plan",
        "ZAI_CODING_PLAN_KEY",
        "GEODE_GLM_CODING_BASE_URL",
    );
    snapshot_keyed_under(name, Kind::Chat, key, base, "/api/coding/paas/v4").await;
}

/// `openai-compatible` on a keyless server (no `authorization` header).
fn compat(s: &FakeServer) -> Arc<dyn Adapter> {
    let env = MapEnv::new().set(
        "GEODE_OPENAI_COMPAT_BASE_URL",
        format!("{}/v1", s.base_url()),
    );
    built("openai-compatible", env)
}

/// A server that enforces `json_schema`: strict, the schema not repeated in the prompt.
#[tokio::test]
async fn openai_compatible_wire() {
    snapshot_adapter("openai-compatible", Kind::Chat, compat).await;
}

/// A server that ignores `json_schema` (hint: the schema also in the prompt) and one that
/// refuses it (`json_object` + the schema in the prompt); and the probe itself, with its key.
#[tokio::test]
async fn openai_compatible_wire_by_probe_verdict() {
    for (label, support) in [
        ("ignored", SchemaSupport::Ignore),
        ("refused", SchemaSupport::Refuse),
    ] {
        let server = auto_server(Kind::Chat, support).await;
        call_once(compat(&server), requests().remove(0).1, label).await;
        insta::assert_json_snapshot!(
            format!("openai-compatible-{label}__strict"),
            snapshot_of(&server)
        );
    }
    let server = auto_server(Kind::Chat, SchemaSupport::Enforce).await;
    let env = MapEnv::new().set("GEODE_OPENAI_COMPAT_API_KEY", KEY).set(
        "GEODE_OPENAI_COMPAT_BASE_URL",
        format!("{}/v1", server.base_url()),
    );
    let adapter = built("openai-compatible", env);
    call_once(adapter, requests().remove(0).1, "probe").await;
    insta::assert_json_snapshot!("openai-compatible__probe", snapshot_of_probe(&server));
}
