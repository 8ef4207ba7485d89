//! The shapes of every model answer Ghost parses, one file each, as JSON Schemas for
//! constrained decoding (see [`crate::Contract`] for how a schema is prepared).
//!
//! Each file holds the Rust type the answer decodes into (or derives the schema on the
//! type its validator already uses) and one function that builds the call's [`Contract`],
//! narrowed by what the call's input allows. The validators stay with their callers: the
//! schema decides what can be written, the validator what is accepted.
//!
//! - [`route_decision`]: the classifier and Kuro's delegation;
//! - [`worker_output`]: the worker contract (local worker and cloud coder);
//! - [`proposal`]: the persona's judgement of a work result;
//! - [`confirmation`]: whether a message answers a paused task's questions;
//! - [`selection`]: recall selection;
//! - [`affect`]: the affect trailer and the reflection;
//! - [`write_plan`]: the write plan;
//! - [`decision`]: the autonomy action decision.
//!
//! Each contract's token budget lives here too: a classifier answer needs well under 100
//! tokens, and a cap sized to the shape keeps a runaway model from holding the engine.

pub mod affect;
pub mod confirmation;
pub mod decision;
pub mod proposal;
pub mod route_decision;
pub mod selection;
pub mod worker_output;
pub mod write_plan;

pub use crate::Contract;
