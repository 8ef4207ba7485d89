//! `ghost-harness`: the load, benchmark and chaos harnesses. Each runs the real services
//! (the `ghost` library's stack, or this binary's `run <service>` as child processes)
//! against the fakes of `ghost-testkit`, usually on a private database and stream. The
//! figures they print are BENCHMARKS.md's; the tests in `tests/` run small versions.
//!
//! - [`load`]: `load`, chat turns through the whole pipeline; [`budget`]: `load --budget`,
//!   where a turn's time goes, hop by hop;
//! - [`stage_load`]: `load-stage`, durable stage turns per second;
//! - [`webhook_load`]: `webhook-load`, webhook acknowledgements from another process;
//! - [`autonomy_load`]: `autonomy-load`, deliberations per second and decision → message;
//! - [`reminder_load`]: `reminder-load`, many reminders due in one minute, each said once;
//! - [`memory_bench`]: `memory-bench`, write plan and recall figures;
//! - [`forget_bench`]: `forget-bench`, how long forgetting a person holds the store;
//! - [`recall_quality`]: `recall-quality`, recall@12 and more per recall configuration;
//! - [`model_bench`]: `model-bench`, speed of an OpenAI-compatible model server;
//! - [`reply_bench`]: `reply-bench`, the pipeline's time to first token on the embedded
//!   model beside the model's own, and each contract's answers;
//! - [`converse`]: `converse`, a multi-day conversation on the shipped configuration and
//!   the embedded models through `/api/chat` and LINE: replies, first token, contracts,
//!   recall of planted facts;
//! - [`chaos`]: `chaos`, every service its own process, SIGKILLs, lost/duplicated;
//! - [`chaos_cluster`]: `chaos --cluster`, a NATS cluster and two hosts in network
//!   namespaces, faults while messages are sent;
//! - [`children`]: services as `ghost-harness run <service>` child processes.

pub mod autonomy_load;
pub mod budget;
pub mod chaos;
pub mod chaos_cluster;
pub mod children;
pub mod converse;
pub mod forget_bench;
pub mod load;
pub mod memory_bench;
pub mod model_bench;
pub mod recall_quality;
pub mod reminder_load;
pub mod reply_bench;
pub mod stage_load;
pub mod webhook_load;
