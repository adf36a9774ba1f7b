//! `stream::<T>()`: partial values as the answer arrives, each closed list element validated on
//! its own, the retry, and the final value validated in full.
//!
//! The stream drives the worker itself (no task is spawned): dropping it cancels the call. Text
//! reaches it through [`crate::llm::call::CallCx::on_text`]; an adapter that does not stream
//! gives no partials, only the [`StreamEvent::Final`]. After a [`StreamEvent::Retry`] the
//! partials and items start over for the new answer.

use super::extract::{annotate_error, typed_schema, typed_value};
use super::partial_json::PartialJson;
use super::typed_schema::TypedSchema;
use super::{Client, Error, Extracted};
use crate::agent::conversation::Prompt;
use crate::agent::task::{Answer, Output, Task};
use crate::agent::worker::{WorkerEnv, run_task};
use crate::llm::call::TextSink;
use crate::schema::ResponseSchema;
use crate::schema::validate::CompiledSchema;
use crate::vocab::Require;
use futures::stream::BoxStream;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio::sync::mpsc;

/// How far a partial value is guaranteed before the final validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PartialGuarantee {
    /// The wire constrains decoding to the schema (local engine, OpenAI strict, Anthropic
    /// native): the text cannot leave it.
    Enforced,
    /// Nothing holds the text to the schema until the final validation.
    Unchecked,
}

/// One event of [`Client::stream`]. `E` is the type of list items (JSON by default).
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent<T, E = Value> {
    /// The value read so far (the type's value, unwrapped), with the JSON Pointers of the parts
    /// that are closed (they will not change within this answer).
    Partial {
        /// The partial value.
        value: Value,
        /// Pointers of the closed values, in closing order.
        complete: Vec<String>,
        /// How far the partial is guaranteed.
        guarantee: PartialGuarantee,
    },
    /// A closed element of the streamed list that validates against the item schema.
    Item {
        /// Its index in the list.
        index: usize,
        /// The element.
        value: E,
    },
    /// The first answer failed its check; the one retry starts (partials start over).
    Retry {
        /// Why the first answer failed.
        reason: String,
    },
    /// The validated value (`required` enforced here) with its ledger (boxed: it is sent
    /// once, the partials many times).
    Final(Box<Extracted<T>>),
}

impl<T: Serialize, E: Serialize> StreamEvent<T, E> {
    /// The event as one JSON line object, as `geode run --stream` prints it:
    /// `{"event":"partial","value":…,"complete":[…],"guarantee":"enforced"}`,
    /// `{"event":"item","index":0,"value":…}`, `{"event":"retry","reason":…}`,
    /// `{"event":"final","value":…,"ledger":{…}}`.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Partial {
                value,
                complete,
                guarantee,
            } => {
                json!({"event": "partial", "value": value, "complete": complete, "guarantee": guarantee})
            }
            Self::Item { index, value } => json!({"event": "item", "index": index, "value": value}),
            Self::Retry { reason } => json!({"event": "retry", "reason": reason}),
            Self::Final(x) => json!({"event": "final", "value": x.value, "ledger": x.ledger}),
        }
    }
}

impl Error {
    /// The error as one JSON line object: `{"event":"error","error":…,"exit_code":n,"ledger":{…}}`.
    pub fn to_json(&self) -> Value {
        json!({"event": "error", "error": self.to_string(), "exit_code": self.exit_code(), "ledger": self.ledger()})
    }
}

/// Which list [`StreamEvent::Item`]s come from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ItemSource {
    /// The root when it is a list, else the one array-typed property of the root (none when
    /// there are several).
    #[default]
    Auto,
    /// This property of the root object.
    Field(String),
    /// No items.
    None,
}

enum Msg {
    Text(String),
    Retry(String),
}

type Finish<T> = Pin<Box<dyn Future<Output = Result<Extracted<T>, Error>> + Send>>;

struct Items {
    pointer: String,
    schema: CompiledSchema,
}

struct State<T, E> {
    worker: Option<Finish<T>>,
    result: Option<Result<Extracted<T>, Error>>,
    rx: mpsc::UnboundedReceiver<Msg>,
    parser: PartialJson,
    seen: usize,
    typed: Arc<TypedSchema>,
    items: Option<Items>,
    guarantee: PartialGuarantee,
    pending: VecDeque<Result<StreamEvent<T, E>, Error>>,
    held: Option<Msg>,
    done: bool,
}

/// Turns a finished worker run into the final value.
type Finisher<T> = fn(&TypedSchema, Result<Answer, Error>) -> Result<Extracted<T>, Error>;

impl Client {
    /// Streams a `T`: [`StreamEvent::Partial`]s as text arrives, [`StreamEvent::Item`]s for
    /// the elements of the root list (or of the root's one array field), a
    /// [`StreamEvent::Retry`] when the retry starts, then [`StreamEvent::Final`] or an error.
    pub fn stream<T>(
        &self,
        prompt: impl Into<Prompt>,
    ) -> BoxStream<'static, Result<StreamEvent<T>, Error>>
    where
        T: schemars::JsonSchema + DeserializeOwned + Send + 'static,
    {
        self.stream_items::<T, Value>(prompt, ItemSource::Auto)
    }

    /// [`Self::stream`] with items of type `E` from the list `items` names.
    pub fn stream_items<T, E>(
        &self,
        prompt: impl Into<Prompt>,
        items: ItemSource,
    ) -> BoxStream<'static, Result<StreamEvent<T, E>, Error>>
    where
        T: schemars::JsonSchema + DeserializeOwned + Send + 'static,
        E: DeserializeOwned + Send + 'static,
    {
        let task = self.task(prompt.into());
        match typed_schema::<T>(&task) {
            Ok(typed) => self.stream_of(task, typed, &items),
            Err(e) => failed(e),
        }
    }

    /// Streams a value of a prepared schema ([`Self::extract_typed`]) as [`Self::stream`]
    /// does: partials and items are of the type's value (unwrapped), the final value is JSON.
    pub fn stream_typed(
        &self,
        typed: Arc<TypedSchema>,
        prompt: impl Into<Prompt>,
        items: ItemSource,
    ) -> BoxStream<'static, Result<StreamEvent<Value>, Error>> {
        self.stream_of(self.task(prompt.into()), typed, &items)
    }

    /// Streams `task` asking for `typed`'s schema; the final value unwrapped and deserialized.
    fn stream_of<T, E>(
        &self,
        mut task: Task,
        typed: Arc<TypedSchema>,
        items: &ItemSource,
    ) -> BoxStream<'static, Result<StreamEvent<T, E>, Error>>
    where
        T: DeserializeOwned + Send + 'static,
        E: DeserializeOwned + Send + 'static,
    {
        task.output = Output::Schema(typed.schema.clone());
        match self.worker_env(&mut task) {
            Ok(env) => drive(task, env, typed, items, typed_value::<T>),
            Err(e) => failed(annotate_error(e, &typed)),
        }
    }

    /// Streams a JSON value matching `schema` (a JSON object), as [`Self::stream`] does.
    pub fn stream_json(
        &self,
        schema: &Value,
        prompt: impl Into<Prompt>,
    ) -> BoxStream<'static, Result<StreamEvent<Value>, Error>> {
        let mut task = self.task(prompt.into());
        match ResponseSchema::from_value(schema.clone()) {
            Ok(s) => task.output = Output::Schema(s),
            Err(e) => {
                let adapter = task.route.adapter().unwrap_or_default();
                return failed(Error::config(e.to_string(), adapter, task.route.model()));
            }
        }
        match self.worker_env(&mut task) {
            Ok(env) => stream_task(task, env, ItemSource::Auto),
            Err(e) => failed(e),
        }
    }
}

impl Client {
    /// A task the caller built, streamed as [`stream_task`] streams it, on this client's
    /// adapters (`geode run --stream`).
    pub fn stream_task(
        &self,
        mut task: Task,
        items: ItemSource,
    ) -> BoxStream<'static, Result<StreamEvent<Value>, Error>> {
        match self.worker_env(&mut task) {
            Ok(env) => stream_task(task, env, items),
            Err(e) => failed(e),
        }
    }
}

/// Streams a prepared task on a prepared environment ([`Client::stream_task`] resolves them):
/// partials and items against its schema as given (no rewrites), and a final value that is the
/// checked answer, or the answer text as a JSON string when no JSON was asked for.
pub fn stream_task(
    task: Task,
    env: WorkerEnv,
    items: ItemSource,
) -> BoxStream<'static, Result<StreamEvent<Value>, Error>> {
    let schema = task.output.schema().cloned().unwrap_or_default();
    let typed = Arc::new(TypedSchema::raw(schema));
    drive(task, env, typed, &items, raw_value)
}

fn raw_value(_: &TypedSchema, result: Result<Answer, Error>) -> Result<Extracted<Value>, Error> {
    let answer = result?;
    Ok(Extracted {
        value: answer.value.unwrap_or(Value::String(answer.text)),
        ledger: answer.ledger,
    })
}

fn failed<T: Send + 'static>(e: Error) -> BoxStream<'static, Result<T, Error>> {
    Box::pin(futures::stream::once(async move { Err(e) }))
}

/// Runs the worker with text and retry observers, as a stream of events.
fn drive<T, E>(
    task: Task,
    mut env: WorkerEnv,
    typed: Arc<TypedSchema>,
    items: &ItemSource,
    finish: Finisher<T>,
) -> BoxStream<'static, Result<StreamEvent<T, E>, Error>>
where
    T: Send + 'static,
    E: DeserializeOwned + Send + 'static,
{
    let level = env.adapter.wire_mode(task.output.schema()).level();
    let (tx, rx) = mpsc::unbounded_channel();
    let text_tx = tx.clone();
    env.on_text = Some(TextSink::new(move |t| {
        let _ = text_tx.send(Msg::Text(t.to_owned()));
    }));
    env.on_retry = Some(TextSink::new(move |r| {
        let _ = tx.send(Msg::Retry(r.to_owned()));
    }));
    let worker_typed = typed.clone();
    let worker: Finish<T> = Box::pin(async move {
        let result = run_task(&task, &env)
            .await
            .map_err(|e| Error::from_run(e, env.adapter.name(), task.route.model()));
        finish(&worker_typed, result)
    });
    let state = State {
        worker: Some(worker),
        result: None,
        rx,
        parser: PartialJson::new(),
        seen: 0,
        items: item_list(&typed, items),
        typed,
        guarantee: if level == Require::Enforced {
            PartialGuarantee::Enforced
        } else {
            PartialGuarantee::Unchecked
        },
        pending: VecDeque::new(),
        held: None,
        done: false,
    };
    Box::pin(futures::stream::unfold(state, next))
}

/// The list items come from, and its item schema (with the root's `$defs`), compiled.
fn item_list(typed: &TypedSchema, source: &ItemSource) -> Option<Items> {
    let inner = &typed.inner;
    let root_is_list = inner.get("type").and_then(Value::as_str) == Some("array");
    let field = match source {
        ItemSource::None => return None,
        ItemSource::Field(f) => Some(f.clone()),
        ItemSource::Auto if root_is_list => None,
        ItemSource::Auto => {
            let props = inner.get("properties")?.as_object()?;
            let mut lists = props.iter().filter(|(_, s)| {
                resolve(inner, s).get("type").and_then(Value::as_str) == Some("array")
            });
            let (name, _) = lists.next()?;
            if lists.next().is_some() {
                return None;
            }
            Some(name.clone())
        }
    };
    let list_schema = match &field {
        None => inner,
        Some(f) => resolve(inner, inner.get("properties")?.get(f)?),
    };
    let mut item = list_schema.get("items")?.clone();
    if let (Value::Object(m), Some(defs)) = (&mut item, inner.get("$defs")) {
        m.insert("$defs".into(), defs.clone());
    }
    let schema = CompiledSchema::compile(&ResponseSchema::from_value(item).ok()?).ok()?;
    let mut pointer = typed.root_pointer().to_owned();
    if let Some(f) = field {
        pointer.push('/');
        pointer.push_str(&f.replace('~', "~0").replace('/', "~1"));
    }
    Some(Items { pointer, schema })
}

/// `schema`, or what its local `$ref` points at.
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) if r.starts_with('#') => root.pointer(&r[1..]).unwrap_or(schema),
        _ => schema,
    }
}

async fn next<T, E>(mut st: State<T, E>) -> Option<(Result<StreamEvent<T, E>, Error>, State<T, E>)>
where
    E: DeserializeOwned,
{
    loop {
        if let Some(ev) = st.pending.pop_front() {
            return Some((ev, st));
        }
        if st.done {
            return None;
        }
        let msg = match st.worker.as_mut() {
            _ if st.held.is_some() => st.held.take(),
            Some(worker) => tokio::select! {
                biased;
                m = st.rx.recv() => m,
                r = worker => {
                    st.worker = None;
                    st.result = Some(r);
                    continue;
                }
            },
            // Every delta was sent before the worker finished: drain what is queued.
            None => st.rx.try_recv().ok(),
        };
        match msg {
            Some(Msg::Text(t)) => st.text(&t),
            Some(Msg::Retry(reason)) => {
                st.parser = PartialJson::new();
                st.seen = 0;
                st.pending.push_back(Ok(StreamEvent::Retry { reason }));
            }
            None => match st.worker.take() {
                // Every sender is gone while the worker runs: nothing more can arrive.
                Some(worker) => st.result = Some(worker.await),
                None => {
                    st.done = true;
                    if let Some(r) = st.result.take() {
                        st.pending
                            .push_back(r.map(|x| StreamEvent::Final(Box::new(x))));
                    }
                }
            },
        }
    }
}

impl<T, E: DeserializeOwned> State<T, E> {
    /// Feeds a delta (and every delta already queued behind it), then queues the items that
    /// closed and one partial. A retry met while draining is held for `next`.
    fn text(&mut self, first: &str) {
        // A parse error stops the partials; the final validation still decides.
        let _ = self.parser.feed(first);
        loop {
            match self.rx.try_recv() {
                Ok(Msg::Text(t)) => {
                    let _ = self.parser.feed(&t);
                }
                Ok(retry @ Msg::Retry(_)) => {
                    self.held = Some(retry);
                    break;
                }
                Err(_) => break,
            }
        }
        let Some(value) = self.parser.value() else {
            return;
        };
        let new = &self.parser.complete()[self.seen..];
        if let Some(items) = &self.items {
            for pointer in new {
                let Some(index) = pointer
                    .strip_prefix(items.pointer.as_str())
                    .and_then(|rest| rest.strip_prefix('/'))
                    .and_then(|rest| rest.parse::<usize>().ok())
                else {
                    continue;
                };
                let Some(element) = value.pointer(pointer) else {
                    continue;
                };
                if !items.schema.is_valid(element) {
                    continue;
                }
                if let Ok(v) = serde_json::from_value::<E>(element.clone()) {
                    self.pending
                        .push_back(Ok(StreamEvent::Item { index, value: v }));
                }
            }
        }
        self.seen = self.parser.complete().len();
        let prefix = self.typed.root_pointer();
        let shown = if prefix.is_empty() {
            Some(value.clone())
        } else {
            value.pointer(prefix).cloned()
        };
        let Some(shown) = shown else {
            return;
        };
        let complete = self
            .parser
            .complete()
            .iter()
            .filter_map(|p| p.strip_prefix(prefix))
            .filter(|p| p.is_empty() || p.starts_with('/'))
            .map(str::to_owned)
            .collect();
        self.pending.push_back(Ok(StreamEvent::Partial {
            value: shown,
            complete,
            guarantee: self.guarantee,
        }));
    }
}

#[cfg(test)]
mod tests;
