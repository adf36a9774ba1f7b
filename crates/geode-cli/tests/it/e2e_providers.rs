//! Providers defined in `geode.toml` (`[providers.NAME]`), end to end through the `geode`
//! binary against `geode-fakes` servers on 127.0.0.1, for three kinds of real provider: a
//! router that enforces `json_schema` (OpenRouter-like), an API that takes only `json_object`
//! (DeepSeek-like) and a server on the Messages wire. Each routes by name or as the default,
//! puts the schema where its table says, signs with the key its `key_env` names (never shown),
//! honours `--require` before any call and fallbacks, and is listed by `geode adapters`.

use crate::support;

use geode_fakes::{FakeServer, Kind, Reply, SchemaSupport, Script};
use serde_json::Value;
use support::http_cases::{Case, Credential, Placement};
use support::{DECIDE, SECRET, Sandbox, good_answer, model_calls};

/// An OpenRouter-like router: Chat, the schema as `json_schema`, an app-name header.
const ROUTER: Case = Case {
    adapter: "router",
    kind: Kind::Chat,
    base_env: "GEODE_ROUTER_BASE_URL",
    credential: Credential::Key("ROUTER_KEY"),
    mode: "strict",
    placement: Placement::ChatJsonSchema,
    prose_first: false,
};

/// A DeepSeek-like API: Chat, `json_object` only.
const JSON_ONLY: Case = Case {
    adapter: "json-only",
    kind: Kind::Chat,
    base_env: "GEODE_JSON_ONLY_BASE_URL",
    credential: Credential::Key("JSON_ONLY_KEY"),
    mode: "json-mode",
    placement: Placement::ChatJsonObject,
    prose_first: false,
};

/// A server on the Messages wire.
const MESSAGES: Case = Case {
    adapter: "claude-proxy",
    kind: Kind::Messages,
    base_env: "GEODE_CLAUDE_PROXY_BASE_URL",
    credential: Credential::Key("PROXY_KEY"),
    mode: "strict",
    placement: Placement::MessagesFormat,
    prose_first: false,
};

/// The `[providers.NAME]` table of `case` for `server`, with `extra` lines.
fn table(case: &Case, server: &FakeServer, extra: &str) -> String {
    let (wire, schema) = match case.placement {
        Placement::ChatJsonSchema => ("chat", "json_schema"),
        Placement::ChatJsonObject => ("chat", "json_object"),
        _ => ("messages", "json_schema"),
    };
    let Credential::Key(key_env) = case.credential else {
        unreachable!("every case here has a key")
    };
    format!(
        "[providers.{}]\nwire = \"{wire}\"\nbase_url = \"{}/v1\"\nkey_env = \"{key_env}\"\nmodel = \"{}-model\"\nschema = \"{schema}\"\n{extra}\n",
        case.adapter,
        server.base_url(),
        case.adapter
    )
}

/// A fake of `case`'s kind answering every call with the good Decision, refusing the
/// `json_schema` probe when the provider takes only `json_object`.
async fn serve(case: &Case) -> FakeServer {
    let support = match case.placement {
        Placement::ChatJsonObject => SchemaSupport::Refuse,
        _ => SchemaSupport::Enforce,
    };
    FakeServer::builder(case.kind)
        .script(Script::always(Reply::Json(good_answer())))
        .schema_support(support)
        .start()
        .await
        .unwrap()
}

/// A sandbox whose `geode.toml` is `config` and whose key variables hold [`SECRET`].
fn sandbox(config: &str) -> Sandbox {
    let mut sb = Sandbox::new();
    for case in [ROUTER, JSON_ONLY, MESSAGES] {
        if let Credential::Key(var) = case.credential {
            sb.var(var, SECRET);
        }
    }
    sb.config(config);
    sb
}

fn ledger(out: &support::Outcome) -> Value {
    out.json()["ledger"].clone()
}

#[tokio::test]
async fn each_kind_of_provider_routes_by_name_and_puts_the_schema_where_its_table_says() {
    for case in [ROUTER, JSON_ONLY, MESSAGES] {
        let server = serve(&case).await;
        let sb = sandbox(&table(
            &case,
            &server,
            "headers = { \"X-Title\" = \"geode-e2e\" }",
        ));
        let out = sb.run_decision(case.adapter, &["--json"], DECIDE).await;
        out.assert_exit(0).assert_hides(SECRET);
        let result = out.json();
        assert_eq!(result["answer"], good_answer(), "{}", out.dump());
        assert_eq!(result["ledger"]["adapter"], case.adapter, "{result}");
        assert_eq!(result["ledger"]["wire_mode"], case.mode, "{result}");

        let calls = model_calls(&server);
        assert_eq!(
            calls.len(),
            1,
            "{}: no probe, one call: {calls:#?}",
            case.adapter
        );
        assert_eq!(
            server.requests().len(),
            1,
            "{}: nothing else sent",
            case.adapter
        );
        let call = &calls[0];
        case.assert_schema_on_wire(&call.body);
        case.assert_credential_header(call);
        assert_eq!(call.header("x-title"), Some("geode-e2e"), "{call:?}");
        assert_eq!(call.body["model"], format!("{}-model", case.adapter));
        if let Kind::Chat = case.kind {
            assert!(call.body.get("tool_choice").is_none(), "{}", call.body);
        }
    }
}

#[tokio::test]
async fn require_enforced_refuses_the_json_only_provider_before_any_request() {
    let server = serve(&JSON_ONLY).await;
    let sb = sandbox(&table(&JSON_ONLY, &server, ""));
    let out = sb
        .run_decision(JSON_ONLY.adapter, &["--require", "enforced"], DECIDE)
        .await;
    out.assert_exit(2)
        .assert_hides(SECRET)
        .assert_stderr_has(&["json-only", "json-mode"]);
    assert!(server.requests().is_empty(), "{:?}", server.requests());

    let router = serve(&ROUTER).await;
    let sb = sandbox(&table(&ROUTER, &router, ""));
    let out = sb
        .run_decision(ROUTER.adapter, &["--require", "enforced", "--json"], DECIDE)
        .await;
    out.assert_exit(0);
    assert_eq!(ledger(&out)["wire_mode"], "strict");
}

#[tokio::test]
async fn a_provider_is_the_default_and_a_fallback_like_any_adapter() {
    let router = serve(&ROUTER).await;
    // The primary's server answers 500 on every call: the chain moves on to the router.
    let broken = FakeServer::start(
        Kind::Chat,
        Script::always(Reply::Status {
            status: 500,
            body: Value::Null,
            retry_after: None,
        }),
    )
    .await
    .unwrap();
    let config = format!(
        "default_adapter = \"json-only\"\nfallback = [\"json-only\", \"router\"]\n{}{}",
        table(&JSON_ONLY, &broken, ""),
        table(&ROUTER, &router, "")
    );
    let sb = sandbox(&config);
    let schema = support::decision_schema_path();
    let out = sb
        .geode(&["run", "--schema", &schema, "--json", DECIDE], "")
        .await;
    out.assert_exit(0).assert_hides(SECRET);
    assert_eq!(out.json()["answer"], good_answer(), "{}", out.dump());
    assert!(
        !model_calls(&broken).is_empty(),
        "the default was tried first"
    );
    assert_eq!(model_calls(&router).len(), 1, "then the fallback served");
}

#[tokio::test]
async fn geode_adapters_lists_the_providers_with_modes_guarantee_and_whether_configured() {
    let server = serve(&ROUTER).await;
    let mut config = table(&ROUTER, &server, "");
    config.push_str(&table(&MESSAGES, &server, ""));
    config.push_str(&format!(
        "[providers.keyless]\nwire = \"chat\"\nbase_url = \"{}/v1\"\nmodel = \"m\"\n",
        server.base_url()
    ));
    let mut sb = Sandbox::new();
    sb.var("ROUTER_KEY", SECRET);
    sb.config(&config);
    let out = sb.geode(&["adapters", "--json"], "").await;
    out.assert_exit(0).assert_hides(SECRET);
    let rows: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name} listed: {}", out.stdout))
            .clone()
    };
    assert_eq!(rows.len(), geode::llm::registry::ADAPTERS.len() + 3);
    let router = row("router");
    assert_eq!(
        (
            &router["modes"],
            &router["guarantee"],
            &router["configured"]
        ),
        (&"strict".into(), &"enforced".into(), &true.into())
    );
    assert_eq!(router["credentials"], "`ROUTER_KEY`");
    let messages = row("claude-proxy");
    assert_eq!(messages["modes"], "strict / tool / prompt");
    assert_eq!(messages["configured"], false, "PROXY_KEY is not set");
    let keyless = row("keyless");
    assert_eq!(keyless["modes"], "strict / hint / json-mode (probed)");
    assert_eq!(keyless["configured"], true);

    let text = sb.geode(&["adapters"], "").await;
    text.assert_exit(0);
    assert!(
        text.stdout
            .lines()
            .any(|l| l.starts_with("router ") && l.contains("enforced")),
        "{}",
        text.stdout
    );
}

#[tokio::test]
async fn a_bad_provider_table_is_a_usage_error_naming_the_key_and_never_the_secret() {
    let ok =
        "[providers.p]\nwire = \"chat\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n";
    for (config, needle) in [
        (format!("{ok}api_key = \"{SECRET}\"\n"), "api_key"),
        (ok.replace("\"chat\"", "\"grpc\""), "grpc"),
        (format!("{ok}schema = \"always\"\n"), "always"),
        (format!("{ok}key_env = \"{SECRET}\"\n"), "key_env"),
        (
            format!("{ok}headers = {{ Authorization = \"Bearer {SECRET}\" }}\n"),
            "key_env",
        ),
        (
            ok.replace("http://127.0.0.1:9/v1", &format!("https://u:{SECRET}@h/v1")),
            "base_url",
        ),
        (
            ok.replace("\"chat\"", "\"messages\"") + "schema = \"prompt\"\n",
            "schema",
        ),
        (ok.replace("providers.p", "providers.glm-payg"), "built-in"),
    ] {
        let sb = Sandbox::new();
        sb.config(&config);
        for args in [&["adapters"][..], &["run", "--adapter", "p", DECIDE]] {
            let out = sb.geode(args, "").await;
            out.assert_exit(2)
                .assert_hides(SECRET)
                .assert_stderr_has(&["geode.toml", needle]);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_paces_each_provider_by_its_name_and_waits_out_its_rate_limit() {
    // The router answers 429 past the transport's three retries; the batch's pacer for
    // `router` holds its tasks for retry-after and tries again. The JSON-only provider has a
    // pacer of its own, and the summary counts each provider under its configured name.
    let script = Script::new((0..4).map(|_| Reply::rate_limited(1)))
        .then_default(Reply::Json(good_answer()));
    let router = FakeServer::builder(Kind::Chat)
        .script(script)
        .schema_support(SchemaSupport::Enforce)
        .start()
        .await
        .unwrap();
    let json_only = serve(&JSON_ONLY).await;
    let sb = sandbox(&format!(
        "{}{}",
        table(&ROUTER, &router, ""),
        table(&JSON_ONLY, &json_only, "")
    ));
    let lines: String = (0..6)
        .map(|i| {
            let adapter = if i % 2 == 0 { "router" } else { "json-only" };
            serde_json::json!({"task_id": format!("t{i}"), "prompt": DECIDE, "adapter": adapter})
                .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(sb.cwd.path().join("in.jsonl"), lines).unwrap();
    let schema = support::decision_schema_path();
    let args = [
        "batch",
        "--schema",
        &schema,
        "--input",
        "in.jsonl",
        "--output",
        "out.jsonl",
        "--summary-json",
        "summary.json",
        "--concurrency",
        "2",
        "--rpm",
        "600",
    ];
    let out = sb.geode(&args, "").await;
    out.assert_exit(0).assert_hides(SECRET);
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(sb.cwd.path().join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["valid"], 6, "{}", out.dump());
    assert_eq!(summary["adapters"]["router"]["tasks"], 3, "{summary}");
    assert_eq!(summary["adapters"]["json-only"]["tasks"], 3, "{summary}");
    assert_eq!(
        model_calls(&router).len(),
        4 + 3,
        "the 429s, then each task once"
    );
    assert_eq!(model_calls(&json_only).len(), 3);
    for file in ["out.jsonl", "summary.json"] {
        let text = std::fs::read_to_string(sb.cwd.path().join(file)).unwrap();
        assert!(!text.contains(SECRET), "{file} shows the key");
    }
}
