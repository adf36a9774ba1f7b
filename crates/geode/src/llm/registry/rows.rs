//! The rows: one [`AdapterSpec`] per adapter, in GEODE's registration order, plus
//! `local`. A new HTTP provider on an existing wire family is one more row here (and, when it
//! needs a new model family, a [`Family`] variant).

use super::{
    AdapterSpec, Auth, Billing, CliSpec, CliTool, Endpoint, Family, Inputs, KeyHeader,
    ModelPattern, SchemaRoute, SdkBase, WireFamily,
};
use crate::llm::wire::chat::ChatTools;
use crate::llm::wire::responses::Backend;
use crate::media::Accepts;
use std::time::Duration;

const OPENAI_LIMITS: &str =
    "strict: 5,000 properties, 10 levels, 1,000 enum values, 120,000 characters";
const ANTHROPIC_LIMITS: &str = "no recursion; unsupported keywords checked locally";

/// OpenAI model names: `gpt-*`, `*-codex`, `*-codex-*`, `o1`, `o1-*`, `o3*`, `o4*`.
const OPENAI_MODELS: &[ModelPattern] = &[
    ModelPattern::Prefix("gpt-"),
    ModelPattern::Suffix("-codex"),
    ModelPattern::Contains("-codex-"),
    ModelPattern::Exact("o1"),
    ModelPattern::Prefix("o1-"),
    ModelPattern::Prefix("o3"),
    ModelPattern::Prefix("o4"),
];
/// OpenAI reasoning models: the gpt-5 family, the o-series, `codex-*`.
const OPENAI_REASONING: &[ModelPattern] = &[
    ModelPattern::Prefix("gpt-5"),
    ModelPattern::PrefixDigit("o"),
    ModelPattern::Prefix("codex-"),
];
const ANTHROPIC_MODELS: &[ModelPattern] = &[ModelPattern::Prefix("claude-")];

/// GLM's text models take text only; its vision models (`glm-4.5v`, `glm-4.6v`,
/// `glm-4v-plus`, ...: a `v` at the end of the version) take images.
const GLM_INPUTS: Inputs = Inputs {
    all: Accepts::TEXT,
    by_model: &[
        (ModelPattern::Suffix("v"), Accepts::GLM_VISION),
        (ModelPattern::Contains("v-"), Accepts::GLM_VISION),
    ],
};

/// Both Anthropic adapters: `POST {base}/v1/messages`; `ANTHROPIC_BASE_URL` is the SDK's
/// variable and means the same base.
const ANTHROPIC_ENDPOINT: Endpoint = Endpoint {
    path: "/v1/messages",
    default_base: "https://api.anthropic.com",
    base_env: "GEODE_ANTHROPIC_BASE_URL",
    sdk_base: Some(SdkBase {
        env: "ANTHROPIC_BASE_URL",
        path: "/v1/messages",
    }),
};

/// `anthropic-payg`; `anthropic-oauth` is this row with another login.
const ANTHROPIC_PAYG: AdapterSpec = AdapterSpec {
    name: "anthropic-payg",
    family: Family::Anthropic,
    billing: Billing::Payg,
    wire_family: WireFamily::Messages,
    wire: "Messages API `POST {base}/v1/messages`",
    schema_on_wire: "`output_config.format` json_schema when it fits; else a forced output tool; else the system prompt",
    schema_route: SchemaRoute::AnthropicLadder,
    framework_tools: true,
    tools_with_schema: true,
    streaming: true,
    limits: ANTHROPIC_LIMITS,
    auth: Auth::ApiKey {
        env: "ANTHROPIC_API_KEY",
        header: KeyHeader::XApiKey,
    },
    endpoint: Some(ANTHROPIC_ENDPOINT),
    headers: &[],
    default_model: "claude-sonnet-4-6",
    models: ANTHROPIC_MODELS,
    reasoning_models: &[],
    inputs: Inputs::all(Accepts::ANTHROPIC),
};

/// `openai-payg`; `codex-oauth` is this row on the ChatGPT backend with the codex login.
const OPENAI_PAYG: AdapterSpec = AdapterSpec {
    name: "openai-payg",
    family: Family::OpenAi,
    billing: Billing::Payg,
    wire_family: WireFamily::Responses(Backend::Platform),
    wire: "Responses API `POST {base}/v1/responses`",
    schema_on_wire: "`text.format` json_schema, `strict` from the strict check",
    schema_route: SchemaRoute::OpenAiStrict,
    framework_tools: true,
    tools_with_schema: true,
    streaming: true,
    limits: OPENAI_LIMITS,
    auth: Auth::ApiKey {
        env: "OPENAI_API_KEY",
        header: KeyHeader::Bearer,
    },
    endpoint: Some(Endpoint {
        path: "/v1/responses",
        default_base: "https://api.openai.com",
        base_env: "GEODE_OPENAI_BASE_URL",
        sdk_base: Some(SdkBase {
            env: "OPENAI_BASE_URL",
            path: "/responses",
        }),
    }),
    headers: &[],
    default_model: "gpt-5.5",
    models: OPENAI_MODELS,
    reasoning_models: OPENAI_REASONING,
    inputs: Inputs::all(Accepts::OPENAI_RESPONSES),
};

/// A GLM row: the two differ only in name, billing, key and base URL.
const fn glm(
    name: &'static str,
    billing: Billing,
    key_env: &'static str,
    default_base: &'static str,
    base_env: &'static str,
) -> AdapterSpec {
    AdapterSpec {
        name,
        family: Family::Glm,
        billing,
        wire_family: WireFamily::Chat(ChatTools::GLM),
        wire: "Chat Completions `POST {base}/chat/completions`",
        schema_on_wire: "`response_format: json_object` + the schema in the system prompt",
        schema_route: SchemaRoute::JsonObject,
        framework_tools: true,
        tools_with_schema: true,
        streaming: true,
        limits: "JSON mode only; `tool_choice` auto only",
        auth: Auth::ApiKey {
            env: key_env,
            header: KeyHeader::Bearer,
        },
        endpoint: Some(Endpoint {
            path: "/chat/completions",
            default_base,
            base_env,
            sdk_base: None,
        }),
        headers: &[],
        default_model: "glm-5.2",
        models: &[ModelPattern::Prefix("glm-")],
        reasoning_models: &[],
        inputs: GLM_INPUTS,
    }
}

/// `claude-cli`: the `claude -p` subprocess ([`crate::llm::adapters::claude_cli`]).
pub const CLAUDE_CLI: AdapterSpec = AdapterSpec {
    name: "claude-cli",
    family: Family::Anthropic,
    billing: Billing::Cli,
    wire_family: WireFamily::Cli(CliSpec {
        tool: CliTool::Claude,
        pass_env: &[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_CUSTOM_HEADERS",
            "ANTHROPIC_BETAS",
            "ANTHROPIC_MODEL",
            "ANTHROPIC_DEFAULT_HAIKU_MODEL",
            "ANTHROPIC_SMALL_FAST_MODEL",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "CLAUDE_CONFIG_DIR",
            "API_TIMEOUT_MS",
            "CLAUDE_CODE_MAX_RETRIES",
            "MAX_STRUCTURED_OUTPUT_RETRIES",
        ],
        timeout: Duration::from_secs(1800),
    }),
    wire: "`claude -p --output-format stream-json` subprocess",
    schema_on_wire: "`--json-schema <inline JSON>`; `structured_output` read and re-validated",
    schema_route: SchemaRoute::ClaudeCliTool,
    framework_tools: false,
    tools_with_schema: false,
    streaming: false,
    limits: "argument ≤ 128 KiB",
    auth: Auth::Binary {
        env: "GEODE_CLAUDE_BIN",
        name: "claude",
    },
    endpoint: None,
    headers: &[],
    default_model: "",
    models: ANTHROPIC_MODELS,
    reasoning_models: &[],
    inputs: Inputs::all(Accepts::CLAUDE_CLI),
};

/// `codex-cli`: the `codex exec` subprocess ([`crate::llm::adapters::codex_cli`]).
pub const CODEX_CLI: AdapterSpec = AdapterSpec {
    name: "codex-cli",
    family: Family::OpenAi,
    wire_family: WireFamily::Cli(CliSpec {
        tool: CliTool::Codex,
        // Its home, credentials (with the built-in `openai` provider's organization and
        // project headers) and CA settings.
        pass_env: &[
            "CODEX_HOME",
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "OPENAI_ORGANIZATION",
            "OPENAI_PROJECT",
            "CODEX_CA_CERTIFICATE",
        ],
        timeout: Duration::from_secs(600),
    }),
    wire: "`codex exec --json` subprocess",
    schema_on_wire: "temp file (0600) + `--output-schema FILE`, removed on every path; a schema OpenAI strict cannot take: in the prompt",
    schema_route: SchemaRoute::CodexOutputSchema,
    limits: OPENAI_LIMITS,
    auth: Auth::Binary {
        env: "GEODE_CODEX_BIN",
        name: "codex",
    },
    models: OPENAI_MODELS,
    reasoning_models: OPENAI_REASONING,
    inputs: Inputs::all(Accepts::CHATGPT),
    // A CLI row's billing and capabilities: no framework tools, no streaming, no endpoint.
    ..CLAUDE_CLI
};

/// Every adapter, in GEODE's registration order, plus `local`.
pub const ADAPTERS: &[AdapterSpec] = &[
    ANTHROPIC_PAYG,
    AdapterSpec {
        name: "anthropic-oauth",
        billing: Billing::Subscription,
        wire: "Messages API `POST {base}/v1/messages`, bearer + `anthropic-beta: oauth-2025-04-20`",
        schema_on_wire: "same as anthropic-payg",
        auth: Auth::ClaudeLogin {
            token_env: "CLAUDE_CODE_OAUTH_TOKEN",
            dir_env: "CLAUDE_CONFIG_DIR",
            path: ".claude/.credentials.json",
        },
        ..ANTHROPIC_PAYG
    },
    CLAUDE_CLI,
    OPENAI_PAYG,
    AdapterSpec {
        name: "codex-oauth",
        billing: Billing::Subscription,
        wire_family: WireFamily::Responses(Backend::Codex),
        wire: "ChatGPT backend `{base}/backend-api/codex/responses`, SSE, `store:false`",
        inputs: Inputs::all(Accepts::CHATGPT),
        auth: Auth::CodexLogin {
            dir_env: "CODEX_HOME",
            path: ".codex/auth.json",
            token_url_env: "GEODE_CODEX_AUTH_URL",
            default_token_url: "https://auth.openai.com",
        },
        endpoint: Some(Endpoint {
            path: "/backend-api/codex/responses",
            default_base: "https://chatgpt.com",
            base_env: "GEODE_CODEX_BASE_URL",
            sdk_base: None,
        }),
        headers: &[],
        ..OPENAI_PAYG
    },
    CODEX_CLI,
    glm(
        "glm-payg",
        Billing::Payg,
        "ZAI_API_KEY",
        "https://api.z.ai/api/paas/v4",
        "GEODE_GLM_BASE_URL",
    ),
    glm(
        "glm-coding-plan",
        Billing::Subscription,
        "ZAI_CODING_PLAN_KEY",
        "https://api.z.ai/api/coding/paas/v4",
        "GEODE_GLM_CODING_BASE_URL",
    ),
    AdapterSpec {
        name: "local",
        family: Family::Local,
        billing: Billing::Local,
        wire_family: WireFamily::Local,
        wire: "llama.cpp on a GGUF file (in-process in Rust; the `geode-engine` process for the CLI)",
        schema_on_wire: "llguidance constrained decoding (schema, choice, regex, grammar, tool calls)",
        schema_route: SchemaRoute::Constrained,
        framework_tools: true,
        tools_with_schema: true,
        streaming: false,
        limits: "keywords llguidance cannot compile fail closed",
        auth: Auth::ModelFile,
        endpoint: None,
        headers: &[],
        default_model: "SmolLM2-135M-Instruct",
        models: &[],
        reasoning_models: &[],
        inputs: Inputs::TEXT,
    },
    AdapterSpec {
        name: "openai-compatible",
        family: Family::Compatible,
        billing: Billing::Payg,
        wire_family: WireFamily::Chat(ChatTools::OPENAI),
        wire: "Chat Completions `POST {base}/chat/completions` (llama-server, Ollama, vLLM, LM Studio)",
        schema_on_wire: "`response_format` json_schema (`strict: true`); a probe per server and model decides: enforced → strict, ignored → hint + the schema in the prompt, refused → `json_object` + the schema in the prompt",
        schema_route: SchemaRoute::Probed,
        framework_tools: true,
        tools_with_schema: true,
        streaming: true,
        limits: "what the server enforces; every answer is validated",
        auth: Auth::OptionalApiKey {
            env: "GEODE_OPENAI_COMPAT_API_KEY",
            header: KeyHeader::Bearer,
        },
        endpoint: Some(Endpoint {
            path: "/chat/completions",
            default_base: "",
            base_env: "GEODE_OPENAI_COMPAT_BASE_URL",
            sdk_base: None,
        }),
        headers: &[],
        default_model: "default",
        models: &[],
        reasoning_models: &[],
        inputs: Inputs::TEXT,
    },
];
