//! Providers defined in `geode.toml` (`[providers.NAME]`): an HTTP adapter on one of the three
//! wire families, described by data instead of a row in `rows.rs`.
//!
//! ```toml
//! [providers.router]
//! wire = "chat"                        # chat | responses | messages
//! base_url = "https://openrouter.ai/api/v1"
//! key_env = "OPENROUTER_API_KEY"       # the variable's name, never the key
//! headers = { "X-Title" = "my-agent" } # optional; never a credential
//! model = "openai/gpt-5.5"
//! schema = "json_schema"               # probe | json_schema | json_object | prompt
//! inputs = ["text", "image", "pdf"]    # optional; what it takes beside text (default text)
//! ```
//!
//! A provider becomes an [`AdapterSpec`] like any built-in row, so routing, `--require`,
//! fallbacks, pacing, the ledger and redaction treat it the same. Each setting is checked here
//! and a bad one names its key; a value that might be a secret (a header value, a URL with a
//! password) is never echoed.

use super::is_env_name;
use super::{
    AdapterSpec, Auth, Billing, Endpoint, Family, Inputs, KeyHeader, SchemaRoute, WireFamily,
};
use crate::llm::wire::chat::ChatTools;
use crate::llm::wire::responses::Backend;
use crate::media::Accepts;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// One `[providers.NAME]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// The wire family the server speaks.
    pub wire: WireKind,
    /// The base URL; requests go to `{base_url}/chat/completions`, `/responses` or `/messages`
    /// (the base as the vendor's SDK takes it, usually ending in `/v1`).
    pub base_url: String,
    /// The environment variable holding the API key; none for a server that wants no key.
    pub key_env: Option<String>,
    /// Headers every request carries (e.g. a router's app name). Never a credential.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The model used when none is named.
    pub model: String,
    /// How the schema goes on the wire (default: `probe` on `chat`, `json_schema` otherwise).
    pub schema: Option<SchemaOnWire>,
    /// What the server takes beside text, in its wire's shapes and with its wire's bounds
    /// (default: text only; geode cannot know what a server's models look at).
    #[serde(default)]
    pub inputs: Vec<InputKind>,
}

/// One of `inputs = [...]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputKind {
    /// Text (always taken; allowed so the list can say it).
    Text,
    /// Images.
    Image,
    /// PDF documents (and plain-text documents where the wire takes them).
    Pdf,
}

/// What a provider on `wire` takes, from its declared `inputs`.
fn accepts(wire: WireKind, inputs: &[InputKind]) -> Accepts {
    let image = inputs.contains(&InputKind::Image);
    let pdf = inputs.contains(&InputKind::Pdf);
    let base = match wire {
        WireKind::Chat => return Accepts::chat(image, pdf),
        WireKind::Responses => Accepts::OPENAI_RESPONSES,
        WireKind::Messages => Accepts::ANTHROPIC,
    };
    if !image && !pdf {
        return Accepts::TEXT;
    }
    Accepts {
        images: if image { base.images } else { &[] },
        documents: if pdf { base.documents } else { &[] },
        image_urls: image && base.image_urls,
        document_urls: pdf && base.document_urls,
        ..base
    }
}

/// `wire = ...`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireKind {
    /// Chat Completions.
    Chat,
    /// OpenAI Responses.
    Responses,
    /// Anthropic Messages.
    Messages,
}

/// `schema = ...`: how `response_schema` goes on the provider's wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchemaOnWire {
    /// Chat: ask the server once per model whether it enforces `json_schema`, as
    /// `openai-compatible` does (`strict`, `hint` or `json-mode` by the verdict).
    Probe,
    /// The wire's native schema field, enforced by the server: `response_format` json_schema
    /// (`strict`), Responses `text.format` (`strict`/`hint`), Messages `output_config.format`.
    JsonSchema,
    /// Chat: `response_format: json_object` and the schema in the prompt (`json-mode`).
    JsonObject,
    /// Chat: the schema in the prompt only (`prompt`).
    Prompt,
}

/// A `[providers.NAME]` table that cannot be used: which provider, which key, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("[providers.{provider}] {key}: {message}")]
pub struct ProviderError {
    /// The provider's name.
    pub provider: String,
    /// The key at fault (`name` for the table's name itself).
    pub key: &'static str,
    /// What is wrong, without the value when it may be a secret.
    pub message: String,
}

/// Header names that carry credentials: a key goes in `key_env`, never in the file.
const CREDENTIAL_HEADERS: [&str; 6] = [
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "cookie",
    "x-goog-api-key",
];

impl ProviderConfig {
    /// The adapter row this table describes, checked. `name` is the table's name.
    pub fn spec(&self, name: &str) -> Result<&'static AdapterSpec, ProviderError> {
        let err = |key: &'static str, message: String| ProviderError {
            provider: name.to_owned(),
            key,
            message,
        };
        check_name(name).map_err(|m| err("name", m))?;
        check_base_url(&self.base_url).map_err(|m| err("base_url", m))?;
        if self.model.trim().is_empty() {
            return Err(err("model", "must name the default model".to_owned()));
        }
        if let Some(key) = &self.key_env
            && !is_env_name(key)
        {
            return Err(err(
                "key_env",
                "must be the name of an environment variable (letters, digits and _, not \
                 starting with a digit), never the key itself"
                    .to_owned(),
            ));
        }
        self.headers().map_err(|m| err("headers", m))?;
        let schema = self.schema.unwrap_or(match self.wire {
            WireKind::Chat => SchemaOnWire::Probe,
            _ => SchemaOnWire::JsonSchema,
        });
        let shape = Shape::of(self.wire, schema).ok_or_else(|| {
            err(
                "schema",
                format!(
                    "{} is not available on the {} wire (it takes {})",
                    schema.as_str(),
                    self.wire.as_str(),
                    self.wire.schemas()
                ),
            )
        })?;
        Ok(intern(name, self, || self.build(name, shape)))
    }

    /// The row of a checked table.
    fn build(&self, name: &str, shape: Shape) -> AdapterSpec {
        let upper: String = name
            .chars()
            .map(|c| match c {
                '-' => '_',
                c => c.to_ascii_uppercase(),
            })
            .collect();
        AdapterSpec {
            name: leak(name.to_owned()),
            family: Family::Compatible,
            billing: Billing::Payg,
            wire_family: shape.family,
            wire: leak(format!(
                "{} `POST {{base}}{}` (`[providers.{name}]`)",
                shape.wire_name, shape.path
            )),
            schema_on_wire: shape.schema_on_wire,
            schema_route: shape.schema_route,
            framework_tools: true,
            tools_with_schema: true,
            streaming: true,
            limits: shape.limits,
            auth: match &self.key_env {
                Some(key) => Auth::ApiKey {
                    env: leak(key.clone()),
                    header: shape.key_header,
                },
                None => Auth::None,
            },
            endpoint: Some(Endpoint {
                path: shape.path,
                default_base: leak(self.base_url.trim().to_owned()),
                base_env: leak(format!("GEODE_{upper}_BASE_URL")),
                sdk_base: None,
            }),
            headers: Vec::leak(
                self.headers
                    .iter()
                    .map(|(k, v)| (leak(k.to_ascii_lowercase()), leak(v.clone())))
                    .collect(),
            ),
            default_model: leak(self.model.trim().to_owned()),
            models: &[],
            reasoning_models: &[],
            inputs: Inputs::all(accepts(self.wire, &self.inputs)),
        }
    }

    /// Checks the headers: valid names and values, no credential.
    fn headers(&self) -> Result<(), String> {
        for (i, (name, value)) in self.headers.iter().enumerate() {
            let lower = name.to_ascii_lowercase();
            if reqwest::header::HeaderName::from_bytes(lower.as_bytes()).is_err() {
                return Err(format!("entry {} has no valid header name", i + 1));
            }
            if CREDENTIAL_HEADERS.contains(&lower.as_str()) {
                return Err(format!(
                    "{lower} carries a credential: name its variable in key_env instead (the \
                     value is never read from the file)"
                ));
            }
            if reqwest::header::HeaderValue::from_str(value).is_err() {
                return Err(format!("the value of {lower} is not a valid header value"));
            }
        }
        Ok(())
    }
}

impl WireKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Responses => "responses",
            Self::Messages => "messages",
        }
    }

    fn schemas(self) -> &'static str {
        match self {
            Self::Chat => "probe, json_schema, json_object or prompt",
            Self::Responses | Self::Messages => "json_schema",
        }
    }
}

impl SchemaOnWire {
    fn as_str(self) -> &'static str {
        match self {
            Self::Probe => "probe",
            Self::JsonSchema => "json_schema",
            Self::JsonObject => "json_object",
            Self::Prompt => "prompt",
        }
    }
}

/// What a wire and schema placement make of a row.
struct Shape {
    family: WireFamily,
    wire_name: &'static str,
    path: &'static str,
    key_header: KeyHeader,
    schema_route: SchemaRoute,
    schema_on_wire: &'static str,
    limits: &'static str,
}

impl Shape {
    fn of(wire: WireKind, schema: SchemaOnWire) -> Option<Self> {
        let chat = |schema_route, schema_on_wire| Self {
            family: WireFamily::Chat(ChatTools::OPENAI),
            wire_name: "Chat Completions",
            path: "/chat/completions",
            key_header: KeyHeader::Bearer,
            schema_route,
            schema_on_wire,
            limits: "what the server enforces; every answer is validated",
        };
        Some(match (wire, schema) {
            (WireKind::Chat, SchemaOnWire::Probe) => chat(
                SchemaRoute::Probed,
                "`response_format` json_schema; a probe per model decides: enforced → strict, \
                 ignored → hint + the schema in the prompt, refused → `json_object` + the schema \
                 in the prompt",
            ),
            (WireKind::Chat, SchemaOnWire::JsonSchema) => chat(
                SchemaRoute::DeclaredJsonSchema,
                "`response_format` json_schema (`strict: true`), enforced by the server as \
                 configured",
            ),
            (WireKind::Chat, SchemaOnWire::JsonObject) => chat(
                SchemaRoute::JsonObject,
                "`response_format: json_object` + the schema in the system prompt",
            ),
            (WireKind::Chat, SchemaOnWire::Prompt) => {
                chat(SchemaRoute::Prompt, "the schema in the system prompt")
            }
            (WireKind::Responses, SchemaOnWire::JsonSchema) => Self {
                family: WireFamily::Responses(Backend::Platform),
                wire_name: "Responses API",
                path: "/responses",
                key_header: KeyHeader::Bearer,
                schema_route: SchemaRoute::OpenAiStrict,
                schema_on_wire: "`text.format` json_schema (`strict` when the strict check \
                                 passes, else `hint`)",
                limits: "OpenAI strict-mode limits",
            },
            (WireKind::Messages, SchemaOnWire::JsonSchema) => Self {
                family: WireFamily::Messages,
                wire_name: "Messages API",
                path: "/messages",
                key_header: KeyHeader::XApiKey,
                schema_route: SchemaRoute::AnthropicLadder,
                schema_on_wire: "`output_config.format` when the schema fits, else a forced \
                                 output tool, else the prompt",
                limits: "Anthropic's structured-output subset",
            },
            _ => return None,
        })
    }
}

/// Lowercase letters, digits and `-`, starting with a letter, at most 64 characters, and not
/// a built-in adapter's name.
fn check_name(name: &str) -> Result<(), String> {
    let ok = name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !ok {
        return Err(
            "a provider's name is lowercase letters, digits and -, starting with a letter (at \
             most 64)"
                .to_owned(),
        );
    }
    if super::spec(name).is_some() {
        return Err("a built-in adapter has this name; choose another".to_owned());
    }
    Ok(())
}

/// Why `base` cannot be a base URL: not a URL, not `http`/`https` with a host, or holding
/// credentials (never echoed). Also used for the built-in adapters' `base_url` and variables.
pub fn check_base_url(base: &str) -> Result<(), String> {
    let url = reqwest::Url::parse(base.trim())
        .map_err(|e| format!("not a URL ({e}); give e.g. https://host/v1"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err("must be an http:// or https:// URL with a host".to_owned());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(
            "holds credentials: name the key's variable in key_env instead (the URL is not \
             shown)"
                .to_owned(),
        );
    }
    Ok(())
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// A row lives as long as the process, like the built-in ones: one per distinct table, so
/// loading the same file again (a reload, a test) builds nothing new.
fn intern(
    name: &str,
    table: &ProviderConfig,
    build: impl FnOnce() -> AdapterSpec,
) -> &'static AdapterSpec {
    type Rows = Vec<(String, ProviderConfig, &'static AdapterSpec)>;
    static ROWS: Mutex<Rows> = Mutex::new(Vec::new());
    let mut rows = ROWS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((.., row)) = rows.iter().find(|(n, t, _)| n == name && t == table) {
        return row;
    }
    let row: &'static AdapterSpec = Box::leak(Box::new(build()));
    rows.push((name.to_owned(), table.clone(), row));
    row
}

#[cfg(test)]
mod tests;
