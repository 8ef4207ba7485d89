//! Autonomy's pure rules (seed 001 phase A): what the persona may decide and how a
//! decision is checked, what a capability returns, and what the persona cares about.
//!
//! - [`decision`]: `ActionDecision` and its validation (dropped, never repaired);
//! - [`result`]: `ActionResult`, a capability's facts;
//! - [`cares`]: what the persona cares about (preferences, attention), ordering what it
//!   reports.

pub mod cares;
pub mod decision;
pub mod result;
