//! `geode mcp` and `geode run --contract` through the real binaries, against `geode-fakes`
//! providers on 127.0.0.1: the contracts of a `geode.toml` (a file schema, an inline array
//! root, a route that cannot meet its `require`, an answer that stays invalid), raw JSON-RPC
//! over stdio for what a client library would not send (malformed lines, an older protocol
//! version, huge arguments), the HTTP transport's inbound keys, and `geode run --contract`.
//! The official MCP SDK drives the same server in `e2e_mcp_sdk.rs`.

use crate::support::{SECRET, Sandbox, bad_enum_answer, decision_schema, model_calls};
use geode_fakes::{FakeServer, Kind, Reply, Script};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

/// The fakes the contracts run on: `openai` answers every schema (Responses, strict), `glm`
/// always a Decision with a wrong enum value (JSON mode), `json_only` a Chat provider that only
/// takes `json_object` (best effort), `slow` one that starts an answer and never ends it.
pub(crate) struct Fakes {
    pub(crate) openai: FakeServer,
    pub(crate) glm: FakeServer,
    pub(crate) json_only: FakeServer,
    pub(crate) slow: FakeServer,
}

impl Fakes {
    pub(crate) async fn start() -> Fakes {
        Fakes {
            openai: FakeServer::start(Kind::Responses, Script::always(Reply::Auto))
                .await
                .unwrap(),
            glm: FakeServer::start(Kind::Chat, Script::always(Reply::Json(bad_enum_answer())))
                .await
                .unwrap(),
            json_only: FakeServer::start(Kind::Chat, Script::always(Reply::Auto))
                .await
                .unwrap(),
            slow: FakeServer::start(Kind::Chat, Script::always(Reply::HangMidBody))
                .await
                .unwrap(),
        }
    }
}

/// The contracts of every test here, on `fakes` (and `local_review` on the local model).
pub(crate) fn contracts_toml(fakes: &Fakes) -> String {
    let provider = |name: &str, server: &FakeServer, schema: &str| {
        format!(
            "[providers.{name}]\nwire = \"chat\"\nbase_url = \"{}/v1\"\nkey_env = \"PROVIDER_KEY\"\nmodel = \"m\"\nschema = \"{schema}\"\n\n",
            server.base_url()
        )
    };
    provider("jsononly", &fakes.json_only, "json_object")
        + &provider("slowpoke", &fakes.slow, "json_schema")
        + r#"[contracts.review]
description = "Decide whether to merge a pull request"
schema = "schemas/decision.schema.json"
prompt = "Decide whether to merge this pull request (risk {risk} of 5):\n{diff}"
adapter = "openai-payg"
require = "enforced"

[contracts.review.inputs]
diff = { type = "string", description = "the unified diff" }
risk = "integer"

[contracts.sloppy]
schema = "schemas/decision.schema.json"
prompt = "Decide on {diff}"
adapter = "glm-payg"

[contracts.strict_json]
schema = "schemas/decision.schema.json"
prompt = "Decide on {diff}"
adapter = "jsononly"
require = "enforced"

[contracts.tags]
description = "Tags for a text"
prompt = "Tags for: {text}"
adapter = "openai-payg"

[contracts.tags.schema]
type = "array"
items = { type = "string" }

[contracts.local_review]
schema = "schemas/decision.schema.json"
prompt = "Decide whether to merge this pull request: {diff}"
adapter = "local"
require = "enforced"
max_tokens = 200

[contracts.slow]
schema = "schemas/decision.schema.json"
prompt = "Decide on {diff}"
adapter = "slowpoke"
"#
}

/// `sb` pointed at `fakes`, holding the contracts and their schema file.
pub(crate) fn configure(sb: &mut Sandbox, fakes: &Fakes) {
    sb.var("GEODE_OPENAI_BASE_URL", fakes.openai.base_url())
        .var("OPENAI_API_KEY", SECRET)
        .var("GEODE_GLM_BASE_URL", fakes.glm.base_url())
        .var("ZAI_API_KEY", SECRET)
        .var("PROVIDER_KEY", SECRET);
    let schemas = sb.cwd.path().join("schemas");
    std::fs::create_dir_all(&schemas).unwrap();
    std::fs::write(
        schemas.join("decision.schema.json"),
        decision_schema().to_string(),
    )
    .unwrap();
    sb.config(&contracts_toml(fakes));
}

/// A running `geode mcp --listen 127.0.0.1:0`: its URL and everything it wrote on stderr.
pub(crate) struct McpHttp {
    child: Child,
    pub(crate) url: String,
    stderr: Arc<Mutex<String>>,
}

impl McpHttp {
    pub(crate) fn start(sb: &Sandbox, extra: &[&str]) -> McpHttp {
        let mut args = vec!["mcp", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let mut child = sb.spawn(&args);
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let pipe = child.stderr.take().unwrap();
        let log = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("geode mcp: listening on ") {
                    let _ = tx.send(url.to_owned());
                }
                log.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("geode mcp did not start: {}", stderr.lock().unwrap()));
        McpHttp { child, url, stderr }
    }

    pub(crate) fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for McpHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `geode mcp` on stdio, spoken to line by line.
struct Stdio_ {
    child: Child,
    stdin: std::process::ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Stdio_ {
    fn start(sb: &Sandbox) -> Stdio_ {
        let mut child = sb
            .command(&["mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Stdio_ {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, message: &str) {
        self.stdin.write_all(message.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The response to request `id` (other messages skipped), within 60 s.
    fn response(&mut self, id: u64) -> Value {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no response to request {id}"));
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        self.response(id)
    }

    /// `initialize` at `version`, then `notifications/initialized`.
    fn initialize(&mut self, version: &str) -> Value {
        let answer = self.request(
            0,
            "initialize",
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}),
        );
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        answer
    }

    fn call(&mut self, id: u64, tool: &str, args: Value) -> Value {
        self.request(id, "tools/call", json!({"name": tool, "arguments": args}))
    }

    /// Closes stdin and waits for the exit (at most 30 s); everything it wrote on stderr.
    fn finish(mut self) -> (Option<i32>, String) {
        drop(self.stdin);
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let code = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status.code();
            }
            if std::time::Instant::now() > deadline {
                let _ = self.child.kill();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut err);
        }
        (code, err)
    }
}

async fn sandbox() -> (Fakes, Sandbox) {
    let fakes = Fakes::start().await;
    let mut sb = Sandbox::new();
    configure(&mut sb, &fakes);
    (fakes, sb)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_stdio_messages_get_json_rpc_errors_and_the_server_goes_on() {
    let (fakes, sb) = sandbox().await;
    let mut s = Stdio_::start(&sb);
    let init = s.initialize("2025-06-18");
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    // A line that is not JSON, and one that is not JSON-RPC.
    s.send("this is not json {");
    s.send(r#"{"id": 99, "what": "no method"}"#);
    // Before 2025-11-25, arguments that break the inputSchema are a JSON-RPC error.
    let bad = s.call(1, "review", json!({"diff": "x", "risk": "sk-e2e-high"}));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("input \"risk\" must be an integer"),
        "{bad}"
    );
    let unknown = s.call(2, "nope", json!({}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let missing = s.request(3, "tools/call", json!({"arguments": {}}));
    assert!(missing.get("error").is_some(), "{missing}");
    // Arguments past the bound are refused before any request.
    let huge = "x".repeat(9 << 20);
    let big = s.call(4, "review", json!({"diff": huge, "risk": 1}));
    assert!(
        big.to_string().contains("bytes one call may take"),
        "{}",
        &big.to_string()[..200.min(big.to_string().len())]
    );
    assert!(model_calls(&fakes.openai).is_empty());
    // Still serving: a valid call.
    let ok = s.call(5, "review", json!({"diff": "+fix", "risk": 2}));
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    assert_eq!(
        ok["result"]["structuredContent"]["decision"]
            .as_str()
            .map(|d| ["accept", "reject"].contains(&d)),
        Some(true),
        "{ok}"
    );
    assert_eq!(model_calls(&fakes.openai).len(), 1);
    let (code, stderr) = s.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains(SECRET) && !ok.to_string().contains(SECRET));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contract_whose_route_cannot_meet_require_makes_no_upstream_request() {
    let (fakes, sb) = sandbox().await;
    let mut s = Stdio_::start(&sb);
    s.initialize("2025-11-25");
    let refused = s.call(1, "strict_json", json!({"diff": "x"}));
    let result = &refused["result"];
    assert_eq!(result["isError"], true, "{refused}");
    assert!(result.get("structuredContent").is_none(), "{refused}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("refused before any request"),
        "{refused}"
    );
    assert!(model_calls(&fakes.json_only).is_empty());
    s.finish();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_transport_wants_an_inbound_key_and_never_shows_it() {
    const INBOUND: &str = "mcp-inbound-key-4b7d19e2";
    let (_fakes, mut sb) = sandbox().await;
    sb.var("GEODE_GATEWAY_KEYS", INBOUND);
    let server = McpHttp::start(&sb, &[]);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let post = |key: Option<&str>| {
        let mut req = reqwest::Client::new()
            .post(&server.url)
            .header("accept", "application/json, text/event-stream")
            .json(&init);
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        req.send()
    };
    assert_eq!(post(None).await.unwrap().status(), 401);
    assert_eq!(
        post(Some("not-the-key-at-all-0000"))
            .await
            .unwrap()
            .status(),
        401
    );
    let ok = post(Some(INBOUND)).await.unwrap();
    assert_eq!(ok.status(), 200);
    let body = ok.text().await.unwrap();
    assert!(
        body.contains("\"protocolVersion\":\"2025-11-25\""),
        "{body}"
    );
    assert!(!server.log().contains(INBOUND) && !server.log().contains(SECRET));
}

#[tokio::test]
async fn an_address_off_loopback_without_keys_is_refused() {
    let (_fakes, sb) = sandbox().await;
    let out = sb.geode(&["mcp", "--listen", "0.0.0.0:0"], "").await;
    out.assert_exit(2)
        .assert_stderr_has(&["refusing to listen on 0.0.0.0:0 without inbound keys"]);
}

#[tokio::test]
async fn a_bad_contract_stops_the_server_at_start_naming_its_key() {
    let sb = Sandbox::new();
    sb.config("[contracts.c]\nschema = \"../../etc/passwd\"\nprompt = \"p\"\n");
    let out = sb.geode(&["mcp"], "").await;
    out.assert_exit(2)
        .assert_stderr_has(&["[contracts.c] schema", "outside the directory"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn geode_run_runs_a_contract_by_name_with_typed_inputs() {
    let (fakes, sb) = sandbox().await;
    let out = sb
        .geode(
            &[
                "run",
                "--contract",
                "review",
                "--input",
                "diff=+fix",
                "--input",
                "risk=2",
            ],
            "",
        )
        .await;
    out.assert_exit(0)
        .assert_stderr_has(&["adapter=openai-payg", "full_validation=valid"])
        .assert_hides(SECRET);
    let calls = model_calls(&fakes.openai);
    assert_eq!(calls.len(), 1);
    assert!(
        calls[0].body.to_string().contains("risk 2 of 5):\\n+fix"),
        "{}",
        calls[0].body
    );
    sb.geode(
        &[
            "run",
            "--contract",
            "review",
            "--input",
            "diff=x",
            "--input",
            "risk=high",
        ],
        "",
    )
    .await
    .assert_exit(2)
    .assert_stderr_has(&["input \"risk\" must be a whole number"]);
    sb.geode(&["run", "--contract", "nope"], "")
        .await
        .assert_exit(2)
        .assert_stderr_has(&["no contract named \"nope\"", "review"]);
    sb.geode(
        &["run", "--contract", "strict_json", "--input", "diff=x"],
        "",
    )
    .await
    .assert_exit(2);
    assert!(model_calls(&fakes.json_only).is_empty());
    sb.geode(&["run", "--contract", "sloppy", "--input", "diff=x"], "")
        .await
        .assert_exit(1);
    // --require may raise the contract's requirement: glm's json-mode is then refused.
    sb.geode(
        &[
            "run",
            "--contract",
            "sloppy",
            "--input",
            "diff=x",
            "--require",
            "wired",
        ],
        "",
    )
    .await
    .assert_exit(2);
    assert_eq!(
        model_calls(&fakes.glm).len(),
        2,
        "only the first sloppy run called"
    );
}
