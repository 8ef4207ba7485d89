//! The `ghost` command's library: starting services (one, or all in one process) and the
//! operator verbs. The binary in `main.rs` only parses arguments. The load, benchmark and
//! chaos harnesses are the `ghost-harness` crate (`harness/`), which starts services
//! through [`stack`] and [`serve`].
//!
//! - [`stack`]: start any set of services with their shared connections; [`serve`]: `ghost
//!   up` and `ghost run`, serving until stopped and draining; [`projections_cli`]:
//!   `ghost projections rebuild|retry`;
//! - [`probe`]: `ghost next-speaker`; [`probes`]: `ghost mood`, `route`, `mask`,
//!   `route-report`, `autonomy tick`;
//! - [`memory_probe`]: `ghost write-plan apply` (a write plan on a given memory) and
//!   `ghost recall plan` (a message's RetrievalPlan);
//! - [`memory_io`]: `ghost memory export` and `ghost memory import`;
//! - [`doctor`]: `ghost doctor`, and the infrastructure checks every command runs first;
//! - [`events_table`]: `ghost events`, who appends and who consumes each event type;
//! - [`route_report`]: `ghost route-report`, the routes users corrected.

pub mod doctor;
pub mod events_table;
pub mod memory_io;
pub mod memory_probe;
pub mod probe;
pub mod probes;
pub mod projections_cli;
pub mod route_report;
pub mod serve;
pub mod stack;

pub use stack::{start_stack, ServiceName, Stack};
