//! Autonomy (seed 001 phase A): the persona deliberates, a capability acts and returns
//! facts, and only the persona speaks about them.
//!
//! - [`decision`], [`result`], [`cares`]: the pure rules, from `ghost-domain`: an
//!   `ActionDecision` and its validation (dropped, never repaired), a capability's facts,
//!   what the persona cares about;
//! - [`events`]: the events of a tick, its action and its message;
//! - [`persona`]: the persona fields the autonomy prompts receive, its mood as they read it;
//! - [`recent_vad`]: `recent_vad_average`, what the persona felt lately (one definition);
//! - [`tick`]: asking for a deliberation (schedule, HTTP, command line);
//! - [`gate`]: whether a scheduled one runs at all (quiet hours, the daily cap, nothing new);
//! - [`activity`]: the `autonomy.activity` and `autonomy.message` subjects.

pub use ghost_domain::autonomy::{cares, decision, result};

pub mod activity;
pub mod events;
pub mod gate;
pub mod persona;
pub mod recent_vad;
pub mod tick;
