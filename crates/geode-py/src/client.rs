//! `Client`: the Rust [`geode::Client`] built from Python's keyword arguments, with each call in
//! a sync form (GIL released, Ctrl-C cancels: [`crate::wait`]) and an asyncio form (an awaitable
//! whose cancellation drops the call). A successful call gives `(value_json, ledger_json,
//! summary)`; a failed one raises the `geode` exception of its kind.

use crate::env::OverlayEnv;
use crate::media::NativeMedia;
use crate::outcome::{Done, config_error, done, to_py_err};
use crate::prompt::PromptArg;
use crate::schema::NativeSchema;
use crate::stream::NativeStream;
use crate::wait::wait;
use geode::Adapter;
use geode::Require;
use geode::llm::engine::EngineProcess;
use geode::{CallSettings, Client, Error, Extracted, ItemSource, Prompt};
use pyo3::prelude::*;
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A text-shaped call: one of N strings, a regular expression, a Lark grammar.
enum Text {
    Choice(Vec<String>),
    Regex(String),
    Grammar(String),
}

/// A client shared by every thread and task of a program (calls run concurrently).
#[pyclass(frozen, module = "geode._native", name = "Client")]
pub struct NativeClient {
    client: Client,
}

#[pymethods]
impl NativeClient {
    /// Every argument is optional; what is not given comes from `geode.toml` and the
    /// environment as for the CLI. `env` is read before the process environment.
    #[new]
    #[pyo3(signature = (adapter=None, model=None, require=None, timeout=None, fallback=None, max_tokens=None, system=None, env=None, repair=None, cache=None, cache_ttl=None, temperature=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        adapter: Option<String>,
        model: Option<String>,
        require: Option<String>,
        timeout: Option<f64>,
        fallback: Option<Vec<String>>,
        max_tokens: Option<u32>,
        system: Option<String>,
        env: Option<HashMap<String, String>>,
        repair: Option<bool>,
        cache: Option<String>,
        cache_ttl: Option<String>,
        temperature: Option<f32>,
    ) -> PyResult<Self> {
        let env = OverlayEnv::new(env.unwrap_or_default());
        // One engine per client, started on its first local call.
        let mut builder = Client::builder();
        if let Some(row) = geode::llm::registry::embedded() {
            let engine = Arc::new(local_engine(py, row.name, &env));
            builder = builder.adapter_factory(row.name, move || engine.clone() as Arc<dyn Adapter>);
        }
        let cache_env = env.clone();
        let mut builder = builder.environment(env);
        if let Some(a) = adapter {
            builder = builder.adapter(a);
        }
        if let Some(m) = model {
            builder = builder.model(m);
        }
        if let Some(r) = require {
            builder = builder.require(parse_require(py, &r)?);
        }
        if let Some(t) = timeout {
            builder = builder.timeout(parse_timeout(py, t)?);
        }
        if let Some(f) = fallback {
            builder = builder.fallback(f);
        }
        if let Some(m) = max_tokens {
            builder = builder.max_tokens(m);
        }
        if let Some(s) = system {
            builder = builder.system(s);
        }
        if let Some(t) = temperature {
            builder = builder.temperature(t);
        }
        if let Some(r) = repair {
            builder = builder.repair(r);
        }
        if let Some(location) = cache {
            builder = builder.cache(open_cache(py, &location, cache_ttl.as_deref(), &cache_env)?);
        }
        let client = builder.build().map_err(|e| to_py_err(py, &e))?;
        Ok(Self { client })
    }

    /// This client with some settings changed; it shares the adapters, connections, local
    /// engine and response cache of `self`.
    #[pyo3(signature = (model=None, require=None, timeout=None, max_tokens=None, temperature=None, system=None))]
    #[allow(clippy::too_many_arguments)]
    fn with_options(
        &self,
        py: Python<'_>,
        model: Option<String>,
        require: Option<String>,
        timeout: Option<f64>,
        max_tokens: Option<u32>,
        temperature: Option<f32>,
        system: Option<String>,
    ) -> PyResult<Self> {
        let settings = CallSettings {
            model,
            require: require.map(|r| parse_require(py, &r)).transpose()?,
            timeout: timeout.map(|t| parse_timeout(py, t)).transpose()?,
            max_tokens,
            temperature,
            system,
            ..CallSettings::default()
        };
        let client = self.client.with(settings).map_err(|e| to_py_err(py, &e))?;
        Ok(Self { client })
    }

    /// Asks for a value of `schema`; blocks with the GIL released. `parts`: images and
    /// documents shown with the prompt's last user turn (every call takes them).
    #[pyo3(signature = (schema, prompt, parts=None))]
    fn extract(
        &self,
        py: Python<'_>,
        schema: &NativeSchema,
        prompt: PromptArg,
        parts: Option<Parts>,
    ) -> PyResult<Done> {
        let (client, typed) = (self.client.clone(), schema.typed.clone());
        let prompt = prompt.into_prompt(py, parts.unwrap_or_default())?;
        let result = wait(
            py,
            async move { client.extract_typed(&typed, prompt).await },
        )?;
        done(py, result)
    }

    /// Runs the `[contracts.NAME]` of geode.toml with `args` (a JSON object of its inputs, as
    /// text); blocks with the GIL released.
    #[pyo3(signature = (name, args))]
    fn contract(&self, py: Python<'_>, name: String, args: String) -> PyResult<Done> {
        let args = match serde_json::from_str::<Value>(&args) {
            Ok(Value::Object(args)) => args,
            _ => {
                return Err(config_error(
                    py,
                    "a contract's inputs are keyword arguments",
                ));
            }
        };
        let client = self.client.clone();
        let result = wait(py, async move { client.contract(&name, &args).await })?;
        done(py, result)
    }

    /// [`Self::extract`] as an awaitable.
    #[pyo3(signature = (schema, prompt, parts=None))]
    fn aextract<'py>(
        &self,
        py: Python<'py>,
        schema: &NativeSchema,
        prompt: PromptArg,
        parts: Option<Parts>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (client, typed) = (self.client.clone(), schema.typed.clone());
        let prompt = prompt.into_prompt(py, parts.unwrap_or_default())?;
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let result = client.extract_typed(&typed, prompt).await;
            Python::attach(|py| done(py, result))
        })
    }

    /// A text-shaped call: `kind` is `choice` (`spec` the options), `regex` or `grammar` (`spec`
    /// the pattern or the Lark grammar); blocks with the GIL released.
    #[pyo3(signature = (kind, spec, prompt, parts=None))]
    fn text(
        &self,
        py: Python<'_>,
        kind: &str,
        spec: Spec,
        prompt: PromptArg,
        parts: Option<Parts>,
    ) -> PyResult<Done> {
        let (client, text) = (self.client.clone(), Text::of(py, kind, spec)?);
        let prompt = prompt.into_prompt(py, parts.unwrap_or_default())?;
        let result = wait(py, async move { run_text(&client, text, prompt).await })?;
        done(py, result)
    }

    /// [`Self::text`] as an awaitable.
    #[pyo3(signature = (kind, spec, prompt, parts=None))]
    fn atext<'py>(
        &self,
        py: Python<'py>,
        kind: &str,
        spec: Spec,
        prompt: PromptArg,
        parts: Option<Parts>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (client, text) = (self.client.clone(), Text::of(py, kind, spec)?);
        let prompt = prompt.into_prompt(py, parts.unwrap_or_default())?;
        pyo3_async_runtimes::tokio::future_into_py(py, async move {
            let result = run_text(&client, text, prompt).await;
            Python::attach(|py| done(py, result))
        })
    }

    /// Streams a value of `schema`. `items`: the root property whose elements stream as items
    /// (default: the root list, or the root's one array property).
    #[pyo3(signature = (schema, prompt, items=None, parts=None))]
    fn stream(
        &self,
        py: Python<'_>,
        schema: &NativeSchema,
        prompt: PromptArg,
        items: Option<String>,
        parts: Option<Parts>,
    ) -> PyResult<NativeStream> {
        let source = items.map_or(ItemSource::Auto, ItemSource::Field);
        let prompt = prompt.into_prompt(py, parts.unwrap_or_default())?;
        Ok(NativeStream::new(self.client.stream_typed(
            schema.typed.clone(),
            prompt,
            source,
        )))
    }
}

/// The images and documents a call is given apart from its prompt.
type Parts = Vec<Py<NativeMedia>>;

/// What a text-shaped call is given: the options of a choice, or one pattern or grammar.
#[derive(FromPyObject)]
enum Spec {
    One(String),
    Options(Vec<String>),
}

impl Text {
    fn of(py: Python<'_>, kind: &str, spec: Spec) -> PyResult<Self> {
        match (kind, spec) {
            ("choice", Spec::Options(options)) => Ok(Self::Choice(options)),
            ("regex", Spec::One(regex)) => Ok(Self::Regex(regex)),
            ("grammar", Spec::One(lark)) => Ok(Self::Grammar(lark)),
            (kind, _) => Err(config_error(
                py,
                &format!(
                    "text constraint {kind:?}: expected choice (a list), regex or grammar (a string)"
                ),
            )),
        }
    }
}

async fn run_text(client: &Client, text: Text, prompt: Prompt) -> Result<Extracted<Value>, Error> {
    let answer = match &text {
        Text::Choice(options) => {
            let options: Vec<&str> = options.iter().map(String::as_str).collect();
            client.choose(&options, prompt).await
        }
        Text::Regex(regex) => client.matches(regex, prompt).await,
        Text::Grammar(lark) => client.grammar(lark, prompt).await,
    }?;
    Ok(Extracted {
        value: Value::String(answer.value),
        ledger: answer.ledger,
    })
}

/// The response cache at `location` (a directory or `redis://...`); an empty location turns off
/// a cache `geode.toml` would give.
fn open_cache(
    py: Python<'_>,
    location: &str,
    ttl: Option<&str>,
    env: &dyn geode::Environment,
) -> PyResult<Option<geode::Cache>> {
    let ttl = ttl
        .map(geode::vocab::parse_duration)
        .transpose()
        .map_err(|e| config_error(py, &format!("bad cache TTL: {e}")))?;
    let chosen = geode::cache::CacheSettings::choose(Some(location), ttl, None)
        .map_err(|e| config_error(py, &e.to_string()))?;
    chosen
        .map(|c| c.open(env))
        .transpose()
        // The location may hold a Redis password: the error names the cache, never it.
        .map_err(|e| config_error(py, &geode::secret::scrub(&format!("cache: {e}"))))
}

fn parse_require(py: Python<'_>, name: &str) -> PyResult<Require> {
    name.parse::<Require>().map_err(|_| {
        config_error(
            py,
            &format!("require={name:?}: expected \"best-effort\", \"wired\" or \"enforced\""),
        )
    })
}

fn parse_timeout(py: Python<'_>, seconds: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            config_error(
                py,
                &format!("timeout={seconds}: expected a positive number of seconds"),
            )
        })
}

/// How the interpreter starts the engine built into the module: the `geode` package this process
/// imported (its folder is the argument) comes first on the path, so a `geode/` folder in the
/// working directory cannot stand in for it.
const ENGINE_BOOT: &str =
    "import sys; sys.path.insert(0, sys.argv[1]); from geode._engine import main; sys.exit(main())";

/// The engine for `local`: `GEODE_ENGINE_BIN` when set; else this interpreter serving the
/// engine built into the module (`geode._engine.main`); in a build without it (feature
/// `local` off) or when Python cannot say where it is, `geode-engine` on `PATH`. The client's
/// own `GEODE_LOCAL_*` variables go into the engine's environment.
fn local_engine(py: Python<'_>, name: &str, env: &OverlayEnv) -> EngineProcess {
    use geode::Environment;
    let engine = match (env.var(geode::llm::engine::ENGINE_BIN_ENV), bundled(py)) {
        (Some(bin), _) => EngineProcess::new(name, bin),
        (None, Some((python, packages))) if cfg!(feature = "local") => {
            EngineProcess::new(name, python).with_args([
                "-c".into(),
                ENGINE_BOOT.into(),
                packages.into_os_string(),
            ])
        }
        (None, _) => EngineProcess::new(name, "geode-engine"),
    };
    engine.with_vars(env.engine_vars())
}

/// `sys.executable` and the folder holding the imported `geode` package, when Python knows both
/// (an application embedding Python may have no executable).
fn bundled(py: Python<'_>) -> Option<(PathBuf, PathBuf)> {
    let exe: String = py
        .import("sys")
        .ok()?
        .getattr("executable")
        .ok()?
        .extract()
        .ok()?;
    let init: String = py
        .import("geode")
        .ok()?
        .getattr("__file__")
        .ok()?
        .extract()
        .ok()?;
    let packages = PathBuf::from(init).parent()?.parent()?.to_path_buf();
    (!exe.is_empty()).then(|| (PathBuf::from(exe), packages))
}
