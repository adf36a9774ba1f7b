//! [`SchemaRoute`]: how `response_schema` goes on one adapter's wire. It is the one answer to
//! that question: the registry row holds it, routing (`--require`) and preflight read it before
//! any call, the adapter asks it for the call's [`WirePlan`] once and hands that plan to the
//! wire builder, and `geode schema check --adapter` shows the same plan. The provider subsets it
//! fits schemas into are data in [`crate::schema::subset`]; the routes name them.
//!
//! | route | rows | modes | subsets | limits refused before the call |
//! |---|---|---|---|---|
//! | `OpenAiStrict` | `openai-payg`, `codex-oauth`, `wire = "responses"` providers | `strict`, else `hint` | OpenAI strict | OpenAI strict |
//! | `CodexOutputSchema` | `codex-cli` | `cli-flag`, else `prompt` | OpenAI strict | OpenAI strict |
//! | `AnthropicLadder` | `anthropic-payg`, `anthropic-oauth`, `wire = "messages"` providers | `strict`, else `tool`, else `prompt` | Anthropic native, Anthropic tool | none documented |
//! | `ClaudeCliTool` | `claude-cli` | `cli-validated` | Anthropic tool | none |
//! | `JsonObject` | `glm-payg`, `glm-coding-plan`, `schema = "json_object"` providers | `json-mode` | JSON object | none |
//! | `Probed` | `openai-compatible`, `schema = "probe"` providers | the probe's verdict: `strict`, `hint` or `json-mode` | JSON object (when refused) | none |
//! | `DeclaredJsonSchema` | `schema = "json_schema"` Chat providers | `strict` | none | none |
//! | `Prompt` | `schema = "prompt"` providers | `prompt` | none | none |
//! | `Constrained` | `local` | `constrained` | none | none |

use crate::llm::request::AdapterCallRequest;
use crate::schema::ResponseSchema;
use crate::schema::preflight::{LimitViolation, Preflight};
use crate::schema::subset::{
    self, ANTHROPIC_NATIVE, ANTHROPIC_TOOL, JSON_OBJECT, OPENAI_STRICT, WirePlan, WireSubset,
};
use crate::vocab::StructuredOutputMode;

/// How `response_schema` goes on an adapter's wire (see the module's table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaRoute {
    /// OpenAI's `json_schema` format: `strict` when the copy fitted into strict mode passes the
    /// strict check, else the caller's schema as a `strict: false` hint.
    OpenAiStrict,
    /// `codex exec --output-schema`: codex sends the file as `strict: true` whatever it holds,
    /// and OpenAI answers a schema strict mode cannot take with 400 `invalid_json_schema`; such
    /// a schema goes in the prompt instead, and the worker's validation is the check.
    CodexOutputSchema,
    /// Anthropic: native `output_config.format` when the projected copy fits the subset (and
    /// the last turn is not a prefill), else a forced output tool (thinking off), else the
    /// prompt.
    AnthropicLadder,
    /// `claude -p --json-schema`: the CLI's `StructuredOutput` tool, which takes an object root
    /// and is validated by the CLI.
    ClaudeCliTool,
    /// `response_format: json_object` and the schema in the system prompt; JSON mode answers an
    /// object, so a root that admits none is wrapped.
    JsonObject,
    /// Chat `json_schema` whose enforcement is found per server and model by a probe. Before
    /// the probe the route claims `strict`, its best; the worker probes before the first call
    /// and refuses a `require` the verdict does not meet.
    Probed,
    /// Chat `json_schema` the provider's configuration says the server enforces.
    DeclaredJsonSchema,
    /// The schema in the system prompt only.
    Prompt,
    /// The local engine compiles the schema into a grammar.
    Constrained,
}

/// What a call adds to the schema when its plan is made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlanCx {
    /// Extended thinking is on (rules out Anthropic's forced tool).
    pub thinking: bool,
    /// The last turn is an assistant prefill (rules out Anthropic's native format).
    pub prefill: bool,
    /// The probe's verdict, once a [`SchemaRoute::Probed`] route has one.
    pub probed: Option<StructuredOutputMode>,
}

impl SchemaRoute {
    /// How `schema` goes on the wire (nothing without one): the mode, the copy sent, the
    /// rewrites, the constraints checked locally, and why a weaker mode was used.
    pub fn plan(self, schema: Option<&ResponseSchema>, cx: PlanCx) -> WirePlan {
        let Some(schema) = schema else {
            return WirePlan::none();
        };
        match self {
            Self::OpenAiStrict => subset::openai_strict(schema),
            Self::CodexOutputSchema => codex_output_schema(schema),
            Self::AnthropicLadder => {
                crate::llm::wire::messages::ladder(schema, cx.thinking, cx.prefill)
            }
            Self::ClaudeCliTool => {
                subset::object_root(schema, &ANTHROPIC_TOOL, StructuredOutputMode::CliValidated)
            }
            Self::JsonObject => json_object(schema),
            Self::Probed => match cx.probed.unwrap_or(StructuredOutputMode::Strict) {
                StructuredOutputMode::JsonMode => json_object(schema),
                mode => WirePlan::identity(mode, Some(schema)),
            },
            Self::DeclaredJsonSchema => {
                WirePlan::identity(StructuredOutputMode::Strict, Some(schema))
            }
            Self::Prompt => WirePlan::identity(StructuredOutputMode::Prompt, Some(schema)),
            Self::Constrained => {
                WirePlan::identity(StructuredOutputMode::Constrained, Some(schema))
            }
        }
    }

    /// The plan of one call: `req`'s schema with its thinking budget and last turn, and the
    /// probe's verdict when the route has one.
    pub fn plan_call(
        self,
        req: &AdapterCallRequest,
        probed: Option<StructuredOutputMode>,
    ) -> WirePlan {
        let cx = PlanCx {
            thinking: req.thinking_budget > 0,
            prefill: req.ends_with_prefill(),
            probed,
        };
        self.plan(req.response_schema.as_ref(), cx)
    }

    /// The mode `schema` gets on a plain call (no thinking, no prefill, no probe yet).
    pub fn mode(self, schema: Option<&ResponseSchema>) -> StructuredOutputMode {
        self.plan(schema, PlanCx::default()).mode
    }

    /// The strongest mode the route can use: its guarantee at best (a probed route before its
    /// probe).
    pub fn best_mode(self) -> StructuredOutputMode {
        match self {
            Self::OpenAiStrict
            | Self::AnthropicLadder
            | Self::Probed
            | Self::DeclaredJsonSchema => StructuredOutputMode::Strict,
            Self::CodexOutputSchema => StructuredOutputMode::CliFlag,
            Self::ClaudeCliTool => StructuredOutputMode::CliValidated,
            Self::JsonObject => StructuredOutputMode::JsonMode,
            Self::Prompt => StructuredOutputMode::Prompt,
            Self::Constrained => StructuredOutputMode::Constrained,
        }
    }

    /// The modes the route can use, as a short text for tables (`strict / hint`).
    pub fn modes_text(self) -> &'static str {
        match self {
            Self::OpenAiStrict => "strict / hint",
            Self::CodexOutputSchema => "cli-flag / prompt",
            Self::AnthropicLadder => "strict / tool / prompt",
            Self::Probed => "strict / hint / json-mode (probed)",
            _ => self.best_mode().as_str(),
        }
    }

    /// The provider subsets the route fits schemas into (empty: the schema goes whole).
    pub fn subsets(self) -> &'static [&'static WireSubset] {
        match self {
            Self::OpenAiStrict | Self::CodexOutputSchema => &[&OPENAI_STRICT],
            Self::AnthropicLadder => &[&ANTHROPIC_NATIVE, &ANTHROPIC_TOOL],
            Self::ClaudeCliTool => &[&ANTHROPIC_TOOL],
            Self::JsonObject | Self::Probed => &[&JSON_OBJECT],
            Self::DeclaredJsonSchema | Self::Prompt | Self::Constrained => &[],
        }
    }

    /// The provider limits the schema of `preflight` breaks on this route: the server would
    /// refuse it, so the call is refused before it is made. Only OpenAI documents numeric
    /// limits (strict mode, which codex's `--output-schema` also uses).
    pub fn limit_violations<'p>(self, preflight: &'p Preflight<'_>) -> &'p [LimitViolation] {
        match self {
            Self::OpenAiStrict | Self::CodexOutputSchema => preflight.openai_strict(),
            _ => &[],
        }
    }
}

/// JSON mode answers an object, on any Chat server: a root that admits none is wrapped.
fn json_object(schema: &ResponseSchema) -> WirePlan {
    subset::object_root(schema, &JSON_OBJECT, StructuredOutputMode::JsonMode)
}

/// `cli-flag` when OpenAI's strict mode takes the schema (after the strict fit's rewrites),
/// else `prompt` with the reasons.
fn codex_output_schema(schema: &ResponseSchema) -> WirePlan {
    let strict = subset::openai_strict(schema);
    if strict.weaker_because.is_empty() {
        return WirePlan {
            mode: StructuredOutputMode::CliFlag,
            ..strict
        };
    }
    let mut plan = WirePlan::identity(StructuredOutputMode::Prompt, None);
    plan.weaker_because = strict.weaker_because;
    plan.weaker_because.push(
        "codex sends --output-schema as strict: true, which OpenAI refuses for this schema \
         (400 invalid_json_schema): the schema goes in the prompt"
            .to_owned(),
    );
    plan
}
