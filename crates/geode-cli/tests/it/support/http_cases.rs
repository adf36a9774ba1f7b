//! The six HTTP adapters as the end-to-end tests see them: which fake serves each, where its
//! base URL and credential go, and where it puts the schema on the wire.

use super::{SECRET, Sandbox, bad_enum_answer, decision_schema};
use geode_fakes::{FakeServer, Kind, Reply, Script};
use serde_json::Value;

/// Where an adapter puts the schema on the wire.
#[derive(Clone, Copy, Debug)]
pub enum Placement {
    /// Responses `text.format` json_schema, strict.
    ResponsesFormat,
    /// Messages `output_config.format` json_schema.
    MessagesFormat,
    /// Chat `response_format: json_object` plus the schema in the system message.
    ChatJsonObject,
    /// Chat `response_format: json_schema`, strict, the schema not in the prompt (an
    /// `openai-compatible` server whose probe found the schema enforced).
    ChatJsonSchema,
}

/// How a missing credential shows up.
#[derive(Clone, Copy, Debug)]
pub enum Credential {
    /// An environment variable holding a key.
    Key(&'static str),
    /// The codex `auth.json` under `CODEX_HOME`.
    CodexHome,
    /// `CLAUDE_CODE_OAUTH_TOKEN` (or the Claude credentials file).
    ClaudeToken,
    /// A key in this variable that the server may do without; what is required is the base
    /// URL (`openai-compatible` has no default server).
    OptionalKey(&'static str),
}

#[derive(Clone, Copy, Debug)]
pub struct Case {
    pub adapter: &'static str,
    pub kind: Kind,
    pub base_env: &'static str,
    pub credential: Credential,
    pub mode: &'static str,
    pub placement: Placement,
    /// Whether the bad first answer is prose (else JSON with a wrong enum value).
    pub prose_first: bool,
}

pub const OPENAI_PAYG: Case = Case {
    adapter: "openai-payg",
    kind: Kind::Responses,
    base_env: "GEODE_OPENAI_BASE_URL",
    credential: Credential::Key("OPENAI_API_KEY"),
    mode: "strict",
    placement: Placement::ResponsesFormat,
    prose_first: true,
};
pub const CODEX_OAUTH: Case = Case {
    adapter: "codex-oauth",
    kind: Kind::ChatGpt,
    base_env: "GEODE_CODEX_BASE_URL",
    credential: Credential::CodexHome,
    mode: "strict",
    placement: Placement::ResponsesFormat,
    prose_first: false,
};
pub const ANTHROPIC_PAYG: Case = Case {
    adapter: "anthropic-payg",
    kind: Kind::Messages,
    base_env: "GEODE_ANTHROPIC_BASE_URL",
    credential: Credential::Key("ANTHROPIC_API_KEY"),
    mode: "strict",
    placement: Placement::MessagesFormat,
    prose_first: true,
};
pub const ANTHROPIC_OAUTH: Case = Case {
    adapter: "anthropic-oauth",
    kind: Kind::Messages,
    base_env: "GEODE_ANTHROPIC_BASE_URL",
    credential: Credential::ClaudeToken,
    mode: "strict",
    placement: Placement::MessagesFormat,
    prose_first: false,
};
pub const GLM_PAYG: Case = Case {
    adapter: "glm-payg",
    kind: Kind::Chat,
    base_env: "GEODE_GLM_BASE_URL",
    credential: Credential::Key("ZAI_API_KEY"),
    mode: "json-mode",
    placement: Placement::ChatJsonObject,
    prose_first: true,
};
pub const OPENAI_COMPATIBLE: Case = Case {
    adapter: "openai-compatible",
    kind: Kind::Chat,
    base_env: "GEODE_OPENAI_COMPAT_BASE_URL",
    credential: Credential::OptionalKey("GEODE_OPENAI_COMPAT_API_KEY"),
    mode: "strict",
    placement: Placement::ChatJsonSchema,
    prose_first: true,
};
pub const GLM_CODING_PLAN: Case = Case {
    adapter: "glm-coding-plan",
    kind: Kind::Chat,
    base_env: "GEODE_GLM_CODING_BASE_URL",
    credential: Credential::Key("ZAI_CODING_PLAN_KEY"),
    mode: "json-mode",
    placement: Placement::ChatJsonObject,
    prose_first: false,
};

impl Case {
    /// The bad first answer.
    pub fn bad(&self) -> Reply {
        if self.prose_first {
            Reply::text("I would accept this change, the tests look fine.")
        } else {
            Reply::Json(bad_enum_answer())
        }
    }

    /// A sandbox pointed at `server`, with the adapter's credential set.
    pub fn sandbox(&self, server: &FakeServer) -> Sandbox {
        let mut sb = self.sandbox_without_credential(server);
        sb.var(self.base_env, server.base_url());
        match self.credential {
            Credential::Key(var) | Credential::OptionalKey(var) => {
                sb.var(var, SECRET);
            }
            Credential::CodexHome => {
                let codex_home = sb.home().join("codex-home");
                geode_fakes::chatgpt::write_codex_auth(&codex_home, false).unwrap();
                sb.var("CODEX_HOME", codex_home.display().to_string());
            }
            Credential::ClaudeToken => {
                sb.var("CLAUDE_CODE_OAUTH_TOKEN", SECRET);
            }
        }
        sb
    }

    /// A sandbox without the credential: for [`Credential::OptionalKey`], without the base URL.
    pub fn sandbox_without_credential(&self, server: &FakeServer) -> Sandbox {
        let mut sb = Sandbox::new();
        if !matches!(self.credential, Credential::OptionalKey(_)) {
            sb.var(self.base_env, server.base_url());
        }
        if matches!(self.credential, Credential::CodexHome) {
            // A refresh, if any, goes to the fake as well.
            sb.var("GEODE_CODEX_AUTH_URL", server.base_url());
        }
        sb
    }

    /// Asserts that a model call carried the credential in the adapter's header (masked by the
    /// fake's recorder).
    pub fn assert_credential_header(&self, call: &geode_fakes::RecordedRequest) {
        match (self.kind, self.credential) {
            (Kind::Messages, Credential::Key(_)) => {
                assert_eq!(call.header("x-api-key"), Some("***"), "{call:?}");
                assert!(call.header("authorization").is_none(), "{call:?}");
            }
            (Kind::Messages, _) => {
                assert_eq!(call.header("authorization"), Some("Bearer ***"), "{call:?}");
                assert!(
                    call.header("anthropic-beta")
                        .is_some_and(|b| b.contains("oauth-2025-04-20")),
                    "{call:?}"
                );
            }
            (Kind::ChatGpt, _) => {
                assert_eq!(call.header("authorization"), Some("Bearer ***"), "{call:?}");
                assert_eq!(
                    call.header("chatgpt-account-id"),
                    Some(geode_fakes::chatgpt::DEFAULT_ACCOUNT_ID),
                    "{call:?}"
                );
            }
            _ => assert_eq!(call.header("authorization"), Some("Bearer ***"), "{call:?}"),
        }
    }

    /// Asserts that a recorded model-call body carries the Decision schema where it belongs.
    pub fn assert_schema_on_wire(&self, body: &Value) {
        let schema = decision_schema();
        match self.placement {
            Placement::ResponsesFormat => {
                let format = &body["text"]["format"];
                assert_eq!(format["type"], "json_schema", "{body}");
                assert_eq!(format["strict"], true, "{body}");
                assert_eq!(format["schema"], schema, "{body}");
            }
            Placement::MessagesFormat => {
                let format = &body["output_config"]["format"];
                assert_eq!(format["type"], "json_schema", "{body}");
                assert_eq!(format["schema"], schema, "{body}");
                assert!(body.get("tool_choice").is_none(), "no forced tool: {body}");
            }
            Placement::ChatJsonSchema => {
                let format = &body["response_format"];
                assert_eq!(format["type"], "json_schema", "{body}");
                assert_eq!(format["json_schema"]["strict"], true, "{body}");
                assert_eq!(format["json_schema"]["schema"], schema, "{body}");
                let system = body["messages"][0].to_string();
                assert!(!system.contains("additionalProperties"), "{system}");
            }
            Placement::ChatJsonObject => {
                assert_eq!(body["response_format"]["type"], "json_object", "{body}");
                let messages = body["messages"].as_array().unwrap();
                let system = messages
                    .iter()
                    .find(|m| m["role"] == "system")
                    .unwrap_or_else(|| panic!("no system message: {body}"));
                let text = system["content"].to_string();
                for needle in [
                    "decision",
                    "reason",
                    "accept",
                    "reject",
                    "additionalProperties",
                ] {
                    assert!(text.contains(needle), "schema text lacks {needle}: {text}");
                }
            }
        }
    }
}

pub async fn fake(case: &Case, script: Script) -> FakeServer {
    FakeServer::start(case.kind, script).await.unwrap()
}

impl Case {
    /// A fake playing `script`, and a sandbox pointed at it with the credential set.
    pub async fn serve(&self, script: Script) -> (FakeServer, Sandbox) {
        let server = fake(self, script).await;
        let sb = self.sandbox(&server);
        (server, sb)
    }
}

/// Every HTTP adapter.
pub const ALL: [Case; 6] = [
    OPENAI_PAYG,
    CODEX_OAUTH,
    ANTHROPIC_PAYG,
    ANTHROPIC_OAUTH,
    GLM_PAYG,
    GLM_CODING_PLAN,
];

/// Instantiates `$tests!(module, CASE)` once per HTTP adapter (the cases of [`ALL`]), so a
/// test file's per-adapter modules follow one list.
#[allow(unused_macros)] // not every test crate has per-adapter modules
macro_rules! for_each_http_case {
    ($tests:ident) => {
        $tests!(openai_payg, OPENAI_PAYG);
        $tests!(codex_oauth, CODEX_OAUTH);
        $tests!(anthropic_payg, ANTHROPIC_PAYG);
        $tests!(anthropic_oauth, ANTHROPIC_OAUTH);
        $tests!(glm_payg, GLM_PAYG);
        $tests!(glm_coding_plan, GLM_CODING_PLAN);
        $tests!(openai_compatible, OPENAI_COMPATIBLE);
    };
}
#[allow(unused_imports)]
pub(crate) use for_each_http_case;
