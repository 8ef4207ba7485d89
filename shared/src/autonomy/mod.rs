//! Autonomy (seed 001 phase A): the persona deliberates, a capability acts and returns
//! facts, and only the persona speaks about them.
//!
//! - [`decision`]: `ActionDecision` and its validation (dropped, never repaired);
//! - [`result`]: `ActionResult`, a capability's facts;
//! - [`events`]: the events of a tick, its action and its message;
//! - [`persona`]: the persona fields the autonomy prompts receive, its mood as they read it;
//! - [`cares`]: what the persona cares about (preferences, attention), ordering what it
//!   reports;
//! - [`tick`]: asking for a deliberation (schedule, HTTP, command line);
//! - [`activity`]: the `autonomy.activity` and `autonomy.message` subjects.

pub mod activity;
pub mod cares;
pub mod decision;
pub mod events;
pub mod persona;
pub mod result;
pub mod tick;
