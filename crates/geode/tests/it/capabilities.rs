//! Every capability flag of every HTTP registry row, checked against what the adapter built
//! from that row really puts on the wire (`geode-fakes` servers on 127.0.0.1): `streaming`
//! against whether the recorded request asked for SSE (`stream: true`, `accept:
//! text/event-stream`); `framework_tools` against whether a tool reaches the body;
//! `tools_with_schema` against whether a tool and the schema travel in one body; the mode rule
//! against the mode the call reports; the endpoint path against the recorded route; the auth
//! source against the recorded header. `geode adapters` prints these rows, so a row that lies
//! fails here.
use geode_testkit::{built, env};

use env::MapEnv;
use geode::llm::adapter::Adapter;
use geode::llm::call::CallCx;
use geode::llm::registry::{ADAPTERS, AdapterSpec, Auth, KeyHeader, WireFamily};
use geode::llm::request::{AdapterCallRequest, Message, ToolSpec};
use geode::llm::settings::AdapterSettings;
use geode::schema::ResponseSchema;
use geode_fakes::{FakeServer, Kind, RecordedRequest, Reply, Script};
use serde_json::{Value, json};
use std::time::Duration;

const KEY: &str = "sk-capability-SECRET-7";
const TOOL: &str = "read_file";

fn kind_of(spec: &AdapterSpec) -> Kind {
    match spec.wire_family {
        WireFamily::Responses(geode::llm::wire::responses::Backend::Platform) => Kind::Responses,
        WireFamily::Responses(_) => Kind::ChatGpt,
        WireFamily::Messages => Kind::Messages,
        WireFamily::Chat(_) => Kind::Chat,
        other => panic!("{} is not an HTTP row: {other:?}", spec.name),
    }
}

/// A machine where `spec`'s credentials exist and its base URL points at `server`.
fn machine(spec: &AdapterSpec, server: &FakeServer, home: &std::path::Path) -> MapEnv {
    let endpoint = spec.endpoint.expect("an HTTP row has an endpoint");
    // The fake GLM server serves the path under the registry's default base.
    let base_path = url_path(endpoint.default_base);
    let env = MapEnv::new().set(
        endpoint.base_env,
        format!("{}{base_path}", server.base_url()),
    );
    match spec.auth {
        Auth::ApiKey { env: var, .. } | Auth::OptionalApiKey { env: var, .. } => env.set(var, KEY),
        Auth::ClaudeLogin { token_env, .. } => env.set(token_env, KEY),
        Auth::CodexLogin {
            dir_env,
            token_url_env,
            ..
        } => {
            geode_fakes::chatgpt::write_codex_auth(home, false).unwrap();
            env.set(dir_env, home.display().to_string())
                .set(token_url_env, server.base_url())
        }
        other => panic!("{}: not an HTTP auth source: {other:?}", spec.name),
    }
}

/// The path part of a URL (`https://api.z.ai/api/paas/v4` → `/api/paas/v4`).
fn url_path(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.find('/').map_or("", |i| &rest[i..])
}

fn decision() -> ResponseSchema {
    ResponseSchema::from_value(json!({"title": "Decision", "type": "object",
        "properties": {"decision": {"type": "string", "enum": ["accept", "reject"]}},
        "required": ["decision"], "additionalProperties": false}))
    .unwrap()
}

fn loose() -> ResponseSchema {
    ResponseSchema::from_value(json!({"type": "object",
        "properties": {"notes": {"type": "array", "items": {"type": "string"}}}}))
    .unwrap()
}

fn request(schema: Option<ResponseSchema>, tools: bool) -> AdapterCallRequest {
    let mut r = AdapterCallRequest::new("", vec![Message::user("Decide.")]);
    r.response_schema = schema;
    if tools {
        r.tools = vec![ToolSpec {
            name: TOOL.into(),
            description: "Reads a file.".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }];
    }
    r
}

/// The adapter answers with its own row, and forwards tools as the row says.
fn assert_reports_its_row(adapter: &dyn Adapter, spec: &AdapterSpec) {
    assert_eq!(adapter.spec().map(|s| s.name), Some(spec.name));
    assert_eq!(
        adapter.supports_tools(),
        spec.framework_tools,
        "{}",
        spec.name
    );
}

/// One call of `spec`'s adapter with `req`: the recorded model call (not `openai-compatible`'s
/// probe, which the fake answers as a server that enforces the schema) and the reported mode.
async fn record(
    spec: &'static AdapterSpec,
    req: AdapterCallRequest,
) -> (RecordedRequest, geode::vocab::StructuredOutputMode) {
    let server = FakeServer::start(kind_of(spec), Script::always(Reply::Auto))
        .await
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let env = machine(spec, &server, home.path());
    let adapter = built::built_without_retries(spec.name, &env);
    assert_reports_its_row(adapter.as_ref(), spec);
    let cx = CallCx::new().with_timeout(Duration::from_secs(20));
    let resp = tokio::time::timeout(Duration::from_secs(30), adapter.call(req, &cx))
        .await
        .expect("the call ended within its bound")
        .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
    let path = spec.endpoint.unwrap().path;
    let calls: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.route().ends_with(path))
        .filter(|r| !geode_fakes::chat::is_probe(&r.body))
        .collect();
    assert_eq!(calls.len(), 1, "{}: one call to {path}", spec.name);
    (calls.into_iter().next().unwrap(), resp.wire.mode)
}

fn has_tool(body: &Value) -> bool {
    body.to_string().contains(TOOL)
}

fn http_rows() -> impl Iterator<Item = &'static AdapterSpec> {
    ADAPTERS.iter().filter(|a| a.wire_family.is_http())
}

#[tokio::test]
async fn streaming_flags_match_the_recorded_requests() {
    assert_eq!(http_rows().count(), 7);
    for spec in http_rows() {
        let (call, _) = record(spec, request(None, false)).await;
        let sse = call.body["stream"] == json!(true)
            && call.header("accept") == Some("text/event-stream");
        assert_eq!(sse, spec.streaming, "{}: streaming", spec.name);
    }
}

#[tokio::test]
async fn tool_flags_match_the_recorded_bodies() {
    for spec in http_rows() {
        let (call, _) = record(spec, request(None, true)).await;
        assert_eq!(
            has_tool(&call.body),
            spec.framework_tools,
            "{}: framework_tools",
            spec.name
        );
        let (call, mode) = record(spec, request(Some(decision()), true)).await;
        let both = has_tool(&call.body) && mode != geode::vocab::StructuredOutputMode::None;
        assert_eq!(
            both, spec.tools_with_schema,
            "{}: tools_with_schema",
            spec.name
        );
    }
}

#[tokio::test]
async fn modes_auth_and_endpoints_match_the_rows() {
    for spec in http_rows() {
        for schema in [decision(), loose()] {
            let expected = spec.schema_route.mode(Some(&schema));
            let (call, mode) = record(spec, request(Some(schema), false)).await;
            assert_eq!(mode, expected, "{}: mode", spec.name);
            let header = match spec.auth {
                Auth::ApiKey {
                    header: KeyHeader::XApiKey,
                    ..
                } => "x-api-key",
                _ => "authorization",
            };
            assert!(call.header(header).is_some(), "{}: {header}", spec.name);
            assert!(!call.body.to_string().contains(KEY), "{}", spec.name);
        }
    }
}

/// The vendor SDKs' base-URL variables reach the wire as the SDKs use them:
/// `OPENAI_BASE_URL` ends in `/v1`, `ANTHROPIC_BASE_URL` does not.
#[tokio::test]
async fn sdk_base_url_variables_are_honoured() {
    for (name, kind, var, suffix, route) in [
        (
            "openai-payg",
            Kind::Responses,
            "OPENAI_BASE_URL",
            "/v1",
            "/v1/responses",
        ),
        (
            "anthropic-payg",
            Kind::Messages,
            "ANTHROPIC_BASE_URL",
            "",
            "/v1/messages",
        ),
        (
            "anthropic-oauth",
            Kind::Messages,
            "ANTHROPIC_BASE_URL",
            "",
            "/v1/messages",
        ),
    ] {
        let server = FakeServer::start(kind, Script::always(Reply::Auto))
            .await
            .unwrap();
        let spec = geode::llm::registry::spec(name).unwrap();
        let env = match spec.auth {
            Auth::ApiKey { env, .. } => MapEnv::new().set(env, KEY),
            Auth::ClaudeLogin { token_env, .. } => MapEnv::new().set(token_env, KEY),
            other => panic!("{other:?}"),
        }
        .set(var, format!("{}{suffix}", server.base_url()));
        let adapter = geode::llm::build::build(name, &AdapterSettings::default(), &env).unwrap();
        let cx = CallCx::new().with_timeout(Duration::from_secs(20));
        tokio::time::timeout(
            Duration::from_secs(30),
            adapter.call(request(None, false), &cx),
        )
        .await
        .expect("the call ended within its bound")
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let routes: Vec<(String, String)> = server
            .requests()
            .iter()
            .map(|r| (r.method.clone(), r.route().to_owned()))
            .collect();
        assert_eq!(
            routes,
            vec![("POST".to_owned(), route.to_owned())],
            "{name}"
        );
    }
}

/// The CLI rows: the adapters `geode` builds for them answer with their own row, forward no
/// framework tools and take no schema beside tools (their wire is checked by the CLI suites).
#[test]
fn cli_rows_are_what_their_adapters_report() {
    for spec in ADAPTERS
        .iter()
        .filter(|a| matches!(a.wire_family, WireFamily::Cli(_)))
    {
        let adapter =
            geode::llm::build::build(spec.name, &AdapterSettings::default(), &MapEnv::new())
                .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
        assert_reports_its_row(adapter.as_ref(), spec);
        assert!(!spec.framework_tools && !spec.tools_with_schema && !spec.streaming);
        assert!(spec.endpoint.is_none(), "{}", spec.name);
    }
}
