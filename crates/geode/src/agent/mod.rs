//! Many calls: the loop, tools, the worker and its retry, routing a task to an adapter.
//!
//! | module | job |
//! |---|---|
//! | `task` | the worker's typed language: `Task` in, `Result<Answer, RunError>` out |
//! | [`conversation`] | turns (system, user, assistant, tool calls and results) laid into a task |
//! | [`worker`] | `run_task`: the loop, the answer check and the one retry with feedback |
//! | [`resolve`] | a task's route to an adapter (routing, `require`, preflight, fallbacks) |
//! | [`store`] | the port an answer store (the response cache) fills |
//! | [`agent_loop`] | `AgenticLoop`: rounds, tools, termination, per-call schema override |
//! | [`tools`] | the `Tool` trait, the registry, argument validation against `input_schema` |
//! | [`excerpt`] | how answers are quoted in messages |

pub mod agent_loop;
pub mod answer_check;
pub mod conversation;
pub mod excerpt;
pub mod resolve;
pub mod store;
pub(crate) mod task;
pub mod tools;
pub mod worker;
