//! The `ghost` command's library: starting services (one, or all in one process) and the
//! operator verbs. The binary in `main.rs` only parses arguments.
//!
//! - [`stack`]: start any set of services with their shared connections; [`serve`]: `ghost
//!   up` and `ghost run`, serving until stopped and draining; [`projections_cli`]:
//!   `ghost projections rebuild|retry`;
//! - [`load`]: the pipeline load generator behind `ghost load`;
//! - [`budget`]: `ghost load --budget`, where a turn's time goes, hop by hop;
//! - [`probe`]: `ghost next-speaker`; [`probes`]: `ghost mood`, `route`, `mask`,
//!   `route-report`, `autonomy tick`; [`stage_load`]: `ghost load-stage`;
//! - [`memory_probe`]: `ghost write-plan apply` (a write plan on a given memory) and
//!   `ghost recall plan` (a message's RetrievalPlan);
//! - [`webhook_load`]: the webhook acknowledgement load behind `ghost webhook-load`.
//! - [`memory_bench`]: `ghost memory-bench`, write plan and recall figures;
//! - [`forget_bench`]: `ghost forget-bench`, how long forgetting a person holds the store;
//! - [`recall_quality`]: `ghost recall-quality`, recall@12 and more per recall configuration;
//! - [`memory_io`]: `ghost memory export` and `ghost memory import`;
//! - [`model_bench`]: `ghost model-bench`, speed of an OpenAI-compatible model server;
//! - [`reply_bench`]: `ghost reply-bench`, the pipeline's time to first token on the
//!   embedded model beside the model's own, and each contract's answers;
//! - [`chaos`]: `ghost chaos`, every service its own process, SIGKILLs, lost/duplicated;
//! - [`chaos_cluster`]: `ghost chaos --cluster`, a NATS cluster and two hosts in network
//!   namespaces, faults while messages are sent;
//! - [`children`]: services as `ghost run <service>` child processes (chaos, `--processes`);
//! - [`autonomy_load`]: `ghost autonomy-load`, deliberations per second and decision → message;
//! - [`doctor`]: `ghost doctor`, and the infrastructure checks every command runs first;
//! - [`events_table`]: `ghost events`, who appends and who consumes each event type;
//! - [`route_report`]: `ghost route-report`, the routes users corrected.
//!
//! The load commands run the real services against the fakes of `ghost-testkit`.

pub mod autonomy_load;
pub mod budget;
pub mod chaos;
pub mod chaos_cluster;
pub mod children;
pub mod doctor;
pub mod events_table;
pub mod forget_bench;
pub mod load;
pub mod memory_bench;
pub mod memory_io;
pub mod memory_probe;
pub mod model_bench;
pub mod probe;
pub mod probes;
pub mod projections_cli;
pub mod recall_quality;
pub mod reply_bench;
pub mod route_report;
pub mod serve;
pub mod stack;
pub mod stage_load;
pub mod webhook_load;

pub use stack::{start_stack, ServiceName, Stack};
