//! [`HttpAdapter`]: the one adapter behind every HTTP row of the registry (`openai-payg`,
//! `codex-oauth`, `anthropic-payg`, `anthropic-oauth`, `glm-payg`, `glm-coding-plan`,
//! `openai-compatible`).
//!
//! Everything it does comes from its [`AdapterSpec`]: the wire family (which [`Wire`] builds
//! the body and folds the reply), the endpoint (`{base}{path}`, resolved by
//! [`crate::llm::settings::AdapterSettings::endpoint_url`]), the default model, the reasoning-model patterns, and the auth
//! source. An API key is sent as its row says (bearer or `x-api-key`); the two subscription
//! logins keep their own token code ([`super::codex_login`], [`super::claude_login`]).
//! One call: fill in the default model, build, sign, then [`exchange`] (POST and fold).
//! A row whose schema route is [`SchemaRoute::Probed`] (`openai-compatible`) first learns, once per URL
//! and model, whether the server enforces `json_schema` ([`super::compat_probe`]), and places
//! the schema by the verdict; the verdict's reason joins the call's wire report.

use super::claude_login::{self, ClaudeLogin};
use super::codex_login::CodexLogin;
use super::compat_probe::{self, Probe};
use crate::llm::adapter::Adapter;
use crate::llm::call::{AdapterError, CallCx};
use crate::llm::credentials::{CodexAuthFile, var_in};
use crate::llm::http::{HttpClient, PostRequest};
use crate::llm::registry::{AdapterSpec, Auth, Environment, KeyHeader, SchemaRoute, WireFamily};
use crate::llm::request::{AdapterCallRequest, AdapterResponse};
use crate::llm::settings::AdapterSettings;
use crate::llm::wire::chat::{ChatTools, ChatWire};
use crate::llm::wire::family::{BuildCx, Built, Delivery, Wire, exchange};
use crate::llm::wire::messages::MessagesWire;
use crate::llm::wire::responses::ResponsesWire;
use crate::schema::ResponseSchema;
use crate::schema::subset::WirePlan;
use crate::secret::Secret;
use crate::vocab::StructuredOutputMode;
use std::sync::Arc;

/// How requests are signed. `Debug` never shows a secret.
#[derive(Debug, Clone)]
enum Signer {
    /// An API key in the row's header.
    Key(Secret, KeyHeader),
    /// Nothing: an optional key that is not set (a local server).
    Unsigned,
    /// The codex login.
    Codex(CodexLogin),
    /// The Claude subscription login.
    Claude(ClaudeLogin),
}

/// An HTTP adapter built from its registry row. `Debug` never shows a secret.
#[derive(Debug, Clone)]
pub struct HttpAdapter {
    spec: &'static AdapterSpec,
    url: String,
    default_model: String,
    wire: Arc<dyn Wire>,
    signer: Signer,
    http: HttpClient,
}

/// The wire family's implementation for `spec` (`None` for CLI and local rows). Where the
/// schema goes is each call's plan, not the wire's.
pub fn wire_for(spec: &AdapterSpec) -> Option<Arc<dyn Wire>> {
    Some(match spec.wire_family {
        WireFamily::Responses(backend) => Arc::new(ResponsesWire { backend }),
        WireFamily::Messages => Arc::new(MessagesWire),
        WireFamily::Chat(tools) => Arc::new(ChatWire::streamed(tools)),
        WireFamily::Cli(_) | WireFamily::Local => return None,
    })
}

impl HttpAdapter {
    /// The adapter of `spec` with its `settings` and credentials from `env`, on the
    /// shared HTTP client. A missing key or credentials file is a `Config` error naming it.
    pub fn from_spec(
        spec: &'static AdapterSpec,
        settings: &AdapterSettings,
        env: &dyn Environment,
    ) -> Result<Self, AdapterError> {
        let name = spec.name;
        let config_err = |message: String| AdapterError::Config {
            adapter: name.to_owned(),
            message,
        };
        let wire = wire_for(spec).ok_or_else(|| config_err("not an HTTP adapter".to_owned()))?;
        let url = settings.endpoint_url(name, None, env).ok_or_else(|| {
            let var = spec.endpoint.map_or("", |e| e.base_env);
            config_err(format!(
                "no base URL: set {var} or base_url in [adapters.{name}] of geode.toml"
            ))
        })?;
        // A base URL from a variable is checked here, where its source is known (the file's
        // when it was loaded): a bad one is a configuration error naming it, not a transport
        // failure at the first call; the URL itself is never shown (it may hold a password).
        if let Err(why) = crate::llm::registry::check_base_url(&url) {
            let source = settings.base_url_source(name, env);
            return Err(config_err(format!("{source}: {why}")));
        }
        // A key read from `key` must fit in a header (a pasted newline would otherwise fail
        // every call with a bare "invalid header"); the value is never shown.
        let key_in = |key: &str, v: String| {
            if reqwest::header::HeaderValue::from_str(&v).is_err() {
                return Err(config_err(format!(
                    "environment variable {key} holds a character an HTTP header cannot carry \
                     (a newline or another control character); its value is not shown"
                )));
            }
            Ok(Secret::new(v))
        };
        let signer = match spec.auth {
            Auth::ApiKey { env: key, header } => match var_in(env, key) {
                Some(v) => Signer::Key(key_in(key, v)?, header),
                None => return Err(config_err(format!("environment variable {key} is not set"))),
            },
            Auth::OptionalApiKey { env: key, header } => match var_in(env, key) {
                Some(v) => Signer::Key(key_in(key, v)?, header),
                None => Signer::Unsigned,
            },
            Auth::CodexLogin {
                token_url_env,
                default_token_url,
                ..
            } => {
                let auth_file = spec
                    .credential_file(env)
                    .map(CodexAuthFile::at)
                    .ok_or_else(|| {
                        config_err(
                            "neither CODEX_HOME nor HOME is set; cannot find codex auth.json"
                                .to_owned(),
                        )
                    })?;
                if !env.file_exists(auth_file.path()) {
                    return Err(config_err(format!(
                        "codex auth file {} not found (set CODEX_HOME or run `codex login`)",
                        auth_file.path().display()
                    )));
                }
                let token_url =
                    var_in(env, token_url_env).unwrap_or_else(|| default_token_url.to_owned());
                Signer::Codex(CodexLogin {
                    auth_file,
                    token_url,
                })
            }
            Auth::ClaudeLogin { token_env, .. } => match var_in(env, token_env) {
                Some(t) => Signer::Claude(ClaudeLogin::Fixed(key_in(token_env, t)?)),
                None => {
                    let path = spec.credential_file(env).ok_or_else(|| {
                        config_err(format!("{token_env} is not set and HOME is unknown"))
                    })?;
                    Signer::Claude(ClaudeLogin::from_file(name, token_env, path)?)
                }
            },
            Auth::None => Signer::Unsigned,
            Auth::Binary { .. } | Auth::ModelFile => {
                return Err(config_err("not an HTTP adapter".to_owned()));
            }
        };
        Ok(Self {
            spec,
            url,
            default_model: settings.model(name, None),
            wire,
            signer,
            http: HttpClient::shared()?,
        })
    }

    /// The same adapter on another HTTP client (retry policy, timeouts).
    pub fn with_http(mut self, http: HttpClient) -> Self {
        self.http = http;
        self
    }

    /// The same adapter with another default model.
    pub fn with_default_model(mut self, model: impl Into<String>) -> Self {
        self.default_model = model.into();
        self
    }

    /// The model-call URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The row's Chat tool rules (a probed row is a Chat row).
    fn chat_tools(&self) -> ChatTools {
        match self.spec.wire_family {
            WireFamily::Chat(tools) => tools,
            _ => ChatTools::OPENAI,
        }
    }

    /// Whether this row's mode is found by a probe.
    fn probed(&self) -> bool {
        self.spec.schema_route == SchemaRoute::Probed
    }

    /// `model`, or this adapter's default when it is empty.
    fn model_or_default<'a>(&'a self, model: &'a str) -> &'a str {
        if model.is_empty() {
            &self.default_model
        } else {
            model
        }
    }

    /// The probe's verdict for `model`: remembered, or found now by one probe call.
    async fn probe(&self, model: &str, cx: &CallCx) -> Result<Probe, AdapterError> {
        if let Some(p) = compat_probe::cached(&self.url, model) {
            return Ok(p);
        }
        let nonce = compat_probe::nonce();
        let req = compat_probe::request(model, &nonce)?;
        // One JSON reply: the probe's text is judged, never streamed to the caller.
        let wire: Arc<dyn Wire> = Arc::new(ChatWire {
            tools: self.chat_tools(),
            delivery: Delivery::Json,
        });
        // Asked as if enforced: `json_schema`, the schema not repeated in the prompt.
        let plan = self
            .spec
            .schema_route
            .plan_call(&req, Some(compat_probe::Verdict::Enforced.mode()));
        let outcome = self.send(&wire, req, &plan, cx).await;
        let probe = compat_probe::judge(&nonce, outcome)?;
        tracing::info!(adapter = self.spec.name, url = %self.url, model, verdict = ?probe.verdict, "json_schema probe");
        compat_probe::remember(&self.url, model, probe.clone());
        Ok(probe)
    }

    /// Builds `req` on `wire` with the schema as `plan` says, signs it and runs the exchange.
    async fn send(
        &self,
        wire: &Arc<dyn Wire>,
        mut req: AdapterCallRequest,
        plan: &WirePlan,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        if req.model.is_empty() {
            req.model = self.default_model.clone();
        }
        let identity = matches!(self.signer, Signer::Claude(_)).then_some(claude_login::IDENTITY);
        let build_cx = BuildCx {
            adapter: self.spec.name,
            default_model: &self.default_model,
            reasoning: self.spec.is_reasoning_model(&req.model),
            identity,
            plan,
        };
        let built = wire.build(&req, &build_cx)?;
        let post = self.post(wire, &built);
        let send = |post: PostRequest| {
            let built = &built;
            async move { exchange(&self.http, wire.as_ref(), &post, built, cx).await }
        };
        match &self.signer {
            Signer::Key(key, KeyHeader::Bearer) => send(post.bearer(key)).await,
            Signer::Key(key, KeyHeader::XApiKey) => {
                send(post.secret_header("x-api-key", key)).await
            }
            Signer::Unsigned => send(post).await,
            Signer::Claude(login) => send(login.sign(post, cx).await?).await,
            Signer::Codex(login) => login.call(&self.http, &post, cx, send).await,
        }
    }

    /// The POST of `built`: URL, family headers, and the family's schema-rejection judge.
    fn post(&self, wire: &Arc<dyn Wire>, built: &Built) -> PostRequest {
        let judge = Arc::clone(wire);
        let judged = built.clone();
        let mut post = PostRequest::new(self.spec.name, self.url.clone(), built.body.clone())
            .schema_judge(Arc::new(move |e| judge.rejects_schema(&judged, e)));
        for (name, value) in wire.headers().iter().chain(self.spec.headers) {
            post = post.header(name, *value);
        }
        post
    }
}

#[async_trait::async_trait]
impl Adapter for HttpAdapter {
    fn endpoint(&self) -> String {
        self.url.clone()
    }

    fn spec(&self) -> Option<&'static AdapterSpec> {
        Some(self.spec)
    }

    fn wire_mode(&self, schema: Option<&ResponseSchema>) -> StructuredOutputMode {
        if self.probed()
            && schema.is_some()
            && let Some(p) = compat_probe::cached(&self.url, &self.default_model)
        {
            return p.verdict.mode();
        }
        self.spec.schema_route.mode(schema)
    }

    async fn settle_mode(
        &self,
        model: &str,
        schema: Option<&ResponseSchema>,
        cx: &CallCx,
    ) -> Result<StructuredOutputMode, AdapterError> {
        if !self.probed() || schema.is_none() {
            return Ok(self.wire_mode(schema));
        }
        let model = self.model_or_default(model);
        Ok(self.probe(model, cx).await?.verdict.mode())
    }

    async fn call(
        &self,
        req: AdapterCallRequest,
        cx: &CallCx,
    ) -> Result<AdapterResponse, AdapterError> {
        let probe = if self.probed() && req.response_schema.is_some() {
            Some(self.probe(self.model_or_default(&req.model), cx).await?)
        } else {
            None
        };
        let verdict = probe.as_ref().map(|p| p.verdict.mode());
        let plan = self.spec.schema_route.plan_call(&req, verdict);
        let model = self.model_or_default(&req.model).to_owned();
        let schema = req.response_schema.clone();
        let mut resp = self.send(&self.wire, req, &plan, cx).await?;
        // An answer outside the schema the probe said the server enforces disproves the
        // verdict: the ledger must not claim `strict` for it, and later calls get the hint.
        let contradicted = match (&probe, &schema) {
            (Some(p), Some(s)) if p.verdict == compat_probe::Verdict::Enforced => {
                compat_probe::contradiction(s, &resp)
            }
            _ => None,
        };
        let probe = match contradicted {
            Some(why) => {
                let withdrawn = compat_probe::withdrawn(&why);
                tracing::warn!(adapter = self.spec.name, url = %self.url, model, "json_schema probe verdict withdrawn");
                compat_probe::remember(&self.url, &model, withdrawn.clone());
                resp.wire.mode = withdrawn.verdict.mode();
                Some(withdrawn)
            }
            None => probe,
        };
        resp.wire.transforms.extend(probe.map(|p| p.transform()));
        Ok(resp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::registry::spec;
    use crate::vocab::ErrorKind;
    use std::collections::BTreeMap;
    use std::path::Path;

    struct Vars(BTreeMap<&'static str, String>);

    impl Environment for Vars {
        fn var(&self, name: &str) -> Option<String> {
            self.0.get(name).cloned()
        }
        fn file_exists(&self, path: &Path) -> bool {
            path.is_file()
        }
        fn on_path(&self, _: &str) -> bool {
            false
        }
    }

    fn build(name: &str, vars: &[(&'static str, &str)]) -> Result<HttpAdapter, AdapterError> {
        let env = Vars(vars.iter().map(|(k, v)| (*k, (*v).to_owned())).collect());
        HttpAdapter::from_spec(spec(name).unwrap(), &AdapterSettings::default(), &env)
    }

    #[test]
    fn debug_never_shows_the_key_and_the_url_follows_the_row() {
        let a = build("openai-payg", &[("OPENAI_API_KEY", "sk-test-abcdef")]).unwrap();
        let dbg = format!("{a:?}");
        assert!(!dbg.contains("sk-test-abcdef"), "{dbg}");
        assert_eq!(a.url(), "https://api.openai.com/v1/responses");
        assert_eq!(a.name(), "openai-payg");
        assert_eq!(a.spec().map(|s| s.name), Some("openai-payg"));
    }

    #[test]
    fn a_missing_key_is_a_config_error_naming_the_variable() {
        let err = build("glm-coding-plan", &[]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config);
        assert!(err.to_string().contains("ZAI_CODING_PLAN_KEY"), "{err}");
        let err = build("codex-oauth", &[("CODEX_HOME", "/nonexistent")]).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/auth.json"), "{err}");
    }

    #[test]
    fn the_claude_login_honours_claude_config_dir() {
        let dir = tempfile::tempdir().unwrap();
        let shown = dir.path().display().to_string();
        let err = build("anthropic-oauth", &[("CLAUDE_CONFIG_DIR", &shown)]).unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("{shown}/.credentials.json")),
            "{err}"
        );
        std::fs::write(
            dir.path().join(".credentials.json"),
            r#"{"claudeAiOauth": {"accessToken": "sk-ant-oat01-dir"}}"#,
        )
        .unwrap();
        let a = build("anthropic-oauth", &[("CLAUDE_CONFIG_DIR", &shown)]).unwrap();
        assert!(!format!("{a:?}").contains("sk-ant-oat01-dir"));
    }

    #[test]
    fn base_urls_follow_geode_then_the_sdk_variable_then_the_config_then_the_row() {
        let key = ("OPENAI_API_KEY", "k");
        let url =
            |vars: &[(&'static str, &str)]| build("openai-payg", vars).unwrap().url().to_owned();
        assert_eq!(url(&[key]), "https://api.openai.com/v1/responses");
        assert_eq!(
            url(&[key, ("OPENAI_BASE_URL", "http://h/v1")]),
            "http://h/v1/responses",
            "the SDK variable ends in /v1"
        );
        assert_eq!(
            url(&[
                key,
                ("OPENAI_BASE_URL", "http://h/v1"),
                ("GEODE_OPENAI_BASE_URL", "http://g")
            ]),
            "http://g/v1/responses"
        );
        let anthropic = |vars: &[(&'static str, &str)]| {
            build("anthropic-oauth", vars).unwrap().url().to_owned()
        };
        let token = ("CLAUDE_CODE_OAUTH_TOKEN", "t");
        assert_eq!(
            anthropic(&[token, ("ANTHROPIC_BASE_URL", "http://a/")]),
            "http://a/v1/messages"
        );
        let cfg = AdapterSettings::default().with(
            "openai-payg",
            crate::llm::settings::AdapterSetting {
                base_url: Some("http://c".to_owned()),
                ..Default::default()
            },
        );
        let env = Vars(
            [key, ("OPENAI_BASE_URL", "http://s/v1")]
                .iter()
                .map(|(k, v)| (*k, (*v).to_owned()))
                .collect(),
        );
        let spec = spec("openai-payg").unwrap();
        let with_sdk = HttpAdapter::from_spec(spec, &cfg, &env).unwrap();
        assert_eq!(
            with_sdk.url(),
            "http://s/v1/responses",
            "the SDK variable beats the file"
        );
        let env = Vars([key].iter().map(|(k, v)| (*k, (*v).to_owned())).collect());
        let from_file = HttpAdapter::from_spec(spec, &cfg, &env).unwrap();
        assert_eq!(from_file.url(), "http://c/v1/responses");
        assert_eq!(
            cfg.endpoint_url("openai-payg", Some("http://flag"), &env)
                .as_deref(),
            Some("http://flag/v1/responses"),
            "a flag beats everything"
        );
    }

    #[test]
    fn cli_rows_are_not_http_adapters() {
        let err = build("claude-cli", &[]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config);
    }
}
