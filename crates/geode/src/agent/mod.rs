//! Many calls: the loop, tools, the worker and its retry, subtasks.
//!
//! | file | job |
//! |---|---|
//! | [`agent_loop`] | `AgenticLoop`: rounds, tools, termination, per-call schema override |
//! | [`tools`] | the `Tool` trait, the registry, argument validation against `input_schema` |
//! | [`worker`] | `WorkerRequest` / `WorkerResult`, validation and the one retry |
//! | [`subtask`] | `SubTask`, its mapping to a `WorkerRequest`, running many at once |
//! | [`termination`] | `TerminationReason` |
//! | [`excerpt`] | how answers are quoted in messages |
//! | [`exit`] | the process exit code of a finished request |

pub mod agent_loop;
pub mod answer_check;
pub mod excerpt;
pub mod exit;
pub mod subtask;
pub mod termination;
pub mod tools;
pub mod worker;
mod worker_input;
