//! The port the worker keeps answers through: a store that may replay a validated answer to the
//! same task, and that is handed each validated answer a run makes. The worker knows it only by
//! this trait; the response cache ([`crate::cache`]) fills it, from a layer above.

use crate::agent::task::{Answer, Task};
use crate::llm::adapter::Adapter;

/// Where validated answers are kept and replayed from.
#[async_trait::async_trait]
pub trait AnswerStore: Send + Sync {
    /// The stored answer to `task` on `adapter`, replayed and marked so in its ledger; `None`
    /// when there is none that may answer (a miss, a weaker guarantee, a store that failed).
    async fn replay(&self, task: &Task, adapter: &dyn Adapter) -> Option<Answer>;

    /// Hands the store `answer`, which a run of `task` on `adapter` made; the store keeps what
    /// it may (a failure is the store's to log, never the run's).
    async fn keep(&self, task: &Task, adapter: &dyn Adapter, answer: &Answer);
}
