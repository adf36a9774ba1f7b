//! Many calls: the loop, tools, the worker and its retry, subtasks.
//!
//! | module | job |
//! |---|---|
//! | [`task`] | the worker's typed language: `Task` in, `Result<Answer, RunError>` out |
//! | [`conversation`] | turns (system, user, assistant, tool calls and results) laid into a task |
//! | [`worker`] | `run_task`: the loop, the answer check and the one retry with feedback |
//! | [`resolve`] | a task's route to an adapter (routing, `require`, preflight, fallbacks) |
//! | [`protocol`] | the process protocol: `WorkerRequest` / `WorkerResult`, converted at the edge |
//! | [`agent_loop`] | `AgenticLoop`: rounds, tools, termination, per-call schema override |
//! | [`tools`] | the `Tool` trait, the registry, argument validation against `input_schema` |
//! | [`subtask`] | `SubTask`, its mapping to a `WorkerRequest`, running many at once |
//! | [`termination`] | `TerminationReason` |
//! | [`excerpt`] | how answers are quoted in messages |
//! | [`exit`] | the process exit code of a finished request |

pub mod agent_loop;
pub mod answer_check;
pub mod conversation;
pub mod excerpt;
pub mod exit;
pub mod protocol;
pub mod resolve;
pub mod store;
pub mod subtask;
pub mod task;
pub mod termination;
pub mod tools;
pub mod worker;
