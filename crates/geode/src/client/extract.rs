//! The one-shot shapes of a [`Client`] call: a Rust type, a raw JSON Schema, one of N strings,
//! a regular expression, a Lark grammar.

use super::typed_schema::TypedSchema;
use super::{Client, Error, Extracted, TextAnswer};
use crate::agent::conversation::Prompt;
use crate::agent::task::{Answer, Output, Task};
use crate::agent::worker::{WorkerEnv, run_task};
use crate::ledger::GuaranteeLedger;
use crate::schema::{ResponseSchema, TextConstraint};
use serde::de::DeserializeOwned;
use serde_json::Value;

impl Client {
    /// Asks for a `T`: its schema (generated once per type, made strict-friendly: objects
    /// closed, `Option` fields required and nullable, a non-object root wrapped) goes on the wire, the answer is validated (one retry with
    /// feedback) and deserialized. The ledger names every rewrite of the type's schema.
    pub async fn extract<T>(&self, prompt: impl Into<Prompt>) -> Result<Extracted<T>, Error>
    where
        T: schemars::JsonSchema + DeserializeOwned + 'static,
    {
        let task = self.task(prompt.into());
        let typed = typed_schema::<T>(&task)?;
        self.run_typed(task, &typed).await
    }

    /// Asks for a value of a schema prepared by [`TypedSchema::from_generated`] (a schema
    /// another language generated for its own type, such as a pydantic model's): its rewrites
    /// go into the ledger and the answer comes back unwrapped, as for [`Self::extract`], as JSON.
    pub async fn extract_typed(
        &self,
        typed: &std::sync::Arc<TypedSchema>,
        prompt: impl Into<Prompt>,
    ) -> Result<Extracted<Value>, Error> {
        self.run_typed(self.task(prompt.into()), typed).await
    }

    /// Runs `task` asking for `typed`'s schema; the answer unwrapped and deserialized.
    async fn run_typed<T: DeserializeOwned>(
        &self,
        mut task: Task,
        typed: &TypedSchema,
    ) -> Result<Extracted<T>, Error> {
        task.output = Output::Schema(typed.schema.clone());
        let result = self.run_with(task, |_| {}).await;
        typed_value(typed, result)
    }

    /// Runs the configuration's `[contracts.NAME]` with `args` (its inputs by name): its prompt
    /// rendered, its schema, route, `require`, `repair` and `cache`, as `geode run --contract`,
    /// `geode mcp` and the gateway's `contract/NAME` run it. An unknown contract or arguments
    /// that break its inputs are [`Error::Config`], before any call.
    pub async fn contract(
        &self,
        name: &str,
        args: &serde_json::Map<String, Value>,
    ) -> Result<Extracted<Value>, Error> {
        let task = match &self.inner.contracts {
            Some(settings) => settings.contract_task(name, args),
            None => Err(crate::config::contracts::InputError::UnknownContract(
                name.chars().take(128).collect(),
            )),
        }
        .map_err(|e| self.refused(e))?;
        let answer = self.run_with(task, |_| {}).await?;
        Ok(Extracted {
            value: answer.value.unwrap_or(Value::Null),
            ledger: answer.ledger,
        })
    }

    /// Asks for a JSON value matching `schema` (a JSON object); the answer is validated with
    /// one retry, as for [`Self::extract`].
    pub async fn extract_json(
        &self,
        schema: &Value,
        prompt: impl Into<Prompt>,
    ) -> Result<Extracted<Value>, Error> {
        let schema = ResponseSchema::from_value(schema.clone()).map_err(|e| self.refused(e))?;
        let mut task = self.task(prompt.into());
        task.output = Output::Schema(schema);
        let answer = self.run_with(task, |_| {}).await?;
        Ok(Extracted {
            value: answer.value.unwrap_or(Value::Null),
            ledger: answer.ledger,
        })
    }

    /// Asks for exactly one of `options` (enforced by a constraining engine, checked locally
    /// otherwise; the ledger says which).
    pub async fn choose(&self, options: &[&str], prompt: impl Into<Prompt>) -> TextAnswer {
        let c = TextConstraint::Choice(options.iter().map(|o| (*o).to_owned()).collect());
        let answer = self.constrained(c, prompt.into()).await?;
        let text = answer.text.trim();
        let value = options
            .iter()
            .find(|o| **o == text || **o == text.trim_matches('"'))
            .map_or_else(|| text.to_owned(), |o| (*o).to_owned());
        Ok(Extracted {
            value,
            ledger: answer.ledger,
        })
    }

    /// Asks for text whose whole (trimmed) answer matches `regex`.
    pub async fn matches(&self, regex: &str, prompt: impl Into<Prompt>) -> TextAnswer {
        let c = TextConstraint::Regex(regex.to_owned());
        self.constrained_text(c, prompt).await
    }

    /// Asks for text derivable from the Lark grammar `lark` (enforced only by a constraining
    /// engine; elsewhere the ledger names it unchecked).
    pub async fn grammar(&self, lark: &str, prompt: impl Into<Prompt>) -> TextAnswer {
        let c = TextConstraint::Grammar(lark.to_owned());
        self.constrained_text(c, prompt).await
    }

    async fn constrained(&self, c: TextConstraint, prompt: Prompt) -> Result<Answer, Error> {
        c.validate().map_err(|e| self.refused(e))?;
        let mut task = self.task(prompt);
        task.output = Output::Constraint(c);
        self.run_with(task, |_| {}).await
    }

    /// The trimmed answer under `c`.
    async fn constrained_text(&self, c: TextConstraint, prompt: impl Into<Prompt>) -> TextAnswer {
        let answer = self.constrained(c, prompt.into()).await?;
        Ok(Extracted {
            value: answer.text.trim().to_owned(),
            ledger: answer.ledger,
        })
    }

    /// Resolves, lets `tune` add observers to the environment, runs the task and turns a
    /// failed run into its [`Error`].
    pub(crate) async fn run_with(
        &self,
        mut task: Task,
        tune: impl FnOnce(&mut WorkerEnv),
    ) -> Result<Answer, Error> {
        let mut env = self.worker_env(&mut task)?;
        tune(&mut env);
        run_task(&task, &env)
            .await
            .map_err(|e| Error::from_run(e, env.adapter.name(), task.route.model()))
    }

    fn refused(&self, e: impl std::fmt::Display) -> Error {
        let task = self.task(Prompt::default());
        let adapter = task.route.adapter().unwrap_or_default();
        Error::config(e.to_string(), adapter, task.route.model())
    }
}

/// `T`'s schema, or a configuration error when schemars' output is not usable.
pub(crate) fn typed_schema<T: schemars::JsonSchema + 'static>(
    task: &Task,
) -> Result<std::sync::Arc<TypedSchema>, Error> {
    TypedSchema::of::<T>().map_err(|e| {
        Error::config(
            format!("schema of {}: {e}", std::any::type_name::<T>()),
            task.route.adapter().unwrap_or_default(),
            task.route.model(),
        )
    })
}

/// Adds the type's own rewrites to a ledger, before the wire's.
pub(crate) fn annotate(ledger: &mut GuaranteeLedger, typed: &TypedSchema) {
    let wire = std::mem::take(&mut ledger.transforms);
    ledger.transforms = typed.transforms.iter().cloned().chain(wire).collect();
    ledger.residuals.extend(typed.residuals.iter().cloned());
}

/// The ledger of `e` with the type's rewrites added.
pub(crate) fn annotate_error(mut e: Error, typed: &TypedSchema) -> Error {
    match &mut e {
        Error::Config { ledger, .. }
        | Error::NotEnforceable { ledger, .. }
        | Error::InputsNotTaken { ledger, .. }
        | Error::Refused { ledger, .. }
        | Error::Truncated { ledger, .. }
        | Error::Provider { ledger, .. }
        | Error::Invalid { ledger, .. }
        | Error::Deserialize { ledger, .. }
        | Error::Ended { ledger, .. } => annotate(ledger, typed),
    }
    e
}

/// The typed value of a successful result (its answer unwrapped and deserialized).
pub(crate) fn typed_value<T: DeserializeOwned>(
    typed: &TypedSchema,
    result: Result<Answer, Error>,
) -> Result<Extracted<T>, Error> {
    let mut answer = result.map_err(|e| annotate_error(e, typed))?;
    annotate(&mut answer.ledger, typed);
    let value = typed.unwrap_answer(answer.value.take().unwrap_or(Value::Null));
    match serde_json::from_value::<T>(value) {
        Ok(value) => Ok(Extracted {
            value,
            ledger: answer.ledger,
        }),
        Err(e) => Err(Error::Deserialize {
            type_name: std::any::type_name::<T>(),
            message: crate::secret::scrub(&e.to_string()),
            ledger: Box::new(answer.ledger),
        }),
    }
}
